"""The sentence reranker on real recalls (policy `rerank: sentences`, graph/recall/sentences.py).

A turn that answers a question in one of its sentences, between a greeting and a goodbye, has a vector
diluted by the rest: here it ranks below turns that merely sound like the speaker. Read sentence by
sentence it rises; the packet names the stage, explains each score, replays, and degrades to the
fused ranking when the embedder cannot read the sentences.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.memory import Memory
from graph.recall.sentences import best_sentence_cosines, fused_with_sentences
from schema.models import ClaimInput, ContextPacket
from tests.graphql_client import keyed_graphql

pytestmark = pytest.mark.integration

SWIM = ("Melanie: Hey Caroline, hope all is good with you! Thanks so much for the lovely card you sent last week, "
        "the kids adored it and it is on the fridge now. I went swimming in the lake with the kids. Anyway, talk "
        "to you soon and take care!")
TURNS = [
    SWIM,
    "Melanie: I have been thinking a lot about which activities and hobbies suit a busy family like ours.",
    "Caroline: Melanie, your family always seems to find fun things to do together, I love that.",
    "Melanie: The kids keep asking what we will do this weekend, they have so much energy.",
    "Caroline: I joined a choir at the community centre and we sing every Tuesday.",
    "Melanie: Honestly, a quiet evening at home with a book is my favourite kind of weekend.",
]
QUERY = "Where did Melanie swim?"


def _load(memory: Memory) -> None:
    memory.ingest_many([ClaimInput(content=t, source=t.split(":")[0]) for t in TURNS])
    memory.register_policy({"version": "sent", "rerank": "sentences", "rerank_top": 6, "sentence_weight": 2.0})


def _rank_of(packet: ContextPacket, content: str) -> int:
    return next(it.rank for it in packet.items if it.content == content)


def test_a_diluted_turn_rises_by_its_best_sentence(memory: Memory, runtime: Any) -> None:
    _load(memory)
    fused = memory.recall(QUERY, k=6)
    packet = memory.recall(QUERY, k=6, policy_version="sent")
    assert packet.stages == ["rerank:sentences"] and not packet.completeness.rerank_unavailable
    assert _rank_of(packet, SWIM) < _rank_of(fused, SWIM)
    # The scores are the fusion of the fused order with the order of the best sentences, computed apart.
    cosines = best_sentence_cosines(runtime.embedder.embed_query(QUERY), [it.content for it in fused.items],
                                    runtime.embedder.embed_cached)
    expected = sorted(zip(fused.items, fused_with_sentences(cosines, 2.0, 60), strict=True),
                      key=lambda p: (-p[1], p[0].rank))
    assert [it.id for it in packet.items] == [it.id for it, _ in expected]
    assert [it.score for it in packet.items] == pytest.approx([s for _, s in expected], abs=1e-9)
    assert cosines[[it.content for it in fused.items].index(SWIM)] == max(cosines)  # its best sentence is best
    again = memory.recall(QUERY, k=6, policy_version="sent")
    assert again.fingerprint == packet.fingerprint == packet.compute_fingerprint()
    explained = memory.recall(QUERY, k=6, policy_version="sent", explain=True)
    assert explained.fingerprint == packet.fingerprint
    for it in explained.items:
        assert it.explanation is not None and it.explanation.rerank is not None
        verdict = it.explanation.rerank
        assert verdict.method == "sentences" and verdict.model == "all-MiniLM-L6-v2"
        assert fused.items[verdict.fused_rank - 1].id == it.id and verdict.score == it.score


def test_the_sentence_reranker_degrades_when_the_embedder_fails(memory: Memory, runtime: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _load(memory)
    fused = memory.recall(QUERY, k=6)

    def broken(texts: Any) -> Any:
        raise RuntimeError("out of memory")

    monkeypatch.setattr(runtime.embedder, "embed_cached", broken)
    packet = memory.recall(QUERY, k=6, policy_version="sent")
    assert packet.completeness.rerank_unavailable and packet.stages == []
    assert [(it.id, it.score) for it in packet.items] == [(it.id, it.score) for it in fused.items]


def test_graphql_takes_the_sentence_reranker_without_a_model(runtime: Any, namespace: str) -> None:
    Memory(runtime, namespace).ingest_many([ClaimInput(content=t, source=t.split(":")[0]) for t in TURNS])
    with keyed_graphql(runtime, namespace, "sentence-key") as gql:
        bad = gql('mutation { registerPolicy(input: {version: "s0", rerank: "sentences", sentenceWeight: 0}) '
                  '{ version } }')
        assert bad["errors"][0]["extensions"]["code"] == "BAD_INPUT"
        assert bad["errors"][0]["extensions"]["field"] == "sentenceWeight"
        reg = gql('mutation { registerPolicy(input: {version: "s1", rerank: "sentences", sentenceWeight: 2, '
                  'rerankTop: 6}) { rerank rerankModel sentenceWeight } }')
        assert reg["data"]["registerPolicy"] == {"rerank": "sentences", "rerankModel": None, "sentenceWeight": 2.0}
        got = gql('{ recall(query: "' + QUERY + '", policyVersion: "s1", k: 6, explain: true) { stages '
                  'items { content explanation { rerank { method fusedRank } } } } }')["data"]["recall"]
    assert got["stages"] == ["rerank:sentences"]
    assert all(it["explanation"]["rerank"]["method"] == "sentences" for it in got["items"])
    swim = next(it for it in got["items"] if it["content"] == SWIM)
    assert got["items"].index(swim) + 1 < swim["explanation"]["rerank"]["fusedRank"]
