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

from palimpsest.graph.claims import index as claim_index
from palimpsest.graph.claims import temporal
from palimpsest.graph.claims.index import namespace_label
from palimpsest.graph.claims.order import content_hash
from palimpsest.graph.claims.revisions import Revision, bump, optional_datetime, to_py_datetime
from palimpsest.graph.claims.visibility import OPEN, from_micros, micros
from palimpsest.schema.errors import ConflictError, ErasedError, NotFoundError
from palimpsest.schema.models import Claim, ClaimInput, IngestItemResult, RetractResult, iso


@dataclass(frozen=True)
class PreparedClaim:
    """A validated claim plus its embedding, ready to write; `index` is its place in the batch."""

    index: int
    claim: ClaimInput
    embedding: list[float]
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # The declared subject the embedding was computed with ("subject: content", schema.subjects);
    # stored as `search_subject` so what the vector saw is on the claim. None: content alone.
    subject: str | None = None


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


def input_hash(c: ClaimInput) -> str:
    """Identity of what a write asked for: every field of the input but its idempotency key.

    Stored on the claim (`input_hash`), so a reused idempotency key can tell a replay of the same
    input (`duplicate=true`) from different content under the same key (CONFLICT).
    """
    payload = {"content": c.content, "source": c.source, "claim_key": c.claim_key, "tau": c.tau,
               "valid_from": iso(c.valid_from), "valid_to": iso(c.valid_to), "metadata": c.metadata,
               "correction": c.correction}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _legacy_same(r: Any, c: ClaimInput) -> bool:
    """For a claim written before `input_hash` was stored: same content, source, key and window."""
    return (r["content_hash"] == content_hash(c.content) and r["source"] == c.source
            and r["claim_key"] == c.claim_key and _same_instant(r["valid_from"], c.valid_from)
            and _same_instant(r["valid_to"], c.valid_to))


def _same_instant(stored: Any, given: datetime | None) -> bool:
    if stored is None or given is None:
        return stored is None and given is None
    return bool(to_py_datetime(stored) == given)


def _props(p: PreparedClaim, namespace: str) -> dict[str, Any]:
    # Imported here: `graph.recall` is the whole recall pipeline, which read-only commands never load.
    from palimpsest.graph.text import stored_terms

    c = p.claim
    props: dict[str, Any] = {
        "input_hash": input_hash(c),
        "id": p.id,
        "namespace": namespace,
        "content": c.content,
        "content_hash": content_hash(c.content),
        "batch_index": p.index,  # order within one revision: a chain inside a batch stays in order
        "source": c.source,
        "metadata_json": json.dumps(c.metadata, sort_keys=True, separators=(",", ":")),
        # Recall's analysis of the content, made once here instead of at every recall that meets it.
        **stored_terms(c.content),
    }
    optional = {"claim_key": c.claim_key, "tau": c.tau, "valid_from": c.valid_from,
                "valid_to": c.valid_to, "idempotency_key": c.idempotency_key, "correction": c.correction or None,
                "search_subject": p.subject}
    props.update({k: v for k, v in optional.items() if v is not None})
    return props


