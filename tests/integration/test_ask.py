"""Multi-round recall and `ask` end to end on the real Neo4j; the reader is litellm's `mock_response`.

The corpus is a two-hop question in miniature: "Where was the director of Northern Lights born?"
needs the film's passage (which names its director) and then the director's passage. The offline
extractor turns each declared subject into an entity, so the film's passage MENTIONS the director.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from palimpsest.api.memory import Memory
from palimpsest.api.runtime import Runtime
from palimpsest.extraction.reader import ReaderOptions
from palimpsest.schema.errors import BadInputError, LimitExceededError, UnavailableError
from tests.northern_lights import seed as _seed

pytestmark = pytest.mark.integration

QUESTION = "Where was the director of Northern Lights born?"
MODEL = "gpt-4o-mini"  # priced in litellm's local cost map, so the mocked calls get a cost


def scripted(answers: list[dict[str, Any]]) -> tuple[Callable[..., Any], list[str]]:
    """litellm.completion answering each call with the next mocked verdict; records the prompts."""
    import litellm

    prompts: list[str] = []

    def completion(**kwargs: Any) -> Any:
        prompts.append(kwargs["messages"][-1]["content"])
        return litellm.completion(**kwargs, mock_response=json.dumps(answers[min(len(prompts), len(answers)) - 1]))

    return completion, prompts


def reader_memory(runtime: Any, driver: Any, namespace: str, options: ReaderOptions) -> Memory:
    rt = Runtime(runtime.settings, driver, runtime.embedder, runtime.schema_version, models=runtime.models,
                 reader=options)
    return Memory(rt, namespace, log_packets=True)  # every round's packet logged, so each replays


def test_offline_second_round_adds_the_bridge_and_every_round_replays(memory: Memory) -> None:
    memory = Memory(memory.rt, memory.namespace, log_packets=True)  # logged rounds replay
    ids = _seed(memory)
    out = memory.recall_rounds(QUESTION, k=3)
    assert [r.origin for r in out.rounds] == ["question", "expansion"]
    first, second = out.rounds
    assert ids["Ada Brennan"] not in [it.id for it in first.packet.items]
    assert "Ada Brennan" in second.added_terms and second.query.startswith(QUESTION)
    assert ids["Ada Brennan"] in [it.id for it in second.packet.items]
    # The rounds share round 1's revision; the fusion keeps round 1's top hit first and holds the bridge.
    assert second.packet.store_revision == first.packet.store_revision
    assert out.items[0].id == first.packet.items[0].id and out.items[0].round_ranks[0] == 1
    assert ids["Ada Brennan"] in [it.id for it in out.items] and len(out.items) == 3
    for r in out.rounds:
        replayed = memory.replay(r.packet.fingerprint)
        assert replayed.matches and replayed.packet.query == r.query
    again = memory.recall_rounds(QUESTION, k=3)
    assert [(it.id, it.score, it.round_ranks) for it in again.items] == [
        (it.id, it.score, it.round_ranks) for it in out.items]
    assert [r.packet.fingerprint for r in again.rounds] == [r.packet.fingerprint for r in out.rounds]
    assert len(memory.recall_rounds(QUESTION, k=3, rounds=1).rounds) == 1
    with pytest.raises(LimitExceededError) as exc:
        memory.recall_rounds(QUESTION, rounds=9)
    assert exc.value.field == "rounds"


def test_ask_ircot_second_round_from_the_thought(runtime: Any, driver: Any, namespace: str) -> None:
    memory = reader_memory(runtime, driver, namespace, ReaderOptions())
    ids = _seed(memory)
    completion, prompts = scripted([
        {"thought": "Northern Lights was directed by Ada Brennan; where Ada Brennan was born is missing.",
         "answer": "", "cited_ids": [], "not_in_memory": True},
        {"thought": "Ada Brennan, who directed Northern Lights, was born in Galway.", "answer": "Galway",
         "cited_ids": [ids["Northern Lights (film)"], ids["Ada Brennan"], "c0ffee"], "not_in_memory": False},
    ])
    memory.rt.reader = ReaderOptions(completion=completion, max_calls_per_second=None)
    res = memory.ask(QUESTION, llm_model=MODEL, k=2)
    assert [r.origin for r in res.rounds] == ["question", "thought"]
    assert "where Ada Brennan was born" in res.rounds[1].query
    assert ids["Ada Brennan"] in [it.id for it in res.rounds[1].packet.items]
    assert res.answer == "Galway" and not res.not_in_memory
    assert res.cited_ids == [ids["Northern Lights (film)"], ids["Ada Brennan"]] and res.dropped_citations == 1
    assert res.cost.calls == 2 and res.cost.total_tokens > 0 and res.cost.cost_usd > 0
    assert res.cost.unpriced_calls == 0 and res.model == MODEL
    # The second reading saw both rounds' claims and the first round's note.
    assert ids["Ada Brennan"] in prompts[1] and "Your notes from earlier rounds" in prompts[1]
    assert all(memory.replay(r.packet.fingerprint).matches for r in res.rounds)


def test_ask_stops_when_answered_and_drops_unsupported_answers(runtime: Any, driver: Any, namespace: str) -> None:
    memory = reader_memory(runtime, driver, namespace, ReaderOptions())
    ids = _seed(memory)
    answered = {"thought": "The film's passage names its director.", "answer": "Ada Brennan",
                "cited_ids": [ids["Northern Lights (film)"]], "not_in_memory": False}
    memory.rt.reader = ReaderOptions(completion_kwargs={"mock_response": json.dumps(answered)})
    res = memory.ask("Who directed Northern Lights?", llm_model=MODEL, k=2)
    assert len(res.rounds) == 1 and res.answer == "Ada Brennan" and res.cost.calls == 1
    # An answer resting on no claim that was shown is "not in memory", whatever the reader said.
    made_up = {"thought": "", "answer": "Dublin", "cited_ids": ["not-a-claim"], "not_in_memory": False}
    memory.rt.reader = ReaderOptions(completion_kwargs={"mock_response": json.dumps(made_up)})
    res = memory.ask(QUESTION, llm_model=MODEL, k=2, rounds=1)
    assert res.not_in_memory and res.answer == "" and res.cited_ids == [] and res.dropped_citations == 1


def test_ask_offline_expansion_reads_once(runtime: Any, driver: Any, namespace: str) -> None:
    memory = reader_memory(runtime, driver, namespace, ReaderOptions())
    ids = _seed(memory)
    completion, prompts = scripted([{"thought": "", "answer": "Galway", "cited_ids": [ids["Ada Brennan"]],
                                     "not_in_memory": False}])
    memory.rt.reader = ReaderOptions(completion=completion)
    res = memory.ask(QUESTION, llm_model=MODEL, k=2, expansion="offline")
    assert [r.origin for r in res.rounds] == ["question", "expansion"] and len(prompts) == 1
    assert res.answer == "Galway" and res.cited_ids == [ids["Ada Brennan"]]
    # Under the router a question read as one hop keeps its offline second round towards a bridge another
    # claim is about (Ada Brennan's own passage), but not a thought-driven one (nothing to check it by).
    memory.register_policy({"version": "routed", "router": "rules", "ask_rounds": 3})
    one_hop = memory.ask("Who directed Northern Lights?", llm_model=MODEL, k=2, expansion="offline",
                         policy_version="routed")
    assert "router:one-round" in one_hop.rounds[0].packet.stages
    assert [r.origin for r in one_hop.rounds] == ["question", "expansion"]
    assert "Ada Brennan" in one_hop.rounds[1].added_terms
    memory.rt.reader = ReaderOptions(completion_kwargs={"mock_response": json.dumps(
        {"thought": "Ada Brennan directed it; find her.", "answer": "", "cited_ids": [], "not_in_memory": True})})
    unrouted = memory.ask("Who directed Northern Lights?", llm_model=MODEL, k=2, expansion="thought")
    assert [r.origin for r in unrouted.rounds] == ["question", "thought"]
    thought = memory.ask("Who directed Northern Lights?", llm_model=MODEL, k=2, expansion="thought",
                         policy_version="routed")
    assert [r.origin for r in thought.rounds] == ["question"]


def test_ask_bad_input_and_failed_reader(runtime: Any, driver: Any, namespace: str,
                                         caplog: pytest.LogCaptureFixture) -> None:
    memory = reader_memory(runtime, driver, namespace, ReaderOptions())
    _seed(memory)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"question": "  "}, "question"), ({"question": "\ud800?"}, "question"), ({"rounds": 0}, "rounds"),
        ({"rounds": 5}, "rounds"), ({"expansion": "psychic"}, "expansion"), ({"llm_model": ""}, "llm_model")]
    for kwargs, field in cases:
        args: dict[str, Any] = {"question": QUESTION, "llm_model": MODEL, **kwargs}
        with pytest.raises(BadInputError) as exc:
            memory.ask(args.pop("question"), **args)
        assert exc.value.field == field, kwargs
    with pytest.raises(BadInputError) as exc:  # the default policy names no reader model
        memory.ask(QUESTION)
    assert exc.value.field == "llm_model"
    memory.rt.reader = ReaderOptions(completion_kwargs={"mock_response": Exception("provider down")})
    with pytest.raises(UnavailableError) as failed:
        memory.ask(QUESTION, llm_model=MODEL)
    # The provider's own text goes to the server log, never to the caller.
    assert failed.value.field == "llm_model" and "provider down" not in failed.value.message
    assert "provider down" in caplog.text
    # The reader model can come from the policy instead of the call.
    memory.register_policy({"version": "reader-v1", "reader_model": MODEL, "ask_rounds": 1})
    answer = {"thought": "", "answer": "", "cited_ids": [], "not_in_memory": True}
    memory.rt.reader = ReaderOptions(completion_kwargs={"mock_response": json.dumps(answer)})
    res = memory.ask("What colour is the harbour of Galway?", policy_version="reader-v1")
    assert res.not_in_memory and res.model == MODEL and res.policy_version == "reader-v1"


@pytest.fixture
def reader_runtime(runtime: Any, driver: Any) -> Runtime:
    return Runtime(runtime.settings, driver, runtime.embedder, runtime.schema_version, models=runtime.models)


def test_faces_graphql_cli_mcp(reader_runtime: Runtime, namespace: str, neo4j: Any,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    from palimpsest.api.app import create_app
    from palimpsest.api.cli import app as cli_app
    from palimpsest.api.mcp_server import build_mcp

    memory = Memory(reader_runtime, namespace)
    ids = _seed(memory)
    verdict = {"thought": "Ada Brennan was born in Galway.", "answer": "Galway", "cited_ids": [ids["Ada Brennan"]],
               "not_in_memory": False}
    reader_runtime.reader = ReaderOptions(completion_kwargs={"mock_response": json.dumps(verdict)})

    # GraphQL
    query = """query($q: String!, $m: String, $ns: String) {
      ask(question: $q, llmModel: $m, k: 2, expansion: "offline", namespace: $ns) {
        answer notInMemory citedIds droppedCitations model cost { calls totalTokens costUsd }
        rounds { round origin query addedTerms packet { fingerprint items { id } } } items { id rank roundRanks } }
      recallRounds(query: $q, k: 2, namespace: $ns) { rounds { origin packet { fingerprint } } items { id } } }"""
    with TestClient(create_app(reader_runtime), base_url="http://localhost") as client:
        body = client.post("/graphql", json={"query": query, "variables": {"q": QUESTION, "m": MODEL,
                                                                           "ns": namespace}}).json()
        assert "errors" not in body, body
        got = body["data"]["ask"]
        assert got["answer"] == "Galway" and got["citedIds"] == [ids["Ada Brennan"]] and got["cost"]["calls"] == 1
        assert [r["origin"] for r in got["rounds"]] == ["question", "expansion"]
        assert [r["origin"] for r in body["data"]["recallRounds"]["rounds"]] == ["question", "expansion"]
        bad = client.post("/graphql", json={"query": "query($ns: String) { ask(question: \"x\", rounds: 7, "
                                                     "namespace: $ns) { answer } }",
                                            "variables": {"ns": namespace}}).json()
        assert bad["errors"][0]["extensions"]["field"] == "rounds"
        assert bad["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"
        bad = client.post("/graphql", json={"query": "query($ns: String) { ask(question: \"x\", namespace: $ns) "
                                                     "{ answer } }", "variables": {"ns": namespace}}).json()
        assert bad["errors"][0]["extensions"]["field"] == "llmModel"

    # MCP
    from mcp import Client

    async def scenario() -> Any:
        async with Client(build_mcp(memory)) as client:
            asked = await client.call_tool("ask", {"question": QUESTION, "llm_model": MODEL, "k": 2})
            rounds = await client.call_tool("recall_rounds", {"query": QUESTION, "k": 2})
            return asked, rounds

    asked, rounds = anyio.run(scenario)
    assert asked.structured_content["answer"] == "Galway"
    assert [r["origin"] for r in rounds.structured_content["rounds"]] == ["question", "expansion"]

    # CLI: its own Runtime from the environment, with the mocked reader plumbed in.
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    monkeypatch.setenv("PALIMPSEST_ALLOWED_LLM_MODELS", MODEL)  # the operator allows the reader
    original = Runtime.from_env.__func__  # type: ignore[attr-defined]

    def with_reader(cls: type[Runtime]) -> Runtime:
        rt: Runtime = original(cls)
        rt.reader = reader_runtime.reader
        return rt

    monkeypatch.setattr(Runtime, "from_env", classmethod(with_reader))
    runner = CliRunner()
    res = runner.invoke(cli_app, ["ask", QUESTION, "-n", namespace, "--llm-model", MODEL, "--k", "2", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["answer"] == "Galway"
    res = runner.invoke(cli_app, ["ask", QUESTION, "-n", namespace, "--llm-model", MODEL])
    assert res.exit_code == 0 and "answer: Galway" in res.output and "round 1 (question)" in res.output
    res = runner.invoke(cli_app, ["recall-rounds", QUESTION, "-n", namespace, "--k", "2"])
    assert res.exit_code == 0 and "round 2 (expansion)" in res.output, res.output
    res = runner.invoke(cli_app, ["ask", QUESTION, "-n", namespace])
    assert res.exit_code == 1 and "BAD_INPUT" in res.output
