"""Inferred supersession in the store: candidate reads, the race-safe write, and recall's lookups.

The worker (in `api`) finds, for each newly written claim without a claim_key, the older claims
that share an entity with it and are close in embedding space (`inference_candidates`), lets
the judge in `extraction.supersession` decide, and hands the decisions to the projections
commit, which calls `write_inferred` inside its own transaction. Three rules keep it exact:

* **A new store revision.** A supersession changes what recall shows, so it gets its own
  revision, bumped in the writing transaction exactly as an ingest does (`graph.claims.revisions`).
  That bump takes the Store's write lock, so the checks that follow cannot race an ingest, a
  retraction or another worker; and the old claim's visibility closes *at that revision*, so an
  as-of recall before it still sees the old claim, and one at or after it does not.
* **Only what is still current.** Under the lock both claims are re-read: a pair whose older
  claim was meanwhile superseded, retracted or already linked (a worker re-run), or whose newer
  claim was retracted, is dropped. Nothing left → no bump, no revision spent. Re-running the
  worker therefore writes nothing twice.
* **Never across a key's chain.** A claim with a `claim_key` is never the older side: its writer
  said how its versions relate (docs/TEMPORAL.md), and an inferred edge into a key's chain could
  leave two live versions of the key once either side is retracted.
* **Undone by retraction.** The relationship is an ordinary `SUPERSEDES` with
  `reason: 'inferred'` and its `confidence`, so `graph.claims.store.retract` of the newer claim restores
  the older one exactly as it does for claim_key supersession.

Nothing here calls a model: embeddings are compared by `vector.similarity.cosine` in Cypher.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from neo4j import Driver, ManagedTransaction

from palimpsest.graph.claims.index import text_hits, vector_hits
from palimpsest.graph.claims.revisions import bump, optional_datetime
from palimpsest.graph.claims.visibility import OPEN, current_at, windows_overlap
from palimpsest.graph.similarity import cosine_from_index
from palimpsest.schema.errors import NotFoundError
from palimpsest.schema.models import InferredLink, UndoInferenceResult

REASON = "inferred"


@dataclass(frozen=True)
class InferenceClaim:
    """A claim as the judge sees it: text and entity names, plus what ordering and visibility need."""

    id: str
    content: str
    claim_key: str | None
    revision: int
    batch_index: int
    entities: frozenset[str]       # Entity.name of every entity it MENTIONS (stored or from this batch)


@dataclass(frozen=True)
class SubjectCandidates:
    subject: InferenceClaim
    candidates: list[tuple[InferenceClaim, float]]   # (older claim, cosine in [-1, 1]), best first


@dataclass(frozen=True)
class InferredWrite:
    newer_id: str
    older_id: str
    revision: int          # the revision of the newer claim whose processing found the pair
    confidence: float
    kind: str
    reason: str


_ROW = ("{id: c.id, content: c.content, claim_key: c.claim_key, revision: c.revision, "
        "batch_index: coalesce(c.batch_index, 0), status: c.status, vis_from: c.vis_from, vis_to: c.vis_to, "
        "valid_from: c.valid_from, valid_to: c.valid_to}")


def inference_candidates(driver: Driver, namespace: str, subject_ids: Sequence[str], *,
                         extra_mentions: Mapping[str, Set[str]] | None = None,
                         extra_names: Mapping[str, str] | None = None,
                         extra_canonicals: Mapping[str, str] | None = None, min_similarity: float, limit: int,
                         neighbours: bool = False, neighbour_similarity: float | None = None,
                         lexical: Mapping[str, Sequence[str]] | None = None,
                         database: str | None = None) -> list[SubjectCandidates]:
    """For each subject (a claim id), the older claims it may supersede.

    Candidates share at least one entity with the subject — by stored MENTIONS or by
    `extra_mentions` (claim id → entity ids the current batch is about to write, since the batch's
    own links are committed together with the decisions) — were written before it (revision,
    then position in the batch), were current at the subject's revision and still are, have a
    world-time window overlapping the subject's and do not start after it, and have cosine ≥
    `min_similarity`; at most `limit`, best cosine first (then id). Subjects that are no longer
    current (retracted since) are skipped. `extra_names` / `extra_canonicals` name the batch's new
    entities.

    "Share an entity" counts an entity whose canonical name contains the other's as a run of
    words ("james petrova s" from "James Petrova's", "warfarin for priya osei" from a capitalised
    sentence start, and "james petrova"): the offline extractor makes such twins, and without
    this two versions of one patient's dose would never meet. The judge then decides whether
    the subjects really agree.

    With `neighbours`, candidates need no shared entity (most updates name none the extractor
    finds: a plan's price, a ward's bed count): the subject's nearest neighbours in the namespace
    by the vector index with cosine ≥ `neighbour_similarity`, and claims the fulltext index finds
    for the subject's own names and codes (`lexical`: subject id → canonical phrases, at most 4),
    pass the same tests. Entity, vector and fulltext candidates are merged by cosine and capped
    at `limit` per subject, so the judge's work stays bounded whatever the namespace holds.
    """
    if not subject_ids:
        return []
    floor = min_similarity if neighbour_similarity is None else neighbour_similarity
    with driver.session(database=database, default_access_mode="READ") as session:
        return session.execute_read(_candidates, namespace, list(subject_ids), dict(extra_mentions or {}),
                                    dict(extra_names or {}), dict(extra_canonicals or {}), min_similarity,
                                    max(1, limit), floor if neighbours else None, dict(lexical or {}))


def _related(tx: ManagedTransaction, ns: str, entity_ids: Set[str], extra_canonicals: Mapping[str, str],
             memo: dict[str, set[str]]) -> set[str]:
    """Entity ids whose canonical name contains, or is contained in, one of `entity_ids`' names."""
    missing = sorted(set(entity_ids) - set(extra_canonicals))
    canon = dict(extra_canonicals)
    if missing:
        canon.update({str(r["id"]): str(r["k"]) for r in tx.run(
            "UNWIND $ids AS id MATCH (e:Entity {namespace: $ns, id: id}) RETURN e.id AS id, e.canonical AS k",
            ids=missing, ns=ns,
        )})
    out: set[str] = set(entity_ids)
    for key in sorted({canon[e] for e in entity_ids if e in canon}):
        if key not in memo:
            padded = f" {key} "
            found = {str(r["id"]) for r in tx.run(
                "MATCH (x:Entity {namespace: $ns}) "
                "WHERE (' ' + x.canonical + ' ') CONTAINS $padded OR $padded CONTAINS (' ' + x.canonical + ' ') "
                "RETURN x.id AS id",
                ns=ns, padded=padded,
            )}
            found |= {eid for eid, k in extra_canonicals.items() if padded in f" {k} " or f" {k} " in padded}
            memo[key] = found
        out |= memo[key]
    return out


