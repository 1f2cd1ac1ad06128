"""The stages after fusion, as pure functions of a ranked list: Jaccard dedup, the rerank's reordering,
the LLM order's scores, a cross-encoder built here (a tiny random BERT with a one-logit head), and the
degradation to no rerank when a model cannot load or answer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from palimpsest.extraction.rerank import (
    RerankOptions,
    cross_encoder_scores,
    llm_order,
    load_cross_encoder,
    order_scores,
    rerank_text,
)
from palimpsest.graph.recall.dedup import dedup, jaccard
from palimpsest.graph.recall.rerank import rerank
from palimpsest.graph.text import term_set
from palimpsest.schema.models import Freshness, PacketItem, Policy, ScoreDecay, ScoreExplanation, ScoreTerm
from palimpsest.schema.rerank import RerankUnavailableError
from tests.tiny_models import save_tiny_bert

WORDS = ["backups", "go", "to", "bucket", "b", "1", "2", "the", "ledger", "api", "rate", "limit", "is", "300",
         "where", "do", "per", "minute", "kept", "for", "seven", "years"]


def item(cid: str, content: str, rank: int, score: float, explained: bool = False) -> PacketItem:
    explanation = None
    if explained:
        term = ScoreTerm(weight=1.0, value=score, rank=None, contribution=score)
        explanation = ScoreExplanation(fusion="linear", vector=term, lexical=term, fused=score, relevance=score,
                                       decay=ScoreDecay(factor=1.0, age_seconds=0.0, tau_seconds=1.0), score=score)
    return PacketItem(id=cid, content=content, source="s", claim_key=None, metadata={}, revision=1,
                      recorded_at="2026-01-01T00:00:00Z", valid_from=None, valid_to=None, rank=rank, score=score,
                      relevance=score, vector_similarity=None, lexical_score=None,
                      freshness=Freshness(age_seconds=0.0, tau_seconds=1.0, decay=1.0, status="current",
                                          superseded=False, retracted=False), explanation=explanation)


RANKED = [
    item("a", "Backups go to bucket b-1 every night", 1, 0.9),
    item("b", "Backups go to bucket b-1 every night.", 2, 0.8),  # the same terms as a
    item("c", "The ledger-api rate limit is 300 per minute", 3, 0.7),
    item("d", "Backups go to bucket b-1 each night", 4, 0.6),  # 5 of a's 7 terms
    item("e", "Backups are kept for seven years", 5, 0.5),
]


def test_jaccard_is_over_recall_terms() -> None:
    assert jaccard(term_set(RANKED[0].content), term_set(RANKED[1].content)) == 1.0
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(frozenset({"x", "y"}), frozenset({"y", "z"})) == pytest.approx(1 / 3)


def test_dedup_keeps_the_higher_ranked_and_fills_the_freed_places() -> None:
    out = dedup(RANKED, 0.7, 3)
    assert [it.id for it in out.items] == ["a", "c", "d"] and out.removed == ["b"]
    assert [it.rank for it in out.items] == [1, 2, 3] and out.remaining == 1
    tighter = dedup(RANKED, 0.5, 3)
    assert [it.id for it in tighter.items] == ["a", "c", "e"] and tighter.removed == ["b", "d"]
    assert tighter.remaining == 0
    off = dedup(RANKED, None, 3)
    assert [it.id for it in off.items] == ["a", "b", "c"] and off.removed == [] and off.remaining == 2
    assert dedup(RANKED, 0.7, 3) == out  # deterministic


def test_order_scores_place_the_models_order_first_and_the_rest_in_fused_order() -> None:
    assert order_scores([2, 0, 1], 3) == [pytest.approx(2 / 3), pytest.approx(1 / 3), 1.0]
    # repeats and out-of-range numbers dropped; what the model left out follows in fused order
    assert order_scores([3, 3, 9, -1], 4) == [0.75, 0.5, 0.25, 1.0]


def test_rerank_off_changes_nothing() -> None:
    out = rerank("q", RANKED, Policy(version="p"))
    assert out.items == RANKED and not out.ran and not out.unavailable


def test_a_model_that_cannot_load_degrades_to_the_fused_ranking(tmp_path: Path) -> None:
    policy = Policy(version="p", rerank="cross-encoder", rerank_model=str(tmp_path / "missing"), rerank_top=3)
    out = rerank("where do backups go?", RANKED, policy)
    assert out.items == RANKED and not out.ran and out.unavailable


def test_the_stage_scores_with_the_reranker_it_is_handed(tmp_path: Path) -> None:
    """graph calls no model: the cross-encoder and the LLM are scorers handed in (extraction.rerank); a
    scorer that cannot load or answers the wrong number of scores leaves the fused ranking."""
    missing = str(tmp_path / "missing")
    policy = Policy(version="p", rerank="cross-encoder", rerank_model=missing, rerank_top=3)
    with pytest.raises(RerankUnavailableError, match="failed to load"):
        RerankOptions()("cross-encoder", missing, "q", RANKED[:3])
    out = rerank("where do backups go?", RANKED, policy, RerankOptions())
    assert out.items == RANKED and not out.ran and out.unavailable
    seen: list[tuple[str, str, str, int]] = []

    def by_length(method: str, model: str, query: str, items: Sequence[PacketItem]) -> list[float]:
        seen.append((method, model, query, len(items)))
        return [float(len(it.content)) for it in items]

    out = rerank("q", RANKED, policy, by_length)
    assert out.ran and [it.id for it in out.items] == ["c", "b", "a", "d", "e"]  # longest first, the tail kept
    assert seen == [("cross-encoder", missing, "q", 3)]
    short = rerank("q", RANKED, policy, lambda method, model, query, items: [1.0])
    assert short.items == RANKED and short.unavailable


def test_a_rerank_needs_a_model() -> None:
    with pytest.raises(ValueError, match="rerank_model"):
        Policy(version="p", rerank="llm")
    with pytest.raises(ValueError):
        Policy(version="p", rerank="llm", rerank_model="m", rerank_top=0)


@pytest.fixture(scope="module")
def tiny_ranker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer BERT with one output (a relevance logit), saved like a hub checkpoint."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-ranker"), WORDS, {0: "relevance"})


def test_a_cross_encoder_rescores_the_head_and_is_loaded_once(tiny_ranker: Path) -> None:
    options = RerankOptions(max_length=32)
    policy = Policy(version="p", rerank="cross-encoder", rerank_model=str(tiny_ranker), rerank_top=4)
    ranked = [item(it.id, it.content, it.rank, it.score, explained=True) for it in RANKED]
    out = rerank("where do backups go?", ranked, policy, options)
    assert out.ran and not out.unavailable
    scores = cross_encoder_scores(str(tiny_ranker), "where do backups go?", [it.content for it in RANKED[:4]], options)
    by_id = dict(zip("abcd", scores, strict=True))
    head = out.items[:4]
    assert sorted(it.id for it in head) == ["a", "b", "c", "d"] and out.items[4].id == "e"
    assert [it.score for it in head] == sorted(by_id.values(), reverse=True)
    assert all(it.score == pytest.approx(by_id[it.id]) for it in head)
    assert out.items[4].score == 0.5 and [it.rank for it in out.items] == [1, 2, 3, 4, 5]
    for it in head:
        assert it.explanation is not None and it.explanation.rerank is not None
        verdict = it.explanation.rerank
        assert verdict.method == "cross-encoder" and verdict.score == it.score
        assert verdict.replaced == RANKED[verdict.fused_rank - 1].score
    assert out.items[4].explanation is not None and out.items[4].explanation.rerank is None
    assert load_cross_encoder(str(tiny_ranker), options) is load_cross_encoder(str(tiny_ranker), options)
    assert rerank("where do backups go?", ranked, policy, options) == out  # same inputs, same list


def test_the_llm_reranker_orders_by_one_typed_call() -> None:
    calls: list[dict[str, Any]] = []

    def completion(**kwargs: Any) -> Any:
        import litellm

        calls.append(kwargs)
        return litellm.completion(**kwargs)

    options = RerankOptions(completion=completion, completion_kwargs={"mock_response": json.dumps({"order": [3, 1]})})
    policy = Policy(version="p", rerank="llm", rerank_model="gpt-4o-mini", rerank_top=3)
    out = rerank("ledger-api rate limit", RANKED, policy, options)
    assert out.ran and [it.id for it in out.items] == ["c", "a", "b", "d", "e"]
    assert [it.score for it in out.items[:3]] == [1.0, pytest.approx(2 / 3), pytest.approx(1 / 3)]
    assert len(calls) == 1 and "[3] The ledger-api rate limit" in calls[0]["messages"][1]["content"]
    assert llm_order("gpt-4o-mini", "q", RANKED[:3], options) == [2, 0]


def test_a_reranker_reads_the_declared_subject_as_the_embedder_did() -> None:
    titled = RANKED[4].model_copy(update={"metadata": {"subject": "Retention policy"}})
    opens = RANKED[0].model_copy(update={"metadata": {"title": "backups"}})  # the content already opens with it
    assert rerank_text(titled) == "Retention policy: Backups are kept for seven years"
    assert rerank_text(opens) == opens.content and rerank_text(RANKED[2]) == RANKED[2].content
    calls: list[dict[str, Any]] = []

    def completion(**kwargs: Any) -> Any:
        import litellm

        calls.append(kwargs)
        return litellm.completion(**kwargs)

    options = RerankOptions(completion=completion, completion_kwargs={"mock_response": json.dumps({"order": [2]})})
    llm_order("gpt-4o-mini", "how long are backups kept?", [opens, titled], options)
    assert "[2] Retention policy: Backups are kept" in calls[0]["messages"][1]["content"]


def test_an_llm_reranker_that_fails_degrades_to_the_fused_ranking() -> None:
    options = RerankOptions(max_retries=0, completion_kwargs={"mock_response": "not json at all"})
    policy = Policy(version="p", rerank="llm", rerank_model="gpt-4o-mini", rerank_top=3)
    out = rerank("q", RANKED, policy, options)
    assert out.items == RANKED and not out.ran and out.unavailable


def test_a_policy_naming_a_rerank_without_a_model_is_refused_naming_the_field() -> None:
    from pydantic import ValidationError

    from palimpsest.api.memory import bad_input_from

    with pytest.raises(ValidationError) as caught:
        Policy.model_validate({"version": "p", "rerank": "cross-encoder"})
    err = bad_input_from(caught.value)
    assert err.field == "rerank_model" and "rerank_model" in err.message
    with pytest.raises(ValidationError) as too_many:
        Policy.model_validate({"version": "p", "rerank_top": 201})
    assert bad_input_from(too_many.value).field == "rerank_top"
