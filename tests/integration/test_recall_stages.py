"""The stages after fusion on real recalls: Jaccard dedup, a cross-encoder built here (a tiny random
BERT with a one-logit head; nothing can be downloaded) and the LLM reranker through litellm's
`mock_response`. Each stage is named in the packet's `stages`, its effects are counted and explained,
a model that cannot load degrades to the fused ranking, and the same request twice is the same packet."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palimpsest.api.memory import Memory
from palimpsest.extraction.rerank import RerankOptions, configure, cross_encoder_scores
from palimpsest.graph.recall.dedup import jaccard
from palimpsest.graph.text import term_set
from palimpsest.schema.models import ContextPacket
from tests.conftest import allow_models
from tests.graphql_client import keyed_graphql
from tests.tiny_models import save_tiny_bert

pytestmark = pytest.mark.integration

NEAR_DUPLICATES = [
    "Backups of the ledger database go to bucket b-1 every night",
    "Backups of the ledger database go to bucket b-1 every night.",
    "Nightly: backups of the ledger database go to bucket b-1 every night",
]
OTHERS = [
    "Backups of the billing database go to bucket b-7 on Sundays",
    "The ledger database is replicated to a standby in Frankfurt",
    "Backup restores are tested once a quarter",
    "The ledger-api rate limit is 300 requests per minute",
    "Old backups are kept for seven years",
]
QUERY = "where do ledger database backups go?"
WORDS = sorted({w for text in [*NEAR_DUPLICATES, *OTHERS, QUERY] for w in term_set(text) if w.isalnum()})


def _load(memory: Memory) -> None:
    memory.ingest_many([{"content": c, "source": f"src-{i}"} for i, c in enumerate([*NEAR_DUPLICATES, *OTHERS])])


def _same(a: ContextPacket, b: ContextPacket) -> None:
    assert a.fingerprint == b.fingerprint == b.compute_fingerprint()
    assert a.model_dump(exclude={"served_at"}) == b.model_dump(exclude={"served_at"})


def test_dedup_removes_near_duplicates_fills_to_k_and_counts_them(memory: Memory) -> None:
    _load(memory)
    memory.register_policy({"version": "fused", "k": 4})
    memory.register_policy({"version": "dedup", "k": 4, "dedup_jaccard": 0.7})
    fused = memory.recall(QUERY, policy_version="fused")
    assert sum(it.content in NEAR_DUPLICATES for it in fused.items) == 3 and fused.stages == []
    packet = memory.recall(QUERY, policy_version="dedup")
    again = memory.recall(QUERY, policy_version="dedup")
    _same(packet, again)
    assert len(packet.items) == 4 and packet.stages == ["dedup"]
    assert [it.rank for it in packet.items] == [1, 2, 3, 4]
    kept = [it for it in packet.items if it.content in NEAR_DUPLICATES]
    assert len(kept) == 1 and kept[0].id == next(it.id for it in fused.items if it.content in NEAR_DUPLICATES)
    assert packet.hidden.deduplicated == 2 and fused.hidden.deduplicated == 0
    for i, a in enumerate(packet.items):  # no two items of the packet are near-duplicates
        for b in packet.items[i + 1:]:
            assert jaccard(term_set(a.content), term_set(b.content)) < 0.7
    # the freed places are filled from the fused order, which is otherwise kept
    rest = [it.id for it in fused.items if it.content not in NEAR_DUPLICATES]
    assert [it.id for it in packet.items if it.content not in NEAR_DUPLICATES][:len(rest)] == rest
    explained = memory.recall(QUERY, policy_version="dedup", explain=True)
    assert explained.fingerprint == packet.fingerprint
    rules = {r.rule: r for r in explained.hidden_explanation or []}
    removed = sorted(it.id for it in fused.items if it.content in NEAR_DUPLICATES and it.id != kept[0].id)
    assert rules["dedup_jaccard"].count == "deduplicated" and rules["dedup_jaccard"].ids == removed
    assert "0.7" in rules["dedup_jaccard"].detail


@pytest.fixture(scope="module")
def tiny_ranker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer BERT with one output (a relevance logit) and a vocabulary of the corpus' words."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-ranker"), WORDS, {0: "relevance"}, max_positions=128, seed=1)


def test_a_cross_encoder_rescores_the_fused_head(memory: Memory, tiny_ranker: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    allow_models(monkeypatch, memory.rt, rerank=str(tiny_ranker))  # the operator lists its own model directory
    _load(memory)
    memory.register_policy({"version": "fused", "k": 4})
    memory.register_policy({"version": "ce", "k": 4, "rerank": "cross-encoder", "rerank_model": str(tiny_ranker),
                            "rerank_top": 6})
    fused = memory.recall(QUERY, policy_version="fused", k=6)
    packet = memory.recall(QUERY, policy_version="ce")
    again = memory.recall(QUERY, policy_version="ce")
    _same(packet, again)
    assert packet.stages == ["rerank:cross-encoder"] and not packet.completeness.rerank_unavailable
    scores = cross_encoder_scores(str(tiny_ranker), QUERY, [it.content for it in fused.items], RerankOptions())
    expected = sorted(zip(fused.items, scores, strict=True), key=lambda p: (-p[1], p[0].rank))[:4]
    assert [it.id for it in packet.items] == [it.id for it, _ in expected]
    assert [it.score for it in packet.items] == pytest.approx([s for _, s in expected], abs=1e-9)
    assert packet.completeness.items_truncated
    explained = memory.recall(QUERY, policy_version="ce", explain=True)
    assert explained.fingerprint == packet.fingerprint
    fused_score = {it.id: it.score for it in fused.items}
    for it in explained.items:
        assert it.explanation is not None and it.explanation.rerank is not None
        verdict = it.explanation.rerank
        assert verdict.method == "cross-encoder" and verdict.model == str(tiny_ranker)
        assert verdict.score == it.score and verdict.replaced == fused_score[it.id]
        assert fused.items[verdict.fused_rank - 1].id == it.id
    from palimpsest.api.cli import explain_lines

    lines = explain_lines(explained)
    assert len(lines) == 4 and all(" = cross-encoder " in line and "replacing fused #" in line for line in lines)


def test_a_cross_encoder_that_cannot_load_leaves_the_fused_ranking(memory: Memory, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    allow_models(monkeypatch, memory.rt, rerank=str(tmp_path / "no-such-model"))
    _load(memory)
    memory.register_policy({"version": "fused", "k": 4})
    memory.register_policy({"version": "ce-missing", "k": 4, "rerank": "cross-encoder",
                            "rerank_model": str(tmp_path / "no-such-model")})
    fused = memory.recall(QUERY, policy_version="fused")
    packet = memory.recall(QUERY, policy_version="ce-missing")
    assert packet.completeness.rerank_unavailable and packet.stages == []
    assert [(it.id, it.score) for it in packet.items] == [(it.id, it.score) for it in fused.items]


@pytest.fixture
def mocked_llm() -> Iterator[list[dict[str, Any]]]:
    """The process's reranker options with litellm's mock_response answering the order [3, 1]."""
    calls: list[dict[str, Any]] = []

    def completion(**kwargs: Any) -> Any:
        import litellm

        calls.append(kwargs)
        return litellm.completion(**kwargs)

    configure(RerankOptions(completion=completion,
                                          completion_kwargs={"mock_response": json.dumps({"order": [3, 1]})}))
    try:
        yield calls
    finally:
        configure(None)


def test_the_llm_reranker_orders_the_head_in_one_call(memory: Memory, mocked_llm: list[dict[str, Any]]) -> None:
    _load(memory)
    memory.register_policy({"version": "fused", "k": 4})
    memory.register_policy({"version": "llm", "k": 4, "rerank": "llm", "rerank_model": "gpt-4o-mini",
                            "rerank_top": 5, "dedup_jaccard": 0.7})
    fused = memory.recall(QUERY, policy_version="fused", k=8)
    packet = memory.recall(QUERY, policy_version="llm")
    assert len(mocked_llm) == 1
    prompt = mocked_llm[0]["messages"][1]["content"]
    assert QUERY in prompt and all(f"[{n}] {it.content}" in prompt for n, it in enumerate(fused.items[:5], 1))
    again = memory.recall(QUERY, policy_version="llm")
    _same(packet, again)
    assert packet.stages == ["rerank:llm", "dedup"]
    # the model put the fused 3rd first and the 1st second; the head's others follow in fused order;
    # dedup then removes near-duplicates of what is kept, and candidates below the head fill the places
    head = [fused.items[2], fused.items[0], fused.items[1], fused.items[3], fused.items[4]]
    kept: list[Any] = []
    removed: list[str] = []
    for it in [*head, *fused.items[5:]]:
        if len(kept) == 4:
            break
        if all(jaccard(term_set(it.content), term_set(k.content)) < 0.7 for k in kept):
            kept.append(it)
        else:
            removed.append(it.id)
    assert [it.id for it in packet.items] == [it.id for it in kept] and removed
    assert packet.hidden.deduplicated == len(removed)
    scores = {it.id: s for it, s in zip(head, [1.0, 0.8, 0.6, 0.4, 0.2], strict=True)}
    fused_score = {it.id: it.score for it in fused.items}
    assert [it.score for it in packet.items] == pytest.approx([scores.get(it.id, fused_score[it.id])
                                                               for it in packet.items])


def test_an_llm_reranker_without_a_provider_leaves_the_fused_ranking(memory: Memory) -> None:
    _load(memory)
    configure(RerankOptions(max_retries=0, completion_kwargs={"mock_response": "no json here"}))
    try:
        memory.register_policy({"version": "fused", "k": 4})
        memory.register_policy({"version": "llm", "k": 4, "rerank": "llm", "rerank_model": "gpt-4o-mini"})
        fused = memory.recall(QUERY, policy_version="fused")
        packet = memory.recall(QUERY, policy_version="llm")
    finally:
        configure(None)
    assert packet.completeness.rerank_unavailable and packet.stages == []
    assert [(it.id, it.score) for it in packet.items] == [(it.id, it.score) for it in fused.items]


def test_graphql_registers_the_stages_and_shows_what_ran(runtime: Any, namespace: str) -> None:
    _load(Memory(runtime, namespace))
    with keyed_graphql(runtime, namespace, "stage-key", ("read", "write", "admin")) as gql:
        bad = gql('mutation { registerPolicy(input: {version: "r1", rerank: "llm"}) { version } }')
        assert bad["errors"][0]["extensions"]["code"] == "BAD_INPUT"
        assert bad["errors"][0]["extensions"]["field"] == "rerankModel"
        reg = gql('mutation { registerPolicy(input: {version: "d1", k: 4, dedupJaccard: 0.7, rerankTop: 5}) '
                  '{ dedupJaccard rerank rerankTop } }')
        assert reg["data"]["registerPolicy"] == {"dedupJaccard": 0.7, "rerank": "none", "rerankTop": 5}
        got = gql('{ recall(query: "' + QUERY + '", policyVersion: "d1", explain: true) { stages '
                  'hidden { deduplicated } completeness { rerankUnavailable } hiddenExplanation { count rule } '
                  'items { explanation { rerank { method } } } } }')["data"]["recall"]
    assert got["stages"] == ["dedup"] and got["hidden"]["deduplicated"] == 2
    assert not got["completeness"]["rerankUnavailable"]
    assert {"count": "deduplicated", "rule": "dedup_jaccard"} in got["hiddenExplanation"]
    assert all(it["explanation"]["rerank"] is None for it in got["items"])
