"""The per-namespace store revision: the serialisation point of every write.

Each write transaction first bumps `(:Store {namespace}).revision`. That SET takes the write
lock on the Store node, so concurrent writers in one namespace queue up behind it, and every
read they do afterwards (e.g. "which claim is current for this key?") sees the previous
writer's committed state. This is what makes supersession race-safe without our own locks.
A `(:Commit)` node per revision records when it happened and what kind of write it was, so an
as-of recall can measure freshness at the time of that revision.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

_BUMP = (
    "MERGE (s:Store {namespace: $ns}) "
    "ON CREATE SET s.revision = 0, s.projections_seq = 0, s.created_at = datetime.transaction() "
    "SET s.revision = s.revision + 1, s.claims = coalesce(s.claims, 0) + $claims "
    "CREATE (c:Commit {namespace: $ns, revision: s.revision, at: datetime.transaction(), kind: $kind, "
    "items: $items, claims: s.claims}) "
    "RETURN s.revision AS revision, c.at AS at"
)


@dataclass(frozen=True)
class Revision:
    number: int
    at: datetime


def bump(tx: ManagedTransaction, namespace: str, kind: str, items: int, claims: int = 0) -> Revision:
    """`claims`: how many claims this write adds. The Store and each Commit keep the running count, so
    recall can size its index fetches by the namespace's share of the shared indexes, now or at R."""
    record = tx.run(_BUMP, ns=namespace, kind=kind, items=items, claims=claims).single(strict=True)
    return Revision(int(record["revision"]), to_py_datetime(record["at"]))


def to_py_datetime(value: Any) -> datetime:
    return value.to_native() if hasattr(value, "to_native") else value  # type: ignore[no-any-return]


@dataclass(frozen=True)
class StoreState:
    revision: int
    projections_seq: int


def store_state(tx: ManagedTransaction, namespace: str) -> StoreState | None:
    record = tx.run(
        "MATCH (s:Store {namespace: $ns}) RETURN s.revision AS r, s.projections_seq AS p", ns=namespace
    ).single()
    if record is None:
        return None
    return StoreState(int(record["r"]), int(record["p"] or 0))
