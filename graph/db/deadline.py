"""One deadline per request, carried in a context variable the driver reads.

A face that serves requests (GraphQL, `api/graphql_limits.py`) sets it once, when the request
starts; every Neo4j call made on the request's behalf — in that task, its child tasks and the
worker threads they hand work to (anyio copies the context) — then runs with a transaction
timeout of the time that is left, and none starts once it has passed. The driver that does this is
`graph.db.connection.GuardedDriver`; graph code takes no timeout parameters of its own.

Nothing is set by default: the Python face and the background worker run without a deadline (the
driver's bounded retry and acquisition times still apply). A Python caller that wants one writes

    from palimpsest.graph.db.deadline import within
    with within(5.0):
        mem.recall("…")          # UNAVAILABLE/TIMEOUT after ~5 s at most, plus one connect timeout

The call runs in the caller's thread, so a TCP connect already under way when the deadline passes
finishes or fails first: the bound is the deadline plus the driver's connect timeout
(PALIMPSEST_NEO4J_CONNECT_TIMEOUT_S, 5 s; measured in docs/RELIABILITY.md). The HTTP face runs
each call in a worker thread it abandons at the deadline, so its answers are on time.

graph/ never imports api/: api sets the variable, graph reads it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TypeVar

from palimpsest.schema.errors import DeadlineExceededError

R = TypeVar("R")

# Below this a transaction timeout would round to 0 ms, which Neo4j reads as "no timeout".
MIN_TX_TIMEOUT_S = 0.001


@dataclass(frozen=True)
class Deadline:
    """An instant on the monotonic clock, and the budget it was set from (for messages)."""

    at: float
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + max(0.0, float(seconds)), float(seconds))

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def exceeded(self, what: str = "the request") -> DeadlineExceededError:
        return DeadlineExceededError(
            f"{what} took longer than its {self.seconds:g} s deadline; a read can be retried as it is, and a write "
            "retried with the same idempotency keys is safe (what landed answers duplicate=true)",
            field="timeout", limit=self.seconds)

    def check(self) -> float:
        """The time left, at least MIN_TX_TIMEOUT_S; raises DeadlineExceededError when there is none."""
        left = self.remaining()
        if left < MIN_TX_TIMEOUT_S:
            raise self.exceeded()
        return left


_CURRENT: ContextVar[Deadline | None] = ContextVar("palimpsest_deadline", default=None)


def current() -> Deadline | None:
    """The deadline of the request this code runs for, if its face set one."""
    return _CURRENT.get()


def set_current(limit: Deadline | None) -> Token[Deadline | None]:
    """Set the deadline of the code that follows (in this task or thread); undo with `reset_current`."""
    return _CURRENT.set(limit)


def reset_current(token: Token[Deadline | None]) -> None:
    # Reset from another context (a stream closed by another task) has nothing to undo there.
    with suppress(ValueError):
        _CURRENT.reset(token)


@contextmanager
def bound(limit: Deadline | None) -> Iterator[Deadline | None]:
    """Run the block under `limit` (None: no deadline), restoring the previous one afterwards."""
    token = _CURRENT.set(limit)
    try:
        yield limit
    finally:
        _CURRENT.reset(token)


def within(seconds: float) -> AbstractContextManager[Deadline | None]:
    """`with within(5.0): …` — a deadline `seconds` from now for every Neo4j call in the block."""
    return bound(Deadline.after(seconds))


def run_within(limit: Deadline | None, fn: Callable[[], R]) -> R:
    """`fn()` under `limit`: for a worker thread that must carry the request's deadline explicitly."""
    with bound(limit):
        return fn()