_ADMISSIBLE = ("c.id <> n.id AND c.status = 'current' AND c.claim_key IS NULL "
               "AND (c.revision < n.revision OR (c.revision = n.revision "
               "     AND coalesce(c.batch_index, 0) < coalesce(n.batch_index, 0)))")


def _neighbours(tx: ManagedTransaction, ns: str, sid: str, floor: float, limit: int,
                phrases: Sequence[str]) -> list[tuple[dict[str, Any], float]]:
    """Rows of the subject's vector neighbours in its namespace (graph.claims.index; the fetch grows
    past inadmissible ones, as graph.projections does) and of the fulltext hits for its names,
    admissible by write order and status, with cosine ≥ `floor`; best first, at most a few times
    `limit` (visibility is checked by the caller)."""
    threshold = (1.0 + floor) / 2.0
    want = limit * 4
    fetch = max(limit * 8, 50)
    rows: dict[str, tuple[dict[str, Any], float]] = {}
    while True:
        record = tx.run(
            "MATCH (st:Store {namespace: $ns}) MATCH (n:Claim {namespace: $ns, id: $id}) "
            + vector_hits("st", "n.embedding", "$fetch", ("n",)) +
            "WITH n, node, score "
            "WITH n, count(*) AS raw, min(score) AS lowest, collect({c: node, score: score}) AS hits "
            "UNWIND hits AS h WITH n, raw, lowest, h.c AS c, h.score AS score "
            f"WHERE c.namespace = $ns AND score >= $threshold AND {_ADMISSIBLE} "
            f"RETURN raw, lowest, collect({{row: {_ROW}, score: score}}) AS found",
            ns=ns, id=sid, fetch=fetch, threshold=threshold,
        ).single()
        if record is None:
            break
        for h in record["found"]:
            rows[str(h["row"]["id"])] = (dict(h["row"]), round(cosine_from_index(float(h["score"])), 6))
        raw, lowest = int(record["raw"]), record["lowest"]
        if len(rows) >= want or raw < fetch or lowest is None or float(lowest) < threshold or fetch >= 4000:
            break
        fetch = min(fetch * 4, 4000)
    queries = sorted({q for q in (_lucene(p) for p in phrases[:4]) if q})
    if queries:
        for r in tx.run(
            "MATCH (st:Store {namespace: $ns}) MATCH (n:Claim {namespace: $ns, id: $id}) "
            "UNWIND $queries AS q "
            + text_hits("st", "q", "$flimit", ("q",)) +
            # Prefix queries score every match alike, so an answer that fills the limit is a subset Lucene
            # chose by its document order (which a rebuilt index does not keep): such a name, held by that
            # many claims, is no lexical guide and is left out. (The exact scan of a small namespace —
            # null scores — returns every claim, for the cosine below to judge.)
            "WITH n, q, collect([node, score]) AS hits WHERE size(hits) < $flimit OR hits[0][1] IS NULL "
            "UNWIND hits AS hit WITH DISTINCT n, hit[0] AS c "
            f"WHERE c.namespace = $ns AND {_ADMISSIBLE} "
            "WITH n, c, vector.similarity.cosine(n.embedding, c.embedding) AS score WHERE score >= $threshold "
            f"RETURN {_ROW} AS row, score ORDER BY score DESC, row.id LIMIT $want",
            ns=ns, id=sid, queries=queries, flimit=max(want * 4, 100), threshold=threshold, want=want,
        ):
            rows.setdefault(str(r["row"]["id"]), (dict(r["row"]), round(cosine_from_index(float(r["score"])), 6)))
    return sorted(rows.values(), key=lambda t: (-t[1], str(t[0]["id"])))


