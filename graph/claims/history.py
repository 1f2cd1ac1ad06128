"""A claim key's whole chain and the store's counts: read-only views over the write log.

Events are derived from the graph itself — `SUPERSEDES` relationships carry when a claim was
corrected (store time) or had its window closed by a later version (world time) and, if that was
later undone, when — so history can never disagree with what recall sees. Each entry's claim
also carries `valid_until`, where its window ends now.
"""

from __future__ import annotations

from typing import Any

from neo4j import Driver

from palimpsest.graph.claims.revisions import to_py_datetime
from palimpsest.graph.claims.store import CLAIM_FIELDS, claim_from_record
from palimpsest.schema.errors import NotFoundError
from palimpsest.schema.limits import MAX_HISTORY
from palimpsest.schema.models import HistoryEntry, HistoryEvent, StoreStats, iso


def history(driver: Driver, namespace: str, claim_key: str, default_tau: float,
            database: str | None = None) -> list[HistoryEntry]:
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns, claim_key: $key}) "
        "WITH c ORDER BY c.revision, c.batch_index, c.id LIMIT $limit "
        "OPTIONAL MATCH (newer:Claim)-[s:SUPERSEDES]->(c) "
        "WITH c, collect(CASE WHEN s IS NOT NULL THEN {by: newer.id, revision: s.revision, at: s.at, "
        "undone: s.undone_at_revision, undone_at: s.undone_at, kind: s.kind, until: s.valid_until, "
        "undone_reason: s.undone_reason} END) AS sup, c.retracted_at AS rat "
        f"RETURN {CLAIM_FIELDS} AS c, sup, rat ORDER BY c.revision, c.batch_index, c.id",
        ns=namespace, key=claim_key, limit=MAX_HISTORY, database_=database, routing_="r",
    )
    if not records:
        raise NotFoundError(f"no claims with key {claim_key!r} in namespace {namespace!r}", field="claim_key")
    out = []
    for rec in records:
        claim = claim_from_record(dict(rec["c"]), default_tau)
        events = [HistoryEvent(kind="recorded", revision=claim.revision, at=claim.recorded_at)]
        for s in rec["sup"]:
            if s["kind"] == "succession":
                events.append(HistoryEvent(kind="closed", revision=s["revision"], at=_iso(s["at"]), by=s["by"],
                                           valid_until=None if s["until"] is None else _iso(s["until"])))
                if s["undone"] is not None:
                    events.append(HistoryEvent(kind="reopened", revision=s["undone"], at=_iso(s["undone_at"]),
                                               by=s["by"], reason=s["undone_reason"]))
                continue
            events.append(HistoryEvent(kind="superseded", revision=s["revision"], at=_iso(s["at"]), by=s["by"]))
            if s["undone"] is not None:
                events.append(HistoryEvent(kind="restored", revision=s["undone"], at=_iso(s["undone_at"]),
                                           by=s["by"], reason="superseding claim retracted"))
        if claim.retracted_at_revision is not None:
            events.append(HistoryEvent(kind="retracted", revision=claim.retracted_at_revision,
                                       at=_iso(rec["rat"]), reason=claim.retraction_reason))
        events.sort(key=lambda e: (e.revision, _KIND_ORDER[e.kind], e.by or ""))
        out.append(HistoryEntry(claim=claim, events=events))
    return out


# Within one revision: a claim is recorded before anything happens to it.
_KIND_ORDER = {"recorded": 0, "restored": 1, "closed": 2, "reopened": 3, "superseded": 4, "retracted": 5}


def _iso(value: Any) -> str:
    return iso(to_py_datetime(value)) or ""


def stats(driver: Driver, namespace: str, database: str | None = None) -> StoreStats:
    records, _, _ = driver.execute_query(
        "MATCH (s:Store {namespace: $ns}) "
        "OPTIONAL MATCH (c:Claim {namespace: $ns}) "
        "RETURN s.revision AS rev, s.projections_seq AS seq, c.status AS status, count(c) AS n",
        ns=namespace, database_=database, routing_="r",
    )
    if not records:
        raise NotFoundError(f"unknown namespace {namespace!r}", field="namespace")
    by_status = {str(r["status"]): int(r["n"]) for r in records if r["status"] is not None}
    return StoreStats(namespace=namespace, revision=int(records[0]["rev"]),
                      projections_seq=int(records[0]["seq"] or 0), claims_by_status=dict(sorted(by_status.items())))
