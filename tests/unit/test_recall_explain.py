"""`explain` on hand-built rows, no Neo4j: the explanation is the ranking's own arithmetic in parts.

Every case checks the one property that matters — recomputing an item's score from its explanation
gives the score (contributions add up to the fused relevance; × penalties × decay is the score) —
and that explaining changes nothing else: the same items, ranks and scores, the same fingerprint.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from palimpsest.graph.recall.packet import hidden_counts, hidden_explanation
from palimpsest.graph.recall.pool import Pool, admit_answer
from palimpsest.graph.recall.ranking import _RRF, rank
from palimpsest.graph.recall.rows import ClaimRow
from palimpsest.schema.models import Completeness, ContextPacket, HiddenCounts, PacketItem, Policy, ScoreExplanation

RECORDED = datetime(2026, 1, 1, tzinfo=UTC)
REFERENCE = RECORDED + timedelta(days=3)


def _row(cid: str, content: str, *, revision: int = 1, key: str | None = None, recorded: datetime = RECORDED,
         tau: float | None = None, vis_to: int = 2**62, valid_to: datetime | None = None) -> ClaimRow:
    return ClaimRow(id=cid, content=content, claim_key=key, revision=revision, valid_from=None, valid_to=valid_to,
                    vis_from=[revision], vis_to=[vis_to], vis_until=None, retracted_at_revision=None, source="s",
                    metadata_json=None, recorded_at=recorded, tau=tau)


ROWS = [
    _row("new", "The limit is now 500", key="k", revision=3, tau=86_400.0),
    _row("gw", "checkout-gateway p99 is 750 ms", recorded=RECORDED + timedelta(days=1)),
    _row("plain", "ledger-api p99 latency budget is 750 ms"),
    _row("bridge", "The clinic moved to Harbour Street", tau=7 * 86_400.0),
    _row("x", "The ledger-api has a dashboard", revision=2),
    _row("y", "unrelated words entirely"),
]
LENDERS = {"new": [_row("old", "ledger-api rate limit is 300 requests", key="k", vis_to=3)]}
SIMS = {"new": 0.6, "old": 0.95, "gw": 0.8, "plain": 0.82, "bridge": 0.55, "x": 0.7, "y": 0.52}
GRAPH = {"bridge": 0.9, "x": 0.3, "new": 0.1}
QUERY = "ledger-api rate limit checkout-scheduler"


def recomputed(e: ScoreExplanation) -> float:
    parts = [t.contribution for t in (e.vector, e.lexical, e.graph, e.lending) if t is not None]
    return math.fsum(parts) * math.prod(p.factor for p in e.penalties) * e.decay.factor


POLICIES = [
    Policy(version="p"),
    Policy(version="p", fusion="rrf"),
    Policy(version="p", graph_expansion="ppr", graph_weight=2.0, ppr_protect_top=0),
    Policy(version="p", graph_expansion="ppr", graph_weight=2.0, ppr_protect_top=2),
    Policy(version="p", fusion="rrf", graph_expansion="ppr", graph_weight=1.5, ppr_protect_top=0),
    Policy(version="p", fusion="rrf", graph_expansion="ppr", graph_weight=1.5, ppr_protect_top=1),
    Policy(version="p", vector_weight=2.0, text_weight=0.5, sibling_penalty=0.25, min_relevance=0.2),
]


def _ranked(policy: Policy, explain: bool) -> Any:
    graph = GRAPH if policy.graph_expansion == "ppr" else None
    return rank(ROWS, SIMS, QUERY, policy, REFERENCE, LENDERS, graph, limit=6, explain=explain)


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: f"{p.fusion}-{p.graph_expansion}-{p.ppr_protect_top}")
def test_components_add_up_to_the_score(policy: Policy) -> None:
    items = _ranked(policy, True).items
    assert items
    for it in items:
        e = it.explanation
        assert e is not None
        assert e.score == it.score and e.relevance == it.relevance and e.decay.factor == it.freshness.decay
        assert math.isclose(recomputed(e), it.score, rel_tol=1e-9, abs_tol=1e-12), (it.id, e)
        parts = [t.contribution for t in (e.vector, e.lexical, e.graph, e.lending) if t is not None]
        assert math.isclose(math.fsum(parts), e.fused, rel_tol=1e-10, abs_tol=1e-12)
        assert e.fusion == policy.fusion
        assert (e.lending is not None) == (it.matched_via is not None)


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: f"{p.fusion}-{p.graph_expansion}-{p.ppr_protect_top}")
def test_explaining_changes_nothing_else(policy: Policy) -> None:
    plain, explained = _ranked(policy, False), _ranked(policy, True)
    assert all(it.explanation is None for it in plain.items)
    assert [it.model_dump(exclude={"explanation"}) for it in explained.items] == [
        it.model_dump(exclude={"explanation"}) for it in plain.items]
    assert (explained.ranked, explained.below_floor) == (plain.ranked, plain.below_floor)


def test_the_packet_fingerprint_leaves_the_explanation_out() -> None:
    policy = POLICIES[3]
    plain, explained = _ranked(policy, False), _ranked(policy, True)

    def packet(items: list[PacketItem], **extra: Any) -> ContextPacket:
        p = ContextPacket(namespace="n", query=QUERY, policy_version="p", k=5, store_revision=3, valid_at=None,
                          reference_time=None, projections_seq=0, items=items, contradictions=[], edges=[],
                          beliefs=[], completeness=Completeness(), hidden=HiddenCounts(), served_at="", fingerprint="",
                          **extra)
        return p.model_copy(update={"fingerprint": p.compute_fingerprint()})

    a = packet(plain.items)
    b = packet(explained.items, hidden_explanation=[])
    assert a.fingerprint == b.fingerprint
    assert "explanation" not in a.canonical_json() and "hidden_explanation" not in b.canonical_json()


def test_lending_is_what_the_older_wording_added_over_the_items_own() -> None:
    for fusion in ("linear", "rrf"):
        items = rank(ROWS, SIMS, QUERY, Policy(version="p", fusion=fusion), REFERENCE, LENDERS, limit=6,
                     explain=True).items
        new = next(it for it in items if it.id == "new")
        e = new.explanation
        assert e is not None and e.lending is not None and new.matched_via == "old" and e.lending.via == "old"
        assert e.lending.contribution > 0
        assert e.vector.value == pytest.approx(2 * 0.6 - 1)  # its own cosine; the lent one is the lender's
        assert e.lending.vector_value == pytest.approx(2 * 0.95 - 1)
        assert e.lexical.value < e.lending.lexical_value


def test_the_penalty_and_decay_are_named() -> None:
    items = rank(ROWS, SIMS, QUERY, Policy(version="p"), REFERENCE, LENDERS, limit=6, explain=True).items
    gw = next(it for it in items if it.id == "gw").explanation
    assert gw is not None and [(p.rule, p.factor) for p in gw.penalties] == [("sibling", 0.5)]
    new = next(it for it in items if it.id == "new").explanation
    assert new is not None and new.penalties == []
    assert new.decay.tau_seconds == 86_400.0 and new.decay.age_seconds == 3 * 86_400.0
    assert new.decay.factor == pytest.approx(math.exp(-3))


def test_the_protected_top_is_ranked_without_the_graph_and_says_so() -> None:
    items = _ranked(POLICIES[3], True).items
    head, tail = items[:2], items[2:]
    for it in head:
        assert it.explanation is not None and it.explanation.protected and it.explanation.graph is None
    for it in tail:
        assert it.explanation is not None and not it.explanation.protected and it.explanation.graph is not None
    bridge = next(it for it in items if it.id == "bridge").explanation
    assert bridge is not None and bridge.graph is not None and bridge.graph.value == 1.0  # the top PPR score


def test_rrf_terms_at_the_candidates_own_values_are_its_ranked_terms() -> None:
    """`terms_with` (the counterfactual behind a lending contribution) agrees with the ranks RRF used."""
    lexical = {"new": 0.5, "gw": 0.0, "plain": 0.25, "bridge": 0.0, "x": 0.25, "y": 0.0}
    fusion = _RRF(ROWS, SIMS, lexical, Policy(version="p", fusion="rrf"), GRAPH)
    for r in ROWS:
        assert fusion.terms_with(r.id, SIMS[r.id], lexical[r.id]) == fusion.terms(r.id)


def test_each_hidden_count_names_its_rule_and_ids() -> None:
    revision = 5
    closed = ClaimRow(id="c", content="v1", claim_key="k2", revision=1, valid_from=None, valid_to=None,
                      vis_from=[1], vis_to=[2**62], vis_until=[10], retracted_at_revision=None)
    replaced = _row("r", "v0", key="k", vis_to=2)
    inferred = _row("i", "keyless old", vis_to=4)
    pool = Pool(rows={}, hidden={"c": "superseded", "r": "superseded", "i": "superseded", "t": "retracted",
                                 "e": "expired", "f": "not_yet_valid", "later": "recorded_later"},
                superseded={"c": closed, "r": replaced, "i": inferred}, inferred=frozenset({"i"}),
                closed=frozenset({"c"}))
    ranking = rank([_row("a", "warfarin dose"), _row("b", "harbour street")], {"a": 0.9, "b": 0.5},
                   "warfarin dose", Policy(version="p", min_relevance=0.3), None, limit=5)
    at = datetime(2020, 1, 1, tzinfo=UTC)
    rules = hidden_explanation(pool, ranking, revision, at, 0.3)
    assert [(r.count, r.rule, r.ids) for r in rules] == [
        ("superseded", "replaced", ["r"]), ("superseded", "window_closed", ["c"]),
        ("inferred", "inferred_supersession", ["i"]), ("retracted", "retracted", ["t"]),
        ("not_yet_valid", "valid_from_after_valid_at", ["f"]), ("expired", "valid_to_at_or_before_valid_at", ["e"]),
        ("below_relevance", "min_relevance", ["b"]),
    ]
    counts = hidden_counts(pool, ranking)
    for field, value in counts.model_dump().items():
        ids = {i for r in rules if r.count == field for i in r.ids}
        if field == "superseded":
            ids |= {i for r in rules if r.count == "inferred" for i in r.ids}
        assert len(ids) == value, field
    assert "2020-01-01T00:00:00Z" in rules[1].detail and "0.3" in rules[-1].detail


def test_a_closed_window_is_told_from_a_replaced_version_whichever_step_met_it() -> None:
    """Rows an index answer admitted and rows a later step (PPR, an inferred chain) brought in are
    explained by the same rules: current at the revision but hidden at valid_at is `window_closed`."""
    revision, at = 5, datetime(2020, 1, 1, tzinfo=UTC)
    closed = ClaimRow(id="c", content="v1", claim_key="k2", revision=1, valid_from=None, valid_to=None,
                      vis_from=[1], vis_to=[2**62], vis_until=[10], retracted_at_revision=None)
    replaced = _row("r", "v0", key="k", vis_to=2)
    assert closed.hidden_reason(revision, at) == replaced.hidden_reason(revision, at) == "superseded"
    ranking = rank([], {}, "v", Policy(version="p"), None, limit=5)
    by_index = admit_answer(Pool(), [closed, replaced], raw=2, fetch=8, need=1, revision=revision, valid_at=at,
                            order=lambda r: r.id)
    by_step = Pool().with_rows([closed, replaced], revision, at)
    assert by_index is not None
    for pool in (by_index, by_step):
        rules = {r.rule: r.ids for r in hidden_explanation(pool, ranking, revision, at, 0.0)}
        assert rules == {"replaced": ["r"], "window_closed": ["c"]}
        assert hidden_counts(pool, ranking).superseded == 2


def test_random_pools_add_up_and_rank_alike_explained_or_not() -> None:
    """Seeded random pools (fusions, weights, lenders, graph lists, floors, the protected tier)."""
    import random

    words = ["ledger", "api", "rate", "limit", "backup", "bucket", "checkout-gateway", "checkout-scheduler", "p99",
             "audit", "chair", "the", "is", "db-7", "db-9", "payments"]
    rnd = random.Random(18)
    for _ in range(150):
        rows = [_row(f"c{i}", " ".join(rnd.choices(words, k=rnd.randint(1, 8))), revision=rnd.randint(1, 5),
                     recorded=RECORDED + timedelta(hours=rnd.randint(0, 500)), tau=rnd.choice([None, 3600.0, 86400.0]))
                for i in range(rnd.randint(1, 20))]
        sims = {r.id: round(rnd.random(), 6) for r in rows}
        lenders = {}
        for r in rnd.sample(rows, k=min(3, len(rows))):
            lenders[r.id] = [_row(r.id + "-old", " ".join(rnd.choices(words, k=4)), key="k", vis_to=2)]
            sims[r.id + "-old"] = round(rnd.random(), 6)
        graph = {r.id: rnd.random() for r in rnd.sample(rows, k=len(rows) // 2)} if rnd.random() < 0.6 else None
        policy = Policy(version="p", fusion=rnd.choice(["linear", "rrf"]),
                        graph_expansion="ppr" if graph is not None else "none",
                        graph_weight=rnd.choice([0.0, 1.0, 2.5]), ppr_protect_top=rnd.choice([0, 2]),
                        min_relevance=rnd.choice([0.0, 0.2]), vector_weight=rnd.choice([0.0, 1.0, 2.0]),
                        text_weight=rnd.choice([0.5, 1.0]))
        query = " ".join(rnd.choices(words, k=4))
        plain = rank(rows, sims, query, policy, REFERENCE, lenders, graph, limit=8)
        explained = rank(rows, sims, query, policy, REFERENCE, lenders, graph, limit=8, explain=True)
        assert [it.model_copy(update={"explanation": None}) for it in explained.items] == plain.items
        for it in explained.items:
            assert it.explanation is not None
            assert math.isclose(recomputed(it.explanation), it.score, rel_tol=1e-9, abs_tol=1e-12)