_LUCENE_TOKEN = re.compile(r"[a-z0-9]+")


def _lucene(phrase: str) -> str | None:
    """A fulltext query for a canonical phrase: every token as a term prefix (codes like "po 7781"
    are split by the analyzer the same way)."""
    toks = _LUCENE_TOKEN.findall(phrase.lower())
    if not toks or len(toks) > 6:
        return None
    return " AND ".join(f"{t}*" for t in toks)


def _candidates(tx: ManagedTransaction, ns: str, subject_ids: list[str], extra: dict[str, Set[str]],
                extra_names: dict[str, str], extra_canonicals: dict[str, str], min_cos: float,
                limit: int, floor: float | None = None,
                lexical: dict[str, Sequence[str]] | None = None) -> list[SubjectCandidates]:
    memo: dict[str, set[str]] = {}
    by_entity: dict[str, set[str]] = {}
    for cid, eids in extra.items():
        for eid in eids:
            by_entity.setdefault(eid, set()).add(cid)
    names = dict(extra_names)
    out: list[SubjectCandidates] = []
    for sid in subject_ids:
        record = tx.run(
            f"MATCH (c:Claim {{namespace: $ns, id: $id}}) OPTIONAL MATCH (c)-[:MENTIONS]->(e:Entity) "
            f"RETURN {_ROW} AS row, collect({{id: e.id, name: e.name}}) AS ents",
            ns=ns, id=sid,
        ).single()
        if record is None or record["row"]["status"] != "current":
            continue
        row = dict(record["row"])
        entity_ids = {e["id"] for e in record["ents"] if e["id"] is not None} | set(extra.get(sid, ()))
        names.update({e["id"]: e["name"] for e in record["ents"] if e["id"] is not None})
        if not entity_ids and floor is None:
            continue
        search = _related(tx, ns, entity_ids, extra_canonicals, memo) if entity_ids else set()
        in_batch = sorted({cid for eid in search for cid in by_entity.get(eid, ())} - {sid})
        rows: Any = tx.run(
            "MATCH (n:Claim {namespace: $ns, id: $id}) "
            "CALL () { "
            "  UNWIND $eids AS eid MATCH (c:Claim {namespace: $ns})-[:MENTIONS]->(:Entity {namespace: $ns, id: eid}) "
            "  RETURN c "
            "  UNION "
            "  UNWIND $extra AS cid MATCH (c:Claim {namespace: $ns, id: cid}) RETURN c "
            "} "
            "WITH DISTINCT n, c WHERE c.id <> n.id AND c.status = 'current' AND c.claim_key IS NULL "
            "AND (c.revision < n.revision OR (c.revision = n.revision "
            "     AND coalesce(c.batch_index, 0) < coalesce(n.batch_index, 0))) "
            "WITH n, c, vector.similarity.cosine(n.embedding, c.embedding) AS score WHERE score >= $threshold "
            "WITH c, score ORDER BY score DESC, c.id LIMIT $limit "
            "OPTIONAL MATCH (c)-[:MENTIONS]->(e:Entity) "
            f"RETURN {_ROW} AS row, score, collect({{id: e.id, name: e.name}}) AS ents "
            "ORDER BY score DESC, row.id",
            ns=ns, id=sid, eids=sorted(search), extra=in_batch,
            threshold=(1.0 + (min_cos if floor is None else min(min_cos, floor))) / 2.0,
            limit=limit * 4,  # visibility at the subject's revision is checked below, so over-fetch
        ) if search or in_batch else []
        pool: dict[str, tuple[dict[str, Any], set[str], float]] = {}
        for r in rows:
            cand = dict(r["row"])
            pool[str(cand["id"])] = (cand, {e["id"] for e in r["ents"] if e["id"] is not None},
                                     round(cosine_from_index(float(r["score"])), 6))
            names.update({e["id"]: e["name"] for e in r["ents"] if e["id"] is not None})
        if floor is not None:
            found = [(row_, cos_) for row_, cos_ in _neighbours(tx, ns, sid, floor, limit, (lexical or {}).get(sid, ()))
                     if str(row_["id"]) not in pool]
            ents_of: dict[str, set[str]] = {}
            if found:
                for r in tx.run(
                    "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id}) "
                    "OPTIONAL MATCH (c)-[:MENTIONS]->(e:Entity) RETURN id, collect({id: e.id, name: e.name}) AS ents",
                    ids=[str(row_["id"]) for row_, _ in found], ns=ns,
                ):
                    ents_of[str(r["id"])] = {e["id"] for e in r["ents"] if e["id"] is not None}
                    names.update({e["id"]: e["name"] for e in r["ents"] if e["id"] is not None})
            for row_, cos_ in found:
                pool[str(row_["id"])] = (row_, ents_of.get(str(row_["id"]), set()), cos_)
        kept: list[tuple[dict[str, Any], set[str], float]] = []
        for cand, cand_ents, cos in sorted(pool.values(), key=lambda t: (-t[2], str(t[0]["id"]))):
            if not current_at(cand["vis_from"], cand["vis_to"], int(row["revision"])):
                continue
            if not windows_overlap(optional_datetime(row["valid_from"]), optional_datetime(row["valid_to"]),
                                   optional_datetime(cand["valid_from"]), optional_datetime(cand["valid_to"])):
                continue
            s_from, c_from = optional_datetime(row["valid_from"]), optional_datetime(cand["valid_from"])
            if s_from is not None and c_from is not None and s_from < c_from:
                continue  # the newer write states an earlier state of the world: it replaces nothing
            ents = cand_ents | set(extra.get(cand["id"], ()))
            kept.append((cand, ents, cos))
            if len(kept) >= limit:
                break
        # Entities the batch links but the store already knows are named by the store.
        unnamed = sorted((entity_ids | {e for _, ents, _ in kept for e in ents}) - set(names))
        if unnamed:
            names.update({str(r["id"]): str(r["name"]) for r in tx.run(
                "UNWIND $ids AS id MATCH (e:Entity {namespace: $ns, id: id}) RETURN e.id AS id, e.name AS name",
                ids=unnamed, ns=ns,
            )})
        out.append(SubjectCandidates(_claim(row, entity_ids, names),
                                     [(_claim(cand, ents, names), cos) for cand, ents, cos in kept]))
    return out


