"""The sentence reranker on real recalls (policy `rerank: sentences`, graph/sentences.py).

A turn that answers a question in one of its sentences, between a greeting and a goodbye, has a vector
diluted by the rest: here it ranks below turns that merely sound like the speaker. Read sentence by
sentence it rises; the packet names the stage, explains each score, replays, and degrades to the
fused ranking when the embedder cannot read the sentences.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from palimpsest.api.memory import Memory
from palimpsest.graph.sentences import best_sentence_cosines, fused_with_sentences
from palimpsest.schema.models import ClaimInput, ContextPacket
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
    with keyed_graphql(runtime, namespace, "sentence-key", ("read", "write", "admin")) as gql:
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


def _counting(runtime: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the process embeds for the sentence reranker from here on."""
    asked: list[str] = []
    cached = runtime.embedder.embed_cached

    def counted(texts: Any) -> Any:
        asked.extend(texts)
        return cached(texts)

    monkeypatch.setattr(runtime.embedder, "embed_cached", counted)
    return asked


def _stored(runtime: Any, namespace: str) -> dict[str, tuple[str | None, bytes | None]]:
    rows, _, _ = runtime.driver.execute_query(
        "MATCH (c:Claim {namespace: $ns}) RETURN c.content AS content, c.sentence_key AS key, "
        "c.sentence_vectors AS vectors", ns=namespace)
    return {r["content"]: (r["key"], None if r["vectors"] is None else bytes(r["vectors"])) for r in rows}


def test_the_worker_stores_the_sentences_recall_would_embed_and_recall_reads_them(
        memory: Memory, runtime: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from palimpsest.api.worker import run_once
    from palimpsest.graph.sentences import sentences

    _load(memory)
    cold = memory.recall(QUERY, k=6, policy_version="sent")
    # Under a default policy without the sentence stage, the worker embeds no sentences.
    assert run_once(runtime, memory.namespace).sentence_vectors == 0
    assert all(key is None for key, _ in _stored(runtime, memory.namespace).values())
    # Once the namespace's default reads sentences, the worker stores them: for the claims it projects
    # from then on, and (the backfill) for those it had projected before.
    memory.set_default_policy("sent")
    memory.ingest_many([ClaimInput(content=t + " Again.", source=t.split(":")[0]) for t in TURNS])
    assert run_once(runtime, memory.namespace).sentence_vectors == 2 * len(TURNS)
    stored = _stored(runtime, memory.namespace)
    assert len(stored) == 2 * len(TURNS) and all(v is not None for _, v in stored.values())
    assert all(len(v or b"") == 4 * 384 * len(sentences(c)) for c, (_, v) in stored.items())
    swim = np.asarray(runtime.embedder.embed_stable(sentences(SWIM)), dtype="<f4")
    assert stored[SWIM][1] == swim.tobytes()  # the bits recall computes, a row per sentence in order
    assert run_once(runtime, memory.namespace).sentence_vectors == 0  # nothing is embedded twice
    # Recall now asks the embedder for nothing, and serves the packet it served when it embedded all.
    runtime.embedder._text_cache.clear()
    asked = _counting(runtime, monkeypatch)
    warm = memory.recall(QUERY, k=6, policy_version="sent", as_of_revision=cold.store_revision,
                         projections_seq=cold.projections_seq)
    assert warm.fingerprint == cold.fingerprint
    assert [(it.id, it.score) for it in warm.items] == [(it.id, it.score) for it in cold.items]
    fresh = memory.recall(QUERY, k=6)
    assert fresh.stages == ["rerank:sentences"] and fresh.items
    assert asked == []


def test_the_backfill_is_bounded_per_pass_and_resumes(memory: Memory, runtime: Any) -> None:
    from palimpsest.api.worker import WorkerConfig, run_once

    _load(memory)
    run_once(runtime, memory.namespace)
    keep = WorkerConfig(sentence_vectors=True, batch_claims=4)  # all six claims share one revision
    assert [run_once(runtime, memory.namespace, keep).sentence_vectors for _ in range(3)] == [4, 2, 0]
    assert all(v is not None for _, v in _stored(runtime, memory.namespace).values())
    memory.ingest("Caroline: I painted a sunrise. It hangs in my hall.", "Caroline")
    assert run_once(runtime, memory.namespace, keep).sentence_vectors == 1  # projected with it
    cursor, _, _ = runtime.driver.execute_query("MATCH (s:Store {namespace: $ns}) RETURN s.sentence_cursor AS c, "
                                                "s.projections_seq AS seq", ns=memory.namespace)
    assert cursor[0]["c"] == cursor[0]["seq"]  # next, the backfill reads what this pass projected


def test_stored_sentence_vectors_under_another_key_are_not_read(memory: Memory, runtime: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from palimpsest.api.worker import WorkerConfig, run_once
    from palimpsest.graph.sentences import sentences

    _load(memory)
    run_once(runtime, memory.namespace, WorkerConfig(sentence_vectors=True))
    before = memory.recall(QUERY, k=6, policy_version="sent")
    # Half the claims hold vectors of other texts under a key the splitter no longer gives (another build,
    # another model); the other half keep theirs.
    stale = sorted(TURNS)[:3]
    runtime.driver.execute_query("MATCH (c:Claim {namespace: $ns}) WHERE c.content IN $stale "
                                 "SET c.sentence_key = 'stale', c.sentence_vectors = $zeros",
                                 ns=memory.namespace, stale=stale, zeros=bytes(4 * 384))
    runtime.embedder._text_cache.clear()
    asked = _counting(runtime, monkeypatch)
    after = memory.recall(QUERY, k=6, policy_version="sent")
    assert sorted(asked) == sorted({s for t in stale for s in sentences(t)})  # those embedded again, only those
    assert after.fingerprint == before.fingerprint


def test_sentence_vectors_travel_with_an_export_and_leave_with_an_erasure(memory: Memory, runtime: Any,
                                                                          namespace: str) -> None:
    from palimpsest.api.worker import WorkerConfig, run_once

    _load(memory)
    run_once(runtime, memory.namespace, WorkerConfig(sentence_vectors=True))
    stored = _stored(runtime, namespace)
    assert all(v is not None for _, v in stored.values())
    copy = Memory(runtime, namespace + "-copy")
    try:
        copy.import_lines(list(memory.export_lines()), remap=True)
        assert _stored(runtime, copy.namespace) == stored
        assert copy.check().ok
    finally:
        from palimpsest.graph.lifecycle.maintenance import drop_namespace

        drop_namespace(runtime.driver, copy.namespace)
    swim = next(it.id for it in memory.recall(QUERY, k=6).items if it.content == SWIM)
    memory.erase([swim], reason="test")
    rows, _, _ = runtime.driver.execute_query(
        "MATCH (n {namespace: $ns}) WHERE n.sentence_vectors IS NOT NULL OR n.sentence_key IS NOT NULL "
        "RETURN n.id AS id", ns=namespace)
    assert swim not in {r["id"] for r in rows} and len(rows) == len(TURNS) - 1
    assert memory.check().ok
