"""Issue 13, the GraphQL and Python faces: no request freezes the service, every error is coded, one
deadline per request reaches Neo4j, outages answer UNAVAILABLE in seconds, per-parent lists batch,
a reused idempotency key with other content is a CONFLICT, and an unserved embedding model is refused.

The hostile documents are data (benchmarks/hostile_graphql.py); each is sent through the in-process
HTTP app and, to reach `Memory` with inputs JSON bodies cannot carry (lone surrogates), straight to
the schema.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchmarks.hostile_graphql import CASES, Case, bind, fragment_chain
from palimpsest.api.app import create_app
from palimpsest.api.auth import LOCAL, KeyStore
from palimpsest.api.graphql_limits import MAX_COST, check_limits
from palimpsest.api.graphql_schema import Loaders, schema
from palimpsest.api.memory import Memory
from palimpsest.api.observability import Metrics
from palimpsest.api.runtime import Runtime
from palimpsest.graph.claims.queries import ClaimFilter
from palimpsest.graph.db import deadline
from palimpsest.graph.db.connection import Neo4jSettings, build_driver, open_driver
from palimpsest.schema.errors import BadInputError, ConflictError, DeadlineExceededError, UnavailableError

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def client(runtime: Any) -> Iterator[TestClient]:
    with TestClient(create_app(runtime, keys=KeyStore([])), base_url="http://localhost") as c:
        yield c


def post(client: TestClient, query: str, variables: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    # json.dumps escapes a lone surrogate ("\\ud800"), as a client's JSON library would send it.
    resp = client.post("/graphql", content=json.dumps({"query": query, "variables": variables or {}}),
                       headers={"content-type": "application/json"})
    body: dict[str, Any] = resp.json()
    return resp.status_code, body


def direct(runtime: Any, query: str, variables: dict[str, Any] | None = None,
           timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """The schema without HTTP (so variables may hold what JSON cannot): the errors, formatted."""
    ctx = {"runtime": runtime, "loaders": Loaders(runtime), "metrics": Metrics(), "timeout_s": timeout_s,
           "principal": LOCAL, "auth_error": None}
    result = asyncio.run(schema.execute(query, variable_values=variables, context_value=ctx))
    return [e.formatted for e in result.errors or []]


def codes(errors: list[dict[str, Any]]) -> list[str | None]:
    return [(e.get("extensions") or {}).get("code") for e in errors]


def assert_coded(case: Case, errors: list[dict[str, Any]]) -> None:
    found = codes(errors)
    assert errors, f"{case.name}: no error"
    assert None not in found and "INTERNAL" not in found, f"{case.name}: {errors[:3]}"
    assert case.code in found, f"{case.name}: wanted {case.code}, got {errors[:3]}"
    dumped = json.dumps(errors)
    assert "Traceback" not in dumped and "MATCH (" not in dumped


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_corpus_over_http(client: TestClient, namespace: str, case: Case) -> None:
    start = time.perf_counter()
    status, body = post(client, bind(case.query, namespace), bind(case.variables, namespace))
    elapsed = time.perf_counter() - start
    assert status < 500, body
    assert_coded(case, body.get("errors") or [])
    assert elapsed < 5.0, f"{case.name} took {elapsed:.2f} s"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_corpus_in_process(runtime: Any, namespace: str, case: Case) -> None:
    assert_coded(case, direct(runtime, bind(case.query, namespace), bind(case.variables, namespace)))


def test_fragment_chain_refused_in_linear_time(client: TestClient, namespace: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 13: n=16 took 1.1 s, n=21 13 s, and n=30 froze the server (strawberry's limiters walked
    every spread again). The cost rule prices each fragment once."""
    figures: dict[int, float] = {}
    for n in (16, 21, 30):
        doc = fragment_chain(n, namespace)
        for _ in range(3):  # best of three: a loaded machine (or a GC pass) adds noise, never less
            start = time.perf_counter()
            status, body = post(client, doc)
            figures[n] = min(figures.get(n, 1e9), time.perf_counter() - start)
            assert status < 500 and codes(body["errors"]) == ["LIMIT_EXCEEDED"], body
            assert body["errors"][0]["extensions"]["limit"] == MAX_COST
    assert figures[30] < 1.0, figures  # the bar is 100 ms; generous for a loaded CI machine
    # The rule alone, without HTTP or parsing: linear, so n=300 costs about 10× n=30.
    from graphql import parse

    doc300 = parse(fragment_chain(300, namespace))
    rule_ms = 1e9
    for _ in range(3):
        start = time.perf_counter()
        assert check_limits(doc300, schema._schema)[0].extensions == {"code": "LIMIT_EXCEEDED", "limit": MAX_COST}
        rule_ms = min(rule_ms, (time.perf_counter() - start) * 1000)
    with capsys.disabled():
        print("\nfragment chain over HTTP: " + ", ".join(f"n={n} {s * 1000:.1f} ms" for n, s in figures.items())
              + f"; cost rule alone at n=300: {rule_ms:.1f} ms")
    assert rule_ms < 1000


