"""The contracts of recall's optional stages, as properties over generated inputs rather than examples:
dedup (graph.recall.dedup), the fusion of rounds (graph.recall.rounds.fuse), the router's decision
(graph.recall.router) and the sentence split (graph.sentences). Each property is what the
module's docstring promises; hypothesis looks for the input that breaks it."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from palimpsest.graph.recall import router
from palimpsest.graph.recall.dedup import dedup, jaccard
from palimpsest.graph.recall.rounds import fuse
from palimpsest.graph.sentences import MAX_SENTENCES, sentences
from palimpsest.graph.text import term_set
from palimpsest.schema.models import DEFAULT_POLICY, ContextPacket, PacketItem, Policy

FRESH = {"age_seconds": 0.0, "tau_seconds": 1.0, "decay": 1.0, "status": "current", "superseded": False,
         "retracted": False}
WORDS = ["ada", "river", "rivers", "bridge", "city", "north", "lights", "film", "born", "wrote", "band", "song"]


def item(cid: str, content: str, rank: int) -> dict[str, Any]:
    return {"id": cid, "content": content, "source": "s", "claim_key": None, "metadata": {}, "revision": 1,
            "recorded_at": "2026-01-01T00:00:00Z", "valid_from": None, "valid_to": None, "rank": rank,
            "score": 1.0 / rank, "relevance": 1.0, "vector_similarity": None, "lexical_score": None,
            "freshness": FRESH}


def packet(ids: list[str]) -> ContextPacket:
    rows = [item(cid, cid, n) for n, cid in enumerate(ids, start=1)]
    return ContextPacket.model_validate({
        "namespace": "ns", "query": "q", "policy_version": "default-v1", "k": max(1, len(rows)),
        "store_revision": 1, "valid_at": None, "reference_time": None, "projections_seq": 1, "items": rows,
        "contradictions": [], "edges": [], "beliefs": [],
        "completeness": {"items_truncated": False, "edges_truncated": False, "contradictions_truncated": False,
                         "beliefs_truncated": False, "candidates_exhausted": True},
        "hidden": {"superseded": 0, "retracted": 0, "not_yet_valid": 0, "expired": 0}, "served_at": "x",
        "fingerprint": "f"})


texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join)
ranked_items = st.lists(texts, max_size=12).map(
    lambda contents: [PacketItem.model_validate(item(f"c{n}", text, n)) for n, text in enumerate(contents, 1)])


@settings(max_examples=300, deadline=None)
@given(ranked_items, st.one_of(st.none(), st.sampled_from([0.25, 1 / 3, 0.5, 2 / 3, 1.0]),
                               st.floats(min_value=0.05, max_value=1.0)), st.integers(1, 8))
def test_dedup_keeps_the_first_of_each_near_duplicate_group_in_rank_order(
        items: list[PacketItem], threshold: float | None, k: int) -> None:
    out = dedup(items, threshold, k)
    kept = [it.id for it in out.items]
    examined = len(items) - out.remaining
    # What was judged is a prefix of the ranking, split into kept and removed, order kept.
    assert sorted(kept + out.removed, key=lambda c: int(c[1:])) == [it.id for it in items[:examined]]
    assert [it.rank for it in out.items] == list(range(1, len(kept) + 1))
    assert len(kept) <= k and (len(kept) == k or out.remaining == 0)
    if threshold is None:
        assert kept == [it.id for it in items[:k]] and not out.removed
        return
    terms = {it.id: term_set(it.content) for it in items}
    for n, a in enumerate(kept):  # no two kept items are near-duplicates …
        assert all(jaccard(terms[a], terms[b]) < threshold for b in kept[n + 1:])
    for gone in out.removed:  # … and each removed one is a near-duplicate of an item kept before it
        before = [c for c in kept if int(c[1:]) < int(gone[1:])]
        assert any(jaccard(terms[gone], terms[c]) >= threshold for c in before)


rounds = st.lists(st.lists(st.sampled_from([f"c{n}" for n in range(10)]), max_size=6, unique=True),
                  min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(rounds, st.integers(0, 4), st.sampled_from([0.5, 1.0, 2.0]), st.integers(1, 12))
def test_fusion_is_a_stable_total_order_with_round_one_on_top(
        ids: list[list[str]], protect: int, weight: float, k: int) -> None:
    policy = DEFAULT_POLICY.model_copy(update={"expansion_protect_top": protect, "expansion_weight": weight})
    packets = [packet(r) for r in ids]
    fused = [f.id for f in fuse(packets, policy, k)]
    everything = {c for r in ids for c in r}
    assert len(fused) == len(set(fused)) == min(k, len(everything)) and set(fused) <= everything
    top = ids[0][:protect][:k]
    assert fused[:len(top)] == top  # round 1's protected ranks stand as they were
    # A larger k only appends: the first k of the fusion never depend on k.
    longer = [f.id for f in fuse(packets, policy, k + 3)]
    assert longer[:len(fused)] == fused
    # Below the protected ranks, the fused score never rises.
    scores = [f.score for f in fuse(packets, policy, len(everything))][len(ids[0][:protect]):]
    assert all(a >= b for a, b in itertools.pairwise(scores))
    if len(ids) == 1:
        assert fused == ids[0][:k]


policies = st.builds(
    lambda ppr, dedup_at, how: Policy(version="p", graph_expansion=ppr, dedup_jaccard=dedup_at, router=how,
                                      router_model="m" if how == "llm" else None),
    st.sampled_from(["none", "ppr"]), st.one_of(st.none(), st.sampled_from([0.5, 0.7, 1.0])),
    st.sampled_from(["rules", "llm"]))
found = st.frozensets(st.sampled_from([*router.FEATURES, "not-a-feature"]))


@settings(max_examples=300, deadline=None)
@given(policies, found, st.sampled_from(router.HOW), st.booleans())
def test_the_router_only_switches_stages_off_and_its_stages_pin_the_decision(
        policy: Policy, props: frozenset[str], how: str, later: bool) -> None:
    decision = router.decide(policy, props, how, later_rounds=later)
    before, after = policy.model_dump(), decision.policy.model_dump()
    changed = {key for key in before if before[key] != after[key]}
    assert changed <= {"graph_expansion", "dedup_jaccard"}
    assert all(after[key] in ("none", None) for key in changed)
    # The stages say what was switched off, and only that.
    assert (f"{router.PREFIX}{router.SKIP_PPR}" in decision.stages) == ("graph_expansion" in changed)
    assert (f"{router.PREFIX}{router.SKIP_DEDUP}" in decision.stages) == ("dedup_jaccard" in changed)
    hop = bool({router.MULTI_HOP, router.COMPARISON} & props)
    assert decision.rounds == hop == router.allows_rounds(decision.stages)
    held = router.pinned(decision.stages)
    assert held is not None and held.how == how
    assert router.decide(policy, held.features, held.how, later_rounds=held.later_rounds) == decision
    assert router.held(policy, held) == decision


question_words = st.lists(st.sampled_from([
    "What", "Which", "Who", "is", "was", "the", "a", "director", "of", "Titanic", "born", "in", "what", "city",
    "directed", "by", "Ada", "and", "Grace", "both", "older", "than", "when", "1999", "June", "'s", "team",
    "based", "that", "wrote", "film", "common", "respective", "or", "?"]), min_size=1, max_size=14)


@settings(max_examples=400, deadline=None)
@given(question_words, st.lists(st.sampled_from([" ", "  ", "\t", "\n", " \u00a0"]), min_size=14, max_size=14))
def test_the_router_reads_words_not_the_spaces_between_them(words: list[str], gaps: list[str]) -> None:
    plain = " ".join(words)
    spaced = "".join(w + g for w, g in zip(words, gaps, strict=False)).strip()
    assert router.features(spaced) == router.features(plain), (plain, spaced)


sentence_text = st.lists(st.tuples(st.sampled_from(["Ada", "The", "River", "3.5"]),
                                   st.lists(st.sampled_from(["rowed", "e.g.", "3.5", "km", "the", "river", "Ada"]),
                                            max_size=5),
                                   st.sampled_from([".", "!", "?", "…", ""])), min_size=1, max_size=24)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["", "Melanie: ", "Dr. Ada Brennan: "]), sentence_text)
def test_a_claim_reads_as_its_sentences_with_no_word_lost(label: str,
                                                          parts: list[tuple[str, list[str], str]]) -> None:
    body = " ".join(" ".join([first, *words]) + end for first, words, end in parts)
    units = sentences(label + body)
    assert 1 <= len(units) <= MAX_SENTENCES
    assert all(u.startswith(label) for u in units)
    assert " ".join(u[len(label):] for u in units).split() == body.split()
