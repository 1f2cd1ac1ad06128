"""Reading CONTRADICTS edges for the API: a page of recent ones, and a poll for new ones.

Edges carry the revision of the claim whose processing found them, which only grows, so
"everything after revision R" is a resumable cursor for the subscription.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import Driver

from palimpsest.graph.claims.revisions import to_py_datetime
from palimpsest.schema.models import ClaimRef, ContradictionRecord, iso

_RETURN = (
    "RETURN a {.id, .content, .source, .claim_key} AS a, b {.id, .content, .source, .claim_key} AS b, "
    "r.score AS score, r.method AS method, r.detected_at AS at, r.revision AS rev"
)


def _record(row: Any) -> ContradictionRecord:
    def ref(m: Any) -> ClaimRef:
        return ClaimRef(id=m["id"], content=m["content"], source=m["source"], claim_key=m.get("claim_key"))

    return ContradictionRecord(claim=ref(row["a"]), other=ref(row["b"]), score=float(row["score"]),
                               method=str(row["method"]), detected_at=iso(to_py_datetime(row["at"])) or "",
                               revision=int(row["rev"]))


def recent_contradictions(driver: Driver, namespace: str, since: datetime | None, first: int,
                          database: str | None = None) -> list[ContradictionRecord]:
    """Newest first; ties broken by ids so the page is stable."""
    records, _, _ = driver.execute_query(
        "MATCH (a:Claim {namespace: $ns})-[r:CONTRADICTS]->(b:Claim {namespace: $ns}) "
        "WHERE $since IS NULL OR r.detected_at >= $since "
        f"{_RETURN} ORDER BY r.revision DESC, a.id, b.id, r.method LIMIT $first",
        ns=namespace, since=since, first=first, database_=database, routing_="r",
    )
    return [_record(r) for r in records]


def feed_token(driver: Driver, namespace: str, database: str | None = None) -> tuple[int, str] | None:
    """What changes whenever contradictions may have been added: the namespace's projections_seq and the
    time of its last projections batch (the worker MERGEs CONTRADICTS in the transaction that sets both).
    One indexed read of the Store node, so subscribers can learn "nothing new" without the scan of
    `contradictions_after`. None: no such namespace (yet)."""
    records, _, _ = driver.execute_query(
        "MATCH (s:Store {namespace: $ns}) RETURN s.projections_seq AS seq, toString(s.projections_at) AS at",
        ns=namespace, database_=database, routing_="r",
    )
    if not records:
        return None
    return int(records[0]["seq"] or 0), str(records[0]["at"])


def contradictions_after(driver: Driver, namespace: str, after_revision: int, limit: int,
                         database: str | None = None) -> list[ContradictionRecord]:
    """Oldest first after a revision cursor: what a subscriber has not seen yet."""
    records, _, _ = driver.execute_query(
        "MATCH (a:Claim {namespace: $ns})-[r:CONTRADICTS]->(b:Claim {namespace: $ns}) "
        "WHERE r.revision > $after "
        f"{_RETURN} ORDER BY r.revision, a.id, b.id, r.method LIMIT $limit",
        ns=namespace, after=after_revision, limit=limit, database_=database, routing_="r",
    )
    return [_record(r) for r in records]
