"""What GraphQL subscriptions may hold, and how they poll without taking the requests' threads.

A subscription has no end, so its cost is not a request's: one read key once held 30 sockets × 100
`contradictions` subscriptions, each polling Neo4j from anyio's thread pool every second — the pool
requests run in — and a concurrent recall took 27.5 s instead of 0.1 s. `Subscriptions`, one per
server, bounds that three ways:

* **Caps.** At most `max_total` subscriptions open on the server and `max_per_key` per API key
  (local mode counts as one key): one more is answered `LIMIT_EXCEEDED` with field `subscriptions`
  and the limit, and holds nothing (PALIMPSEST_MAX_SUBSCRIPTIONS, _PER_KEY).
* **One check per namespace per tick.** Whether anything new may have come is one read of the
  namespace's Store (`Memory.contradictions_token`, which moves with every projections batch), shared
  by every subscriber of the namespace: the first one due reads it, the others wait for that read.
  Only a subscriber whose token moved reads contradictions itself — so idle subscriptions cost one
  small read per namespace per tick, however many there are.
* **Their own threads.** Every poll runs under `limiter()` (`POLL_THREADS` threads), never in the
  pool request resolvers use, so however many subscriptions poll, a request waits for no thread.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from palimpsest.schema.errors import LimitExceededError

POLL_THREADS = 2
T = TypeVar("T")


class Subscriptions:
    """Per-server state of the subscriptions: open slots per key, the shared per-namespace check, the threads."""

    def __init__(self, max_total: int, max_per_key: int, poll_s: float) -> None:
        self.max_total, self.max_per_key, self.poll_s = max_total, max_per_key, poll_s
        self.open: Counter[str] = Counter()
        self._checked: dict[str, tuple[float, object]] = {}  # namespace -> (monotonic time read, token)
        self._reading: dict[str, anyio.Event] = {}
        self._limiter: anyio.CapacityLimiter | None = None

    def take(self, key: str) -> None:
        """Hold one more subscription for `key` (give it back with `release`); LimitExceededError past
        either cap. Only ever called on the event loop (the resolvers), so the counts need no lock."""
        total = sum(self.open.values())
        if total >= self.max_total:
            raise LimitExceededError(f"the server holds {total} subscriptions; at most {self.max_total} are "
                                     "allowed at once (PALIMPSEST_MAX_SUBSCRIPTIONS)", field="subscriptions",
                                     limit=self.max_total)
        if self.open[key] >= self.max_per_key:
            raise LimitExceededError(f"this key holds {self.open[key]} subscriptions; at most {self.max_per_key} "
                                     "are allowed at once (PALIMPSEST_MAX_SUBSCRIPTIONS_PER_KEY)",
                                     field="subscriptions", limit=self.max_per_key)
        self.open[key] += 1

    def release(self, key: str) -> None:
        self.open[key] -= 1
        if self.open[key] <= 0:
            del self.open[key]

    def limiter(self) -> anyio.CapacityLimiter:
        """The threads subscription polls run in (made on the event loop, at first use)."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(POLL_THREADS)
        return self._limiter

    async def token(self, namespace: str, read: Callable[[], Awaitable[T]]) -> T | object:
        """The namespace's feed token, read at most once per `poll_s` for all its subscribers: a fresh
        value is shared; otherwise the first caller reads (`read()`) and the others wait for its value."""
        while True:
            found = self._checked.get(namespace)
            if found is not None and time.monotonic() - found[0] < self.poll_s:
                return found[1]
            pending = self._reading.get(namespace)
            if pending is None:
                break
            await pending.wait()  # then look again: its value, or (it failed) one waiter becomes the reader
        done = self._reading[namespace] = anyio.Event()
        try:
            value = await read()
            self._checked[namespace] = (time.monotonic(), value)
            return value
        except BaseException:
            self._checked.pop(namespace, None)
            raise
        finally:
            del self._reading[namespace]
            done.set()
            if len(self._checked) > 1024:  # forget namespaces no one checked lately
                stale = time.monotonic() - 10 * self.poll_s
                self._checked = {ns: v for ns, v in self._checked.items() if v[0] >= stale}
