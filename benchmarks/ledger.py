"""What a fault-tolerant client writes, what it was told, and what the store holds afterwards.

A client under faults (a dying Neo4j, lost commit replies, concurrent writers) does what the
error messages say: on UNAVAILABLE or TIMEOUT it retries the same batch with the same idempotency
keys. Every claim carries a token in its content and its idempotency key, so `audit` can count,
from the stored graph alone, which writes were lost (acknowledged, or never given up on, yet
absent) and which were duplicated (one token, two claims).

Used by tests/reliability/test_commit_faults.py and `python -m benchmarks.reliability`.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from neo4j import Driver

from palimpsest.schema.errors import ConflictError, DeadlineExceededError, UnavailableError

TOKEN = re.compile(r"\[w:([0-9a-z-]+)\]")
RETRYABLE = (UnavailableError, DeadlineExceededError)


def claim_item(token: str, *, key: str | None, value: int) -> dict[str, Any]:
    """One claim whose content and idempotency key carry `token`; `key` makes it a version of a fact."""
    subject = key or f"note {token}"
    return {"content": f"The {subject} is now set to {value} units [w:{token}]", "source": "reliability",
            "claim_key": key, "idempotency_key": f"w:{token}"}


@dataclass
class Ledger:
    """Thread-safe tallies of one run's client side."""

    acknowledged: set[str] = field(default_factory=set)
    abandoned: set[str] = field(default_factory=set)
    duplicate_answers: int = 0
    retries: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    # Longest time one failing call took to raise (an outage must surface within the deadline).
    slowest_error_s: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def note_error(self, exc: BaseException, seconds: float) -> None:
        with self.lock:
            self.errors[getattr(exc, "code", type(exc).__name__)] += 1
            self.slowest_error_s = max(self.slowest_error_s, seconds)

    def as_dict(self) -> dict[str, Any]:
        return {"acknowledged": len(self.acknowledged), "abandoned": len(self.abandoned),
                "duplicate_answers": self.duplicate_answers, "retries": self.retries,
                "errors": dict(sorted(self.errors.items())), "slowest_error_s": round(self.slowest_error_s, 2)}


def ingest_until_done(memory: Any, items: Sequence[dict[str, Any]], ledger: Ledger, *,
                      attempts: int = 60, pause_s: float = 0.25) -> bool:
    """`memory.ingest_many(items)`, retried with the same idempotency keys while the error says so.

    Returns False when the batch was given up on (its tokens go to `abandoned`: a lost write
    among them is the service's fault only if it was acknowledged, which it was not). Anything
    that is not a retry-safe Palimpsest error propagates: under faults it is a bug.
    """
    tokens = [TOKEN.search(str(i["content"])).group(1) for i in items]  # type: ignore[union-attr]
    for attempt in range(attempts):
        started = time.monotonic()
        try:
            result = memory.ingest_many(list(items))
        except RETRYABLE as exc:
            ledger.note_error(exc, time.monotonic() - started)
            with ledger.lock:
                ledger.retries += attempt < attempts - 1
            time.sleep(pause_s)
            continue
        bad = [r.error for r in result.items if not r.ok]
        if bad:
            raise AssertionError(f"an item failed under faults: {bad[0]}")
        with ledger.lock:
            ledger.acknowledged.update(tokens)
            ledger.duplicate_answers += sum(r.duplicate for r in result.items)
        return True
    with ledger.lock:
        ledger.abandoned.update(tokens)
    return False


def retract_until_done(memory: Any, claim_id: str, ledger: Ledger, *, attempts: int = 60,
                       pause_s: float = 0.25) -> bool:
    """Retract, retrying on retry-safe errors; 'already retracted' after a retry means it landed."""
    for attempt in range(attempts):
        started = time.monotonic()
        try:
            memory.retract(claim_id, "reliability run")
            return True
        except ConflictError:
            return attempt > 0
        except RETRYABLE as exc:
            ledger.note_error(exc, time.monotonic() - started)
            time.sleep(pause_s)
    return False


@dataclass(frozen=True)
class Audit:
    stored: int
    lost: list[str]
    duplicated: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"stored": self.stored, "lost": len(self.lost), "duplicated": len(self.duplicated),
                "lost_examples": self.lost[:5], "duplicated_examples": self.duplicated[:5]}


def stored_tokens(driver: Driver, namespace: str, database: str | None = None) -> Counter[str]:
    """How many stored claims carry each token, retracted ones included."""
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns}) RETURN c.content AS content", ns=namespace, database_=database)
    counts: Counter[str] = Counter()
    for r in records:
        found = TOKEN.search(str(r["content"]))
        if found:
            counts[found.group(1)] += 1
    return counts


def audit(driver: Driver, namespace: str, ledger: Ledger, database: str | None = None) -> Audit:
    """Lost: acknowledged but absent. Duplicated: any token stored more than once."""
    counts = stored_tokens(driver, namespace, database)
    lost = sorted(t for t in ledger.acknowledged if counts[t] == 0)
    duplicated = sorted(t for t, n in counts.items() if n > 1)
    return Audit(stored=sum(counts.values()), lost=lost, duplicated=duplicated)