def _write_batch(tx: ManagedTransaction, namespace: str, items: Sequence[PreparedClaim]) -> list[IngestItemResult]:
    rev = bump(tx, namespace, "ingest", len(items), claims=len(items))
    results: dict[int, IngestItemResult] = {}

    # Idempotency: a key seen before returns the first result — if the input is the same; the same
    # key with other content is a CONFLICT for that item (the stored claim stays). Checked under the lock.
    keyed = {p.claim.idempotency_key: p for p in items if p.claim.idempotency_key}
    fresh: list[PreparedClaim] = []
    if keyed:
        seen = {
            r["key"]: r
            for r in tx.run(
                "UNWIND $keys AS k MATCH (c:Claim {namespace: $ns, idempotency_key: k}) "
                "OPTIONAL MATCH (c)-[s:SUPERSEDES {reason: 'claim_key'}]->(old:Claim) WHERE s.revision = c.revision "
                "WITH k, c, min(CASE WHEN coalesce(s.kind, 'correction') = 'correction' THEN old.id END) "
                "AS supersedes, "
                "min(CASE WHEN s.kind = 'succession' THEN old.id END) AS closes "
                "RETURN k AS key, c.id AS id, c.revision AS revision, supersedes, closes, c.input_hash AS input_hash, "
                "c.content_hash AS content_hash, c.source AS source, c.claim_key AS claim_key, "
                "c.valid_from AS valid_from, c.valid_to AS valid_to",
                keys=sorted(keyed), ns=namespace,
            )
        }
        first_in_batch: dict[str, PreparedClaim] = {}

        def conflict(p: PreparedClaim, claim_id: str) -> IngestItemResult:
            return IngestItemResult(index=p.index, ok=False, error=ConflictError(
                f"idempotency_key {p.claim.idempotency_key!r} was already used for claim {claim_id} with other "
                "content; nothing was written for this item (use a new key for a new claim)",
                field="idempotency_key").to_dict())

        for p in items:
            key = p.claim.idempotency_key
            if key and key in seen:
                r = seen[key]
                same = r["input_hash"] == input_hash(p.claim) if r["input_hash"] else _legacy_same(r, p.claim)
                results[p.index] = IngestItemResult(index=p.index, ok=True, id=r["id"], revision=r["revision"],
                                                    supersedes=r["supersedes"], closes=r["closes"],
                                                    duplicate=True) if same else conflict(p, r["id"])
            elif key and key in first_in_batch:
                first = first_in_batch[key]
                results[p.index] = IngestItemResult(
                    index=p.index, ok=True, id=first.id, revision=rev.number, duplicate=True,
                ) if input_hash(first.claim) == input_hash(p.claim) else conflict(p, first.id)
            else:
                if key:
                    first_in_batch[key] = p
                fresh.append(p)
    else:
        fresh = list(items)
    if not fresh:
        raise _NothingToWrite([results[i] for i in sorted(results)])

    plans = _plan_keys(tx, namespace, fresh, rev.number)
    ends = {cid: until for st in plans.values() for cid, until in st.plan.ends.items()}
    tx.run(
        "UNWIND $rows AS row CREATE (c:Claim) SET c = row.props, c:$($label), c.revision = $rev, c.recorded_at = $at, "
        "c.status = 'current', c.vis_from = [$rev], c.vis_to = [$open], c.vis_until = [row.until], "
        "c.valid_until = row.valid_until "
        "WITH c, row CALL db.create.setNodeVectorProperty(c, 'embedding', "
        "[x IN split(row.embedding, ',') | toFloat(x)])",
        rows=[{"props": _props(p, namespace), "embedding": vector_text(p.embedding),
               **_until_row(ends.get(p.id, micros(p.claim.valid_to)))} for p in fresh],
        rev=rev.number, at=rev.at, open=OPEN, label=namespace_label(namespace),
    ).consume()
    if len(fresh) != len(items):
        # The bump counted every item; idempotent replays are not new claims (rare: one more statement).
        tx.run(
            "MATCH (s:Store {namespace: $ns}) MATCH (k:Commit {namespace: $ns, revision: $rev}) "
            "SET s.claims = s.claims - $replays, k.claims = k.claims - $replays",
            ns=namespace, rev=rev.number, replays=len(items) - len(fresh),
        ).consume()
    fresh_ids = {p.id for p in fresh}
    _apply_plans(tx, namespace, plans, rev, fresh_ids)
    supersedes: dict[str, str] = {}
    closes: dict[str, str] = {}
    for st in plans.values():
        for new_id, old_id in st.plan.corrections:
            supersedes.setdefault(new_id, old_id)
        for later, earlier in sorted(st.plan.add_successions):
            if later in fresh_ids:
                closes.setdefault(later, earlier)
    for p in fresh:
        results[p.index] = IngestItemResult(index=p.index, ok=True, id=p.id, revision=rev.number,
                                            supersedes=supersedes.get(p.id), closes=closes.get(p.id))
    return [results[i] for i in sorted(results)]


_LIVE_VERSIONS = (
    "UNWIND $keys AS k MATCH (c:Claim {namespace: $ns, claim_key: k}) WHERE c.status = 'current' "
    "RETURN k AS key, c.id AS id, c.revision AS revision, coalesce(c.batch_index, 0) AS pos, "
    "c.valid_from AS valid_from, c.valid_to AS valid_to, coalesce(c.correction, false) AS correction, "
    "coalesce(c.vis_until[-1], CASE WHEN c.valid_to IS NULL THEN $open END) AS until, "
    "COLLECT { MATCH (c)<-[s:SUPERSEDES {kind: 'succession'}]-(n:Claim) WHERE s.undone_at_revision IS NULL "
    "RETURN [n.id, c.id] } + COLLECT { MATCH (c)-[s:SUPERSEDES {kind: 'succession'}]->(o:Claim) "
    "WHERE s.undone_at_revision IS NULL RETURN [c.id, o.id] } AS edges"
)


