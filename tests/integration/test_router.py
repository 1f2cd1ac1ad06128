"""The router on real recalls: per query it keeps or skips the policy's stages, the packet's `stages` say
what it decided, the decision replays (pinned from the logged packet, so the LLM router is not asked
again), later rounds follow round 1's decision, and a policy without a router gives the packets it
gave before the router existed. The LLM router is litellm's `mock_response`.

The corpus is a two-hop question in miniature, as in test_ask: "Where was the director of Northern
Lights born?" needs the film's passage and then the director's."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from palimpsest.api.memory import Memory
from palimpsest.api.runtime import Runtime
from palimpsest.api.worker import ProjectionWorker, WorkerConfig
from palimpsest.extraction.reader import ReaderOptions
from palimpsest.graph.lifecycle.maintenance import drop_namespace
from palimpsest.schema.errors import BadInputError, LimitExceededError
from palimpsest.schema.models import PACKET_DERIVED, ContextPacket
from tests.graphql_client import keyed_graphql
from tests.northern_lights import CORPUS
from tests.northern_lights import seed as _seed

pytestmark = pytest.mark.integration

MULTI_HOP = "Where was the director of Northern Lights born?"
SINGLE_HOP = "Who directed Northern Lights?"
PPR = {"k": 3, "graph_expansion": "ppr", "sibling_penalty": 1.0}
# A one-hop reading: no later rounds; graph expansion as the policy says.
ONE_HOP = ["router:rules", "router:single-hop", "router:one-round", "ppr"]
MODEL = "gpt-4o-mini"  # priced in litellm's local cost map


def _same(a: ContextPacket, b: ContextPacket) -> None:
    assert a.fingerprint == b.fingerprint == b.compute_fingerprint()
    assert a.model_dump(exclude={"served_at", "router_cost"}) == b.model_dump(exclude={"served_at", "router_cost"})


def _ranked(packet: ContextPacket) -> list[tuple[str, float]]:
    return [(it.id, it.score) for it in packet.items]


def test_a_routed_recall_records_its_stages_and_replays(runtime: Any, namespace: str) -> None:
    memory = Memory(runtime, namespace, log_packets=True)
    _seed(memory)
    memory.register_policy({"version": "ppr", **PPR})
    memory.register_policy({"version": "hybrid", **PPR, "graph_expansion": "none"})
    memory.register_policy({"version": "routed", **PPR, "router": "rules"})

    hop = memory.recall(MULTI_HOP, policy_version="routed")
    assert hop.stages == ["router:rules", "router:multi-hop", "ppr"] and hop.router_cost is None
    # the stages that ran are the policy's: the same ranking as the policy without a router
    assert _ranked(hop) == _ranked(memory.recall(MULTI_HOP, policy_version="ppr"))

    direct = memory.recall(SINGLE_HOP, policy_version="routed")
    assert direct.stages == ONE_HOP
    assert _ranked(direct) == _ranked(memory.recall(SINGLE_HOP, policy_version="ppr"))

    for packet, question in ((hop, MULTI_HOP), (direct, SINGLE_HOP)):
        _same(packet, memory.recall(question, policy_version="routed"))
        replayed = memory.replay(packet.fingerprint)
        assert replayed.matches and replayed.packet.stages == packet.stages
    # what the router decided is part of the packet's identity
    assert "route" in json.loads(hop.canonical_json())
    # A decision is taken from the stages as they were recorded, not made again: a packet routed when a
    # one-hop reading skipped PPR (as the rules once did) runs and replays without it.
    earlier = ["router:rules", "router:single-hop", "router:skip-ppr", "router:one-round"]
    old = memory.recall(SINGLE_HOP, policy_version="routed", pinned_route=earlier)
    assert old.stages == earlier
    assert _ranked(old) == _ranked(memory.recall(SINGLE_HOP, policy_version="hybrid"))
    assert memory.replay(old.fingerprint).matches and old.fingerprint != direct.fingerprint
    # Only what a decision writes can be pinned, and a route is one packet's stages, not an unbounded list.
    with pytest.raises(BadInputError) as bad:
        memory.recall(SINGLE_HOP, policy_version="routed", pinned_route=[*earlier, "router:skip-everything"])
    assert bad.value.field == "pinned_route" and "router:skip-everything" in bad.value.message
    with pytest.raises(LimitExceededError) as long:
        memory.recall(SINGLE_HOP, policy_version="routed", pinned_route=["ppr"] * 65)
    assert long.value.field == "pinned_route" and long.value.limit == 64


def test_later_rounds_follow_round_one(runtime: Any, driver: Any, namespace: str) -> None:
    memory = Memory(runtime, namespace, log_packets=True)  # the rounds are replayed below
    _seed(memory)
    memory.register_policy({"version": "routed", **PPR, "router": "rules"})
    # Read as one hop, but round 1's film passage names Ada Brennan, whom another claim is about (its
    # declared subject): the second round runs, towards her.
    direct = memory.recall_rounds(SINGLE_HOP, policy_version="routed", rounds=3)
    assert direct.rounds[0].packet.stages == ONE_HOP
    assert len(direct.rounds) == 2 and "Ada Brennan" in direct.rounds[1].added_terms
    # Passages without declared subjects, Ada Brennan's not opening with her name: another claim mentions
    # her, none is about her — nowhere for a second hop to go, one round.
    plain = Memory(runtime, f"{namespace}-plain")
    reworded = {"Ada Brennan grew up by the sea in Galway, where she was born in 1961.":
                "Born in Galway in 1961, Ada Brennan grew up by the sea."}
    try:
        plain.ingest_many([{"content": reworded.get(c, c), "source": "wiki"} for c, _ in CORPUS])
        ProjectionWorker(runtime, WorkerConfig(entity_embeddings=False), detectors=[]).run_once(plain.namespace)
        plain.register_policy({"version": "routed", **PPR, "router": "rules"})
        alone = plain.recall_rounds(SINGLE_HOP, policy_version="routed", rounds=3)
        assert alone.rounds[0].packet.stages == ONE_HOP and len(alone.rounds) == 1
        # Without the router the plain namespace does run a second round: it is the rule that stopped it.
        plain.register_policy({"version": "unrouted", **PPR})
        assert len(plain.recall_rounds(SINGLE_HOP, policy_version="unrouted", rounds=2).rounds) == 2
        # A turn she speaks, labelled with her name, is hers, not about her: still one round.
        plain.ingest_many([{"content": "Ada Brennan: I loved shooting by the sea.", "source": "Ada Brennan"}])
        ProjectionWorker(runtime, WorkerConfig(entity_embeddings=False), detectors=[]).run_once(plain.namespace)
        assert len(plain.recall_rounds(SINGLE_HOP, policy_version="routed", rounds=3).rounds) == 1
        # A claim that declares her as its subject (embedded as "Ada Brennan: …") is about her: two rounds.
        plain.ingest_many([{"content": "Her first feature was shot on the Aran Islands.", "source": "wiki",
                            "metadata": {"subject": "Ada Brennan"}}])
        ProjectionWorker(runtime, WorkerConfig(entity_embeddings=False), detectors=[]).run_once(plain.namespace)
        about = plain.recall_rounds(SINGLE_HOP, policy_version="routed", rounds=3)
        assert len(about.rounds) == 2 and "Ada Brennan" in about.rounds[1].added_terms
    finally:
        drop_namespace(driver, plain.namespace)
    hop = memory.recall_rounds(MULTI_HOP, policy_version="routed", rounds=2)
    assert len(hop.rounds) == 2
    first, second = (r.packet for r in hop.rounds)
    # Read as multi-hop, every stage of the policy runs, PPR in both rounds; round 2's expanded query is
    # not re-routed: it runs the stages round 1's router chose, and both replay so.
    routed = ["router:rules", "router:multi-hop", "ppr"]
    assert second.query != MULTI_HOP and second.stages == first.stages == routed
    assert _ranked(first) == _ranked(memory.recall(MULTI_HOP, policy_version="routed"))
    assert memory.replay(first.fingerprint).matches and memory.replay(second.fingerprint).matches
    # A caller running its own rounds may leave the second hop to them: then round 1 skips graph expansion,
    # and the packet, which says so, replays so.
    later = Memory(runtime, namespace, log_packets=True).recall(MULTI_HOP, policy_version="routed", later_rounds=True)
    assert later.stages == ["router:rules", "router:multi-hop", "router:later-rounds", "router:skip-ppr"]
    memory.register_policy({"version": "hybrid", **PPR, "graph_expansion": "none"})
    assert _ranked(later) == _ranked(memory.recall(MULTI_HOP, policy_version="hybrid"))
    assert memory.replay(later.fingerprint).matches


def _counted(answer: Any) -> tuple[Callable[..., Any], list[dict[str, Any]]]:
    import litellm

    calls: list[dict[str, Any]] = []

    def completion(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return litellm.completion(**kwargs, mock_response=answer)

    return completion, calls


def test_the_llm_router_in_one_call_with_its_cost(runtime: Any, driver: Any, namespace: str) -> None:
    completion, calls = _counted(json.dumps({"multi_hop": False, "comparison": False, "temporal": False}))
    rt = Runtime(runtime.settings, driver, runtime.embedder, runtime.schema_version, models=runtime.models,
                 reader=ReaderOptions(completion=completion, max_calls_per_second=None))
    memory = Memory(rt, namespace, log_packets=True)
    _seed(memory)
    memory.register_policy({"version": "llm", **PPR, "router": "llm", "router_model": MODEL})
    packet = memory.recall(MULTI_HOP, policy_version="llm")
    assert len(calls) == 1 and calls[0]["messages"][-1]["content"] == MULTI_HOP and calls[0]["model"] == MODEL
    # the model's verdict, not the rules' (which call this question multi-hop), decided
    assert packet.stages == ["router:llm", *ONE_HOP[1:]]
    cost = packet.router_cost
    assert cost is not None and cost.model == MODEL and not cost.failed
    assert cost.prompt_tokens > 0 and cost.cost_usd is not None and cost.cost_usd > 0
    # the cost is no part of the packet's identity, and the log does not keep it
    assert "router_cost" not in json.loads(packet.canonical_json())
    replayed = memory.replay(packet.fingerprint)
    assert replayed.matches and len(calls) == 1  # the decision was pinned from the logged packet
    assert replayed.packet.router_cost is None


def test_a_failed_llm_router_lets_the_rules_decide(runtime: Any, driver: Any, namespace: str) -> None:
    rt = Runtime(runtime.settings, driver, runtime.embedder, runtime.schema_version, models=runtime.models,
                 reader=ReaderOptions(max_retries=0, completion_kwargs={"mock_response": "no json here"}))
    memory = Memory(rt, namespace)
    _seed(memory)
    memory.register_policy({"version": "llm", **PPR, "router": "llm", "router_model": MODEL})
    packet = memory.recall(MULTI_HOP, policy_version="llm")
    assert packet.stages == ["router:llm-unavailable", "router:multi-hop", "ppr"]
    assert packet.router_cost is not None and packet.router_cost.failed


def _before_router_fingerprint(packet: ContextPacket) -> str:
    """The fingerprint as it was computed before the router existed (schema.models at that time)."""
    body = packet.model_dump(mode="json", exclude={"served_at": True, "fingerprint": True, "router_cost": True,
                                                   "hidden_explanation": True, "items": {"__all__": {"explanation"}}})
    body.pop("stages", None)
    if not body["completeness"].get("rerank_unavailable"):
        body["completeness"].pop("rerank_unavailable", None)
    if not body["hidden"].get("deduplicated"):
        body["hidden"].pop("deduplicated", None)
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                          .encode()).hexdigest()


BEFORE_FIELDS = {"namespace", "query", "policy_version", "k", "store_revision", "valid_at", "reference_time",
                 "projections_seq", "items", "contradictions", "edges", "beliefs", "completeness", "hidden",
                 "served_at", "fingerprint", "stages"}


def test_router_none_packets_are_what_they_were(memory: Memory) -> None:
    _seed(memory)
    plain = memory.register_policy({"version": "p", **PPR})
    # an explicit "none" is the same policy: same content hash, so the registration is idempotent
    assert memory.register_policy({"version": "p", **PPR, "router": "none"}).content_hash() == plain.content_hash()
    for question in (MULTI_HOP, SINGLE_HOP):
        packet = memory.recall(question, policy_version="p")
        assert packet.stages == ["ppr"] and packet.router_cost is None
        assert packet.fingerprint == _before_router_fingerprint(packet)
        # the JSON the packet log keeps has exactly the fields it had before
        assert set(json.loads(packet.model_dump_json(exclude=PACKET_DERIVED))) == BEFORE_FIELDS
        assert "route" not in json.loads(packet.canonical_json())


def test_graphql_takes_the_router_and_names_its_fields(runtime: Any, namespace: str) -> None:
    _seed(Memory(runtime, namespace))
    with keyed_graphql(runtime, namespace, "router-key", ("read", "write", "admin")) as gql:
        bad = gql('mutation { registerPolicy(input: {version: "r0", router: "llm"}) { version } }')
        assert bad["errors"][0]["extensions"]["code"] == "BAD_INPUT"
        assert bad["errors"][0]["extensions"]["field"] == "routerModel"
        wrong = gql('mutation { registerPolicy(input: {version: "r0", router: "sometimes"}) { version } }')
        assert wrong["errors"][0]["extensions"]["field"] == "router"
        reg = gql('mutation { registerPolicy(input: {version: "r1", k: 3, graphExpansion: "ppr", router: "rules"}) '
                  '{ router routerModel graphExpansion } }')
        assert reg["data"]["registerPolicy"] == {"router": "rules", "routerModel": None, "graphExpansion": "ppr"}
        got = gql('{ recall(query: "' + SINGLE_HOP + '", policyVersion: "r1") { stages routerCost { model } } }')
    assert got["data"]["recall"] == {"stages": ONE_HOP, "routerCost": None}
