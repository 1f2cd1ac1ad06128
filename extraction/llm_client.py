"""What every LLM caller here needs from litellm + instructor: a JSON-mode client built on first use
(so importing a module never imports litellm), a limit on calls per second, and a response's price.

litellm is imported only through `import_litellm`, which first refuses the releases known to be
compromised (1.82.7 and 1.82.8 were published with malicious code; pyproject.toml pins a good one,
and this guard keeps a hand-installed bad one from running here).

litellm loads its price list when it is first imported, from the network unless the operator sets
LITELLM_LOCAL_MODEL_COST_MAP=True (then from the copy bundled with the pinned release). That is
litellm's own environment variable, read at its import: the Makefile, .ci/run and docker-compose.yml
set it, and the README's configuration section says to; nothing here writes the environment.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from importlib import metadata
from types import ModuleType
from typing import Any

COMPROMISED_LITELLM = frozenset({"1.82.7", "1.82.8"})


class CompromisedPackageError(ImportError):
    """An installed dependency is a release known to carry malicious code: it is never imported."""


_litellm_checked = False


def check_litellm() -> None:
    """Raise CompromisedPackageError when the installed litellm is 1.82.7 or 1.82.8 (read from its
    package metadata, without importing it). A missing litellm is left to the import to report."""
    try:
        installed = metadata.version("litellm")
    except metadata.PackageNotFoundError:
        return
    if installed in COMPROMISED_LITELLM:
        raise CompromisedPackageError(
            f"litellm {installed} is installed, a release published with malicious code "
            f"({' and '.join(sorted(COMPROMISED_LITELLM))} are refused): remove it and install the pinned "
            "version from pyproject.toml")


def import_litellm() -> ModuleType:
    """litellm, once `check_litellm` has passed (checked once per process): the one way code here imports it."""
    global _litellm_checked
    if not _litellm_checked:
        check_litellm()
        _litellm_checked = True
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def json_client(completion: Callable[..., Any] | None = None) -> Any:
    """An instructor client over `completion` (litellm's by default; tests pass their own)."""
    litellm = import_litellm()  # before instructor, which may import litellm itself
    import instructor

    return instructor.from_litellm(completion or litellm.completion, mode=instructor.Mode.JSON)


class LazyClient:
    """The JSON client of one caller, built on its first call: constructing a judge, reader or extractor
    stays cheap and import-free, and a caller that is never asked never loads litellm."""

    def __init__(self, completion: Callable[..., Any] | None = None) -> None:
        self._completion = completion
        self._client: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = json_client(self._completion)
            return self._client


class RateLimiter:
    """At most `per_second` calls per second, by spacing calls; None or 0 means unlimited.

    Clock and sleep are injectable so tests can check the spacing without waiting.
    """

    def __init__(self, per_second: float | None, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval = 1.0 / per_second if per_second else 0.0
        self._clock, self._sleep = clock, sleep
        self._next = float("-inf")
        self._lock = threading.Lock()

    def acquire(self) -> None:
        if self.interval <= 0:
            return
        with self._lock:
            now = self._clock()
            wait = self._next - now
            if wait > 0:
                self._sleep(wait)
                now += wait
            self._next = now + self.interval


def price(raw: Any, model: str) -> float | None:
    """The USD cost of one raw response; None when litellm cannot price the model (a local server):
    say "unpriced", never guess."""
    try:
        litellm = import_litellm()
        return float(litellm.completion_cost(completion_response=raw, model=model))
    except Exception:
        return None