def _claim(row: Mapping[str, Any], entity_ids: Set[str], names: Mapping[str, str]) -> InferenceClaim:
    return InferenceClaim(str(row["id"]), str(row["content"]), row["claim_key"], int(row["revision"]),
                          int(row["batch_index"]), frozenset(names.get(e, e) for e in entity_ids))


def write_inferred(tx: ManagedTransaction, namespace: str, writes: Sequence[InferredWrite]) -> int:
    """Record inferred supersessions in the caller's write transaction; returns how many were written.

    The caller must already hold the Store's write lock or take it here: `bump` does, before the
    re-read that drops pairs no longer valid. Rows are independent (each older claim appears at
    most once, as the planner guarantees), so the order of the UNWIND cannot matter.
    """
    if not writes:
        return 0
    rows = [{"newer": w.newer_id, "older": w.older_id, "revision": int(w.revision),
             "confidence": float(w.confidence), "kind": w.kind, "reason": w.reason[:300]}
            for w in sorted(writes, key=lambda w: (w.revision, w.newer_id, w.older_id))]
    # Lock first (a no-op SET on the Store node), then re-read under the lock.
    tx.run("MATCH (s:Store {namespace: $ns}) SET s.inferred_at = datetime.transaction()", ns=namespace).consume()
    valid = [r for r in rows if r["newer"] != r["older"]]
    still = {(rec["newer"], rec["older"]) for rec in tx.run(
        "UNWIND $rows AS r "
        "MATCH (n:Claim {namespace: $ns, id: r.newer}), (o:Claim {namespace: $ns, id: r.older}) "
        "WHERE n.status = 'current' AND o.status = 'current' AND o.vis_to[-1] = $open AND o.claim_key IS NULL "
        "AND NOT EXISTS { (n)-[:SUPERSEDES]->(o) } "
        "RETURN r.newer AS newer, r.older AS older",
        rows=valid, ns=namespace, open=OPEN,
    )}
    keep = [r for r in valid if (r["newer"], r["older"]) in still]
    if not keep:
        return 0
    rev = bump(tx, namespace, "infer", len(keep))
    tx.run(
        "UNWIND $rows AS r "
        "MATCH (n:Claim {namespace: $ns, id: r.newer}), (o:Claim {namespace: $ns, id: r.older}) "
        "SET o.status = 'superseded', o.superseded_at_revision = $rev, o.vis_to = o.vis_to[..-1] + [$rev] "
        "CREATE (n)-[:SUPERSEDES {revision: $rev, at: $at, reason: $reason, confidence: r.confidence, "
        "kind: r.kind, detail: r.reason, found_at_revision: r.revision}]->(o)",
        rows=keep, ns=namespace, rev=rev.number, at=rev.at, reason=REASON,
    ).consume()
    return len(keep)


