"""Facts as beliefs: (subject, predicate, object) statements derived from claims, with support.

    (:Fact {id, namespace, subject, subject_id, predicate, object, object_key, object_id,
            valid_from, valid_to, stated_valid_to, recorded_at, revision, confidence, supports,
            status, single_valued, superseded_at_revision, superseded_by, embedding})
    (:Fact)-[:SUBJECT]->(:Entity)   (:Fact)-[:OBJECT]->(:Entity)   (object entities only)
    (:Fact)-[:SUPPORTED_BY {confidence, revision}]->(:Claim)
    (:Fact)-[:SUPERSEDES {revision, at}]->(:Fact)

A fact's `embedding` is the vector of `fact_text` (subject, predicate, object), written in the commit
that creates the fact (the worker embeds; this module never calls a model), so fact retrieval
(graph/recall/fact_source.py) can match a query against the triples themselves.

The worker writes facts inside the projections commit (`graph.projections.commit_batch`), after
the batch's entities, so a batch's facts land with its entities and its `projections_seq`, or not
at all. The rules, and why:

* **Support, not duplicates.** A fact whose (subject, predicate, object) matches a current fact
  with an overlapping validity window adds a `SUPPORTED_BY` edge to it instead of a second node.
  Confidence is fused over the supports with Noisy-OR, 1 − Π(1 − p_i): independent sources
  saying the same thing make it more certain, never past 1, and one weak source adds little.
* **Supersession.** A new single-valued fact with the same (subject, predicate), an overlapping
  validity window and a different object supersedes the current one: the old fact's `valid_to`
  closes where the new one starts (its stated `valid_from`, else the recorded time of the claim
  that stated it), its status becomes `superseded`, and `(new)-[:SUPERSEDES {revision, at}]->(old)`
  records when. Nothing is deleted: the old fact still says what held before. Multi-valued
  predicates ("knows", "owns") never supersede, so a second friend does not erase the first.
* **Late-learnt history.** If the new fact's window starts *before* a current fact's stated
  `valid_from`, it describes the earlier state: it is kept current with its `valid_to` closed at
  the later fact's start, and the later fact stays as it was (newer recording does not beat later
  world time).
* **Undated facts** hold from the time they were recorded for these comparisons (a present-tense
  "Alice works at Globex" neither overwrites nor is overwritten by "Alice worked at Acme
  2010–2012"); their stored `valid_from` stays empty, because nothing was stated. Only a stated
  start orders world time in the late-learnt rule: a recorded time only says when we learnt it.
* **Idempotent.** Fact ids are a hash of (namespace, subject, predicate, object, first claim), and
  a (claim, subject, predicate, object) that already supports a fact is skipped, so re-running a
  batch writes nothing new and never re-supersedes.
* **Pinned reads.** Every support and supersession carries the revision of the claim that caused
  it, and `stated_valid_to` keeps the window a fact had while current. So `packet_beliefs` can
  rebuild the beliefs exactly as of a packet's (revision, projections_seq): replaying a packet
  later gives the same beliefs, whatever the worker learnt since.
* **Erasure.** An erased claim (graph.lifecycle.erase) is taken out of its facts (`withdraw_supports`): a fact
  with other supports re-fuses its confidence over them; one it alone supported is deleted, and the
  fact that one had superseded is current again. Beliefs follow their evidence.

Facts also feed `RELATED` between subject and object entities (`graph.knowledge.entities.RELATED_RECOUNT`),
so PageRank sees stated relations as well as co-mentions. All Cypher is parameterised and every
match is scoped by namespace. This module never calls a model: the worker hands it resolved ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from neo4j import Driver, ManagedTransaction

from palimpsest.graph.claims.revisions import optional_datetime, to_py_datetime
from palimpsest.graph.claims.visibility import current_at, windows_overlap
from palimpsest.graph.knowledge.entities import RELATED_RECOUNT, check_first
from palimpsest.schema.errors import BadInputError
from palimpsest.schema.models import Belief, Fact, iso


@dataclass(frozen=True)
class FactWrite:
    """One claim's statement of a fact, with entity ids already resolved (plain values: graph
    never sees extraction types)."""

    claim_id: str
    revision: int                   # the claim's revision: when the store learnt this support
    subject_id: str
    subject: str
    predicate: str
    object: str
    object_key: str                 # entity id, or the literal's normalised form
    object_id: str | None
    valid_from: datetime | None
    valid_to: datetime | None
    confidence: float
    single_valued: bool = True
    # The vector of `fact_text(subject, predicate, object)`, computed by the worker (graph never calls a
    # model); stored on the fact this statement creates, for fact retrieval (graph/recall/fact_source.py).
    embedding: Sequence[float] | None = None


def fact_text(subject: str, predicate: str, obj: str) -> str:
    """What a fact's vector embeds: "subject predicate object", the predicate's underscores as spaces
    ("Mara Quint works at Northwind Traders"), so it reads as the sentence a query would be near."""
    return " ".join(part for part in (subject.strip(), predicate.replace("_", " ").strip(), obj.strip()) if part)


@dataclass
class _Current:
    id: str
    subject_id: str
    predicate: str
    object_key: str
    valid_from: datetime | None
    valid_to: datetime | None
    single_valued: bool
    recorded_at: datetime

    @property
    def start(self) -> datetime | None:
        """Effective start for comparisons (stated, else recorded for present-tense facts)."""
        return _start(self.valid_from, self.valid_to, self.recorded_at)


@dataclass
class FactPlan:
    """What a batch of fact statements does to the store, decided before anything is written."""

    creates: list[dict[str, Any]] = field(default_factory=list)
    supports: list[dict[str, Any]] = field(default_factory=list)
    supersessions: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0                # statements already applied (a re-run)


def fact_id(namespace: str, subject_id: str, predicate: str, object_key: str, claim_id: str) -> str:
    """Deterministic: the same statement by the same first claim is always the same node."""
    raw = "\x00".join((namespace, subject_id, predicate, object_key, claim_id))
    return "fact-" + hashlib.sha256(raw.encode()).hexdigest()[:24]


def noisy_or(probabilities: Iterable[float]) -> float:
    """1 − Π(1 − p_i), multiplied in sorted order so the float result never depends on input order."""
    remaining = 1.0
    for p in sorted(probabilities):
        remaining *= 1.0 - min(1.0, max(0.0, p))
    return round(1.0 - remaining, 9)


def _start(valid_from: datetime | None, valid_to: datetime | None, recorded: datetime) -> datetime | None:
    """When a statement starts holding for comparisons: its stated start; for an undated
    present-tense statement, when it was recorded; for one that only states an end, unbounded."""
    if valid_from is not None:
        return valid_from
    return recorded if valid_to is None else None


def plan_facts(namespace: str, current: Sequence[_Current], incoming: Sequence[FactWrite],
               recorded_at: Mapping[str, datetime], applied: set[tuple[str, str, str, str]]) -> FactPlan:
    """Decide creates, supports and supersessions for a batch; a pure function of its inputs.

    Statements are applied in (revision, claim id, subject, predicate, object) order, each
    against the state the previous ones left, so a batch means the same as its claims one by one.
    `applied` holds (claim, subject, predicate, object) statements already in the store.
    """
    plan = FactPlan()
    state: dict[tuple[str, str], list[_Current]] = {}
    for c in sorted(current, key=lambda c: c.id):
        state.setdefault((c.subject_id, c.predicate), []).append(c)
    seen = set(applied)
    order = sorted(incoming, key=lambda f: (f.revision, f.claim_id, f.subject_id, f.predicate, f.object_key,
                                            -f.confidence))
    for f in order:
        stmt = (f.claim_id, f.subject_id, f.predicate, f.object_key)
        recorded = recorded_at.get(f.claim_id)
        if stmt in seen or recorded is None:
            plan.skipped += 1
            continue
        seen.add(stmt)
        facts = state.setdefault((f.subject_id, f.predicate), [])
        start = _start(f.valid_from, f.valid_to, recorded)
        same = [c for c in facts
                if c.object_key == f.object_key and windows_overlap(c.start, c.valid_to, start, f.valid_to)]
        if same:
            plan.supports.append({"fact": same[0].id, "claim": f.claim_id, "confidence": f.confidence,
                                  "revision": f.revision})
            continue
        rivals = [old for old in facts
                  if f.single_valued and old.single_valued and old.object_key != f.object_key]
        valid_to = f.valid_to
        for old in rivals:
            # Only a *stated* start orders world time; an undated fact's recorded time says when we
            # learnt it, and newer knowledge about the same time wins over it.
            if (old.valid_from is not None and (start is None or start < old.valid_from)
                    and windows_overlap(old.valid_from, old.valid_to, start, valid_to)):
                # The statement describes the state before `old` began: it ends where `old` starts.
                valid_to = old.valid_from if valid_to is None else min(valid_to, old.valid_from)
        superseded: list[tuple[_Current, datetime]] = []
        for old in rivals:
            if not windows_overlap(old.start, old.valid_to, start, valid_to):
                continue
            close = start if start is not None else recorded
            if old.valid_to is not None:
                close = min(close, old.valid_to)
            superseded.append((old, close))
        new_id = fact_id(namespace, f.subject_id, f.predicate, f.object_key, f.claim_id)
        plan.creates.append({
            "id": new_id, "subject_id": f.subject_id, "subject": f.subject, "predicate": f.predicate,
            "object": f.object, "object_key": f.object_key, "object_id": f.object_id, "valid_from": f.valid_from,
            "valid_to": valid_to, "recorded_at": recorded, "revision": f.revision,
            "single_valued": f.single_valued,
            "embedding": None if f.embedding is None else [float(x) for x in f.embedding],
        })
        plan.supports.append({"fact": new_id, "claim": f.claim_id, "confidence": f.confidence,
                              "revision": f.revision})
        for old, close in superseded:
            plan.supersessions.append({"old": old.id, "new": new_id, "close": close, "revision": f.revision,
                                       "at": recorded})
            facts.remove(old)
        facts.append(_Current(new_id, f.subject_id, f.predicate, f.object_key, f.valid_from, valid_to,
                              f.single_valued, recorded))
    return plan


# ------------------------------------------------------------------------------------ worker write
def write_fact_batch(tx: ManagedTransaction, namespace: str, facts: Sequence[FactWrite]) -> dict[str, int]:
    """Apply a batch of fact statements (inside the projections commit); returns counters.

    Reads the current facts of the (subject, predicate) keys the batch touches, plans in Python
    (`plan_facts`), then writes with one UNWIND per kind of change.
    """
    counters = {"facts_created": 0, "supports_created": 0, "facts_superseded": 0, "facts_skipped": 0}
    if not facts:
        return counters
    keys = sorted({(f.subject_id, f.predicate) for f in facts})
    current = [
        _Current(r["id"], r["subject_id"], r["predicate"], r["object_key"], optional_datetime(r["valid_from"]),
                 optional_datetime(r["valid_to"]), bool(r["single_valued"]), to_py_datetime(r["recorded_at"]))
        for r in tx.run(
            "UNWIND $keys AS k "
            "MATCH (f:Fact {namespace: $ns, subject_id: k[0], predicate: k[1]}) WHERE f.status = 'current' "
            "RETURN f.id AS id, f.subject_id AS subject_id, f.predicate AS predicate, f.object_key AS object_key, "
            "f.valid_from AS valid_from, f.valid_to AS valid_to, coalesce(f.single_valued, true) AS single_valued, "
            "f.recorded_at AS recorded_at",
            keys=[list(k) for k in keys], ns=namespace,
        )
    ]
    claim_ids = sorted({f.claim_id for f in facts})
    recorded_at: dict[str, datetime] = {}
    applied: set[tuple[str, str, str, str]] = set()
    for r in tx.run(
        "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id}) USING INDEX c:Claim(id) "
        "OPTIONAL MATCH (f:Fact {namespace: $ns})-[:SUPPORTED_BY]->(c) "
        "RETURN c.id AS id, c.recorded_at AS at, collect([f.subject_id, f.predicate, f.object_key]) AS done",
        ids=claim_ids, ns=namespace,
    ):
        recorded_at[r["id"]] = to_py_datetime(r["at"])
        applied.update((r["id"], s, p, o) for s, p, o in r["done"] if s is not None)
    plan = plan_facts(namespace, current, facts, recorded_at, applied)
    counters["facts_skipped"] = plan.skipped
    if plan.creates:
        summary = tx.run(
            "UNWIND $rows AS row MERGE (f:Fact {id: row.id}) "
            "ON CREATE SET f.namespace = $ns, f.subject = row.subject, f.subject_id = row.subject_id, "
            "f.predicate = row.predicate, f.object = row.object, f.object_key = row.object_key, "
            "f.object_id = row.object_id, f.valid_from = row.valid_from, f.valid_to = row.valid_to, "
            "f.stated_valid_to = row.valid_to, f.recorded_at = row.recorded_at, f.revision = row.revision, "
            "f.confidence = 0.0, f.supports = 0, f.status = 'current', f.single_valued = row.single_valued, "
            "f.created_at = datetime.transaction() "
            "WITH f, row MATCH (s:Entity {namespace: $ns, id: row.subject_id}) USING INDEX s:Entity(id) "
            "MERGE (f)-[:SUBJECT]->(s) "
            "WITH f, row MATCH (o:Entity {namespace: $ns, id: row.object_id}) USING INDEX o:Entity(id) "
            "MERGE (f)-[:OBJECT]->(o)",
            rows=plan.creates, ns=namespace,
        ).consume()
        counters["facts_created"] = summary.counters.nodes_created
        # As claims' and entities' vectors are stored (a float32 vector property), so an exported and
        # imported fact keeps the same bits; a statement of its own, so a fact without one loses nothing.
        tx.run(
            "UNWIND $rows AS row WITH row WHERE row.embedding IS NOT NULL "
            "MATCH (f:Fact {namespace: $ns, id: row.id}) USING INDEX f:Fact(id) WHERE f.embedding IS NULL "
            "CALL db.create.setNodeVectorProperty(f, 'embedding', row.embedding)",
            rows=plan.creates, ns=namespace,
        ).consume()
    if plan.supports:
        summary = tx.run(
            "UNWIND $rows AS row "
            "MATCH (f:Fact {namespace: $ns, id: row.fact}), (c:Claim {namespace: $ns, id: row.claim}) "
            "USING INDEX f:Fact(id) USING INDEX c:Claim(id) "
            "MERGE (f)-[s:SUPPORTED_BY]->(c) ON CREATE SET s.confidence = row.confidence, s.revision = row.revision",
            rows=plan.supports, ns=namespace,
        ).consume()
        counters["supports_created"] = summary.counters.relationships_created
    if plan.supersessions:
        record = tx.run(
            "UNWIND $rows AS row "
            "MATCH (old:Fact {namespace: $ns, id: row.old}), (new:Fact {namespace: $ns, id: row.new}) "
            "USING INDEX old:Fact(id) USING INDEX new:Fact(id) "
            "WHERE old.status = 'current' "
            "SET old.status = 'superseded', old.valid_to = row.close, old.superseded_at_revision = row.revision, "
            "old.superseded_by = new.id "
            "MERGE (new)-[r:SUPERSEDES]->(old) ON CREATE SET r.revision = row.revision, r.at = row.at "
            "RETURN count(*) AS n",
            rows=plan.supersessions, ns=namespace,
        ).single()
        counters["facts_superseded"] = 0 if record is None else int(record["n"])
    fuse_confidence(tx, namespace, sorted({s["fact"] for s in plan.supports}))
    pairs = sorted({tuple(sorted((c["subject_id"], c["object_id"]))) for c in plan.creates
                    if c["object_id"] is not None and c["object_id"] != c["subject_id"]})
    if pairs:
        tx.run(
            "UNWIND $pairs AS p MATCH (a:Entity {namespace: $ns, id: p[0]}), (b:Entity {namespace: $ns, id: p[1]}) "
            "USING INDEX a:Entity(id) USING INDEX b:Entity(id) "
            "WITH a, b " + RELATED_RECOUNT + "RETURN count(*) AS n",
            pairs=[list(p) for p in pairs], ns=namespace,
        ).consume()
    return counters


def fuse_confidence(tx: ManagedTransaction, namespace: str, fact_ids: Sequence[str]) -> None:
    """Recompute each fact's confidence (Noisy-OR of its supports, multiplied in ascending order so the
    float is the same whatever order the supports were written in) and support count, from the
    SUPPORTED_BY edges it has now: after supports are added (the worker) or withdrawn (graph.lifecycle.erase)."""
    if not fact_ids:
        return
    tx.run(
        "UNWIND $ids AS id MATCH (f:Fact {namespace: $ns, id: id}) USING INDEX f:Fact(id) "
        "WITH f, COLLECT { MATCH (f)-[s:SUPPORTED_BY]->(:Claim {namespace: $ns}) "
        "  RETURN s.confidence ORDER BY s.confidence } AS ps "
        "SET f.confidence = round(1.0 - reduce(q = 1.0, p IN ps | q * (1.0 - p)), 9), f.supports = size(ps)",
        ids=sorted(set(fact_ids)), ns=namespace,
    ).consume()


@dataclass(frozen=True)
class Withdrawn:
    """What `withdraw_supports` removed: supports, facts left with none, the facts those had
    superseded that are current again, and the entities the removed facts named (for the caller's
    RELATED recount and orphan sweep)."""

    supports: int
    facts: int
    restored: list[str]
    entities: list[str]
    pairs: list[tuple[str, str]]


def withdraw_supports(tx: ManagedTransaction, namespace: str, claim_ids: Sequence[str]) -> Withdrawn:
    """Take claims out of the facts they support (graph.lifecycle.erase). A fact with other supports keeps them
    and its confidence is fused again over what is left; a fact only these claims supported is
    deleted with its SUBJECT/OBJECT/SUPERSEDES edges, and a fact it had superseded is current again
    with the window it had while current (`stated_valid_to`), unless another fact still supersedes it:
    derived beliefs follow their evidence, as if the claims had never been written."""
    ids = sorted(set(claim_ids))
    if not ids:
        return Withdrawn(0, 0, [], [], [])
    rows = list(tx.run(
        "UNWIND $ids AS cid MATCH (f:Fact {namespace: $ns})-[s:SUPPORTED_BY]->(:Claim {namespace: $ns, id: cid}) "
        "DELETE s WITH f, count(*) AS removed "
        "RETURN f.id AS id, f.subject_id AS subject, f.object_id AS object, removed, "
        "COUNT { (f)-[:SUPPORTED_BY]->(:Claim) } AS left ORDER BY id",
        ids=ids, ns=namespace,
    ))
    supports = sum(int(r["removed"]) for r in rows)
    orphans = [str(r["id"]) for r in rows if int(r["left"]) == 0]
    kept = [str(r["id"]) for r in rows if int(r["left"]) > 0]
    fuse_confidence(tx, namespace, kept)
    restored: list[str] = []
    if orphans:
        restored = [str(r["id"]) for r in tx.run(
            "UNWIND $ids AS id MATCH (f:Fact {namespace: $ns, id: id})-[:SUPERSEDES]->(old:Fact {namespace: $ns}) "
            "WITH DISTINCT old WHERE NOT EXISTS { MATCH (old)<-[:SUPERSEDES]-(n:Fact) WHERE NOT n.id IN $ids } "
            "AND old.status = 'superseded' "
            "SET old.status = 'current', old.valid_to = old.stated_valid_to "
            "REMOVE old.superseded_at_revision, old.superseded_by RETURN old.id AS id ORDER BY id",
            ids=orphans, ns=namespace,
        )]
        tx.run("UNWIND $ids AS id MATCH (f:Fact {namespace: $ns, id: id}) DETACH DELETE f",
               ids=orphans, ns=namespace).consume()
    gone = [(r["subject"], r["object"]) for r in rows if int(r["left"]) == 0]
    entities = sorted({str(e) for pair in gone for e in pair if e is not None})
    pairs = sorted({(min(str(a), str(b)), max(str(a), str(b))) for a, b in gone if a and b and a != b})
    return Withdrawn(supports, len(orphans), restored, entities, pairs)


# ------------------------------------------------------------------------------------ recall
def packet_beliefs(tx: ManagedTransaction, namespace: str, claim_ids: list[str], revision: int,
                   projections_seq: int, cap: int) -> tuple[list[Belief], bool]:
    """Current facts supported by any of `claim_ids`, as of (revision, projections_seq), capped.

    As of the packet: a fact counts if the worker had written it by `projections_seq` and had not
    superseded it by then; a support counts if it was written by then and its claim was current
    at `revision` (a retracted or superseded claim no longer vouches for anything). Confidence is
    the Noisy-OR of those supports, and `valid_to` is the window the fact had while current. So
    the result depends on the store's history up to the packet, never on what came after.

    Order: confidence descending, then id — total, so ties never depend on the engine. Returns
    (beliefs[:cap], truncated).
    """
    if cap < 0:
        raise BadInputError("the belief cap must be non-negative", field="b")
    seq = min(projections_seq, revision)
    ids = sorted(set(claim_ids))
    if not ids:
        return [], False
    rows = list(tx.run(
        "UNWIND $ids AS cid "
        "MATCH (:Claim {namespace: $ns, id: cid})<-[s:SUPPORTED_BY]-(f:Fact {namespace: $ns}) "
        "WHERE s.revision <= $seq AND f.revision <= $seq "
        "AND (f.superseded_at_revision IS NULL OR f.superseded_at_revision > $seq) "
        "WITH DISTINCT f "
        "MATCH (f)-[s:SUPPORTED_BY]->(c:Claim {namespace: $ns}) WHERE s.revision <= $seq "
        "RETURN f {.id, .subject, .subject_id, .predicate, .object, .object_id, .valid_from, .valid_to, "
        ".stated_valid_to, .recorded_at, .revision, .superseded_at_revision} AS f, "
        "collect({id: c.id, p: s.confidence, vf: c.vis_from, vt: c.vis_to}) AS supports",
        ids=ids, ns=namespace, seq=seq,
    ))
    wanted = set(ids)
    beliefs: list[Belief] = []
    for r in rows:
        f = r["f"]
        live = sorted((s for s in r["supports"] if current_at(s["vf"], s["vt"], revision)), key=lambda s: s["id"])
        if not any(s["id"] in wanted for s in live):
            continue
        superseded_later = f["superseded_at_revision"] is not None
        valid_to = f["stated_valid_to"] if superseded_later else f["valid_to"]
        beliefs.append(Belief(
            id=f["id"], subject=f["subject"], predicate=f["predicate"], object=f["object"],
            confidence=noisy_or(float(s["p"]) for s in live), supported_by=[s["id"] for s in live],
            subject_id=f["subject_id"], object_id=f["object_id"], valid_from=iso(optional_datetime(f["valid_from"])),
            valid_to=iso(optional_datetime(valid_to)), recorded_at=iso(optional_datetime(f["recorded_at"])),
            revision=int(f["revision"]),
        ))
    beliefs.sort(key=lambda b: (-b.confidence, b.id))
    return beliefs[:cap], len(beliefs) > cap


# ------------------------------------------------------------------------------------ API reads
_FACT_FIELDS = (
    "f {.id, .subject, .subject_id, .predicate, .object, .object_id, .valid_from, .valid_to, "
    ".recorded_at, .revision, .confidence, .status, .superseded_at_revision, .superseded_by} AS f, "
    "COLLECT { MATCH (f)-[:SUPPORTED_BY]->(c:Claim {namespace: $ns}) RETURN c.id ORDER BY c.id } AS supported_by"
)


def _fact(record: Any) -> Fact:
    """The one conversion of a `_FACT_FIELDS` record: Neo4j datetimes as ISO-8601 UTC strings, as a
    Belief has them, and the supporting claim ids."""
    row = dict(record["f"])
    for key in ("valid_from", "valid_to", "recorded_at"):
        row[key] = iso(optional_datetime(row[key]))
    return Fact.model_validate(row | {"supported_by": list(record["supported_by"])})


def list_facts(driver: Driver, namespace: str, *, entity_id: str | None = None, include_superseded: bool = False,
               first: int = 100, database: str | None = None) -> list[Fact]:
    """Facts of a namespace (optionally those whose subject or object is `entity_id`), as stored now:
    newest revision first, then id, with their supporting claim ids."""
    if entity_id is not None:
        return facts_of(driver, namespace, [entity_id], include_superseded=include_superseded, first=first,
                        database=database)[entity_id]
    check_first(first)
    records, _, _ = driver.execute_query(
        "MATCH (f:Fact {namespace: $ns}) WHERE $all OR f.status = 'current' "
        f"WITH f ORDER BY f.revision DESC, f.id LIMIT $first RETURN {_FACT_FIELDS}",
        ns=namespace, all=include_superseded, first=first, database_=database, routing_="r",
    )
    return [_fact(r) for r in records]


def facts_of(driver: Driver, namespace: str, entity_ids: Sequence[str], *, include_superseded: bool = False,
             first: int = 100, database: str | None = None) -> dict[str, list[Fact]]:
    """`list_facts(entity_id=…)` of many entities in one round trip (for a DataLoader): id -> the facts
    with it as subject or object, newest revision first, then id, at most `first` per entity."""
    check_first(first)
    wanted = sorted(set(entity_ids))
    out: dict[str, list[Fact]] = {eid: [] for eid in wanted}
    if not wanted:
        return out
    records, _, _ = driver.execute_query(
        "UNWIND $ids AS eid "
        "CALL (eid) { "
        "  CALL (eid) { MATCH (f:Fact {namespace: $ns, subject_id: eid}) RETURN f "
        "    UNION MATCH (f:Fact {namespace: $ns, object_id: eid}) RETURN f } "
        "  WITH f WHERE $all OR f.status = 'current' "
        "  RETURN f ORDER BY f.revision DESC, f.id LIMIT $first } "
        f"RETURN eid, {_FACT_FIELDS}",
        ids=wanted, ns=namespace, all=include_superseded, first=first, database_=database, routing_="r",
    )
    for r in records:
        out[r["eid"]].append(_fact(r))
    for rows in out.values():  # newest first, whatever order the rows came back in
        rows.sort(key=lambda f: (-(f.revision or 0), f.id))
    return out