@dataclass(frozen=True)
class _KeyState:
    plan: temporal.KeyPlan
    before: dict[str, int | None]  # effective end of each previously live version (None: unknown)
    declared: dict[str, int]       # stated end of each previously live version


def _plan_keys(tx: ManagedTransaction, namespace: str, fresh: Sequence[PreparedClaim], rev: int,
               extra_keys: Sequence[str] = ()) -> dict[str, _KeyState]:
    """Read the live versions of every key the batch writes (and of `extra_keys`) and plan each key's
    timeline (graph.claims.temporal)."""
    keys = sorted({p.claim.claim_key for p in fresh if p.claim.claim_key} | set(extra_keys))
    if not keys:
        return {}
    live: dict[str, list[temporal.Version]] = {k: [] for k in keys}
    before: dict[str, dict[str, int | None]] = {k: {} for k in keys}
    declared: dict[str, dict[str, int]] = {k: {} for k in keys}
    active: dict[str, set[tuple[str, str]]] = {k: set() for k in keys}
    for r in tx.run(_LIVE_VERSIONS, keys=keys, ns=namespace, open=OPEN):
        key, cid = r["key"], r["id"]
        live[key].append(_version(r))
        before[key][cid] = None if r["until"] is None else int(r["until"])
        declared[key][cid] = micros(optional_datetime(r["valid_to"]))
        active[key].update((str(a), str(b)) for a, b in r["edges"])
    incoming: dict[str, list[temporal.Version]] = {k: [] for k in keys}
    for p in fresh:
        if p.claim.claim_key:
            incoming[p.claim.claim_key].append(temporal.Version(
                p.id, (rev, p.index), p.claim.valid_from, p.claim.valid_to, p.claim.correction))
    # `active` holds every succession edge in force that touches a live version; an edge between two
    # versions that are no longer live was undone when the second of them stopped being live.
    return {key: _KeyState(temporal.plan_key(live[key], incoming[key], active[key]), before[key], declared[key])
            for key in keys}


def _until_row(until: int) -> dict[str, Any]:
    return {"until": until, "valid_until": from_micros(until)}


def _apply_plans(tx: ManagedTransaction, namespace: str, plans: dict[str, _KeyState], rev: Revision,
                 fresh_ids: set[str]) -> None:
    """Write what the key plans decided: corrections, changed world-time ends, succession edges."""
    pairs = [{"new": n, "old": o} for st in plans.values() for n, o in st.plan.corrections]
    if pairs:
        _supersede(tx, namespace, pairs, rev)
    corrected = {o for st in plans.values() for _, o in st.plan.corrections}
    changed = [
        {"id": cid, "declared": st.declared[cid], **_until_row(until)}
        for st in plans.values() for cid, until in sorted(st.plan.ends.items())
        if cid not in fresh_ids and cid not in corrected and st.before.get(cid) != until
    ]
    set_world_ends(tx, namespace, changed, rev.number)
    _relink(tx, namespace, plans_add=[p for st in plans.values() for p in sorted(st.plan.add_successions)],
            plans_drop=[p for st in plans.values() for p in sorted(st.plan.drop_successions)], rev=rev)


def set_world_ends(tx: ManagedTransaction, namespace: str, rows: list[dict[str, Any]], rev: int) -> None:
    """Give live claims a new world-time end from revision `rev` on: their open store interval is
    split at `rev`, so as-of recalls before it keep the old end. Rows: {id, declared, until, valid_until}."""
    if not rows:
        return
    tx.run(
        "UNWIND $rows AS row MATCH (c:Claim {namespace: $ns, id: row.id}) USING INDEX c:Claim(id) "
        "WITH c, row, coalesce(c.vis_until, [x IN c.vis_from | row.declared]) AS until "
        "SET c.valid_until = row.valid_until, c.vis_until = CASE WHEN c.vis_from[-1] = $rev "
        "  THEN until[..-1] + [row.until] ELSE until + [row.until] END, "
        "c.vis_from = CASE WHEN c.vis_from[-1] = $rev THEN c.vis_from ELSE c.vis_from + [$rev] END, "
        "c.vis_to = CASE WHEN c.vis_from[-1] = $rev THEN c.vis_to ELSE c.vis_to[..-1] + [$rev, $open] END",
        rows=rows, ns=namespace, rev=rev, open=OPEN,
    ).consume()