# ------------------------------------------------------------------------------------ recall side
def hidden_by_inference(tx: ManagedTransaction, namespace: str, ids: Sequence[str], revision: int) -> set[str]:
    """Of `ids` (claims recall hid as superseded at `revision`), those hidden by an inferred
    supersession in force at that revision — so a packet can say how much of what it hid was
    the worker's inference rather than a writer's claim_key."""
    if not ids:
        return set()
    rows = tx.run(
        "UNWIND $ids AS id MATCH (o:Claim {namespace: $ns, id: id})<-[s:SUPERSEDES]-(:Claim {namespace: $ns}) "
        "WHERE s.reason = $reason AND s.revision <= $rev "
        "AND (s.undone_at_revision IS NULL OR s.undone_at_revision > $rev) "
        "RETURN DISTINCT id",
        ids=sorted(set(ids)), ns=namespace, rev=revision, reason=REASON,
    )
    return {str(r["id"]) for r in rows}


def supersession_reasons(tx: ManagedTransaction, namespace: str, ids: Sequence[str],
                         revision: int) -> dict[str, dict[str, Any]]:
    """For each of `ids` superseded at `revision`: the supersession in force then, as
    {by, reason, confidence, revision} (confidence is None for claim_key and manual ones)."""
    if not ids:
        return {}
    rows = tx.run(
        "UNWIND $ids AS id MATCH (o:Claim {namespace: $ns, id: id})<-[s:SUPERSEDES]-(n:Claim {namespace: $ns}) "
        "WHERE s.revision <= $rev AND (s.undone_at_revision IS NULL OR s.undone_at_revision > $rev) "
        "RETURN id, n.id AS by, s.reason AS reason, s.confidence AS confidence, s.revision AS revision "
        "ORDER BY id, revision DESC, by",
        ids=sorted(set(ids)), ns=namespace, rev=revision,
    )
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        out.setdefault(str(r["id"]), {"by": r["by"], "reason": r["reason"], "confidence": r["confidence"],
                                      "revision": int(r["revision"])})
    return out


