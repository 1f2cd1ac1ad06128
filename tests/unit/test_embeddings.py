"""The embedder loads the packaged model offline and refuses what it cannot verify."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from palimpsest.extraction.embeddings import Embedder, EmbeddingModelError, shared_embedder


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


def test_cached_texts_are_the_stable_vectors_whatever_shares_the_call() -> None:
    emb = shared_embedder()
    texts = ["Melanie: I went swimming.", "Melanie: Talk to you soon, take care of yourself!"]
    alone = emb.embed_cached(texts[:1])[0]
    together = emb.embed_cached([*texts, texts[0]])
    assert together[0] is alone and together[2] is alone  # cached: one vector per text
    assert [float(x) for x in alone] == pytest.approx(emb.embed_stable(texts[:1])[0], abs=1e-7)
    fresh = Embedder(text_cache_size=1)
    assert [list(v) for v in fresh.embed_cached(texts)] == [list(v) for v in emb.embed_cached(texts)]
    assert len(fresh._text_cache) == 1  # bounded


def test_a_stable_vector_is_the_same_alone_and_among_many_of_its_length() -> None:
    """Forty texts of one token length: asked together they must not share one 40-row call, whose
    kernels compute a row differently from the 8-row call the text gets alone."""
    emb = shared_embedder()
    tokenizer = emb.load().tokenizer
    texts = [f"Speaker {i}: we went out on day {i} of the trip." for i in range(40)]
    assert len({len(tokenizer(t)["input_ids"]) for t in texts}) == 1
    together = emb.embed_stable(texts)
    assert all(emb.embed_stable([t])[0] == v for t, v in zip(texts, together, strict=True))
    assert emb.embed_stable(texts[::-1])[::-1] == together


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
