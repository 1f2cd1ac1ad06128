"""Issue 45: reads write within bounds. Before, `recallRounds` and `ask` logged every round's packet
whatever PALIMPSEST_LOG_PACKETS said, nothing expired, and 20 aliases of `recallRounds(rounds: 4,
k: 50)` by a read-only key grew the packet log from 1.4 KB to 8.6 MB in one request. Now logging
follows the setting on every path, each namespace keeps at most PALIMPSEST_PACKET_LOG_MAX packets none
older than PALIMPSEST_PACKET_LOG_TTL_S, and the request's cost counts recalls and model calls.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.memory import Memory
from palimpsest.api.runtime import Runtime
from palimpsest.extraction.reader import ReaderOptions
from palimpsest.graph.recall.packet_log import Retention
from palimpsest.settings import Settings
from tests.northern_lights import seed

pytestmark = pytest.mark.integration

QUESTION = "Where was the director of Northern Lights born?"
READER = "ro-reader-key"


def _logged(driver: Any, namespace: str) -> int:
    records, _, _ = driver.execute_query("MATCH (p:PacketLog {namespace: $ns}) RETURN count(p) AS n", ns=namespace)
    return int(records[0]["n"])


def _reader(runtime: Any, namespace: str, *, log: bool, retention: Retention | None = None) -> Memory:
    verdict = {"thought": "Ada Brennan was born in Galway.", "answer": "Galway", "cited_ids": [],
               "not_in_memory": False}
    rt = Runtime(runtime.settings, runtime.driver, runtime.embedder, runtime.schema_version, models=runtime.models,
                 reader=ReaderOptions(completion_kwargs={"mock_response": json.dumps(verdict)},
                                      max_calls_per_second=None))
    return Memory(rt, namespace, log_packets=log, packet_retention=retention)


def test_rounds_and_ask_follow_the_log_setting(runtime: Any, namespace: str) -> None:
    quiet = _reader(runtime, namespace, log=False)
    seed(quiet)
    assert len(quiet.recall_rounds(QUESTION, k=3, rounds=2).rounds) == 2
    assert quiet.ask(QUESTION, llm_model="gpt-4o-mini", k=2, expansion="offline").cost.calls >= 1
    quiet.recall(QUESTION)
    assert _logged(runtime.driver, namespace) == 0  # logging is off: no path logs
    logged = _reader(runtime, namespace, log=True)
    out = logged.recall_rounds(QUESTION, k=3, rounds=2)
    assert _logged(runtime.driver, namespace) == 2
    assert all(logged.replay(r.packet.fingerprint).matches for r in out.rounds)
    logged.ask(QUESTION, llm_model="gpt-4o-mini", k=2, expansion="offline")
    assert _logged(runtime.driver, namespace) >= 3


def test_the_packet_log_stays_within_its_cap_oldest_first(runtime: Any, namespace: str) -> None:
    mem = _reader(runtime, namespace, log=True, retention=Retention(max_packets=5, ttl_s=3600))
    seed(mem)
    packets = [mem.recall(f"{QUESTION} variant {i}", k=2) for i in range(9)]
    packets += [r.packet for r in mem.recall_rounds("Who directed Northern Lights?", k=4, rounds=3).rounds]
    assert _logged(runtime.driver, namespace) == 5
    kept, _, _ = runtime.driver.execute_query(
        "MATCH (p:PacketLog {namespace: $ns}) RETURN collect(p.fingerprint) AS fps", ns=namespace)
    assert packets[-1].fingerprint in kept[0]["fps"] and packets[0].fingerprint not in kept[0]["fps"]


def test_expired_packets_are_removed_by_the_next_write(runtime: Any, namespace: str) -> None:
    mem = _reader(runtime, namespace, log=True, retention=Retention(max_packets=100, ttl_s=24 * 3600))
    seed(mem)
    old = [mem.recall(f"{QUESTION} old {i}", k=2) for i in range(3)]
    runtime.driver.execute_query("MATCH (p:PacketLog {namespace: $ns}) SET p.logged_at = datetime() - duration('P2D')",
                                 ns=namespace)
    fresh = mem.recall(f"{QUESTION} fresh", k=2)
    assert _logged(runtime.driver, namespace) == 1
    assert mem.replay(fresh.fingerprint).matches
    with pytest.raises(Exception, match="no logged packet"):
        mem.replay(old[0].fingerprint)




def _rounds(aliases: int) -> str:
    return "query($ns: String) { " + " ".join(
        f"r{i}: recallRounds(query: \"{QUESTION} {i}\", rounds: 4, k: 50, namespace: $ns) "
        "{ rounds { packet { fingerprint items { id content } } } }" for i in range(aliases)) + " }"


ASKS = "{ " + " ".join(f"a{i}: ask(question: \"{QUESTION} {i}\", rounds: 4, namespace: $ns) {{ answer }}"
                       for i in range(20)) + " }"


def _client(runtime: Any, namespace: str, settings: Settings) -> TestClient:
    keys = KeyStore.from_json(json.dumps([{"name": "ro", "sha256": hash_key(READER),
                                           "namespaces": {namespace: ["read"]}}]))
    return TestClient(create_app(runtime, keys=keys, settings=settings), base_url="http://localhost",
                      headers={"authorization": f"Bearer {READER}"})


def test_aliased_rounds_by_a_read_key_stay_within_the_log(runtime: Any, namespace: str) -> None:
    seed(Memory(runtime, namespace))
    query = _rounds(10)  # 40 recalls; 20 aliases (80) are over the request's cost
    with _client(runtime, namespace, Settings()) as c:  # the default: no packet log
        body = c.post("/graphql", json={"query": query, "variables": {"ns": namespace}}).json()
        assert "errors" not in body, body
    assert _logged(runtime.driver, namespace) == 0
    with _client(runtime, namespace, Settings(log_packets=True, packet_log_max=10)) as c:
        body = c.post("/graphql", json={"query": query, "variables": {"ns": namespace}}).json()
        assert "errors" not in body, body
    # 40 packets logged by concurrent resolvers: within the cap (concurrent trims may each take the oldest)
    assert 0 < _logged(runtime.driver, namespace) <= 10


@pytest.mark.parametrize("query", ["query($ns: String) " + ASKS, _rounds(20)], ids=["ask", "recallRounds"])
def test_twenty_aliases_of_four_rounds_exceed_the_request_cost(runtime: Any, namespace: str, query: str) -> None:
    with _client(runtime, namespace, Settings()) as c:
        body = c.post("/graphql", json={"query": query, "variables": {"ns": namespace}}).json()
    error = body["errors"][0]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED" and "cost" in error["message"], body
    assert body.get("data") is None  # refused before any resolver (or model) ran