def _relink(tx: ManagedTransaction, namespace: str, *, plans_add: list[tuple[str, str]],
            plans_drop: list[tuple[str, str]], rev: Revision) -> None:
    """Succession edges follow the timeline: (later)-[:SUPERSEDES {kind: 'succession'}]->(earlier) for
    each pair where the later version's start closes the earlier window; undone when that stops."""
    if plans_drop:
        tx.run(
            "UNWIND $pairs AS pair MATCH (n:Claim {namespace: $ns, id: pair[0]})-[s:SUPERSEDES {kind: 'succession'}]->"
            "(o:Claim {namespace: $ns, id: pair[1]}) WHERE s.undone_at_revision IS NULL "
            "SET s.undone_at_revision = $rev, s.undone_at = $at, s.undone_reason = 'timeline changed'",
            pairs=[list(p) for p in plans_drop], ns=namespace, rev=rev.number, at=rev.at,
        ).consume()
    if plans_add:
        tx.run(
            "UNWIND $pairs AS pair "
            "MATCH (n:Claim {namespace: $ns, id: pair[0]}), (o:Claim {namespace: $ns, id: pair[1]}) "
            "USING INDEX n:Claim(id) USING INDEX o:Claim(id) "
            "CREATE (n)-[:SUPERSEDES {revision: $rev, at: $at, reason: 'claim_key', kind: 'succession', "
            "valid_until: o.valid_until}]->(o)",
            pairs=[list(p) for p in plans_add], ns=namespace, rev=rev.number, at=rev.at,
        ).consume()


def _supersede(tx: ManagedTransaction, namespace: str, pairs: list[dict[str, str]], rev: Revision) -> None:
    """Hide every corrected claim at every world time and link it, in one statement.

    One UNWIND instead of one round-trip per pair (~200 per 1,000-claim batch at 20% key reuse).
    Row order cannot matter: each claim is corrected at most once (`graph.claims.temporal.plan_key` removes
    it from the live versions), so no row reads what another row writes.
    """
    tx.run(
        "UNWIND $pairs AS pair "
        "MATCH (new:Claim {namespace: $ns, id: pair.new}), (old:Claim {namespace: $ns, id: pair.old}) "
        "USING INDEX new:Claim(id) USING INDEX old:Claim(id) "
        "SET old.status = 'superseded', old.superseded_at_revision = $rev, "
        "old.vis_to = old.vis_to[..-1] + [$rev] "
        "CREATE (new)-[:SUPERSEDES {revision: $rev, at: $at, reason: 'claim_key', kind: 'correction'}]->(old)",
        pairs=pairs, ns=namespace, rev=rev.number, at=rev.at,
    ).consume()


def write_claims(driver: Driver, namespace: str, items: Sequence[PreparedClaim],
                 database: str | None = None) -> list[IngestItemResult]:
    """Write one batch atomically; the driver retries transient failures (deadlocks, leader switch)."""
    if not items:
        return []
    with driver.session(database=database) as session:
        try:
            written = session.execute_write(_write_batch, namespace, items)
        except _NothingToWrite as replay:
            return replay.results
    # After the commit: a namespace that has just reached the exact-search limit gets its own indexes
    # (a no-op, one read, for every other write). The write stands either way: a failure here leaves
    # the namespace on exact search, and the next write or the worker's next pass tries again.
    claim_index.ensure_quietly(driver, namespace, database)
    return written


