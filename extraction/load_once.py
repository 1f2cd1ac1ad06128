"""Things that are expensive to build (a model, a client), built once per key per process.

Both cross-encoder users — the NLI contradiction detector (extraction.contradiction.nli) and the
recall's reranker (extraction.rerank) — load a model on first use and keep it for the process; the
memo is theirs, so it lives with them in extraction. A build that fails is remembered for
`retry_after` seconds: a missing model costs one load attempt per interval, not one per call, and
every caller in that interval gets the same typed error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)


class LoadOnce(Generic[T]):
    """A per-process memo of built values by key, with failed builds held back for a while."""

    def __init__(self, error: Callable[[str], Exception]) -> None:
        self._error = error  # the caller's own typed error, from a message
        self._built: dict[Hashable, T] = {}
        self._failures: dict[Hashable, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, label: str, build: Callable[[], T], retry_after: float) -> T:
        """The value for `key`, built by `build` the first time; `label` names it in errors and logs.
        Raises the caller's error if the build fails, or failed less than `retry_after` seconds ago."""
        with self._lock:
            if key in self._built:
                return self._built[key]
            failed = self._failures.get(key)
            if failed is not None and time.monotonic() - failed[0] < retry_after:
                raise self._error(f"{label} failed to load: {failed[1]}")
            try:
                value = build()
            except Exception as exc:  # many library error types; the caller needs one
                message = f"{type(exc).__name__}: {exc}"[:500]
                self._failures[key] = (time.monotonic(), message)
                log.warning("%s could not be loaded: %s", label, message)
                raise self._error(f"{label} failed to load: {message}") from exc
            self._failures.pop(key, None)
            self._built[key] = value
            return value


__all__ = ["LoadOnce"]
