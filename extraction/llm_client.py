"""What every LLM caller here needs from litellm + instructor: a JSON-mode client built on first use
(so importing a module never imports litellm), a limit on calls per second, and a response's price."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any


def json_client(completion: Callable[..., Any] | None = None) -> Any:
    """An instructor client over `completion` (litellm's by default; tests pass their own), with the
    local cost map so that pricing never fetches one over the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import instructor
    import litellm

    litellm.suppress_debug_info = True
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
        import litellm

        return float(litellm.completion_cost(completion_response=raw, model=model))
    except Exception:
        return None
