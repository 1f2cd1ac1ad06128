"""`explain` on real recalls: the explanation is derived, never part of the packet.

On a namespace with versions (lending), validity windows (valid_at), a retraction, an entity graph
(PPR) and a relevance floor, for every face's recall: each item's score recomputes from its
explanation's parts, each hidden count is the ids its rules name, and the fingerprint is the same
whether the packet was explained or not — also after a replay of the logged packet.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from palimpsest.api.memory import Memory
from palimpsest.schema.models import ContextPacket, HiddenCounts

pytestmark = pytest.mark.integration

CLAIMS: list[dict[str, Any]] = [
    {"content": "The ledger-api rate limit is 300 requests per minute", "source": "runbook",
     "claim_key": "ledger.limit"},
    {"content": "Backups go to bucket b-1", "source": "ops", "claim_key": "backup.bucket"},
    {"content": "Alice Moreau chairs the audit committee", "source": "board", "claim_key": "audit.chair",
     "valid_from": "2019-01-01", "valid_to": "2022-01-01"},
    {"content": "The checkout-gateway p99 budget is 750 ms", "source": "slo"},
    {"content": "Lena Vogt was born in the town of Harrow Lake.", "source": "wiki"},
    {"content": "Harrow Lake hosts the annual Kestrel Regatta every August.", "source": "wiki"},
    {"content": "The Kestrel Regatta was first sailed by fishermen.", "source": "wiki"},
    *({"content": f"Distractor town number {i} is known for its bakery and its tram line.", "source": "wiki"}
      for i in range(6)),
]
LATER: list[dict[str, Any]] = [
    {"content": "The limit is now 500 per minute", "source": "ticket-7", "claim_key": "ledger.limit"},
    {"content": "Backups go to bucket b-2", "source": "ops", "claim_key": "backup.bucket"},
    {"content": "Omar Haddad chairs the audit committee", "source": "board", "claim_key": "audit.chair",
     "valid_from": "2022-01-01"},
    {"content": "The release train leaves every second Tuesday", "source": "eng", "valid_from": "2030-01-01"},
    {"content": "The office wifi password rotates monthly", "source": "it", "valid_to": "2021-01-01"},
    {"content": "Backups are kept for seven years", "source": "ops"},
]
QUERIES = ["ledger-api rate limit", "where do backups go?", "who chairs the audit committee?",
           "Which annual event takes place in the birthplace of Lena Vogt?", "checkout-scheduler p99 budget",
           "when does the release train leave?"]
POLICIES = [
    {"version": "plain"},
    {"version": "rrf", "fusion": "rrf"},
    {"version": "ppr", "graph_expansion": "ppr", "ppr_seeds": 8},
    {"version": "ppr-rrf", "graph_expansion": "ppr", "fusion": "rrf", "ppr_seeds": 8, "ppr_protect_top": 1},
    {"version": "floor", "min_relevance": 0.3, "vector_weight": 2.0},
]


def _load(memory: Memory) -> int:
    memory.ingest_many(CLAIMS)
    first = memory.stats().revision
    memory.ingest_many(LATER)
    wrong = memory.ingest("Backups go to bucket b-3", "typo").id
    memory.retract(str(wrong), "typo")
    memory.run_projections()
    for pol in POLICIES:
        memory.register_policy({**pol, "k": 6})
    return int(first)


def recomputed(item: Any) -> float:
    e = item.explanation
    parts = [t.contribution for t in (e.vector, e.lexical, e.graph, e.lending) if t is not None]
    return math.fsum(parts) * math.prod(p.factor for p in e.penalties) * e.decay.factor


def assert_explained(packet: ContextPacket, plain: ContextPacket) -> None:
    """`packet` (explained) is `plain` with explanations, and every explanation adds up."""
    assert packet.fingerprint == plain.fingerprint == packet.compute_fingerprint()
    assert packet.model_dump(exclude={"served_at": True, "hidden_explanation": True,
                                      "items": {"__all__": {"explanation"}}}) == plain.model_dump(
        exclude={"served_at": True, "hidden_explanation": True, "items": {"__all__": {"explanation"}}})
    assert all(it.explanation is None for it in plain.items) and plain.hidden_explanation is None
    for it in packet.items:
        assert it.explanation is not None, it.id
        assert math.isclose(recomputed(it), it.score, rel_tol=1e-9, abs_tol=1e-12), (it.id, it.explanation)
        assert it.explanation.score == it.score and it.explanation.relevance == it.relevance
        assert (it.explanation.lending is not None) == (it.matched_via is not None)
        if it.explanation.lending is not None:
            assert it.explanation.lending.via == it.matched_via
    assert packet.hidden_explanation is not None
    assert_hidden_named(packet.hidden, packet.hidden_explanation)


def assert_hidden_named(hidden: HiddenCounts, rules: list[Any]) -> None:
    """Every count is the number of ids its rules name (an inferred supersession counts in both)."""
    named: dict[str, set[str]] = {}
    for r in rules:
        assert r.ids and r.detail and r.rule
        named.setdefault(r.count, set()).update(r.ids)
    for field, value in hidden.model_dump().items():
        ids = named.get(field, set()) | (named.get("inferred", set()) if field == "superseded" else set())
        assert len(ids) == value, (field, value, rules)


def test_components_add_up_on_real_recalls_and_the_fingerprint_is_unchanged(memory: Memory) -> None:
    first = _load(memory)
    seen = {"lending": 0, "graph": 0, "penalty": 0, "protected": 0, "hidden_rules": set()}
    for pol in POLICIES:
        for query in QUERIES:
            for when in ({}, {"as_of_revision": first}, {"valid_at": "2020-06-01"}, {"valid_at": "2031-01-01"},
                         {"as_of_revision": first, "valid_at": "2020-06-01"}):
                plain = memory.recall(query, policy_version=pol["version"], **when)
                explained = memory.recall(query, policy_version=pol["version"], explain=True, **when)
                assert_explained(explained, plain)
                for it in explained.items:
                    e = it.explanation
                    assert e is not None
                    seen["lending"] += e.lending is not None
                    seen["graph"] += e.graph is not None and e.graph.contribution > 0
                    seen["penalty"] += bool(e.penalties)
                    seen["protected"] += e.protected
                seen["hidden_rules"] |= {r.rule for r in explained.hidden_explanation or []}
    # The corpus exercises every part of the explanation.
    assert seen["lending"] and seen["graph"] and seen["penalty"] and seen["protected"], seen
    assert {"replaced", "retracted", "valid_from_after_valid_at", "valid_to_at_or_before_valid_at",
            "min_relevance"} <= seen["hidden_rules"], seen


def test_an_explained_packet_logs_and_replays_as_the_same_packet(runtime: Any, namespace: str) -> None:
    memory = Memory(runtime, namespace, log_packets=True)
    _load(memory)
    explained = memory.recall("ledger-api rate limit", explain=True)
    plain = memory.recall("ledger-api rate limit")
    assert explained.fingerprint == plain.fingerprint
    stored, _, _ = runtime.driver.execute_query(
        "MATCH (p:PacketLog {namespace: $ns, fingerprint: $fp}) RETURN p.packet_json AS j",
        ns=namespace, fp=explained.fingerprint)
    logged = json.loads(stored[0]["j"])
    assert "hidden_explanation" not in logged and all("explanation" not in it for it in logged["items"])
    res = memory.replay(explained.fingerprint)
    assert res.matches and res.recomputed_fingerprint == explained.fingerprint
    assert all(it.explanation is None for it in res.packet.items)
    res = memory.replay(explained.fingerprint, explain=True)
    assert res.matches and res.packet.fingerprint == explained.fingerprint
    assert [it.explanation for it in res.packet.items] == [it.explanation for it in explained.items]


def test_graphql_recall_explain(runtime: Any, memory: Memory) -> None:
    from scripts.readme_examples import answer

    _load(memory)
    query = """{ recall(query: "where do backups go?", namespace: "demo", explain: %s) { fingerprint
      hidden { superseded retracted }
      hiddenExplanation { count rule detail ids }
      items { id score relevance matchedVia explanation { fusion fused relevance score protected
        vector { weight value rank contribution } lexical { weight value rank contribution }
        graph { contribution } lending { via vectorValue lexicalValue contribution }
        penalties { rule factor reason } decay { factor ageSeconds tauSeconds } } } } }"""
    on = answer(runtime, query % "true", memory.namespace)["data"]["recall"]
    off = answer(runtime, query % "false", memory.namespace)["data"]["recall"]
    assert on["fingerprint"] == off["fingerprint"]
    assert off["hiddenExplanation"] is None and all(it["explanation"] is None for it in off["items"])
    assert [it["id"] for it in on["items"]] == [it["id"] for it in off["items"]]
    for it in on["items"]:
        e = it["explanation"]
        parts = [e[t]["contribution"] for t in ("vector", "lexical", "graph", "lending") if e[t] is not None]
        total = math.fsum(parts) * math.prod(p["factor"] for p in e["penalties"]) * e["decay"]["factor"]
        assert math.isclose(total, it["score"], rel_tol=1e-9, abs_tol=1e-12)
    rules = {r["rule"]: r for r in on["hiddenExplanation"]}
    assert len(rules["replaced"]["ids"]) == on["hidden"]["superseded"]
    assert len(rules["retracted"]["ids"]) == on["hidden"]["retracted"] == 1


def test_cli_recall_explain(tmp_path: Path, memory: Memory, neo4j: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from palimpsest.api.cli import app

    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    _load(memory)
    runner = CliRunner()
    res = runner.invoke(app, ["recall", "where do backups go?", "-n", memory.namespace, "--explain"])
    assert res.exit_code == 0, res.output
    assert "#1 " in res.output and "vector " in res.output and "decay " in res.output
    assert "hidden superseded by replaced" in res.output and "hidden retracted by retracted" in res.output
    res = runner.invoke(app, ["recall", "where do backups go?", "-n", memory.namespace, "--explain", "--json"])
    assert res.exit_code == 0, res.output
    packet = ContextPacket.model_validate_json(res.stdout)
    plain = memory.recall("where do backups go?")
    assert_explained(packet, plain)


def test_mcp_recall_explain_and_erase(memory: Memory) -> None:
    from mcp import Client

    from palimpsest.api.mcp_server import build_mcp

    _load(memory)
    server = build_mcp(memory)
    target = memory.recall("where do backups go?").items[0]

    async def scenario() -> dict[str, Any]:
        async with Client(server) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            explained = await client.call_tool("recall", {"query": "where do backups go?", "explain": True})
            plain = await client.call_tool("recall", {"query": "where do backups go?"})
            dry = await client.call_tool("erase", {"ids": [target.id], "reason": "test", "dry_run": True})
            done = await client.call_tool("erase", {"ids": [target.id], "reason": "test"})
            empty = await client.call_tool("erase", {"reason": "no selector"})
            return {"tools": tools, "explained": explained, "plain": plain, "dry": dry, "done": done,
                    "empty": empty}

    out = anyio.run(scenario)
    assert {"erase", "history", "recall", "remember", "retract"} <= set(out["tools"])
    on, off = out["explained"].structured_content, out["plain"].structured_content
    assert on["fingerprint"] == off["fingerprint"] and on["hidden_explanation"] and off["hidden_explanation"] is None
    assert all(it["explanation"] is not None for it in on["items"])
    dry, done = out["dry"].structured_content, out["done"].structured_content
    assert dry["dry_run"] and dry["matched"] == 1 and [c["id"] for c in dry["claims"]] == [target.id]
    assert not done["dry_run"] and done["matched"] == 1
    assert out["empty"].is_error and "BAD_INPUT" in out["empty"].content[0].text
    assert target.id not in [it.id for it in memory.recall("where do backups go?").items]


def test_mcp_erase_needs_the_erase_right(memory: Memory) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from palimpsest.api.auth import KeyEntry, KeyStore, hash_key
    from palimpsest.api.mcp_server import build_mcp, http_app

    ns = memory.namespace
    claim = memory.ingest("Backups go to bucket b-9", "ops").id
    keys = KeyStore([KeyEntry("rw", hash_key("key-rw"), {ns: frozenset({"read", "write"})}),
                     KeyEntry("eraser", hash_key("key-e"), {ns: frozenset({"read", "erase"})})])
    server = build_mcp(memory, keys=keys)
    app = http_app(server, keys, ns)
    base = "http://127.0.0.1:8001"

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with server.session_manager.run():
            for name, key in (("rw", "key-rw"), ("eraser", "key-e")):
                async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=base,
                                              headers={"x-api-key": key}) as hc, \
                        Client(streamable_http_client(f"{base}/mcp", http_client=hc)) as client:
                    out[name] = await client.call_tool("erase", {"ids": [claim], "reason": "leak"})
        return out

    out = anyio.run(scenario)
    assert out["rw"].is_error and "FORBIDDEN" in out["rw"].content[0].text
    assert not out["eraser"].is_error and out["eraser"].structured_content["matched"] == 1


def test_rounds_and_ask_explain_every_round(runtime: Any, memory: Memory) -> None:
    """`explain` on the multi-round faces: every round's packet carries its explanation, and the rounds'
    fingerprints are those of the same rounds without it."""
    from scripts.readme_examples import answer

    _load(memory)
    on = memory.recall_rounds("who chairs the audit committee?", rounds=2, explain=True)
    off = memory.recall_rounds("who chairs the audit committee?", rounds=2)
    assert [r.packet.fingerprint for r in on.rounds] == [r.packet.fingerprint for r in off.rounds]
    assert all(it.explanation is not None for r in on.rounds for it in r.packet.items)
    assert all(it.explanation is None for r in off.rounds for it in r.packet.items)
    assert [it.id for it in on.items] == [it.id for it in off.items]
    query = """{ recallRounds(query: "who chairs the audit committee?", rounds: 2, namespace: "demo", explain: true)
      { rounds { packet { fingerprint items { id explanation { fused } } } } } }"""
    got = answer(runtime, query, memory.namespace)["data"]["recallRounds"]["rounds"]
    assert [r["packet"]["fingerprint"] for r in got] == [r.packet.fingerprint for r in off.rounds]
    assert all(it["explanation"] is not None for r in got for it in r["packet"]["items"])