def inferred_successors(tx: ManagedTransaction, namespace: str, ids: Sequence[str], revision: int,
                        max_hops: int = 16) -> dict[str, str]:
    """For each of `ids`, the claim that replaces it at `revision` by a chain of inferred
    supersessions in force then (old → … → the end of the chain), when that end is current at
    `revision`. Recall can let an inferred-superseded candidate lend its match to its successor,
    as claim_key versions do (an inferred chain has no key to look the versions up by)."""
    if not ids:
        return {}
    rows = tx.run(
        "UNWIND $ids AS id MATCH (o:Claim {namespace: $ns, id: id}) "
        f"MATCH p = (o)<-[:SUPERSEDES*1..{int(max_hops)}]-(n:Claim {{namespace: $ns}}) "
        "WHERE all(s IN relationships(p) WHERE s.reason = $reason AND s.revision <= $rev "
        "          AND (s.undone_at_revision IS NULL OR s.undone_at_revision > $rev)) "
        "AND any(i IN range(0, size(n.vis_from) - 1) WHERE n.vis_from[i] <= $rev AND $rev < n.vis_to[i]) "
        "RETURN id, n.id AS successor ORDER BY id, length(p), successor",
        ids=sorted(set(ids)), ns=namespace, rev=revision, reason=REASON,
    )
    out: dict[str, str] = {}
    for r in rows:
        out.setdefault(str(r["id"]), str(r["successor"]))
    return out


# ------------------------------------------------------------------------------ listing and undoing
_LINK_FIELDS = ("{newer_id: n.id, older_id: o.id, newer_content: n.content, older_content: o.content, "
                "revision: s.revision, found_at_revision: s.found_at_revision, confidence: s.confidence, "
                "kind: s.kind, reason: s.detail, undone_at_revision: s.undone_at_revision, "
                "undone_reason: s.undone_reason}")


