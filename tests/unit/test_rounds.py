"""The pure parts of multi-round recall and the reader: expansion terms, fusion order, citation checks."""

from __future__ import annotations

from typing import Any

from palimpsest.extraction.reader import ReaderVerdict, check_citations
from palimpsest.graph.recall.rounds import Bridge, expanded_query, expansion_terms, fuse
from palimpsest.schema.models import DEFAULT_POLICY, ContextPacket

FRESH = {"age_seconds": 0.0, "tau_seconds": 1.0, "decay": 1.0, "status": "current", "superseded": False,
         "retracted": False}


def packet(items: list[tuple[str, str]], query: str = "q") -> ContextPacket:
    rows: list[dict[str, Any]] = [
        {"id": cid, "content": cid, "source": "s", "claim_key": None, "metadata": {"subject": subject},
         "revision": 1, "recorded_at": "2026-01-01T00:00:00Z", "valid_from": None, "valid_to": None,
         "rank": n, "score": 1.0 / n, "relevance": 1.0, "vector_similarity": None, "lexical_score": None,
         "freshness": FRESH} for n, (cid, subject) in enumerate(items, start=1)]
    body: dict[str, Any] = {
        "namespace": "ns", "query": query, "policy_version": "default-v1", "k": len(rows), "store_revision": 1,
        "valid_at": None, "reference_time": None, "projections_seq": 1, "items": rows, "contradictions": [],
        "edges": [], "beliefs": [], "completeness": {"items_truncated": False, "edges_truncated": False,
                                                     "contradictions_truncated": False, "beliefs_truncated": False,
                                                     "candidates_exhausted": True},
        "hidden": {"superseded": 0, "retracted": 0, "not_yet_valid": 0, "expired": 0}, "served_at": "x",
        "fingerprint": "f"}
    return ContextPacket.model_validate(body)


def test_expansion_adds_bridges_most_specific_first_not_the_items_own_subject() -> None:
    p = packet([("film", "Northern Lights (film)"), ("novel", "Northern Lights (novel)")])
    bridges = [Bridge("film", "e1", "Northern Lights (film)", 1), Bridge("film", "e3", "Ireland", 40),
               Bridge("film", "e2", "Ada Brennan", 2), Bridge("film", "e4", "Hub", 10_000),
               Bridge("novel", "e5", "Norwich", 3)]
    terms = expansion_terms("Where was the director of Northern Lights born?", p, bridges, DEFAULT_POLICY)
    assert terms == ["Ada Brennan", "Ireland", "Norwich"]
    with_subjects = DEFAULT_POLICY.model_copy(update={"expansion_subjects": True, "expansion_terms": 2})
    assert expansion_terms("Northern Lights?", p, bridges, with_subjects) == ["Northern Lights (film)", "Ada Brennan"]
    assert expansion_terms("q", p, bridges, DEFAULT_POLICY, exclude_ids=["film"]) == ["Norwich"]
    assert expanded_query("q", ["a" * 10, "b"], 13) == "q " + "a" * 10
    # A question read as one hop gets a second round only towards a bridge another claim is about.
    assert expansion_terms("q", p, bridges, DEFAULT_POLICY, about_only=True) == []
    about = [*bridges[:2], Bridge("film", "e2", "Ada Brennan", 2, about=True), *bridges[3:]]
    assert expansion_terms("Where was the director of Northern Lights born?", p, about, DEFAULT_POLICY,
                           about_only=True) == ["Ada Brennan", "Ireland", "Norwich"]
    # A hub is no bridge, whoever is about it, so it does not open the round either.
    hub = [Bridge("film", "e4", "Hub", 10_000, about=True), Bridge("novel", "e5", "Norwich", 3)]
    assert expansion_terms("q", p, hub, DEFAULT_POLICY, about_only=True) == []


def test_fusion_keeps_round_one_on_top_and_is_a_total_order() -> None:
    one = packet([("a", "A"), ("b", "B"), ("c", "C")])
    two = packet([("d", "D"), ("c", "C"), ("e", "E")])
    policy = DEFAULT_POLICY.model_copy(update={"expansion_protect_top": 2, "expansion_weight": 1.0})
    fused = fuse([one, two], policy, 5)
    assert [f.id for f in fused] == ["a", "b", "c", "d", "e"]
    assert fused[2].round_ranks == [3, 2] and fused[3].round_ranks == [None, 1]
    heavy = DEFAULT_POLICY.model_copy(update={"expansion_protect_top": 0, "expansion_weight": 3.0})
    assert [f.id for f in fuse([one, two], heavy, 3)] == ["c", "d", "e"]
    # Equal scores fall to the best rank in any round, then the id.
    tie = fuse([packet([("y", "Y")]), packet([("x", "X")])], DEFAULT_POLICY.model_copy(
        update={"expansion_protect_top": 0, "expansion_weight": 1.0}), 2)
    assert [f.id for f in tie] == ["x", "y"]


def test_citations_only_count_what_was_shown() -> None:
    shown = ["c1", "c2"]
    ok = check_citations(ReaderVerdict(thought="t", answer="Galway", cited_ids=["c2", "zz", "c2", " c1 "]), shown)
    assert ok.cited_ids == ["c2", "c1"] and ok.dropped_citations == 1 and not ok.not_in_memory
    unsupported = check_citations(ReaderVerdict(answer="Dublin", cited_ids=["zz"]), shown)
    assert unsupported.not_in_memory and unsupported.answer == "" and unsupported.dropped_citations == 1
    declined = check_citations(ReaderVerdict(answer="x", cited_ids=["c1"], not_in_memory=True), shown)
    assert declined.not_in_memory and declined.cited_ids == []
