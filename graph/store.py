"""Claim writes: batched ingest with supersession, retraction with restoration, idempotency.

One write transaction per batch. The revision bump comes first (see `revisions`), so the
supersession lookup that follows runs under the namespace's write lock: N concurrent writers on
one key produce one linear chain and exactly one current claim. Nothing here calls a model:
callers hand in embeddings.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from neo4j import Driver, ManagedTransaction

from graph.revisions import Revision, bump, to_py_datetime
from graph.visibility import OPEN
from schema.errors import ConflictError, NotFoundError
from schema.models import Claim, ClaimInput, IngestItemResult, RetractResult, iso


@dataclass(frozen=True)
class PreparedClaim:
    """A validated claim plus its embedding, ready to write; `index` is its place in the batch."""

    index: int
    claim: ClaimInput
    embedding: list[float]
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


class _NothingToWrite(Exception):
    """Every item was a replay of an idempotency key: roll back so no revision is spent."""

    def __init__(self, results: list[IngestItemResult]) -> None:
        super().__init__("nothing to write")
        self.results = results


def vector_text(vector: Sequence[float]) -> str:
    """An embedding as one comma-separated string, for the write query to split back into floats.

    The driver packs a list parameter float by float in Python: for a 1,000-claim batch of 384-d
    vectors that was ~3 s, about 20% of the embedder's own time for the same batch (measured by
    benchmarks/scale.py). One string packs in a single copy, and Cypher's `toFloat` parses it on the
    server. `repr` of a float round-trips exactly, so the stored vector is bit-for-bit the same.
    """
    return ",".join(map(repr, vector))


def _props(p: PreparedClaim, namespace: str) -> dict[str, Any]:
    c = p.claim
    props: dict[str, Any] = {
        "id": p.id,
        "namespace": namespace,
        "content": c.content,
        "content_hash": hashlib.sha256(c.content.encode()).hexdigest(),
        "batch_index": p.index,  # order within one revision: a chain inside a batch stays in order
        "source": c.source,
        "metadata_json": json.dumps(c.metadata, sort_keys=True, separators=(",", ":")),
    }
    optional = {"claim_key": c.claim_key, "tau": c.tau, "valid_from": c.valid_from,
                "valid_to": c.valid_to, "idempotency_key": c.idempotency_key}
    props.update({k: v for k, v in optional.items() if v is not None})
    return props


def _write_batch(tx: ManagedTransaction, namespace: str, items: Sequence[PreparedClaim]) -> list[IngestItemResult]:
    rev = bump(tx, namespace, "ingest", len(items), claims=len(items))
    results: dict[int, IngestItemResult] = {}

    # Idempotency: a key seen before returns the first result. Checked under the lock.
    keyed = {p.claim.idempotency_key: p for p in items if p.claim.idempotency_key}
    fresh: list[PreparedClaim] = []
    if keyed:
        seen = {
            r["key"]: r
            for r in tx.run(
                "UNWIND $keys AS k MATCH (c:Claim {namespace: $ns, idempotency_key: k}) "
                "OPTIONAL MATCH (c)-[s:SUPERSEDES {reason: 'claim_key'}]->(old:Claim) WHERE s.revision = c.revision "
                "RETURN k AS key, c.id AS id, c.revision AS revision, old.id AS supersedes",
                keys=sorted(keyed), ns=namespace,
            )
        }
        first_in_batch: dict[str, PreparedClaim] = {}
        for p in items:
            key = p.claim.idempotency_key
            if key and key in seen:
                r = seen[key]
                results[p.index] = IngestItemResult(index=p.index, ok=True, id=r["id"], revision=r["revision"],
                                                    supersedes=r["supersedes"], duplicate=True)
            elif key and key in first_in_batch:
                results[p.index] = IngestItemResult(index=p.index, ok=True, id=first_in_batch[key].id,
                                                    revision=rev.number, duplicate=True)
            else:
                if key:
                    first_in_batch[key] = p
                fresh.append(p)
    else:
        fresh = list(items)
    if not fresh:
        raise _NothingToWrite([results[i] for i in sorted(results)])

    # Supersession: the DB's current claim per key, then the batch's own order within a key.
    keys = sorted({p.claim.claim_key for p in fresh if p.claim.claim_key})
    current: dict[str, str] = {}
    if keys:
        for r in tx.run(
            "UNWIND $keys AS k MATCH (c:Claim {namespace: $ns, claim_key: k}) WHERE c.status = 'current' "
            "RETURN k AS key, c.id AS id ORDER BY c.revision, c.id",
            keys=keys, ns=namespace,
        ):
            current[r["key"]] = r["id"]
    pairs: list[dict[str, str]] = []
    for p in fresh:
        key = p.claim.claim_key
        if key is None:
            continue
        if key in current:
            pairs.append({"new": p.id, "old": current[key]})
        current[key] = p.id

    tx.run(
        "UNWIND $rows AS row CREATE (c:Claim) SET c = row.props, c.revision = $rev, c.recorded_at = $at, "
        "c.status = 'current', c.vis_from = [$rev], c.vis_to = [$open] "
        "WITH c, row CALL db.create.setNodeVectorProperty(c, 'embedding', "
        "[x IN split(row.embedding, ',') | toFloat(x)])",
        rows=[{"props": _props(p, namespace), "embedding": vector_text(p.embedding)} for p in fresh],
        rev=rev.number, at=rev.at, open=OPEN,
    ).consume()
    if len(fresh) != len(items):
        # The bump counted every item; idempotent replays are not new claims (rare: one more statement).
        tx.run(
            "MATCH (s:Store {namespace: $ns}) MATCH (k:Commit {namespace: $ns, revision: $rev}) "
            "SET s.claims = s.claims - $replays, k.claims = k.claims - $replays",
            ns=namespace, rev=rev.number, replays=len(items) - len(fresh),
        ).consume()
    if pairs:
        _supersede(tx, namespace, pairs, rev)
    supersedes = {pair["new"]: pair["old"] for pair in pairs}
    for p in fresh:
        results[p.index] = IngestItemResult(index=p.index, ok=True, id=p.id, revision=rev.number,
                                            supersedes=supersedes.get(p.id))
    return [results[i] for i in sorted(results)]


def _supersede(tx: ManagedTransaction, namespace: str, pairs: list[dict[str, str]], rev: Revision) -> None:
    """Close every superseded claim and link it, in one statement.

    One UNWIND instead of one round-trip per pair (~200 per 1,000-claim batch at 20% key reuse).
    Row order cannot matter: `_write_batch` builds `pairs` so each claim is `old` at most once and
    `new` at most once (a chain a→b→c in one batch is the two disjoint rows b→a and c→b), so no
    row reads what another row writes.
    """
    tx.run(
        "UNWIND $pairs AS pair "
        "MATCH (new:Claim {namespace: $ns, id: pair.new}), (old:Claim {namespace: $ns, id: pair.old}) "
        "USING INDEX new:Claim(id) USING INDEX old:Claim(id) "
        "SET old.status = 'superseded', old.superseded_at_revision = $rev, "
        "old.vis_to = old.vis_to[..-1] + [$rev] "
        "CREATE (new)-[:SUPERSEDES {revision: $rev, at: $at, reason: 'claim_key'}]->(old)",
        pairs=pairs, ns=namespace, rev=rev.number, at=rev.at,
    ).consume()


def write_claims(driver: Driver, namespace: str, items: Sequence[PreparedClaim],
                 database: str | None = None) -> list[IngestItemResult]:
    """Write one batch atomically; the driver retries transient failures (deadlocks, leader switch)."""
    if not items:
        return []
    with driver.session(database=database) as session:
        try:
            return session.execute_write(_write_batch, namespace, items)
        except _NothingToWrite as replay:
            return replay.results


def _retract(tx: ManagedTransaction, namespace: str, claim_id: str, reason: str) -> RetractResult:
    # Lock first, then read: the status must be the one no concurrent writer can still change.
    # Raising below rolls the whole transaction back, revision bump included.
    rev = bump(tx, namespace, "retract", 1)
    found = tx.run("MATCH (c:Claim {namespace: $ns, id: $id}) RETURN c.status AS status",
                   ns=namespace, id=claim_id).single()
    if found is None:
        raise NotFoundError(f"no claim {claim_id!r} in namespace {namespace!r}", field="id")
    if found["status"] == "retracted":
        raise ConflictError(f"claim {claim_id!r} is already retracted", field="id")
    was_current = found["status"] == "current"
    tx.run(
        "MATCH (c:Claim {namespace: $ns, id: $id}) "
        "SET c.status = 'retracted', c.retracted_at_revision = $rev, c.retracted_at = $at, "
        "c.retraction_reason = $reason, "
        "c.vis_to = CASE WHEN $was_current THEN c.vis_to[..-1] + [$rev] ELSE c.vis_to END",
        ns=namespace, id=claim_id, rev=rev.number, at=rev.at, reason=reason, was_current=was_current,
    ).consume()
    restored: str | None = None
    if was_current:
        # Any reason (claim_key, inferred, manual) is undone the same way. A claim_key claim
        # replaced one claim; an inferred one may have replaced several current statements of
        # the same fact, and all of them come back. `restored` names the first by id.
        ids = sorted(str(r["id"]) for r in tx.run(
            "MATCH (c:Claim {namespace: $ns, id: $id})-[s:SUPERSEDES]->(old:Claim) "
            "WHERE old.status = 'superseded' AND s.undone_at_revision IS NULL "
            "SET old.status = 'current', old.restored_at_revision = $rev, "
            "old.vis_from = old.vis_from + [$rev], old.vis_to = old.vis_to + [$open], "
            "s.undone_at_revision = $rev, s.undone_at = $at, s.undone_reason = 'retracted' "
            "RETURN old.id AS id",
            ns=namespace, id=claim_id, rev=rev.number, at=rev.at, open=OPEN,
        ))
        restored = ids[0] if ids else None
    return RetractResult(id=claim_id, revision=rev.number, restored=restored)


def retract(driver: Driver, namespace: str, claim_id: str, reason: str,
            database: str | None = None) -> RetractResult:
    with driver.session(database=database) as session:
        return session.execute_write(_retract, namespace, claim_id, reason)


CLAIM_FIELDS = (
    "c {.id, .namespace, .content, .source, .claim_key, .tau, .metadata_json, .recorded_at, .revision, "
    ".valid_from, .valid_to, .status, .superseded_at_revision, .retracted_at_revision, .retraction_reason, "
    ".batch_index}"
)


def claim_from_record(row: dict[str, Any], default_tau: float) -> Claim:
    def dt(v: Any) -> str | None:
        return None if v is None else iso(to_py_datetime(v))

    return Claim(
        id=row["id"], namespace=row["namespace"], content=row["content"], source=row["source"],
        claim_key=row.get("claim_key"), tau=float(row.get("tau") or default_tau),
        metadata=json.loads(row.get("metadata_json") or "{}"), recorded_at=dt(row["recorded_at"]) or "",
        revision=int(row["revision"]), valid_from=dt(row.get("valid_from")), valid_to=dt(row.get("valid_to")),
        status=row["status"], superseded_at_revision=row.get("superseded_at_revision"),
        retracted_at_revision=row.get("retracted_at_revision"), retraction_reason=row.get("retraction_reason"),
    )


def get_claim(driver: Driver, namespace: str, claim_id: str, default_tau: float,
              database: str | None = None) -> Claim:
    records, _, _ = driver.execute_query(
        f"MATCH (c:Claim {{namespace: $ns, id: $id}}) RETURN {CLAIM_FIELDS} AS c",
        ns=namespace, id=claim_id, database_=database, routing_="r",
    )
    if not records:
        raise NotFoundError(f"no claim {claim_id!r} in namespace {namespace!r}", field="id")
    return claim_from_record(dict(records[0]["c"]), default_tau)


def as_datetime(value: Any) -> datetime | None:
    return None if value is None else to_py_datetime(value)