def inferred_links(tx: ManagedTransaction, namespace: str, claim_ids: Sequence[str] | None, revision: int, *,
                   include_undone: bool = False, limit: int = 100) -> list[InferredLink]:
    """The inferred supersessions recorded by `revision` that touch any of `claim_ids` (as the newer
    or the older side; None: the whole namespace), oldest first. Without `include_undone`, only those
    in force at `revision` — what a packet at that revision was shaped by."""
    where = ("s.reason = $reason AND s.revision <= $rev AND ($undone OR s.undone_at_revision IS NULL "
             "OR s.undone_at_revision > $rev)")
    if claim_ids is None:
        query = (f"MATCH (n:Claim {{namespace: $ns}})-[s:SUPERSEDES]->(o:Claim {{namespace: $ns}}) WHERE {where} "
                 f"RETURN {_LINK_FIELDS} AS link ORDER BY link.revision, link.newer_id, link.older_id LIMIT $limit")
    else:
        query = (
            "CALL () { UNWIND $ids AS id MATCH (n:Claim {namespace: $ns, id: id})-[s:SUPERSEDES]->(o:Claim) "
            "RETURN n, s, o UNION UNWIND $ids AS id MATCH (n:Claim)-[s:SUPERSEDES]->(o:Claim {namespace: $ns, id: id}) "
            f"RETURN n, s, o }} WITH n, s, o WHERE {where} "
            f"RETURN {_LINK_FIELDS} AS link ORDER BY link.revision, link.newer_id, link.older_id LIMIT $limit")
    rows = tx.run(query, ns=namespace, ids=sorted(set(claim_ids or ())), rev=revision, undone=include_undone,
                  reason=REASON, limit=max(1, limit))
    out = []
    for r in rows:
        link = dict(r["link"])
        undone = link.get("undone_at_revision")
        out.append(InferredLink(**link, active=undone is None or int(undone) > revision))
    return out


def undo_inferred(tx: ManagedTransaction, namespace: str, newer_id: str, older_id: str,
                  reason: str) -> UndoInferenceResult:
    """An operator's undo of one inferred supersession, recorded at a new revision like a retraction:
    the link gets `undone_at_revision`, and the older claim is current again from that revision on
    (an as-of recall before it still sees what the store showed then), unless another active
    supersession hides it. The worker never re-infers an undone pair: `write_inferred` refuses any
    pair that already has a SUPERSEDES, undone or not. Raises NotFoundError when no such link is in force.
    """
    rev = bump(tx, namespace, "undo-inference", 1)   # the lock first; raising below rolls it back
    found = tx.run(
        "MATCH (n:Claim {namespace: $ns, id: $newer})-[s:SUPERSEDES]->(o:Claim {namespace: $ns, id: $older}) "
        "WHERE s.reason = $reason AND s.undone_at_revision IS NULL "
        "SET s.undone_at_revision = $rev, s.undone_at = $at, s.undone_reason = $why "
        "RETURN o.status AS status, "
        "COUNT { (o)<-[x:SUPERSEDES]-(:Claim) WHERE x.undone_at_revision IS NULL } AS others",
        ns=namespace, newer=newer_id, older=older_id, reason=REASON, rev=rev.number, at=rev.at,
        why=f"operator: {reason}"[:300],
    ).single()
    if found is None:
        raise NotFoundError(f"no inferred supersession {newer_id!r} -> {older_id!r} in force in {namespace!r}",
                            field="newerId")
    restored = found["status"] == "superseded" and int(found["others"]) == 0
    if restored:
        tx.run(
            "MATCH (o:Claim {namespace: $ns, id: $id}) "
            "SET o.status = 'current', o.restored_at_revision = $rev, "
            "o.vis_until = coalesce(o.vis_until, [x IN o.vis_from | $open]) + "
            "[CASE WHEN o.valid_to IS NULL THEN $open ELSE o.valid_to.epochSeconds * 1000000 "
            "+ o.valid_to.microsecond END], "
            "o.vis_from = o.vis_from + [$rev], o.vis_to = o.vis_to + [$open], o.valid_until = o.valid_to",
            ns=namespace, id=older_id, rev=rev.number, open=OPEN,
        ).consume()
    return UndoInferenceResult(newer_id=newer_id, older_id=older_id, revision=rev.number, restored=restored)


__all__ = [
    "REASON", "InferenceClaim", "InferredWrite", "SubjectCandidates", "hidden_by_inference", "inference_candidates",
    "inferred_links", "inferred_successors", "supersession_reasons", "undo_inferred", "write_inferred",
]
