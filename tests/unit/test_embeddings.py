"""The embedder loads the packaged model offline and refuses what it cannot verify."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from extraction.embeddings import Embedder, EmbeddingModelError, shared_embedder


def test_default_model_is_offline_minilm() -> None:
    emb = shared_embedder()
    assert emb.model_name == "all-MiniLM-L6-v2" and emb.dimension == 384
    a, b, c = emb.embed(["the server is down", "the server is not running", "I like green apples"])
    assert math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-4)
    cos_ab = sum(x * y for x, y in zip(a, b, strict=True))
    cos_ac = sum(x * y for x, y in zip(a, c, strict=True))
    assert cos_ab > cos_ac


def test_query_cache_returns_same_vector() -> None:
    emb = shared_embedder()
    assert emb.embed_query("cache me") is emb.embed_query("cache me")


def test_unknown_local_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="could not load embedding model"):
        Embedder(str(tmp_path / "no-such-model"))


def test_a_lazy_embedder_loads_on_first_embed() -> None:
    """What lets `history` or `check` answer without torch: nothing loads until a text is embedded."""
    emb = Embedder(lazy=True)
    assert not emb.loaded
    assert (emb.model_name, emb.dimension) == ("all-MiniLM-L6-v2", 384)  # known without loading
    assert not emb.loaded and emb.embed([]) == [] and not emb.loaded
    assert len(emb.embed(["the server is down"])[0]) == 384 and emb.loaded


def test_a_lazy_embedder_reports_a_bad_model_when_used(tmp_path: Path) -> None:
    emb = Embedder(str(tmp_path / "no-such-model"), lazy=True)
    with pytest.raises(EmbeddingModelError, match="could not load embedding model"):
        emb.embed(["x"])
