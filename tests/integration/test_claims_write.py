"""Ingest, supersession (race-safe), retraction with restoration, idempotency, history."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from neo4j import Driver

from palimpsest.api.memory import Memory
from palimpsest.schema.errors import ConflictError, NotFoundError

pytestmark = pytest.mark.integration


def test_ingest_returns_id_and_bumps_revision(memory: Memory, driver: Driver) -> None:
    a = memory.ingest("The build server runs Debian 12", source="inventory")
    b = memory.ingest("The CI cache lives on S3", source="inventory")
    assert a.ok and a.id and b.revision == a.revision + 1
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns, id: $id}) RETURN c.content AS content, c.status AS status, "
        "c.embedding IS NOT NULL AS embedded, c.content_hash AS h", ns=memory.namespace, id=a.id)
    assert records[0]["content"] == "The build server runs Debian 12"
    assert records[0]["status"] == "current" and records[0]["embedded"] and len(records[0]["h"]) == 64


def test_claim_key_supersedes_in_the_same_transaction(memory: Memory, driver: Driver) -> None:
    old = memory.ingest("Payments DB is db-7", source="runbook", claim_key="payments.db")
    new = memory.ingest("Payments DB moved to db-9", source="incident-142", claim_key="payments.db")
    assert new.supersedes == old.id
    old_claim = memory.claim(old.id or "")
    assert old_claim.status == "superseded" and old_claim.superseded_at_revision == new.revision
    records, _, _ = driver.execute_query(
        "MATCH (n:Claim {id: $new})-[s:SUPERSEDES]->(o:Claim {id: $old}) RETURN s.revision AS r, s.reason AS why",
        new=new.id, old=old.id)
    assert [(r["r"], r["why"]) for r in records] == [(new.revision, "claim_key")]


def test_chain_inside_one_batch(memory: Memory) -> None:
    res = memory.ingest_many([
        {"content": f"Deploy freeze version {i}", "source": "cab", "claim_key": "freeze"} for i in range(3)
    ])
    ids = [it.id for it in res.items]
    assert [it.supersedes for it in res.items] == [None, ids[0], ids[1]]
    statuses = [memory.claim(i or "").status for i in ids]
    assert statuses == ["superseded", "superseded", "current"]


def test_idempotency_key_replays_first_result_and_writes_nothing(memory: Memory) -> None:
    first = memory.ingest("Invoice 88 was paid", source="erp", idempotency_key="evt-88")
    rev = memory.stats().revision
    again = memory.ingest("Invoice 88 was paid", source="erp", idempotency_key="evt-88")
    assert again.duplicate and again.id == first.id and again.revision == first.revision
    assert memory.stats().revision == rev
    assert memory.stats().claims_by_status == {"current": 1}


def test_concurrent_writers_leave_one_current_and_a_linear_chain(runtime: Any, namespace: str,
                                                                 driver: Driver) -> None:
    threads, per_thread = 8, 5
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        mem = Memory(runtime, namespace)
        try:
            for i in range(per_thread):
                mem.ingest(f"Primary region is r{t}-{i}", source=f"writer-{t}", claim_key="primary.region")
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    pool = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns, claim_key: 'primary.region'}) "
        "OPTIONAL MATCH (c)-[out:SUPERSEDES]->() OPTIONAL MATCH ()-[inc:SUPERSEDES]->(c) "
        "RETURN c.id AS id, c.status AS status, count(DISTINCT out) AS outs, count(DISTINCT inc) AS ins",
        ns=namespace)
    assert len(records) == threads * per_thread
    assert sum(1 for r in records if r["status"] == "current") == 1
    assert all(r["outs"] <= 1 and r["ins"] <= 1 for r in records)
    # Linear: exactly one head (nothing supersedes it) and one tail (it supersedes nothing).
    assert sum(1 for r in records if r["ins"] == 0) == 1
    assert sum(1 for r in records if r["outs"] == 0) == 1
    chain = memory_chain(driver, namespace)
    assert len(chain) == threads * per_thread


def memory_chain(driver: Driver, ns: str) -> list[str]:
    records, _, _ = driver.execute_query(
        "MATCH (head:Claim {namespace: $ns, claim_key: 'primary.region', status: 'current'}) "
        "MATCH p = (head)-[:SUPERSEDES*0..]->(tail) WHERE NOT (tail)-[:SUPERSEDES]->() "
        "RETURN [n IN nodes(p) | n.id] AS ids", ns=ns)
    assert len(records) == 1
    return list(records[0]["ids"])


def test_retraction_restores_what_it_superseded(memory: Memory) -> None:
    v1 = memory.ingest("Dosage of drug X is 10mg", source="label-2024", claim_key="drugx.dose")
    v2 = memory.ingest("Dosage of drug X is 20mg", source="typo-entry", claim_key="drugx.dose")
    result = memory.retract(v2.id or "", reason="entered in error")
    assert result.restored == v1.id
    assert memory.claim(v1.id or "").status == "current"
    assert memory.claim(v2.id or "").status == "retracted"
    packet = memory.recall("what is the dosage of drug X?")
    assert [i.id for i in packet.items] == [v1.id]
    # Before the retraction, v2 was the visible one; before v2, v1.
    assert memory.recall("dosage of drug X", as_of_revision=v2.revision).items[0].id == v2.id
    assert memory.recall("dosage of drug X", as_of_revision=v1.revision).items[0].id == v1.id
    chain = memory.history("drugx.dose")
    assert [e.claim.id for e in chain] == [v1.id, v2.id]
    assert [e.kind for e in chain[0].events] == ["recorded", "superseded", "restored"]
    assert [e.kind for e in chain[1].events] == ["recorded", "retracted"]
    assert chain[1].events[1].reason == "entered in error"
    assert chain[0].events[2].revision == result.revision


def test_retracting_a_plain_claim_hides_it_and_twice_is_a_conflict(memory: Memory) -> None:
    c = memory.ingest("The office wifi password rotates monthly", source="it")
    memory.retract(c.id or "", "policy changed")
    assert memory.recall("wifi password rotation").items == []
    assert memory.recall("wifi password rotation").hidden.retracted == 1
    with pytest.raises(ConflictError):
        memory.retract(c.id or "", "again")
    with pytest.raises(NotFoundError) as exc:
        memory.retract("nope", "missing")
    assert exc.value.field == "id"


def test_history_is_oldest_first_with_revisions(memory: Memory) -> None:
    revs = [memory.ingest(f"Team size is {n}", source="hr", claim_key="team.size").revision for n in (4, 5, 6)]
    chain = memory.history("team.size")
    assert [e.claim.revision for e in chain] == revs
    assert [e.claim.status for e in chain] == ["superseded", "superseded", "current"]
    assert chain[0].events[1].by == chain[1].claim.id
    with pytest.raises(NotFoundError):
        memory.history("no.such.key")
