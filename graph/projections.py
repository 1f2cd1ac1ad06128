"""Reads and writes of the background projections: pending claims, candidate pairs, CONTRADICTS edges.

The worker (in `api`) glues these to the detectors (in `extraction`); this module never calls a
model. Three rules make the worker safe to crash, re-run and run twice:

* **Whole revisions, in order.** A batch is the claims of the revisions in
  (projections_seq, to_seq], never half a revision, so `projections_seq` moves revision by
  revision. Revisions without claims (retractions, other commits) are stepped over, and a
  retraction that *restores* an older claim makes that claim a subject again at the
  restoring revision, because from then on it can conflict with claims it never met. A batch
  never spans a change of the namespace's default policy: it is processed under the default in
  effect at its revisions (`Batch.default_policy`), however late the worker gets there.
* **Candidates as of the subject's revision.** A claim is compared with the claims that were
  current *at its own revision* (bi-temporal visibility, `graph.claims.visibility`), not with whatever
  is current when the worker happens to run. The edges found are then a function of the store's
  history alone: the same whether the worker keeps up or lags an hour, and an as-of recall at
  that revision sees exactly the contradictions that existed then.
* **One write transaction per batch.** Edges are MERGEd on a canonical direction (newer claim →
  older claim, one edge per pair and method, first detection kept) and `projections_seq` is
  advanced in the same transaction, after taking the Store's write lock and checking that no
  other worker moved it meanwhile. A crash before commit leaves nothing; a re-run writes nothing new.

`neighbour_similarity` is a plain cosine in [-1, 1]. The vector index reports (1 + cos) / 2 (and
so does `vector.similarity.cosine`), so scores are converted before they are compared.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from neo4j import Driver, ManagedTransaction

from palimpsest.graph.claims.index import vector_hits
from palimpsest.graph.claims.inferred import InferredWrite, write_inferred
from palimpsest.graph.claims.revisions import StoreState, optional_datetime, store_state
from palimpsest.graph.claims.sentence_vectors import ClaimSentences, write_sentence_vectors
from palimpsest.graph.claims.visibility import windows_overlap
from palimpsest.graph.knowledge.entities import EntityBatch, write_entity_batch
from palimpsest.graph.knowledge.facts import FactWrite, write_fact_batch
from palimpsest.graph.similarity import cosine_from_index, index_score
from palimpsest.schema.errors import ConflictError
from palimpsest.schema.limits import MAX_CANDIDATES
from palimpsest.schema.models import DEFAULT_POLICY

_CLAIM = ("{id: c.id, content: c.content, claim_key: c.claim_key, revision: c.revision, "
          "valid_from: c.valid_from, valid_to: c.valid_to, vis_from: c.vis_from, vis_to: c.vis_to, "
          "metadata_json: c.metadata_json, batch_index: coalesce(c.batch_index, 0)}")
_NODE = _CLAIM.replace("c.", "node.")


@dataclass(frozen=True)
class Subject:
    """A claim to process at `revision`: its write revision, or the revision that restored it."""

    id: str
    content: str
    claim_key: str | None
    claim_revision: int
    revision: int
    valid_from: datetime | None
    valid_to: datetime | None
    metadata: dict[str, Any] = field(default_factory=dict)  # for the entity job (declared subject/title)
    batch_index: int = 0  # place in its ingest call: (claim_revision, batch_index) is the write order


@dataclass(frozen=True)
class Batch:
    namespace: str
    from_seq: int
    to_seq: int
    store_revision: int
    subjects: list[Subject]
    # The namespace's default policy in effect at every revision of the batch (a batch never spans
    # a change of it), so what the worker does with a claim does not depend on when it runs.
    default_policy: str = DEFAULT_POLICY.version


@dataclass(frozen=True)
class CandidatePair:
    """Two claims that could conflict, oriented newer → older by write order (revision, place in batch, id)."""

    newer_id: str
    newer_content: str
    older_id: str
    older_content: str
    revision: int          # the revision whose processing found the pair (the edge's `revision`)
    similarity: float      # cosine in [-1, 1]
    via: str               # "vector", "key" or "vector+key"


@dataclass(frozen=True)
class EdgeWrite:
    newer_id: str
    older_id: str
    method: str
    score: float
    revision: int
    reason: str


@dataclass(frozen=True)
class CommitResult:
    to_seq: int
    edges_created: int
    entity_counters: dict[str, int] = field(default_factory=dict)
    fact_counters: dict[str, int] = field(default_factory=dict)
    inferred_created: int = 0
    sentence_vectors: int = 0  # claims that took their sentence vectors (graph.claims.sentence_vectors)


class StaleBatchError(ConflictError):
    """Another worker advanced `projections_seq` while this one worked; its batch is dropped."""


def projections_state(driver: Driver, namespace: str, database: str | None = None) -> StoreState | None:
    with driver.session(database=database, default_access_mode="READ") as session:
        return session.execute_read(store_state, namespace)


def pending_namespaces(driver: Driver, database: str | None = None) -> list[str]:
    """Namespaces whose projections lag their store revision. Deliberately cross-namespace:
    this is how one worker process finds its work; it reads nothing but the Store nodes.
    Smallest backlog first: an interactive tenant that wrote two claims is not kept waiting
    behind a bulk import (which still advances every pass, a few batches at a time)."""
    records, _, _ = driver.execute_query(
        "MATCH (s:Store) WHERE coalesce(s.projections_seq, 0) < s.revision "
        "RETURN s.namespace AS ns ORDER BY s.revision - coalesce(s.projections_seq, 0), ns",
        database_=database, routing_="r",
    )
    return [str(r["ns"]) for r in records]


# ------------------------------------------------------------------------------------ batches
def read_batch(driver: Driver, namespace: str, max_claims: int, database: str | None = None) -> Batch | None:
    """The next whole revisions after `projections_seq` holding at most `max_claims` subjects
    (always at least one revision, however large), and never past a change of the namespace's
    default policy; or None when the namespace is caught up."""
    with driver.session(database=database, default_access_mode="READ") as session:
        return session.execute_read(_read_batch, namespace, max(1, max_claims))


def _read_batch(tx: ManagedTransaction, ns: str, max_claims: int) -> Batch | None:
    state = store_state(tx, ns)
    if state is None or state.projections_seq >= state.revision:
        return None
    seq, top = state.projections_seq, state.revision
    # One policy per batch: stop before the next change of the default (a settings revision holds no claims).
    default_policy = state.default_policy_at(seq + 1)
    end = min([top, *(rev - 1 for rev, _ in state.policy_changes if seq + 1 < rev <= top)])
    weights: dict[int, int] = {}
    for r in tx.run(
        "MATCH (c:Claim {namespace: $ns}) WHERE c.revision > $seq AND c.revision <= $top "
        "WITH c.revision AS rev, count(*) AS n ORDER BY rev LIMIT $limit RETURN rev, n",
        ns=ns, seq=seq, top=end, limit=max_claims + 1,
    ):
        weights[int(r["rev"])] = int(r["n"])
    # A retraction (or an erasure) can restore older claims, which then become subjects at that revision.
    retracts = [int(r["rev"]) for r in tx.run(
        "MATCH (k:Commit {namespace: $ns}) WHERE k.revision > $seq AND k.revision <= $top "
        "AND k.kind IN ['retract', 'erase'] "
        "RETURN k.revision AS rev ORDER BY rev LIMIT $limit",
        ns=ns, seq=seq, top=end, limit=max_claims + 1,
    )]
    for rev in retracts:
        weights[rev] = weights.get(rev, 0) + 1
    # Both queries stop after max_claims + 1 revisions, and every revision weighs at least 1, so
    # the cut below always falls before anything they left out; if nothing is cut, nothing was.
    to_seq, taken = end, 0
    for rev in sorted(weights):
        if taken and taken + weights[rev] > max_claims:
            to_seq = rev - 1
            break
        taken += weights[rev]

    rows = list(tx.run(
        f"MATCH (c:Claim {{namespace: $ns}}) WHERE c.revision > $seq AND c.revision <= $to RETURN {_CLAIM} AS c",
        ns=ns, seq=seq, to=to_seq,
    ))
    if any(seq < rev <= to_seq for rev in retracts):
        rows += list(tx.run(
            "MATCH (c:Claim {namespace: $ns}) WHERE c.revision <= $seq "
            f"AND any(v IN c.vis_from WHERE v > $seq AND v <= $to) RETURN {_CLAIM} AS c",
            ns=ns, seq=seq, to=to_seq,
        ))
    subjects: list[Subject] = []
    for row in rows:
        c = row["c"]
        for start, end in zip(c["vis_from"], c["vis_to"], strict=True):
            if seq < start <= to_seq and end > start:  # an empty interval was superseded in its own batch
                subjects.append(Subject(c["id"], c["content"], c["claim_key"], int(c["revision"]), int(start),
                                        optional_datetime(c["valid_from"]), optional_datetime(c["valid_to"]),
                                        json.loads(c["metadata_json"] or "{}"), int(c["batch_index"])))
    subjects.sort(key=lambda s: (s.revision, s.id))
    return Batch(ns, seq, to_seq, top, subjects, default_policy)


# ------------------------------------------------------------------------------------ candidates
def candidate_pairs(driver: Driver, namespace: str, subjects: Sequence[Subject], *, neighbour_similarity: float,
                    max_pairs_per_claim: int, database: str | None = None) -> list[CandidatePair]:
    """For each subject, the claims current at its revision that could conflict with it.

    Nearest neighbours by the vector index with cosine ≥ `neighbour_similarity`, plus claims whose
    claim_key has the same parent (text before the last '.'), minus the subject itself, the claims
    it supersedes and claims whose world-time window cannot overlap its own; the best
    `max_pairs_per_claim` by cosine (then id). Each unordered pair appears once.
    """
    if not subjects:
        return []
    with driver.session(database=database, default_access_mode="READ") as session:
        return session.execute_read(_candidates, namespace, list(subjects), neighbour_similarity,
                                    max(1, max_pairs_per_claim))


def _current_at(row: dict[str, Any], revision: int) -> bool:
    return any(s <= revision < e for s, e in zip(row["vis_from"], row["vis_to"], strict=True))


def _candidates(tx: ManagedTransaction, ns: str, subjects: list[Subject], min_cos: float,
                cap: int) -> list[CandidatePair]:
    best: dict[tuple[str, str], CandidatePair] = {}
    for s in subjects:
        found: dict[str, tuple[dict[str, Any], float, str]] = {}
        superseded = {r["id"] for r in tx.run(
            "MATCH (s:Claim {namespace: $ns, id: $id})-[:SUPERSEDES]->(o:Claim {namespace: $ns}) RETURN o.id AS id",
            ns=ns, id=s.id,
        )}

        def admissible(row: dict[str, Any], subject: Subject = s, excluded: set[str] = superseded) -> bool:
            return (row["id"] != subject.id and row["id"] not in excluded and row["revision"] <= subject.revision
                    and _current_at(row, subject.revision)
                    and windows_overlap(subject.valid_from, subject.valid_to, optional_datetime(row["valid_from"]),
                                         optional_datetime(row["valid_to"])))

        for row, cos in _vector_neighbours(tx, ns, s, min_cos, cap, admissible):
            found[row["id"]] = (row, cos, "vector")
        if s.claim_key and "." in s.claim_key:
            parent = s.claim_key.rsplit(".", 1)[0] + "."
            for r in tx.run(
                "MATCH (s:Claim {namespace: $ns, id: $id}) "
                "MATCH (c:Claim {namespace: $ns}) WHERE c.claim_key STARTS WITH $parent "
                "AND NOT substring(c.claim_key, size($parent)) CONTAINS '.' AND c.id <> $id AND c.revision <= $rev "
                "AND any(i IN range(0, size(c.vis_from) - 1) WHERE c.vis_from[i] <= $rev AND $rev < c.vis_to[i]) "
                f"WITH c, round(vector.similarity.cosine(s.embedding, c.embedding), 6) AS score "
                f"ORDER BY score DESC, c.id LIMIT $limit RETURN {_CLAIM} AS row, score",
                ns=ns, id=s.id, parent=parent, rev=s.revision, limit=cap * 2,
            ):
                row = dict(r["row"])
                if not admissible(row):
                    continue
                cos = round(cosine_from_index(float(r["score"])), 6)
                prior = found.get(row["id"])
                found[row["id"]] = (row, cos, "vector+key" if prior else "key")
        ranked = sorted(found.values(), key=lambda t: (-t[1], t[0]["id"]))[:cap]
        for row, cos, via in ranked:
            # Write order, not ids: two claims of one batch are oriented by their place in it, so
            # the same writes give the same edges in every namespace (ids break only exact ties).
            subject_key = (s.claim_revision, s.batch_index, s.id)
            other_key = (int(row["revision"]), int(row["batch_index"]), row["id"])
            if subject_key > other_key:
                pair = CandidatePair(s.id, s.content, row["id"], row["content"], s.revision, cos, via)
            else:
                pair = CandidatePair(row["id"], row["content"], s.id, s.content, s.revision, cos, via)
            key = (pair.newer_id, pair.older_id)
            if key not in best or pair.revision < best[key].revision:
                best[key] = pair
    return sorted(best.values(), key=lambda p: (p.revision, p.newer_id, p.older_id))


def _vector_neighbours(tx: ManagedTransaction, ns: str, s: Subject, min_cos: float, cap: int,
                       admissible: Callable[[dict[str, Any]], bool]) -> list[tuple[dict[str, Any], float]]:
    """Neighbours above the threshold in the namespace (graph.claims.index), growing the fetch past
    inadmissible ones (later writes, other statuses).

    The search returns nodes best first, so the fetch stops as
    soon as its weakest hit is below the threshold, it returned fewer than asked, or enough
    admissible neighbours were found.
    """
    threshold = index_score(min_cos)
    fetch = max(cap * 4, 40)
    while True:
        record = tx.run(
            "MATCH (st:Store {namespace: $ns}) MATCH (s:Claim {namespace: $ns, id: $id}) "
            + vector_hits("st", "s.embedding", "$fetch", ("s",)) +
            "WITH count(*) AS raw, min(score) AS lowest, "
            f"collect(CASE WHEN node.namespace = $ns AND score >= $threshold THEN {{row: {_NODE}, score: score}} END) "
            "AS hits RETURN raw, lowest, hits",
            ns=ns, id=s.id, fetch=fetch, threshold=threshold,
        ).single()
        if record is None:
            return []
        hits = [(dict(h["row"]), round(cosine_from_index(float(h["score"])), 6)) for h in record["hits"]]
        accepted = [(row, cos) for row, cos in hits if admissible(row)]
        raw, lowest = int(record["raw"]), record["lowest"]
        if (len(accepted) >= cap or raw < fetch or lowest is None or float(lowest) < threshold
                or fetch >= MAX_CANDIDATES):
            accepted.sort(key=lambda t: (-t[1], t[0]["id"]))
            return accepted[:cap]
        fetch = min(fetch * 4, MAX_CANDIDATES)


# ------------------------------------------------------------------------------------ commit
def commit_batch(driver: Driver, namespace: str, from_seq: int, to_seq: int, edges: Sequence[EdgeWrite],
                 database: str | None = None, entities: EntityBatch | None = None,
                 facts: Sequence[FactWrite] | None = None,
                 inferred: Sequence[InferredWrite] | None = None,
                 sentences: Sequence[ClaimSentences] | None = None) -> CommitResult:
    """Write the batch's edges (and entities, mentions, RELATED, then facts, which need the
    entities, and the claims' sentence vectors) and advance `projections_seq` to `to_seq`, atomically.

    `inferred` supersessions (graph.claims.inferred) are written last, at a revision of their own.
    Raises StaleBatchError (and writes nothing) when `projections_seq` is no longer `from_seq`.
    """
    rows = [{"newer": e.newer_id, "older": e.older_id, "method": e.method, "score": float(e.score),
             "revision": int(e.revision), "reason": e.reason[:300]}
            for e in sorted(edges, key=lambda e: (e.revision, e.newer_id, e.older_id, e.method))]
    with driver.session(database=database) as session:
        return session.execute_write(_commit, namespace, from_seq, to_seq, rows, entities, list(facts or []),
                                     list(inferred or []), list(sentences or []))


def _commit(tx: ManagedTransaction, ns: str, from_seq: int, to_seq: int, rows: list[dict[str, Any]],
            entities: EntityBatch | None = None, facts: list[FactWrite] | None = None,
            inferred: list[InferredWrite] | None = None,
            sentences: list[ClaimSentences] | None = None) -> CommitResult:
    # Take the Store's write lock first: concurrent workers on one namespace queue here, and the
    # read below then sees what the previous one committed.
    tx.run("MATCH (s:Store {namespace: $ns}) SET s.projections_at = datetime.transaction()", ns=ns).consume()
    record = tx.run("MATCH (s:Store {namespace: $ns}) RETURN s.projections_seq AS seq", ns=ns).single()
    current = None if record is None else int(record["seq"] or 0)
    if current != from_seq:
        raise StaleBatchError(f"projections_seq of {ns!r} moved from {from_seq} to {current} during the batch",
                              field="projections_seq")
    entities, facts = _without_erased(tx, ns, entities, facts or [])
    created = 0
    if rows:
        summary = tx.run(
            "UNWIND $rows AS e "
            "MATCH (a:Claim {namespace: $ns, id: e.newer}), (b:Claim {namespace: $ns, id: e.older}) "
            "USING INDEX a:Claim(id) USING INDEX b:Claim(id) "
            "MERGE (a)-[r:CONTRADICTS {method: e.method}]->(b) "
            "ON CREATE SET r.score = e.score, r.revision = e.revision, r.reason = e.reason, "
            "r.detected_at = datetime.transaction()",
            ns=ns, rows=rows,
        ).consume()
        created = summary.counters.relationships_created
    entity_counters = write_entity_batch(tx, ns, entities) if entities else {}
    fact_counters = write_fact_batch(tx, ns, facts) if facts else {}
    sentence_vectors = write_sentence_vectors(tx, ns, sentences) if sentences else 0
    # Last, so the supersessions see the batch's entities; they bump a revision of their own,
    # after to_seq, which the next batch steps over (it holds no claims).
    inferred_created = write_inferred(tx, ns, inferred) if inferred else 0
    _advance(tx, ns, to_seq)
    return CommitResult(to_seq, created, entity_counters, fact_counters, inferred_created, sentence_vectors)


def _without_erased(tx: ManagedTransaction, ns: str, entities: EntityBatch | None,
                    facts: list[FactWrite]) -> tuple[EntityBatch | None, list[FactWrite]]:
    """Drop what the batch derived from claims erased while it was being computed (graph.lifecycle.erase): their
    mentions and facts, and the entities only they named — committing those would bring back, as
    entity names, text the erasure removed. Checked under the Store lock, which erasures also take."""
    named = {str(m["claim"]) for m in (entities.mentions if entities else [])} | {f.claim_id for f in facts}
    if not named:
        return entities, facts
    alive = {str(r["id"]) for r in tx.run(
        "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id}) RETURN c.id AS id", ids=sorted(named), ns=ns)}
    if alive >= named:
        return entities, facts
    facts = [f for f in facts if f.claim_id in alive]
    if entities is None:
        return None, facts
    mentions = [m for m in entities.mentions if str(m["claim"]) in alive]
    used = {str(m["entity"]) for m in mentions} | {e for f in facts for e in (f.subject_id, f.object_id) if e}
    dropped = {str(m["entity"]) for m in entities.mentions} - used
    return EntityBatch(new_entities=[e for e in entities.new_entities if str(e["id"]) not in dropped],
                       aliases=[a for a in entities.aliases if str(a["id"]) not in dropped],
                       mentions=mentions), facts


def _advance(tx: ManagedTransaction, ns: str, to_seq: int) -> None:
    tx.run("MATCH (s:Store {namespace: $ns}) SET s.projections_seq = $to", ns=ns, to=to_seq).consume()


# ------------------------------------------------------------------------------------ reads
__all__ = [
    "Batch", "CandidatePair", "CommitResult", "EdgeWrite", "StaleBatchError", "Subject", "candidate_pairs",
    "commit_batch", "cosine_from_index", "index_score", "pending_namespaces",
    "projections_state", "read_batch",
]