def test_full_introspection_passes_the_limits(client: TestClient) -> None:
    from graphql import get_introspection_query

    status, body = post(client, get_introspection_query(descriptions=True))
    assert status == 200 and not body.get("errors") and body["data"]["__schema"]["queryType"]["name"] == "Query"


# ------------------------------------------------------------------------------------ fan-out
def _plant_graph(runtime: Any, ns: str, hubs: int = 3, spokes: int = 4) -> list[str]:
    """Entities e0.. with PageRank, each hub RELATED to its own spokes and the next hub, and one
    fact per spoke — written as the worker would, to test the read side on its own."""
    ids = [f"{ns}-e{i}" for i in range(hubs * (spokes + 1))]
    runtime.driver.execute_query(
        "UNWIND range(0, size($ids) - 1) AS i CREATE (:Entity {namespace: $ns, id: $ids[i], name: 'E' + i, "
        "canonical: 'e' + i, aliases: [], pagerank: 1.0 / (i + 1)})", ids=ids, ns=ns)
    pairs, facts = [], []
    for h in range(hubs):
        hub = ids[h * (spokes + 1)]
        for s in range(1, spokes + 1):
            spoke = ids[h * (spokes + 1) + s]
            pairs.append({"a": hub, "b": spoke, "w": float(s)})
            facts.append({"id": f"{spoke}-f", "s": hub, "o": spoke, "rev": s})
        if h + 1 < hubs:
            pairs.append({"a": hub, "b": ids[(h + 1) * (spokes + 1)], "w": 0.5})
    runtime.driver.execute_query(
        "UNWIND $pairs AS p MATCH (a:Entity {namespace: $ns, id: p.a}), (b:Entity {namespace: $ns, id: p.b}) "
        "CREATE (a)-[:RELATED {weight: p.w}]->(b)", pairs=pairs, ns=ns)
    runtime.driver.execute_query(
        "UNWIND $facts AS f CREATE (:Fact {namespace: $ns, id: f.id, subject: 'S', subject_id: f.s, "
        "predicate: 'links', object: 'O', object_id: f.o, revision: f.rev, confidence: 0.9, status: 'current', "
        "recorded_at: datetime()})", facts=facts, ns=ns)
    return ids