def _retract(tx: ManagedTransaction, namespace: str, claim_id: str, reason: str) -> RetractResult:
    """Retract a claim and undo exactly what it changed, on both axes (`undo_claim`)."""
    # Lock first, then read: the status must be the one no concurrent writer can still change.
    # Raising below rolls the whole transaction back, revision bump included.
    rev = bump(tx, namespace, "retract", 1)
    found = tx.run("MATCH (c:Claim {namespace: $ns, id: $id}) RETURN c.status AS status, c.claim_key AS key",
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
    restored_ids = undo_claim(tx, namespace, claim_id, found["key"], was_current, rev, "retracted")
    return RetractResult(id=claim_id, revision=rev.number, restored=restored_ids[0] if restored_ids else None)


def undo_claim(tx: ManagedTransaction, namespace: str, claim_id: str, key: str | None, was_current: bool,
               rev: Revision, why: str) -> list[str]:
    """Undo exactly what a claim changed, on both axes, at revision `rev`; returns the ids restored.

    The one restoration path of retraction and erasure (graph.lifecycle.erase): the caller has already taken
    the claim out of the live versions (its status is no longer `current`). What it hid comes back —
    unless a later version of the same key, still standing, would itself have corrected it (then
    that version hides it from now on, so a key never gets a second live version at one instant).
    Corrections it made are undone even when the claim was no longer live itself; an inferred
    supersession is undone when the claim was still live (an inferred chain old ← middle ← newest
    keeps hiding `old` when `middle` goes). Then every key it touched has its world-time timeline
    recomputed (graph.claims.temporal), which reopens a window it had closed.
    """
    hidden = [dict(r) for r in tx.run(
        "MATCH (c:Claim {namespace: $ns, id: $id})-[s:SUPERSEDES]->(old:Claim) "
        "WHERE old.status = 'superseded' AND s.undone_at_revision IS NULL "
        "AND coalesce(s.kind, '') <> 'succession' AND ($was_current OR s.reason = 'claim_key') "
        "RETURN old.id AS id, old.claim_key AS key, old.revision AS revision, coalesce(old.batch_index, 0) AS pos, "
        "old.valid_from AS valid_from, old.valid_to AS valid_to, coalesce(old.correction, false) AS correction "
        "ORDER BY old.id",
        ns=namespace, id=claim_id, was_current=was_current,
    )]
    keep_hidden = _still_corrected(tx, namespace, claim_id, hidden)
    restored_ids = [h["id"] for h in hidden if h["id"] not in keep_hidden]
    tx.run(
        "MATCH (c:Claim {namespace: $ns, id: $id})-[s:SUPERSEDES]->(old:Claim) "
        "WHERE old.id IN $ids AND s.undone_at_revision IS NULL "
        "SET s.undone_at_revision = $rev, s.undone_at = $at, s.undone_reason = $why",
        ns=namespace, id=claim_id, ids=[h["id"] for h in hidden], rev=rev.number, at=rev.at, why=why,
    ).consume()
    restore(tx, namespace, [(h["id"], optional_datetime(h["valid_to"])) for h in hidden if h["id"] in restored_ids],
            rev.number)
    if keep_hidden:
        tx.run(
            "UNWIND $pairs AS pair "
            "MATCH (new:Claim {namespace: $ns, id: pair[0]}), (old:Claim {namespace: $ns, id: pair[1]}) "
            "CREATE (new)-[:SUPERSEDES {revision: $rev, at: $at, reason: 'claim_key', kind: 'correction'}]->(old)",
            pairs=[[by, old] for old, by in sorted(keep_hidden.items())], ns=namespace, rev=rev.number, at=rev.at,
        ).consume()
    keys = sorted({str(k) for k in [key, *(h["key"] for h in hidden if h["id"] in restored_ids)] if k})
    if keys:
        plans = _plan_keys(tx, namespace, [], rev.number, keys)
        _apply_plans(tx, namespace, plans, rev, set())
    return restored_ids


def restore(tx: ManagedTransaction, namespace: str, claims: Sequence[tuple[str, datetime | None]], rev: int) -> None:
    """Make hidden claims current again from revision `rev` on: a new store interval opens, with the
    claim's stated end (`valid_to`, given with each id); the key's timeline, recomputed by the caller,
    caps it where a later version starts."""
    if not claims:
        return
    tx.run(
        "UNWIND $rows AS row MATCH (old:Claim {namespace: $ns, id: row.id}) USING INDEX old:Claim(id) "
        "SET old.status = 'current', old.restored_at_revision = $rev, "
        "old.vis_until = coalesce(old.vis_until, [x IN old.vis_from | row.declared]) + [row.declared], "
        "old.vis_from = old.vis_from + [$rev], old.vis_to = old.vis_to + [$open], old.valid_until = old.valid_to",
        rows=[{"id": cid, "declared": micros(valid_to)} for cid, valid_to in claims],
        ns=namespace, rev=rev, open=OPEN,
    ).consume()


def _still_corrected(tx: ManagedTransaction, namespace: str, retracted: str,
                     hidden: list[dict[str, Any]]) -> dict[str, str]:
    """Of the keyed claims `retracted` had corrected, those a later, still-standing version of their key
    corrects as well (graph.claims.temporal.corrects): old id → the earliest such version. Standing: current or
    superseded — not retracted, and not a claim an erasure is taking out in the same transaction."""
    keyed = [h for h in hidden if h["key"] is not None]
    if not keyed:
        return {}
    later = tx.run(
        "UNWIND $keys AS k MATCH (c:Claim {namespace: $ns, claim_key: k}) "
        "WHERE c.status IN ['current', 'superseded'] AND c.id <> $retracted "
        "RETURN k AS key, c.id AS id, c.revision AS revision, coalesce(c.batch_index, 0) AS pos, "
        "c.valid_from AS valid_from, c.valid_to AS valid_to, coalesce(c.correction, false) AS correction",
        keys=sorted({h["key"] for h in keyed}), ns=namespace, retracted=retracted,
    )
    versions: dict[str, list[temporal.Version]] = {}
    for r in later:
        versions.setdefault(r["key"], []).append(_version(r))
    out: dict[str, str] = {}
    for h in keyed:
        old = _version(h)
        hits = sorted((v for v in versions.get(h["key"], []) if v.order > old.order and temporal.corrects(v, old)),
                      key=lambda v: (v.order, v.id))
        if hits:
            out[h["id"]] = hits[0].id
    return out


def _version(r: Any) -> temporal.Version:
    """A claim row (id, revision, pos, valid_from, valid_to, correction) as the timeline rules see it."""
    return temporal.Version(str(r["id"]), (int(r["revision"]), int(r["pos"])), optional_datetime(r["valid_from"]),
                            optional_datetime(r["valid_to"]), bool(r["correction"]))


def stored_idempotency_keys(driver: Driver, namespace: str, keys: Sequence[str],
                            database: str | None = None) -> set[str]:
    """Which of `keys` a claim of the namespace already holds (one index lookup each: they are unique)."""
    records, _, _ = driver.execute_query(
        "UNWIND $keys AS k MATCH (c:Claim {namespace: $ns, idempotency_key: k}) RETURN k",
        keys=list(keys), ns=namespace, database_=database, routing_="r",
    )
    return {str(r["k"]) for r in records}


def retract(driver: Driver, namespace: str, claim_id: str, reason: str,
            database: str | None = None) -> RetractResult:
    with driver.session(database=database) as session:
        return session.execute_write(_retract, namespace, claim_id, reason)


CLAIM_FIELDS = (
    "c {.id, .namespace, .content, .source, .claim_key, .tau, .metadata_json, .recorded_at, .revision, "
    ".valid_from, .valid_to, .valid_until, .status, .superseded_at_revision, .retracted_at_revision, "
    ".retraction_reason, .batch_index}"
)


def claim_from_record(row: dict[str, Any], default_tau: float) -> Claim:
    def dt(v: Any) -> str | None:
        return None if v is None else iso(to_py_datetime(v))

    return Claim(
        id=row["id"], namespace=row["namespace"], content=row["content"], source=row["source"],
        claim_key=row.get("claim_key"), tau=float(row.get("tau") or default_tau),
        metadata=json.loads(row.get("metadata_json") or "{}"), recorded_at=dt(row["recorded_at"]) or "",
        revision=int(row["revision"]), valid_from=dt(row.get("valid_from")), valid_to=dt(row.get("valid_to")),
        valid_until=dt(row.get("valid_until", row.get("valid_to"))) if row["status"] == "current" else None,
        status=row["status"], superseded_at_revision=row.get("superseded_at_revision"),
        retracted_at_revision=row.get("retracted_at_revision"), retraction_reason=row.get("retraction_reason"),
    )


def get_claim(driver: Driver, namespace: str, claim_id: str, default_tau: float,
              database: str | None = None) -> Claim:
    records, _, _ = driver.execute_query(
        f"OPTIONAL MATCH (c:Claim {{namespace: $ns, id: $id}}) RETURN {CLAIM_FIELDS} AS c, "
        "COLLECT { MATCH (e:ErasedClaim {namespace: $ns, id: $id}) RETURN e.erased_at_revision } AS erased",
        ns=namespace, id=claim_id, database_=database, routing_="r",
    )
    found = records[0]
    if found["c"] is None:
        if found["erased"]:
            raise ErasedError(f"claim {claim_id!r} was erased at revision {found['erased'][0]}", field="id")
        raise NotFoundError(f"no claim {claim_id!r} in namespace {namespace!r}", field="id")
    return claim_from_record(dict(found["c"]), default_tau)

