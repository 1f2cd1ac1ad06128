"""Recall's ranking on hand-built rows: fusion, lending, the floor, freshness and the PPR tier, no Neo4j."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from palimpsest.graph.recall.ranking import rank
from palimpsest.graph.recall.rows import ClaimRow
from palimpsest.schema.models import Policy

RECORDED = datetime(2026, 1, 1, tzinfo=UTC)


def _row(cid: str, content: str, *, revision: int = 1, key: str | None = None,
         recorded: datetime = RECORDED, tau: float | None = None) -> ClaimRow:
    return ClaimRow(id=cid, content=content, claim_key=key, revision=revision, valid_from=None, valid_to=None,
                    vis_from=[revision], vis_to=[2**62], vis_until=None, retracted_at_revision=None, source="s",
                    metadata_json=None, recorded_at=recorded, tau=tau)


def test_ppr_reorders_and_fills_below_the_protected_top() -> None:
    rows = [_row("a", "Ravi Alvarez takes warfarin"), _row("b", "Ravi Alvarez is allergic to penicillin"),
            _row("c", "The clinic moved to Harbour Street"), _row("d", "Warfarin interacts with aspirin")]
    sims = {"a": 0.95, "b": 0.9, "c": 0.6, "d": 0.7}
    graph = {"c": 1.0, "d": 0.2}  # PPR strongly favours a bridge claim with little direct match
    query = "What does Ravi Alvarez take?"
    plain = rank(rows, sims, query, Policy(version="p"), None, limit=4).items
    off = rank(rows, sims, query, Policy(version="p", graph_expansion="ppr", graph_weight=3.0,
                                         ppr_protect_top=0), None, None, graph, limit=4).items
    on, total, _ = rank(rows, sims, query, Policy(version="p", graph_expansion="ppr", graph_weight=3.0,
                                               ppr_protect_top=2), None, None, graph, limit=4)
    assert off[0].id == "c"  # unprotected, the bridge takes rank 1
    assert [i.id for i in on][:2] == [i.id for i in plain][:2]  # protected: direct hits keep ranks 1-2
    assert [i.id for i in on][2] == "c" and [i.rank for i in on] == [1, 2, 3, 4] and total == 4


def test_linear_fusion_is_the_convex_combination_of_cosine_and_lexical_share() -> None:
    rows = [_row("a", "warfarin dose"), _row("b", "aspirin")]
    ranking = rank(rows, {"a": 0.75, "b": 0.75}, "warfarin dose", Policy(version="p"), None, limit=2)
    a, b = ranking.items
    assert (a.id, b.id) == ("a", "b") and a.lexical_score == 1.0 and b.lexical_score == 0.0
    assert a.relevance == (0.5 + 1.0) / 2 and b.relevance == 0.5 / 2  # index 0.75 is cosine 0.5
    assert a.vector_similarity == 0.75 and ranking.ranked == 2 and ranking.below_floor == set()


def test_ties_end_in_revision_then_id_and_identical_claims_score_alike() -> None:
    rows = [_row("b", "same text"), _row("a", "same text"), _row("c", "same text", revision=2)]
    for fusion in ("linear", "rrf"):
        items = rank(rows, {"a": 0.8, "b": 0.8, "c": 0.8}, "same", Policy(version="p", fusion=fusion), None,
                     limit=3).items
        assert [it.id for it in items] == ["c", "a", "b"]
        assert len({it.relevance for it in items}) == 1


def test_rrf_gives_rank_one_on_every_list_full_relevance() -> None:
    rows = [_row("a", "warfarin dose"), _row("b", "unrelated words")]
    items = rank(rows, {"a": 0.9, "b": 0.6}, "warfarin dose", Policy(version="p", fusion="rrf"), None, limit=2).items
    assert items[0].id == "a" and items[0].relevance == 1.0 and items[1].relevance < 1.0


def test_the_floor_cuts_weak_matches_and_says_which() -> None:
    rows = [_row("a", "warfarin dose"), _row("b", "harbour street")]
    ranking = rank(rows, {"a": 0.9, "b": 0.5}, "warfarin dose", Policy(version="p", min_relevance=0.3), None, limit=5)
    assert [it.id for it in ranking.items] == ["a"] and ranking.below_floor == {"b"} and ranking.ranked == 1


def test_freshness_decays_with_age_at_the_reference_time_never_the_clock() -> None:
    tau = 3600.0
    rows = [_row("old", "warfarin dose", recorded=RECORDED, tau=tau),
            _row("new", "warfarin dose", recorded=RECORDED + timedelta(hours=1), tau=tau)]
    reference = RECORDED + timedelta(hours=1)
    items = rank(rows, {"old": 0.9, "new": 0.9}, "warfarin dose", Policy(version="p"), reference, limit=2).items
    assert [it.id for it in items] == ["new", "old"]
    assert items[0].freshness.decay == 1.0 and items[1].freshness.age_seconds == 3600.0
    assert abs(items[1].freshness.decay - 0.367879441171) < 1e-12
    assert rank(rows, {"old": 0.9, "new": 0.9}, "warfarin dose", Policy(version="p"), None,
                limit=2).items[1].freshness.decay == 1.0  # no reference time: no decay


def test_a_current_version_borrows_the_match_of_an_older_wording() -> None:
    current = _row("new", "The limit is now 500", key="k", revision=2)
    older = _row("old", "ledger-api rate limit is 300 requests", key="k")
    sims = {"new": 0.6, "old": 0.95, "x": 0.7}
    rows = [current, _row("x", "The ledger-api has a dashboard")]
    items = rank(rows, sims, "ledger-api rate limit", Policy(version="p"), None, {"new": [older]}, limit=2).items
    assert items[0].id == "new" and items[0].matched_via == "old"
    assert items[0].vector_similarity == 0.6  # its own cosine is reported; the borrowed one ranked it


def test_a_claim_naming_a_sibling_is_penalised() -> None:
    rows = [_row("gw", "checkout-gateway p99 is 750 ms"), _row("plain", "p99 latency budget is 750 ms")]
    items = rank(rows, {"gw": 0.8, "plain": 0.8}, "checkout-scheduler p99", Policy(version="p"), None, limit=2).items
    assert [it.id for it in items] == ["plain", "gw"]
