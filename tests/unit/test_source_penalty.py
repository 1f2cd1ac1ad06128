"""The source rule (policy `source_penalty`) on hand-built rows, no Neo4j: a query that names one of the
candidates' sources by name ranks that source's claims above others' that match as well, and nothing
changes when it names none, several, or a source that is not a name."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from palimpsest.graph.recall.ranking import rank
from palimpsest.graph.recall.rows import ClaimRow
from palimpsest.graph.text import named_source
from palimpsest.schema.models import Policy

RECORDED = datetime(2026, 1, 1, tzinfo=UTC)


def _row(cid: str, content: str, source: str) -> ClaimRow:
    return ClaimRow(id=cid, content=content, claim_key=None, revision=1, valid_from=None, valid_to=None,
                    vis_from=[1], vis_to=[2**62], vis_until=None, retracted_at_revision=None, source=source,
                    metadata_json=None, recorded_at=RECORDED, tau=None)


@pytest.mark.parametrize(("query", "sources", "named"), [
    ("What does Melanie's family like to do?", ["Melanie", "Caroline"], "Melanie"),
    ("When did Caroline go to the support group?", ["Caroline", "Melanie"], "Caroline"),
    ("How do Caroline and Melanie know each other?", ["Caroline", "Melanie"], None),   # both: no rule
    ("What did Priya say about the deploy?", ["Priya Raman", "runbook"], "Priya Raman"),  # a first name
    ("What did Priya say about the deploy?", ["Priya Raman", "Priya Shah"], None),       # ambiguous
    ("Did Priya tell Raman?", ["Priya Raman", "Priya Shah"], None),  # the two words are not one run of it
    ("what does the runbook say about deploys", ["runbook", "wiki"], None),  # not a name
    ("What is the t value?", ["t", "Ops"], None),
    ("what does melanie like", ["Melanie"], None),        # not written as a name
])
def test_which_source_a_query_names(query: str, sources: list[str], named: str | None) -> None:
    assert named_source(query, sources) == named
    assert named_source(query, list(reversed(sources))) == named  # no dependence on order


ROWS = [_row("c1", "I love painting sunsets with my kids.", "Caroline"),
        _row("m1", "Painting with my kids is the best, every weekend.", "Melanie"),
        _row("m2", "We went camping at the lake.", "Melanie")]
SIMS = {"c1": 0.85, "m1": 0.8, "m2": 0.7}


def test_the_named_source_s_claims_rank_first_and_the_penalty_is_explained() -> None:
    query = "What does Melanie do with her kids?"
    off = rank(ROWS, SIMS, query, Policy(version="p"), None, limit=3, explain=True).items
    on = rank(ROWS, SIMS, query, Policy(version="p", source_penalty=0.5), None, limit=3, explain=True).items
    assert off[0].id == "c1" and on[0].id == "m1"
    by_id = {it.id: it for it in on}
    plain = {it.id: it for it in off}
    assert by_id["c1"].relevance == pytest.approx(plain["c1"].relevance * 0.5, rel=1e-9)
    assert by_id["m1"].relevance == plain["m1"].relevance
    [penalty] = by_id["c1"].explanation.penalties  # type: ignore[union-attr]
    assert penalty.rule == "source" and penalty.factor == 0.5 and "'Melanie'" in penalty.reason
    assert by_id["m1"].explanation.penalties == []  # type: ignore[union-attr]


@pytest.mark.parametrize("query", ["What do Caroline and Melanie paint?", "what do the kids paint?"])
def test_no_named_source_no_change(query: str) -> None:
    off = rank(ROWS, SIMS, query, Policy(version="p"), None, limit=3).items
    on = rank(ROWS, SIMS, query, Policy(version="p", source_penalty=0.5), None, limit=3).items
    assert on == off


def test_rows_without_a_source_are_other_sources() -> None:
    rows = [*ROWS, dataclasses.replace(ROWS[0], id="x", source=None)]
    items = rank(rows, {**SIMS, "x": 0.9}, "What does Melanie paint?", Policy(version="p", source_penalty=0.5),
                 None, limit=4).items
    assert items[0].id.startswith("m")
