"""Facts as beliefs against a real Neo4j: Noisy-OR support, supersession, idempotence, packet beliefs.

The facts are written the way the worker writes them (`write_fact_batch` in a write transaction)
over real claims, so revisions, recorded times and visibility are the store's own.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from palimpsest.graph.knowledge.entities import EntityBatch, write_entity_batch
from palimpsest.graph.knowledge.facts import FactWrite, noisy_or, packet_beliefs, write_fact_batch

pytestmark = pytest.mark.integration


def _claims(memory: Any, n: int, text: str = "claim") -> list[tuple[str, int]]:
    """n claims written one per revision: [(id, revision)]."""
    out = []
    for i in range(n):
        r = memory.ingest(f"{text} number {i} about Alice Ward", "test")
        out.append((r.id, r.revision))
    return out


def _entities(driver: Any, ns: str, *names: str) -> dict[str, str]:
    ids = {name: f"ent-{ns}-{name.lower()}" for name in names}
    batch = EntityBatch(new_entities=[{"id": eid, "name": name, "canonical": name.lower(), "type": "thing",
                                       "revision": 1, "embedding": None} for name, eid in ids.items()])
    with driver.session() as session:
        session.execute_write(write_entity_batch, ns, batch)
    return ids


def _fact(claim: tuple[str, int], subject: str, predicate: str, obj: str, *, obj_id: str | None = None,
          p: float = 0.9, valid_from: datetime | None = None, valid_to: datetime | None = None,
          single: bool = True) -> FactWrite:
    return FactWrite(claim[0], claim[1], subject, "Alice Ward", predicate, obj, obj_id or obj.lower(), obj_id,
                     valid_from, valid_to, p, single)


def _write(driver: Any, ns: str, facts: list[FactWrite]) -> dict[str, int]:
    with driver.session() as session:
        counters: dict[str, int] = session.execute_write(write_fact_batch, ns, facts)
    return counters


def _beliefs(driver: Any, ns: str, ids: list[str], revision: int, seq: int, cap: int = 10) -> tuple[list[Any], bool]:
    with driver.session() as session:
        result: tuple[list[Any], bool] = session.execute_read(packet_beliefs, ns, ids, revision, seq, cap)
    return result


def _facts(driver: Any, ns: str) -> dict[str, dict[str, Any]]:
    records, _, _ = driver.execute_query(
        "MATCH (f:Fact {namespace: $ns}) RETURN f {.*} AS f, "
        "COLLECT { MATCH (f)-[s:SUPPORTED_BY]->(c:Claim) RETURN c.id ORDER BY c.id } AS supports", ns=ns)
    return {r["f"]["object"]: dict(r["f"]) | {"supports": r["supports"]} for r in records}


def _graph_counts(driver: Any, ns: str) -> tuple[int, ...]:
    records, _, _ = driver.execute_query(
        "CALL () { MATCH (f:Fact {namespace: $ns}) RETURN count(f) AS facts } "
        "CALL () { MATCH (:Fact {namespace: $ns})-[r]->() RETURN count(r) AS rels } "
        "CALL () { MATCH (:Entity {namespace: $ns})-[r:RELATED]->() RETURN sum(r.weight) AS related } "
        "RETURN facts, rels, related", ns=ns)
    r = records[0]
    return int(r["facts"]), int(r["rels"]), float(r["related"] or 0)


def test_same_fact_from_three_claims_is_one_node_with_noisy_or_confidence(memory: Any, driver: Any) -> None:
    ns = memory.namespace
    ents = _entities(driver, ns, "Alice", "Acme")
    c1, c2, c3 = _claims(memory, 3)
    first = _write(driver, ns, [_fact(c1, ents["Alice"], "works_at", "Acme", obj_id=ents["Acme"], p=0.5),
                                _fact(c2, ents["Alice"], "works_at", "Acme", obj_id=ents["Acme"], p=0.6)])
    assert first["facts_created"] == 1 and first["supports_created"] == 2
    second = _write(driver, ns, [_fact(c3, ents["Alice"], "works_at", "Acme", obj_id=ents["Acme"], p=0.7)])
    assert second["facts_created"] == 0 and second["supports_created"] == 1
    facts = _facts(driver, ns)
    assert list(facts) == ["Acme"]
    fact = facts["Acme"]
    assert fact["confidence"] == pytest.approx(1 - 0.5 * 0.4 * 0.3) == pytest.approx(0.94)
    assert fact["supports"] == sorted([c1[0], c2[0], c3[0]]) and fact["status"] == "current"
    assert fact["revision"] == c1[1] and fact["subject"] == "Alice Ward"
    # SUBJECT / OBJECT edges, and the fact feeds RELATED between subject and object
    records, _, _ = driver.execute_query(
        "MATCH (s:Entity)<-[:SUBJECT]-(f:Fact {namespace: $ns})-[:OBJECT]->(o:Entity) "
        "MATCH (a:Entity {namespace: $ns})-[r:RELATED]-(b:Entity {namespace: $ns}) WHERE a.id = s.id AND b.id = o.id "
        "RETURN s.id AS s, o.id AS o, r.facts AS facts, r.weight AS w", ns=ns)
    assert [(r["s"], r["o"], r["facts"], r["w"]) for r in records] == [(ents["Alice"], ents["Acme"], 1, 1.0)]
    # a packet built on c2 alone shows the fused belief and every supporting claim
    beliefs, cut = _beliefs(driver, ns, [c2[0]], c3[1], c3[1])
    assert not cut and len(beliefs) == 1
    assert beliefs[0].confidence == pytest.approx(0.94)
    assert beliefs[0].supported_by == sorted([c1[0], c2[0], c3[0]])
    assert (beliefs[0].subject, beliefs[0].predicate, beliefs[0].object) == ("Alice Ward", "works_at", "Acme")
    # pinned to an earlier projections_seq, only the supports known then count
    earlier, _ = _beliefs(driver, ns, [c2[0]], c3[1], c2[1])
    assert earlier[0].confidence == pytest.approx(1 - 0.5 * 0.4)
    assert earlier[0].supported_by == sorted([c1[0], c2[0]])


def test_different_object_with_overlapping_validity_supersedes(memory: Any, driver: Any) -> None:
    ns = memory.namespace
    ents = _entities(driver, ns, "Alice", "Acme", "Globex")
    c1, c2 = _claims(memory, 2)
    march = datetime(2026, 3, 1, tzinfo=UTC)
    _write(driver, ns, [_fact(c1, ents["Alice"], "works_at", "Acme", obj_id=ents["Acme"])])
    counters = _write(driver, ns, [_fact(c2, ents["Alice"], "works_at", "Globex", obj_id=ents["Globex"],
                                         valid_from=march)])
    assert counters["facts_created"] == 1 and counters["facts_superseded"] == 1
    facts = _facts(driver, ns)
    old, new = facts["Acme"], facts["Globex"]
    assert old["status"] == "superseded" and new["status"] == "current"
    assert old["valid_to"].to_native() == march             # closed where the new one starts
    assert old.get("stated_valid_to") is None                 # what it said while it was current
    assert old["superseded_at_revision"] == c2[1] and old["superseded_by"] == new["id"]
    records, _, _ = driver.execute_query(
        "MATCH (n:Fact {namespace: $ns})-[r:SUPERSEDES]->(o:Fact {namespace: $ns}) "
        "RETURN n.object AS n, o.object AS o, r.revision AS rev, r.at IS NOT NULL AS at", ns=ns)
    assert [dict(r) for r in records] == [{"n": "Globex", "o": "Acme", "rev": c2[1], "at": True}]
    # as of projections_seq = c1's revision the old fact was still current, with its open window
    then, _ = _beliefs(driver, ns, [c1[0]], c2[1], c1[1])
    assert [(b.object, b.valid_to) for b in then] == [("Acme", None)]
    now_old, _ = _beliefs(driver, ns, [c1[0]], c2[1], c2[1])
    assert now_old == []
    now_new, _ = _beliefs(driver, ns, [c2[0]], c2[1], c2[1])
    assert [(b.object, b.valid_from) for b in now_new] == [("Globex", "2026-03-01T00:00:00Z")]


def test_undated_supersession_closes_at_recorded_time_and_history_is_kept(memory: Any, driver: Any) -> None:
    ns = memory.namespace
    ents = _entities(driver, ns, "Alice", "Berlin", "Paris")
    c1, c2, c3 = _claims(memory, 3)
    _write(driver, ns, [_fact(c1, ents["Alice"], "lives_in", "Berlin", obj_id=ents["Berlin"])])
    _write(driver, ns, [_fact(c2, ents["Alice"], "lives_in", "Paris", obj_id=ents["Paris"])])
    recorded, _, _ = driver.execute_query("MATCH (c:Claim {id: $id}) RETURN c.recorded_at AS at", id=c2[0])
    facts = _facts(driver, ns)
    assert facts["Berlin"]["status"] == "superseded"
    assert facts["Berlin"]["valid_to"].to_native() == recorded[0]["at"].to_native()
    # A historical statement (2010–2012) does not overlap the present one: it is kept, not superseded,
    # and it does not supersede anything either.
    counters = _write(driver, ns, [_fact(c3, ents["Alice"], "lives_in", "Lyon",
                                         valid_from=datetime(2010, 1, 1, tzinfo=UTC),
                                         valid_to=datetime(2012, 1, 1, tzinfo=UTC))])
    assert counters == {"facts_created": 1, "supports_created": 1, "facts_superseded": 0, "facts_skipped": 0}
    facts = _facts(driver, ns)
    assert facts["Paris"]["status"] == "current" and facts["Lyon"]["status"] == "current"


def test_late_learnt_earlier_state_and_multi_valued_predicates_never_supersede(memory: Any, driver: Any) -> None:
    ns = memory.namespace
    ents = _entities(driver, ns, "Alice", "Acme", "Globex", "Bob", "Carol")
    c1, c2, c3, c4 = _claims(memory, 4)
    y2020, y2024 = datetime(2020, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC)
    _write(driver, ns, [_fact(c1, ents["Alice"], "works_at", "Globex", obj_id=ents["Globex"], valid_from=y2024)])
    # Learnt later, but about an earlier time: Acme from 2020 ends where Globex begins.
    counters = _write(driver, ns, [_fact(c2, ents["Alice"], "works_at", "Acme", obj_id=ents["Acme"],
                                         valid_from=y2020)])
    assert counters["facts_superseded"] == 0
    facts = _facts(driver, ns)
    assert facts["Globex"]["status"] == "current" and facts["Globex"].get("valid_to") is None
    assert facts["Acme"]["status"] == "current" and facts["Acme"]["valid_to"].to_native() == y2024
    # "knows" is multi-valued: a second friend does not erase the first
    _write(driver, ns, [_fact(c3, ents["Alice"], "knows", "Bob", obj_id=ents["Bob"], single=False)])
    counters = _write(driver, ns, [_fact(c4, ents["Alice"], "knows", "Carol", obj_id=ents["Carol"], single=False)])
    assert counters["facts_superseded"] == 0
    facts = _facts(driver, ns)
    assert facts["Bob"]["status"] == facts["Carol"]["status"] == "current"


def test_rerunning_a_batch_writes_nothing_twice(memory: Any, driver: Any) -> None:
    ns = memory.namespace
    ents = _entities(driver, ns, "Alice", "Acme", "Globex")
    c1, c2, c3 = _claims(memory, 3)
    batch = [_fact(c1, ents["Alice"], "works_at", "Acme", obj_id=ents["Acme"], p=0.6),
             _fact(c2, ents["Alice"], "works_at", "Acme", obj_id=ents["Acme"], p=0.5),
             _fact(c3, ents["Alice"], "works_at", "Globex", obj_id=ents["Globex"], p=0.8)]
    first = _write(driver, ns, batch)
    assert first == {"facts_created": 2, "supports_created": 3, "facts_superseded": 1, "facts_skipped": 0}
    before = (_facts(driver, ns), _graph_counts(driver, ns))
    again = _write(driver, ns, list(reversed(batch)))  # the same batch again, in any order
    assert again == {"facts_created": 0, "supports_created": 0, "facts_superseded": 0, "facts_skipped": 3}
    assert (_facts(driver, ns), _graph_counts(driver, ns)) == before
    assert before[0]["Globex"]["status"] == "current" and before[0]["Acme"]["status"] == "superseded"


def test_packet_beliefs_order_cap_and_revision_pinning(memory: Any, driver: Any) -> None:
    ns = memory.namespace
    ents = _entities(driver, ns, "Alice")
    c1, c2, c3, c4 = _claims(memory, 4)
    _write(driver, ns, [
        _fact(c1, ents["Alice"], "role", "engineer", p=0.5),
        _fact(c1, ents["Alice"], "team", "payments", p=0.8),
        _fact(c2, ents["Alice"], "office", "Dublin", p=0.8),
        _fact(c2, ents["Alice"], "badge", "B-17", p=0.3),
        _fact(c3, ents["Alice"], "role", "engineer", p=0.6),   # support: 1 - 0.5 * 0.4 = 0.8
    ])
    ids = [c1[0], c2[0]]
    top = c3[1]
    beliefs, cut = _beliefs(driver, ns, ids, top, top, cap=10)
    assert not cut
    assert [b.confidence for b in beliefs] == [pytest.approx(0.8)] * 3 + [pytest.approx(0.3)]
    # ties broken by id: a total order
    assert [b.id for b in beliefs[:3]] == sorted(b.id for b in beliefs[:3])
    assert beliefs[3].object == "B-17"
    capped, cut = _beliefs(driver, ns, ids, top, top, cap=2)
    assert cut and capped == beliefs[:2]
    none, cut = _beliefs(driver, ns, ids, top, top, cap=0)
    assert none == [] and cut
    # replay stability: the same (revision, seq) gives the same beliefs, whatever comes after
    _write(driver, ns, [_fact(c4, ents["Alice"], "badge", "B-17", p=0.9)])
    assert _beliefs(driver, ns, ids, top, top, cap=10) == (beliefs, False)
    # a retracted claim no longer vouches for anything at revisions after its retraction
    retracted = memory.retract(c3[0], "mistyped").revision
    role = next(b for b in beliefs if b.object == "engineer")
    after, _ = _beliefs(driver, ns, [c1[0]], retracted, retracted)
    role_after = next(b for b in after if b.object == "engineer")
    assert role_after.id == role.id and role_after.confidence == pytest.approx(0.5)
    assert role_after.supported_by == [c1[0]]
    assert _beliefs(driver, ns, ids, top, top, cap=10) == (beliefs, False)
    # facts that no packet item supports never appear; other namespaces never leak in
    assert _beliefs(driver, ns, [c4[0]], top, top) == ([], False)
    assert _beliefs(driver, "t-other-namespace", ids, top, top) == ([], False)


def test_noisy_or_is_order_independent_and_bounded() -> None:
    assert noisy_or([]) == 0.0
    assert noisy_or([0.5, 0.6, 0.7]) == noisy_or([0.7, 0.5, 0.6]) == pytest.approx(0.94)
    assert noisy_or([1.0, 0.2]) == 1.0
    assert noisy_or([0.3]) == pytest.approx(0.3)