def test_neighbours_and_facts_batch_per_level(client: TestClient, runtime: Any, namespace: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _plant_graph(runtime, namespace)
    calls: dict[str, list[int]] = {"neighbours": [], "facts": [], "single": []}
    real_n, real_f = Memory.entity_neighbours_many, Memory.facts_many

    def neighbours(self: Memory, ids: Any, first: int = 20) -> Any:
        calls["neighbours"].append(len(ids))
        return real_n(self, ids, first)

    def facts(self: Memory, ids: Any, **kw: Any) -> Any:
        calls["facts"].append(len(ids))
        return real_f(self, ids, **kw)

    def single(self: Memory, *a: Any, **k: Any) -> Any:
        calls["single"].append(1)
        raise AssertionError("a per-parent query")

    monkeypatch.setattr(Memory, "entity_neighbours_many", neighbours)
    monkeypatch.setattr(Memory, "facts_many", facts)
    monkeypatch.setattr(Memory, "entity_neighbours", single)
    query = """query($ns: String) { topEntities(first: 15, namespace: $ns) { id
        neighbors(first: 5) { id weight neighbors(first: 3) { id } facts { id } } facts(first: 2) { id } } }"""
    status, body = post(client, query, {"ns": namespace})
    assert status == 200 and not body.get("errors"), body
    top = body["data"]["topEntities"]
    assert len(top) == 15
    # One round trip per level and option set, however many parents: 15 entities, then their neighbours.
    assert calls["single"] == []
    assert calls["neighbours"] == [15, len({n["id"] for e in top for n in e["neighbors"]})]
    assert sorted(calls["facts"]) == sorted([15, calls["neighbours"][1]])
    # The batched answer is the per-entity answer.
    for entity in top:
        one = Memory(runtime, namespace)
        want = real_n(one, [entity["id"]], 5)[entity["id"]]
        assert [n["id"] for n in entity["neighbors"]] == [w.id for w in want]
        assert [n["weight"] for n in entity["neighbors"]] == [w.weight for w in want]
        assert [n["weight"] for n in entity["neighbors"]] == sorted((n["weight"] for n in entity["neighbors"]),
                                                                    reverse=True)
    hub = next(e for e in top if e["id"] == f"{namespace}-e0")
    expected = [f.id for f in Memory(runtime, namespace).facts(hub["id"], first=2)]
    assert [f["id"] for f in hub["facts"]] == expected and len(expected) == 2


def test_fan_out_product_is_bounded(client: TestClient, namespace: str) -> None:
    query = """query($n: Int!, $ns: String) { topEntities(first: $n, namespace: $ns) {
        neighbors(first: $n) { neighbors(first: $n) { id } } } }"""
    _, body = post(client, query, {"n": 100, "ns": namespace})
    assert codes(body["errors"]) == ["LIMIT_EXCEEDED"] and "cost" in body["errors"][0]["message"]
    _, body = post(client, query, {"n": 10, "ns": namespace})
    assert not body.get("errors"), body


# ------------------------------------------------------------------------------------ deadlines
SLOW = "UNWIND range(1, 400000000) AS x WITH x WHERE x < 0 RETURN count(*) AS n"


def test_request_deadline_reaches_neo4j(runtime: Any, namespace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver out of time answers TIMEOUT at the deadline, and its query does not keep running:
    the transaction carried the time that was left and Neo4j ended it."""
    ended: list[tuple[str, float]] = []
    done = threading.Event()

    def slow_stats(self: Memory) -> Any:
        start = time.perf_counter()
        try:
            self.rt.driver.execute_query(SLOW, routing_="r")
        except Exception as exc:
            ended.append((type(exc).__name__, time.perf_counter() - start))
            raise
        finally:
            done.set()

    monkeypatch.setattr(Memory, "stats", slow_stats)
    start = time.perf_counter()
    errors = direct(runtime, "query($ns: String) { stats(namespace: $ns) { revision } }", {"ns": namespace},
                    timeout_s=0.6)
    elapsed = time.perf_counter() - start
    assert codes(errors) == ["TIMEOUT"] and errors[0]["extensions"]["limit"] == 0.6, errors
    assert elapsed < 2.5, elapsed
    assert done.wait(5.0), "the Neo4j query outlived its request"
    assert ended[0][0] == "DeadlineExceededError" and ended[0][1] < 3.0, ended


def test_python_face_deadline(memory: Any) -> None:
    start = time.perf_counter()
    with pytest.raises(DeadlineExceededError) as err, deadline.within(0.5):
        memory.rt.driver.execute_query(SLOW, routing_="r")
    assert err.value.code == "TIMEOUT" and time.perf_counter() - start < 3.0
    with pytest.raises(DeadlineExceededError), deadline.within(0.0):
        memory.stats()  # no new work starts once the deadline has passed


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"bolt://127.0.0.1:{s.getsockname()[1]}"


def test_outage_answers_unavailable_in_seconds(embedder: Any) -> None:
    """Nothing listens: recall and ingest answer UNAVAILABLE in seconds (31-63 s before), saying a
    retry is safe, on the Python face and on GraphQL; the defaults took 3-4 s when measured."""
    settings = Neo4jSettings(uri=_closed_port(), retry_s=0.5, connect_s=1.0, acquire_s=2.0)
    start = time.perf_counter()
    with pytest.raises(UnavailableError):
        open_driver(settings)
    assert time.perf_counter() - start < 5.0
    rt = Runtime(settings, build_driver(settings), embedder, 0)
    try:
        mem = Memory(rt, "outage")
        for attempt in (lambda: mem.recall("where is the database?"), lambda: mem.ingest("x", source="y")):
            start = time.perf_counter()
            with pytest.raises(UnavailableError) as err:
                attempt()
            assert err.value.code == "UNAVAILABLE" and "retrying is safe" in err.value.message
            assert time.perf_counter() - start < 5.0
        for query in ('{ recall(query: "where is the database?", namespace: "outage") { storeRevision } }',
                      'mutation { ingest(input: {content: "x", source: "y"}, namespace: "outage") { revision } }'):
            start = time.perf_counter()
            assert codes(direct(rt, query)) == ["UNAVAILABLE"]
            assert time.perf_counter() - start < 5.0
    finally:
        rt.close()


def test_outage_within_a_short_request_deadline(embedder: Any) -> None:
    """Default driver bounds, a 2 s request deadline: the driver's retries shrink to fit it."""
    settings = Neo4jSettings(uri=_closed_port())
    rt = Runtime(settings, build_driver(settings), embedder, 0)
    try:
        start = time.perf_counter()
        found = codes(direct(rt, '{ stats(namespace: "outage") { revision } }', timeout_s=2.0))
        assert found == ["UNAVAILABLE"] and time.perf_counter() - start < 2.5, found
    finally:
        rt.close()


# ------------------------------------------------------------------------------------ Python face
def test_python_face_refuses_lone_surrogates_and_forged_cursors(memory: Any) -> None:
    memory.ingest("The gateway is gw-1", source="net")
    attempts = {
        "query": lambda: memory.recall("gate\ud800way"),
        "policy_version": lambda: memory.recall("gateway", policy_version="v\ud800"),
        "version": lambda: memory.policy("\ud800"),
        "reason": lambda: memory.retract("nope", "typo \ud800"),
        "claim_key": lambda: memory.history("k\ud800"),
        "filter.source": lambda: memory.claims(ClaimFilter(source="\ud800")),
        "after": lambda: memory.claims(after="W1tbW1tbW1tbW1tbW1tbW10="),
    }
    for field, attempt in attempts.items():
        with pytest.raises(BadInputError) as err:
            attempt()
        assert err.value.field == field and err.value.code == "BAD_INPUT", (field, err.value)
    with pytest.raises(BadInputError):
        memory.ingest("x\ud800", source="s")


def test_reused_idempotency_key_with_other_content_is_a_conflict(memory: Any, client: TestClient) -> None:
    first = memory.ingest("Backups run at 02:00", source="ops", claim_key="backup.time", idempotency_key="k-1")
    again = memory.ingest("Backups run at 02:00", source="ops", claim_key="backup.time", idempotency_key="k-1")
    assert again.duplicate and again.id == first.id
    revision = memory.stats().revision
    for change in ({"content": "Backups run at 03:00"}, {"source": "other"}, {"claim_key": "backup.when"},
                   {"valid_from": "2026-01-01"}, {"metadata": {"x": 1}}):
        item = {"content": "Backups run at 02:00", "source": "ops", "claim_key": "backup.time",
                "idempotency_key": "k-1", **change}
        with pytest.raises(ConflictError) as err:
            memory.ingest(**item)
        assert err.value.field == "idempotency_key" and first.id in err.value.message, change
    assert memory.stats().revision == revision  # nothing was written, no revision spent
    assert memory.claim(first.id).content == "Backups run at 02:00"
    batch = memory.ingest_many([
        {"content": "Backups run at 02:00", "source": "ops", "claim_key": "backup.time", "idempotency_key": "k-1"},
        {"content": "Backups run at 04:00", "source": "ops", "idempotency_key": "k-1"},
        {"content": "Restores take an hour", "source": "ops", "idempotency_key": "k-2"},
        {"content": "Restores take a day", "source": "ops", "idempotency_key": "k-2"},
        {"content": "Restores take an hour", "source": "ops", "idempotency_key": "k-2"},
    ]).items
    assert [i.ok for i in batch] == [True, False, True, False, True]
    assert batch[0].duplicate and not batch[2].duplicate and batch[4].duplicate and batch[4].id == batch[2].id
    assert [i.error["code"] for i in batch if i.error] == ["CONFLICT", "CONFLICT"]
    # GraphQL: per item in ingestMany, and the error of a single ingest.
    many = post(client, """mutation($in: [ClaimInput!]!, $ns: String) { ingestMany(inputs: $in, namespace: $ns) {
        items { ok duplicate error } } }""", {"ns": memory.namespace, "in": [
        {"content": "Restores take an hour", "source": "ops", "idempotencyKey": "k-2"},
        {"content": "Restores take a week", "source": "ops", "idempotencyKey": "k-2"}]})[1]
    items = many["data"]["ingestMany"]["items"]
    assert items[0]["duplicate"] and items[1]["error"]["code"] == "CONFLICT"
    assert items[1]["error"]["field"] == "idempotencyKey"
    one = post(client, """mutation($ns: String) { ingest(namespace: $ns, input: {content: "Restores are instant",
        source: "ops", idempotencyKey: "k-2"}) { revision } }""", {"ns": memory.namespace})[1]
    assert codes(one["errors"]) == ["CONFLICT"]


def test_policy_with_an_unserved_embedding_model_is_refused(memory: Any, client: TestClient) -> None:
    with pytest.raises(BadInputError) as err:
        memory.register_policy({"version": "emb-1", "embedding_model": "text-embedding-3-large"})
    assert err.value.field == "embedding_model" and "all-MiniLM-L6-v2" in err.value.message
    assert memory.register_policy({"version": "emb-2", "embedding_model": "sentence-transformers/all-MiniLM-L6-v2"})
    body = post(client, """mutation($ns: String) { registerPolicy(namespace: $ns, input: {version: "emb-3",
        embeddingModel: "bge-large"}) { version } }""", {"ns": memory.namespace})[1]
    assert codes(body["errors"]) == ["BAD_INPUT"] and body["errors"][0]["extensions"]["field"] == "embeddingModel"
    assert [p.version for p in memory.policies()] == ["default-v1", "emb-2"]
