"""The contradiction worker against a real Neo4j: ingest → worker → recall packets.

Covers the contract end to end: edges are found as of each claim's revision, written once per
(pair, method) newer → older, `projections_seq` advances revision by revision (also over
revisions without claims) only when a batch commits, a crash resumes without duplicates, failing
detectors degrade, and packets attach contradictions — capped, flagged, including claims outside
the packet — that disappear for current recall once a side is superseded or retracted but stay
for as-of recall.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver
from typer.testing import CliRunner

from palimpsest.api.cli import app
from palimpsest.api.memory import Memory
from palimpsest.api.worker import BackgroundWorker, ProjectionWorker, WorkerConfig, run_once
from palimpsest.extraction.contradiction import DetectorOptions, HeuristicDetector, TextPair, Verdict
from palimpsest.graph import projections as proj
from palimpsest.schema.errors import ProjectionsTimeoutError
from palimpsest.schema.models import ContextPacket, ContradictionSettings, Policy
from tests.conftest import allow_models

pytestmark = pytest.mark.integration


def edges(driver: Driver, ns: str) -> list[tuple[str, str, str, int]]:
    records, _, _ = driver.execute_query(
        "MATCH (a:Claim {namespace: $ns})-[r:CONTRADICTS]->(b:Claim {namespace: $ns}) "
        "RETURN a.content AS a, b.content AS b, r.method AS m, r.revision AS rev ORDER BY rev, a, b, m", ns=ns)
    return [(r["a"], r["b"], r["m"], r["rev"]) for r in records]


def seq(driver: Driver, ns: str) -> int:
    state = proj.projections_state(driver, ns)
    return 0 if state is None else state.projections_seq


def pairs_in(packet: ContextPacket) -> set[frozenset[str]]:
    contents = {it.id: it.content for it in packet.items}
    return {frozenset({contents[c.item_id], c.other.content}) for c in packet.contradictions}


LAT_800 = "p99 latency of checkout-api is 800 ms"
LAT_120 = "checkout-api p99 latency is 120 ms"


def test_worker_detects_and_recall_attaches_contradictions(memory: Memory, runtime: Any) -> None:
    r1 = memory.ingest(LAT_800, source="grafana")
    memory.ingest("p99 latency of payments-api is 120 ms", source="grafana")  # another service: no conflict
    r3 = memory.ingest(LAT_120, source="slack")
    before = memory.recall("checkout-api latency")
    assert before.projections_seq == 0 and before.contradictions == []

    report = run_once(runtime, memory.namespace)
    assert (report.from_seq, report.to_seq, report.store_revision, report.caught_up) == (0, 3, 3, True)
    assert report.edges_created == 1 and report.detector_failures == {}
    assert edges(runtime.driver, memory.namespace) == [(LAT_120, LAT_800, "heuristic", 3)]  # newer → older

    packet = memory.recall("checkout-api latency")
    assert packet.projections_seq == 3
    by_item = {c.item_id: c for c in packet.contradictions}
    assert set(by_item) == {r1.id, r3.id}  # both sides carry it
    c = by_item[r3.id]
    assert c.other.id == r1.id and c.other.content == LAT_800 and c.other.source == "grafana"
    assert c.method == "heuristic" and c.revision == 3 and 0.6 <= c.score <= 1 and c.other_in_packet
    assert not packet.completeness.contradictions_truncated

    # A second pass has nothing to do and writes nothing.
    again = run_once(runtime, memory.namespace)
    assert again.batches == 0 and again.edges_created == 0
    assert len(edges(runtime.driver, memory.namespace)) == 1


def test_contradicting_claim_outside_the_packet_is_attached(memory: Memory, runtime: Any) -> None:
    old = memory.ingest("Feature flag dual-writes is enabled in production", source="launchdarkly")
    new = memory.ingest("Feature flag dual-writes is disabled in production", source="incident-4471")
    run_once(runtime, memory.namespace)
    packet = memory.recall("is dual-writes disabled in production?", k=1)
    assert [it.id for it in packet.items] == [new.id]
    [c] = packet.contradictions
    assert c.item_id == new.id and c.other.id == old.id and not c.other_in_packet
    assert c.other.content == "Feature flag dual-writes is enabled in production"
    assert c.other.source == "launchdarkly"


def test_contradictions_are_capped_per_item_and_flagged(memory: Memory, runtime: Any) -> None:
    for n in (3, 5, 8, 12):
        memory.ingest(f"ledger-api runs {n} replicas in production", source=f"cmdb-{n}")
    run_once(runtime, memory.namespace)
    assert len(edges(runtime.driver, memory.namespace)) == 6  # every pair of four different values
    memory.register_policy(Policy(version="one-contra", c=1))
    packet = memory.recall("how many replicas does ledger-api run?", policy_version="one-contra", k=1)
    assert len(packet.items) == 1 and len(packet.contradictions) == 1
    assert packet.completeness.contradictions_truncated
    full = memory.recall("how many replicas does ledger-api run?", k=1)
    assert len(full.contradictions) == 3 and not full.completeness.contradictions_truncated
    scores = [(-c.score, c.other.id) for c in full.contradictions]
    assert scores == sorted(scores)  # deterministic order: score, then id


def test_superseded_and_retracted_sides_disappear_now_but_stay_as_of(memory: Memory, runtime: Any) -> None:
    a = memory.ingest("search-service runs 4 replicas in production", source="cmdb", claim_key="search.replicas")
    b = memory.ingest("search-service runs 6 replicas in production", source="slack")
    c = memory.ingest("Feature flag edge-caching is enabled in production", source="ld")
    d = memory.ingest("Feature flag edge-caching is disabled in production", source="ops")
    run_once(runtime, memory.namespace)
    r_found = d.revision
    assert {(x[0], x[1]) for x in edges(runtime.driver, memory.namespace)} == {
        ("search-service runs 6 replicas in production", "search-service runs 4 replicas in production"),
        ("Feature flag edge-caching is disabled in production", "Feature flag edge-caching is enabled in production"),
    }
    # a is superseded (same claim_key), c is retracted
    memory.ingest("search-service runs 6 replicas in production after the resize", source="cmdb",
                  claim_key="search.replicas")
    memory.retract(c.id, "flag was never turned on")
    run_once(runtime, memory.namespace)

    replicas_now = memory.recall("how many replicas does search-service run?")
    assert b.id in {it.id for it in replicas_now.items}
    assert all(x.other.id != a.id for x in replicas_now.contradictions)
    flag_now = memory.recall("is edge-caching enabled?")
    assert d.id in {it.id for it in flag_now.items} and flag_now.contradictions == []

    # The index is shared with other namespaces, so assert on each query's own pair only.
    replicas_then = memory.recall("how many replicas does search-service run?", as_of_revision=r_found)
    assert frozenset({a.id, b.id}) in {frozenset({x.item_id, x.other.id}) for x in replicas_then.contradictions}
    flag_then = memory.recall("is edge-caching enabled?", as_of_revision=r_found)
    assert frozenset({c.id, d.id}) in {frozenset({x.item_id, x.other.id}) for x in flag_then.contradictions}
    # before the second claim of a pair existed there was nothing to contradict
    early = memory.recall("is edge-caching enabled?", as_of_revision=c.revision)
    assert c.id in {it.id for it in early.items}
    assert all(c.id not in (x.item_id, x.other.id) for x in early.contradictions)


def test_candidates_are_taken_as_of_the_claims_revision_and_restorations_reprocess(
        memory: Memory, runtime: Any) -> None:
    """The worker runs late, after the store moved on: the edges must not depend on that."""
    key = "ledger.primary_region"
    first = memory.ingest("The primary region for ledger-api is us-east-1", source="wiki", claim_key=key)
    second = memory.ingest("The primary region for ledger-api is eu-west-1", source="wiki", claim_key=key)
    other = memory.ingest("The primary region for ledger-api is ap-southeast-2", source="slack")
    retraction = memory.retract(second.id, "typo")  # restores `first`
    assert retraction.restored == first.id
    report = run_once(runtime, memory.namespace)  # processes revisions 1..4 only now
    assert report.to_seq == retraction.revision and report.caught_up
    found = {(x[0], x[1], x[3]) for x in edges(runtime.driver, memory.namespace)}
    # at revision 3 `other` met `second` (current then), not `first` (superseded then) ...
    # ... and at revision 4 the restored `first` met `other`.
    assert found == {
        ("The primary region for ledger-api is ap-southeast-2", "The primary region for ledger-api is eu-west-1",
         other.revision),
        ("The primary region for ledger-api is ap-southeast-2", "The primary region for ledger-api is us-east-1",
         retraction.revision),
    }
    now = memory.recall("primary region of ledger-api")
    assert {frozenset({x.item_id, x.other.id}) for x in now.contradictions} == {frozenset({first.id, other.id})}
    then = memory.recall("primary region of ledger-api", as_of_revision=other.revision)
    assert {frozenset({x.item_id, x.other.id}) for x in then.contradictions} == {frozenset({second.id, other.id})}


def test_projections_seq_steps_over_revisions_without_claims(memory: Memory, runtime: Any) -> None:
    keep = memory.ingest("orders-worker depends on redis-3", source="arch")
    gone = memory.ingest("billing-worker writes to db-7", source="arch")
    memory.retract(gone.id, "wrong service")
    memory.retract(keep.id, "stale")
    top = memory.stats().revision
    assert top == 4
    report = run_once(runtime, memory.namespace)
    assert report.to_seq == top and seq(runtime.driver, memory.namespace) == top
    # a namespace whose only new revision is a retraction still advances
    memory.ingest("orders-worker does not depend on redis-3", source="arch")
    run_once(runtime, memory.namespace)
    assert seq(runtime.driver, memory.namespace) == 5


def test_batches_are_whole_revisions_in_order(memory: Memory, runtime: Any) -> None:
    memory.ingest_many([{"content": f"Server web-{i} runs nginx {v}", "source": "cmdb"}
                        for i, v in enumerate(["1.24", "1.25", "1.26"])])  # one revision, three claims
    memory.ingest("Server web-0 runs nginx 1.27", source="cmdb")
    memory.ingest("Server web-9 runs haproxy 2.8", source="cmdb")
    batch = proj.read_batch(runtime.driver, memory.namespace, max_claims=2)
    assert batch is not None and (batch.from_seq, batch.to_seq) == (0, 1)  # never half a revision
    assert [s.revision for s in batch.subjects] == [1, 1, 1]
    report = ProjectionWorker(runtime, WorkerConfig(batch_claims=2)).run_once(memory.namespace)
    assert report.batches == 2 and report.to_seq == 3
    assert edges(runtime.driver, memory.namespace) == [("Server web-0 runs nginx 1.27", "Server web-0 runs nginx 1.24",
                                                        "heuristic", 2)]


class SimulatedCrash(BaseException):
    """Not an Exception: like a killed process, nothing in the worker may swallow it."""


class CrashOnCall:
    method = "heuristic"
    threshold = 0.6

    def __init__(self, crash_on: int) -> None:
        self.inner = HeuristicDetector(0.6)
        self.calls = 0
        self.crash_on = crash_on

    def judge(self, pairs: Sequence[TextPair]) -> list[Verdict | None]:
        self.calls += 1
        verdicts = self.inner.judge(pairs)  # the work is done ...
        if self.calls == self.crash_on:
            raise SimulatedCrash("killed mid-batch")  # ... and lost before it was written
        return verdicts


def _contradicting_stream(memory: Memory) -> None:
    for service, values in (("checkout-api", (120, 800)), ("payments-api", (90, 450)), ("ledger-api", (30, 70))):
        for v in values:
            memory.ingest(f"p99 latency of {service} is {v} ms", source="grafana")


def test_crash_mid_pass_resumes_from_projections_seq_without_duplicates(memory: Memory, runtime: Any) -> None:
    _contradicting_stream(memory)  # six revisions, three contradicting pairs
    config = WorkerConfig(batch_claims=2)
    with pytest.raises(SimulatedCrash):
        ProjectionWorker(runtime, config, detectors=[CrashOnCall(crash_on=2)]).run_once(memory.namespace)
    assert seq(runtime.driver, memory.namespace) == 2  # the first batch committed, the second did not
    assert len(edges(runtime.driver, memory.namespace)) == 1

    report = ProjectionWorker(runtime, config).run_once(memory.namespace)
    assert report.from_seq == 2 and report.to_seq == 6
    found = edges(runtime.driver, memory.namespace)
    assert len(found) == 3 and len({(a, b, m) for a, b, m, _ in found}) == 3

    # Replaying everything from scratch (as after a lost projections_seq) writes nothing new.
    runtime.driver.execute_query("MATCH (s:Store {namespace: $ns}) SET s.projections_seq = 0", ns=memory.namespace)
    replay = ProjectionWorker(runtime, config).run_once(memory.namespace)
    assert replay.to_seq == 6 and replay.contradictions == 3 and replay.edges_created == 0
    assert edges(runtime.driver, memory.namespace) == found


def test_crash_inside_the_write_transaction_leaves_nothing(memory: Memory, runtime: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _contradicting_stream(memory)

    def crash(tx: Any, ns: str, to_seq: int) -> None:
        raise SimulatedCrash("died after the MERGEs, before projections_seq moved")

    monkeypatch.setattr(proj, "_advance", crash)
    with pytest.raises(SimulatedCrash):
        run_once(runtime, memory.namespace, WorkerConfig())
    assert edges(runtime.driver, memory.namespace) == [] and seq(runtime.driver, memory.namespace) == 0
    monkeypatch.undo()
    report = run_once(runtime, memory.namespace, WorkerConfig())
    assert report.edges_created == 3 and seq(runtime.driver, memory.namespace) == 6


def test_concurrent_workers_write_each_edge_once(memory: Memory, runtime: Any) -> None:
    _contradicting_stream(memory)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            ProjectionWorker(runtime, WorkerConfig(batch_claims=1)).run_once(memory.namespace)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    found = edges(runtime.driver, memory.namespace)
    assert len(found) == 3 and seq(runtime.driver, memory.namespace) == 6


class AlwaysFails:
    method = "nli"
    threshold = 0.7

    def judge(self, pairs: Sequence[TextPair]) -> list[Verdict | None]:
        raise RuntimeError("model exploded")


def test_a_failing_detector_is_counted_and_the_rest_still_commit(memory: Memory, runtime: Any) -> None:
    memory.ingest(LAT_800, source="a")
    memory.ingest(LAT_120, source="b")
    worker = ProjectionWorker(runtime, detectors=[AlwaysFails(), HeuristicDetector()])
    report = worker.run_once(memory.namespace)
    assert report.detector_failures == {"nli": 1} and worker.failures["nli"] == 1
    assert report.edges_created == 1 and report.caught_up


def test_policy_selects_detectors_and_unloadable_nli_degrades(memory: Memory, runtime: Any, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    allow_models(monkeypatch, runtime, nli=str(tmp_path / "missing-model"))  # listed by the operator
    memory.register_policy(Policy(version="nli-too", contradiction=ContradictionSettings(
        detectors=("heuristic", "nli"), nli_model=str(tmp_path / "missing-model"))))
    memory.ingest(LAT_800, source="a")
    memory.ingest(LAT_120, source="b")
    report = run_once(runtime, memory.namespace, WorkerConfig(policy_version="nli-too"))
    assert report.policy_version == "nli-too" and report.detector_failures == {"nli": 1}
    assert [m for *_, m, _ in edges(runtime.driver, memory.namespace)] == ["heuristic"]


def test_llm_judge_through_the_worker_with_mock_response(memory: Memory, runtime: Any) -> None:
    memory.register_policy(Policy(version="llm-judge", contradiction=ContradictionSettings(
        detectors=("heuristic", "llm"), llm_model="openai/gpt-4o-mini", llm_threshold=0.8)))
    older = memory.ingest("Patient 4471 remains in the ICU on a ventilator", source="ward-round")
    newer = memory.ingest("Patient 4471 was discharged home yesterday", source="discharge-note")
    answer = {"verdicts": [{"pair": 0, "label": "contradicts", "confidence": 0.93,
                            "reason": "a discharged patient is not in the ICU"}]}
    config = WorkerConfig(policy_version="llm-judge", detector_options=DetectorOptions(
        llm_max_calls_per_second=None, llm_completion_kwargs={"mock_response": json.dumps(answer)}))
    report = run_once(runtime, memory.namespace, config)
    assert report.detector_failures == {} and report.pairs == 1
    assert edges(runtime.driver, memory.namespace) == [(
        "Patient 4471 was discharged home yesterday", "Patient 4471 remains in the ICU on a ventilator", "llm",
        newer.revision)]  # the heuristic cannot see this one; the judge can
    packet = memory.recall("is patient 4471 still in the ICU?")
    assert any(c.other.id == older.id and c.method == "llm" for c in packet.contradictions)

    # A failing provider is reported and never stops the pass.
    memory.ingest(LAT_800, source="a")
    last = memory.ingest(LAT_120, source="b")
    failing = WorkerConfig(policy_version="llm-judge", detector_options=DetectorOptions(
        llm_max_calls_per_second=None, llm_max_retries=0,
        llm_completion_kwargs={"mock_response": Exception("provider down")}))
    report = run_once(runtime, memory.namespace, failing)
    assert report.detector_failures == {"llm": 1} and report.to_seq == last.revision
    assert (LAT_120, LAT_800, "heuristic", last.revision) in edges(runtime.driver, memory.namespace)


def test_candidate_pairs_cover_key_siblings_respect_namespaces_windows_and_bounds(
        memory: Memory, runtime: Any, driver: Driver) -> None:
    from tests.conftest import wipe_namespace

    base = memory.ingest("checkout-api p99 latency is 800 ms", source="a", claim_key="svc.checkout.latency")
    sibling = memory.ingest("The on-call rota for this quarter is in the wiki", source="b",
                            claim_key="svc.checkout.oncall")
    memory.ingest("Feature toggles are reviewed monthly", source="c", claim_key="svc.payments.review")
    memory.ingest("checkout-api p99 latency is 900 ms", source="d", valid_from="2020-01-01T00:00:00Z",
                  valid_to="2020-02-01T00:00:00Z")  # a world-time window that cannot overlap ...
    windowed = memory.ingest("checkout-api p99 latency is 950 ms", source="e", valid_from="2025-01-01T00:00:00Z")
    twin_ns = Memory(runtime, memory.namespace + "-twin")
    try:
        twin_ns.ingest("checkout-api p99 latency is 800 ms", source="other-tenant")
        batch = proj.read_batch(driver, memory.namespace, 100)
        assert batch is not None
        subjects = {s.id: s for s in batch.subjects}
        strict = proj.candidate_pairs(driver, memory.namespace, [subjects[sibling.id]], neighbour_similarity=0.99,
                                      max_pairs_per_claim=5)
        assert [(p.newer_id, p.older_id, p.via) for p in strict] == [(sibling.id, base.id, "key")]
        loose = proj.candidate_pairs(driver, memory.namespace, [subjects[windowed.id]], neighbour_similarity=0.3,
                                     max_pairs_per_claim=5)
        assert loose and all(p.newer_id == windowed.id and p.revision == windowed.revision for p in loose)
        found = {r["id"]: (r["ns"], r["content"]) for r in driver.execute_query(
            "UNWIND $ids AS id MATCH (c:Claim {id: id}) RETURN c.id AS id, c.namespace AS ns, c.content AS content",
            ids=[p.older_id for p in loose]).records}
        assert base.id in found
        assert all(ns == memory.namespace for ns, _ in found.values())  # never the other tenant's twin claim
        assert "checkout-api p99 latency is 900 ms" not in {c for _, c in found.values()}  # 2020 vs 2025+
        assert all(-1 <= p.similarity <= 1 for p in loose)
        assert loose == sorted(loose, key=lambda p: (p.revision, p.newer_id, p.older_id))  # a total order
        bounded = proj.candidate_pairs(driver, memory.namespace, [subjects[windowed.id]], neighbour_similarity=0.3,
                                       max_pairs_per_claim=1)
        best = min(loose, key=lambda p: (-p.similarity, p.older_id))  # the cap keeps the most similar
        assert [p.older_id for p in bounded] == [best.older_id]
    finally:
        wipe_namespace(driver, memory.namespace + "-twin")


def test_background_worker_and_wait_for_projections(memory: Memory) -> None:
    first = memory.ingest(LAT_800, source="grafana")
    with pytest.raises(ProjectionsTimeoutError) as exc:
        memory.wait_for_projections(first.revision, timeout=0.2)
    assert exc.value.code == "PROJECTIONS_TIMEOUT" and exc.value.limit == 0
    worker = memory.start_worker(interval=0.05)
    try:
        assert worker.running
        last = memory.ingest(LAT_120, source="slack")
        assert memory.wait_for_projections(last.revision, timeout=30) >= last.revision
        packet = memory.recall("checkout-api latency")
        assert pairs_in(packet) == {frozenset({LAT_800, LAT_120})}
        assert worker.errors == 0 and worker.passes >= 1
        assert sum(r.edges_created for r in worker.reports) == 1
    finally:
        worker.stop()
    assert not worker.running
    assert memory.wait_for_projections(0, timeout=0) >= 0


def test_background_worker_survives_failing_passes(runtime: Any, namespace: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real = proj.read_batch

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= 2:
            raise RuntimeError("database hiccup")
        return real(*args, **kwargs)

    memory = Memory(runtime, namespace)
    done = memory.ingest(LAT_800, source="a")
    monkeypatch.setattr(proj, "read_batch", flaky)
    with BackgroundWorker(runtime, namespaces=[namespace], interval=0.02, max_backoff=0.05) as worker:
        memory.wait_for_projections(done.revision, timeout=30)
    assert worker.errors == 2 and worker.last_error == "RuntimeError: database hiccup"


def test_replayed_packet_does_not_change_when_the_worker_catches_up(runtime: Any, namespace: str) -> None:
    memory = Memory(runtime, namespace, log_packets=True)
    memory.ingest(LAT_800, source="a")
    memory.ingest(LAT_120, source="b")
    early = memory.recall("checkout-api latency")
    assert early.contradictions == [] and early.projections_seq == 0
    run_once(runtime, namespace)
    late = memory.recall("checkout-api latency")
    assert late.contradictions and late.fingerprint != early.fingerprint
    replay = memory.replay(early.fingerprint)
    assert replay.matches and replay.packet.contradictions == []


def test_cli_worker_once(namespace: str, memory: Memory, neo4j: Any, monkeypatch: pytest.MonkeyPatch,
                         driver: Driver) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    memory.ingest(LAT_800, source="a")
    last = memory.ingest(LAT_120, source="b")
    res = CliRunner().invoke(app, ["worker", "--once", "-n", namespace, "--batch", "1"])
    assert res.exit_code == 0, res.output
    [line] = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert line["namespace"] == namespace and line["to_seq"] == last.revision and line["batches"] == 2
    assert line["edges_created"] == 1 and seq(driver, namespace) == last.revision
    res = CliRunner().invoke(app, ["worker", "--once", "-n", namespace])
    assert res.exit_code == 0 and json.loads(res.stdout.splitlines()[-1])["batches"] == 0


def test_a_tenant_that_writes_mid_pass_is_served_in_that_pass(memory: Memory, runtime: Any, namespace: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Fairness across tenants: the pass re-reads the pending list after every namespace's turn, so a tenant
    that starts writing while a bulk tenant is being served waits for that one turn, not for the rest of a
    pass over every pending namespace. (The pass is the real one over the shared database: other pending
    namespaces get their one small batch too, as under any running worker.)"""
    bulk, bulk_ns = memory, memory.namespace
    for i in range(6):
        bulk.ingest(f"bulk import line {i}: the ledger replica {i} is in region eu-{i}", source="import")
    newcomer = Memory(runtime, f"{namespace}-new")
    ours = {bulk_ns, newcomer.namespace}
    worker = ProjectionWorker(runtime, WorkerConfig(batch_claims=2, max_batches_per_pass=1))
    turns: list[str] = []
    inner = worker.run_once

    def turn(ns: str, *, pagerank: bool = True) -> Any:
        turns.append(ns)
        if ns == bulk_ns:  # the newcomer writes while the bulk tenant has its turn
            newcomer.ingest("The staging cluster runs 8 nodes", source="ops")
        return inner(ns, pagerank=pagerank)

    monkeypatch.setattr(worker, "run_once", turn)
    try:
        reports = worker.run_pending(pagerank=False)
        assert [ns for ns in turns if ns in ours] == [bulk_ns, newcomer.namespace]  # the same pass, each once
        assert len(turns) == len(set(turns))
        assert [r.batches for r in reports if r.namespace in ours] == [1, 1]
        assert seq(runtime.driver, newcomer.namespace) == 1 and seq(runtime.driver, bulk_ns) < 6
    finally:
        from palimpsest.graph.lifecycle.maintenance import drop_namespace

        drop_namespace(runtime.driver, newcomer.namespace)
