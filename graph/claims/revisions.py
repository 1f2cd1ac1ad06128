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

from palimpsest.schema.models import DEFAULT_POLICY

_BUMP = (
    "MERGE (s:Store {namespace: $ns}) "
    "ON CREATE SET s.revision = 0, s.projections_seq = 0, s.created_at = datetime.transaction(), "
    "s.incarnation = randomUUID() "
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
    an as-of recall can size its index fetches by the share of the namespace's claims that existed at R."""
    record = tx.run(_BUMP, ns=namespace, kind=kind, items=items, claims=claims).single(strict=True)
    return Revision(int(record["revision"]), to_py_datetime(record["at"]))


def to_py_datetime(value: Any) -> datetime:
    return value.to_native() if hasattr(value, "to_native") else value  # type: ignore[no-any-return]


def optional_datetime(value: Any) -> datetime | None:
    """A stored time that may be absent, as a Python datetime: a driver value, or the ISO string of
    Cypher's `toString` — decoding hundreds of driver DateTime values per read costs more than the
    rest of the row, so hot reads ask for strings; "…Z[UTC]" loses only its zone name."""
    if value is None:
        return None
    if isinstance(value, str):
        return datetime.fromisoformat(value.partition("[")[0])
    return to_py_datetime(value)


@dataclass(frozen=True)
class StoreState:
    revision: int
    projections_seq: int
    # Every change of the namespace's default policy, as (revision of the settings write, version),
    # oldest first (kept on the Store as two parallel lists; changes are rare, so they stay short).
    policy_changes: tuple[tuple[int, str], ...] = ()

    def default_policy_at(self, revision: int) -> str:
        return default_policy_at(self.policy_changes, revision)


def policy_changes(revisions: Any, versions: Any) -> tuple[tuple[int, str], ...]:
    """The Store's `policy_revisions` / `policy_versions` lists (None when never set) as pairs."""
    return tuple(zip((int(r) for r in revisions or ()), (str(v) for v in versions or ()), strict=True))


def default_policy_at(changes: tuple[tuple[int, str], ...], revision: int) -> str:
    """The namespace's default policy version in effect at `revision`: the last change at or
    before it, else the built-in default."""
    found = DEFAULT_POLICY.version
    for rev, version in changes:
        if rev > revision:
            break
        found = version
    return found


def store_state(tx: ManagedTransaction, namespace: str) -> StoreState | None:
    record = tx.run(
        "MATCH (s:Store {namespace: $ns}) RETURN s.revision AS r, s.projections_seq AS p, "
        "s.policy_revisions AS pr, s.policy_versions AS pv", ns=namespace
    ).single()
    if record is None:
        return None
    return StoreState(int(record["r"]), int(record["p"] or 0), policy_changes(record["pr"], record["pv"]))
