"""Inferred supersession against a real Neo4j: ingest without claim keys → worker → recall.

The contract: off by default; when a policy turns it on, a newer claim that states another value
for the same subject and attribute supersedes the older one at a revision of its own (so as-of
recall before it still sees the old claim), with reason `inferred` and a confidence; claims
about another subject — even with the same attribute and wording — are never touched; retracting
the newer claim restores the older; re-running the worker writes nothing twice.
"""

from __future__ import annotations

from typing import Any

import pytest
from neo4j import Driver

from palimpsest.api.memory import Memory
from palimpsest.api.worker import WorkerConfig
from palimpsest.graph.claims import inferred
from palimpsest.graph.claims.revisions import store_state
from palimpsest.schema.models import Policy

pytestmark = pytest.mark.integration

POLICY = Policy(version="infer-test-v1", inferred_supersession=True)

OLD = "Ravi Alvarez's warfarin dose is 5 mg daily."
NEW = "The prescriber adjusted Ravi Alvarez's warfarin to 7.5 mg daily."
QUERY = "What warfarin dose does Ravi Alvarez take?"


def config() -> WorkerConfig:
    return WorkerConfig(policy_version=POLICY.version, pagerank=False)


def supersedes(driver: Driver, ns: str) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(
        "MATCH (n:Claim {namespace: $ns})-[s:SUPERSEDES]->(o:Claim {namespace: $ns}) "
        "RETURN n.id AS newer, o.id AS older, n.content AS newer_content, o.content AS older_content, "
        "s.reason AS reason, s.confidence AS confidence, s.kind AS kind, s.revision AS revision, "
        "s.undone_at_revision AS undone ORDER BY s.revision, newer", ns=ns)
    return [dict(r) for r in records]


def revision(driver: Driver, ns: str) -> int:
    with driver.session() as session:
        state = session.execute_read(store_state, ns)
    assert state is not None
    return state.revision


def read(driver: Driver, fn: Any, *args: Any) -> Any:
    with driver.session() as session:
        return session.execute_read(fn, *args)


def item_ids(memory: Memory, as_of: int | None = None) -> list[str]:
    return [it.id for it in memory.recall(QUERY, k=5, as_of_revision=as_of).items]


def supersede_once(memory: Memory) -> tuple[str, str, int]:
    """OLD, processed; then NEW, processed: returns (old id, new id, revision of NEW's write)."""
    memory.register_policy(POLICY)
    old = memory.ingest(OLD, "ehr")
    memory.run_projections(config())
    new = memory.ingest(NEW, "ehr")
    assert old.id and new.id and new.revision
    return old.id, new.id, new.revision


def test_same_subject_value_change_supersedes_at_a_new_revision(memory: Memory, driver: Driver) -> None:
    ns = memory.namespace
    old, new, written = supersede_once(memory)
    report = memory.run_projections(config())
    assert report.inferred_supersessions == 1 and report.caught_up

    [edge] = supersedes(driver, ns)
    assert (edge["newer"], edge["older"], edge["reason"], edge["kind"]) == (new, old, "inferred", "value")
    assert POLICY.inferred_min_confidence <= edge["confidence"] <= 1.0
    at = edge["revision"]
    assert at > written and at == revision(driver, ns)  # its own revision, after the claim's write
    claim = memory.claim(old)
    assert claim.status == "superseded" and claim.superseded_at_revision == at

    # Hidden now, visible as of any revision before the inference; the packet counts it as hidden.
    now = memory.recall(QUERY, k=5)
    assert new in [it.id for it in now.items] and old not in [it.id for it in now.items]
    assert now.hidden.superseded >= 1 and now.hidden.inferred == 1  # ... and says inference hid it
    assert memory.recall(QUERY, k=5, as_of_revision=at - 1).hidden.inferred == 0
    assert old in item_ids(memory, as_of=at - 1) and new in item_ids(memory, as_of=at - 1)
    assert old in item_ids(memory, as_of=written - 1) and new not in item_ids(memory, as_of=written - 1)
    assert old not in item_ids(memory, as_of=at)

    # The helpers recall uses to mark what inference hid, per revision.
    assert read(driver, inferred.hidden_by_inference, ns, [old, new], at) == {old}
    assert read(driver, inferred.hidden_by_inference, ns, [old], at - 1) == set()
    why = read(driver, inferred.supersession_reasons, ns, [old], at)[old]
    assert why["by"] == new and why["reason"] == "inferred" and why["confidence"] == edge["confidence"]
    assert read(driver, inferred.inferred_successors, ns, [old], at) == {old: new}


def test_different_subject_same_attribute_is_never_superseded(memory: Memory, driver: Driver) -> None:
    ns = memory.namespace
    memory.register_policy(POLICY)
    subject = {"subject": "Acme–Keystone"}  # a declared subject: the two claims DO share an entity
    first = [
        ("The Acme–Keystone reseller contract is governed by the law of Delaware.", subject),
        ("The Acme-Keystone reseller contract requires 30 days of notice to terminate.", {}),
        ("Ravi Alvarez's warfarin dose is 5 mg daily.", {}),
        ("The checkout-api p99 latency budget is 150 ms.", {}),
    ]
    second = [
        ("The Acme–Keystone distribution contract is governed by the law of Texas.", subject),   # another contract
        ("The Acme-Keystone distribution contract requires 90 days of notice to terminate.", {}),  # another contract
        ("Ravi Alvarez's metformin dose is 500 mg daily.", {}),          # same patient, another drug
        ("The payments-api p99 latency budget is 300 ms.", {}),           # another service
    ]
    memory.ingest_many([{"content": c, "source": "s", "metadata": m} for c, m in first])
    memory.run_projections(config())
    memory.ingest_many([{"content": c, "source": "s", "metadata": m} for c, m in second])
    report = memory.run_projections(config())

    assert supersedes(driver, ns) == []
    assert memory.stats().claims_by_status == {"current": 8}
    # Not for want of candidates: the judge saw same-entity pairs and rejected them on the subject.
    assert report.inferred_pairs >= 3 and report.inferred_supersessions == 0
    assert set(report.inferred_rejected) & {"identifiers", "substitution", "entities"}


def test_off_by_default(memory: Memory, driver: Driver) -> None:
    memory.ingest(OLD, "ehr")
    memory.run_projections()
    memory.ingest(NEW, "ehr")
    report = memory.run_projections()
    assert report.policy_version == "default-v1" and report.inferred_pairs == 0
    assert supersedes(driver, memory.namespace) == []
    assert memory.stats().claims_by_status == {"current": 2}


def test_retracting_the_newer_restores_the_older(memory: Memory, driver: Driver) -> None:
    ns = memory.namespace
    old, new, _ = supersede_once(memory)
    memory.run_projections(config())
    at = supersedes(driver, ns)[0]["revision"]

    result = memory.retract(new, "entered on the wrong patient")
    assert result.restored == old
    assert memory.claim(old).status == "current" and memory.claim(new).status == "retracted"
    assert old in item_ids(memory) and new not in item_ids(memory)
    [edge] = supersedes(driver, ns)
    assert edge["undone"] == result.revision
    # History stays legible: as of the inference the old claim was hidden, from the retraction on it is back.
    assert old not in item_ids(memory, as_of=at) and new in item_ids(memory, as_of=at)
    assert read(driver, inferred.hidden_by_inference, ns, [old], at) == {old}
    assert read(driver, inferred.hidden_by_inference, ns, [old], result.revision) == set()

    # The worker steps over the retraction (the restored claim is no new statement) and infers nothing.
    report = memory.run_projections(config())
    assert report.inferred_supersessions == 0 and memory.claim(old).status == "current"


def test_idempotent_on_worker_rerun(memory: Memory, driver: Driver) -> None:
    ns = memory.namespace
    supersede_once(memory)
    memory.run_projections(config())
    after = revision(driver, ns)
    assert len(supersedes(driver, ns)) == 1

    again = memory.run_projections(config())
    assert again.batches == 0 and again.inferred_supersessions == 0

    # A full rebuild from projections_seq 0 re-judges every claim and writes nothing new: no edge,
    # no revision spent (the pair is re-read under the lock and the older claim is no longer current).
    driver.execute_query("MATCH (s:Store {namespace: $ns}) SET s.projections_seq = 0", ns=ns)
    rebuilt = memory.run_projections(config())
    assert rebuilt.caught_up and rebuilt.inferred_supersessions == 0
    assert len(supersedes(driver, ns)) == 1 and revision(driver, ns) == after


def test_versions_in_one_batch_form_a_chain(memory: Memory, driver: Driver) -> None:
    ns = memory.namespace
    memory.register_policy(POLICY)
    res = memory.ingest_many([{"content": OLD, "source": "ehr"}, {"content": NEW, "source": "ehr"},
                              {"content": "Ravi Alvarez's warfarin dose is 10 mg daily.", "source": "ehr"}])
    v1, v2, v3 = (it.id for it in res.items)
    report = memory.run_projections(config())
    assert report.inferred_supersessions == 2
    assert sorted((e["newer"], e["older"]) for e in supersedes(driver, ns)) == sorted([(v2, v1), (v3, v2)])
    assert memory.stats().claims_by_status == {"current": 1, "superseded": 2}
    assert item_ids(memory)[:1] == [v3]


def test_write_drops_pairs_no_longer_current(memory: Memory, driver: Driver) -> None:
    """Decisions are re-checked under the lock: an older claim retracted meanwhile is left alone,
    and nothing left to write spends no revision."""
    ns = memory.namespace
    old = memory.ingest(OLD, "ehr").id
    new = memory.ingest(NEW, "ehr").id
    assert old and new
    memory.retract(old, "duplicate")
    before = revision(driver, ns)
    with driver.session() as session:
        written = session.execute_write(inferred.write_inferred, ns, [
            inferred.InferredWrite(new, old, 2, 0.9, "value", "test")])
    assert written == 0 and revision(driver, ns) == before and supersedes(driver, ns) == []
