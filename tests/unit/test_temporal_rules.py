"""The table of docs/TEMPORAL.md, row by row, on the pure rules of graph.claims.temporal."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from palimpsest.graph.claims import temporal
from palimpsest.graph.claims.visibility import OPEN, from_micros, hidden_reason, micros


def y(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


def v(cid: str, order: int, start: int | None = None, end: int | None = None, correction: bool = False
      ) -> temporal.Version:
    return temporal.Version(cid, (order, 0), None if start is None else y(start), None if end is None else y(end),
                            correction)


@pytest.mark.parametrize(("new", "old", "corrects"), [
    (v("n", 2), v("o", 1, 2012), True),                          # no window at all
    (v("n", 2, 2012), v("o", 1, 2012), True),                    # same start
    (v("n", 2), v("o", 1), True),                                # both without windows: newest wins
    (v("n", 2, None, 2015), v("o", 1), True),                    # same (missing) start
    (v("n", 2, 2010, 2013), v("o", 1, 2012), True),              # earlier start, stated end covers the old start
    (v("n", 2, 2017), v("o", 1, 2012), False),                   # later start: succession
    (v("n", 2, 2010), v("o", 1, 2012), False),                   # earlier start, open: backfill
    (v("n", 2, 2010, 2012), v("o", 1, 2012), False),             # earlier window ending where the old starts
    (v("n", 2, 2013, correction=True), v("o", 1, 2012), True),   # said so, windows overlap
    (v("n", 2, 2013, 2014, correction=True), v("o", 1, 2015), False),  # said so, but disjoint
])
def test_corrects_follows_the_table(new: temporal.Version, old: temporal.Version, corrects: bool) -> None:
    assert temporal.corrects(new, old) is corrects


def test_succession_and_backfill_close_at_the_next_start() -> None:
    a, b, c = v("a", 1, 2012), v("b", 2, 2017), v("c", 3, 2001, 2005)
    ends = temporal.effective_ends([a, b, c])
    assert ends == {"c": micros(y(2005)), "a": micros(y(2017)), "b": OPEN}
    assert temporal.successions([a, b, c], ends) == {("b", "a")}  # c ends by itself, before a starts


def test_plan_key_reports_corrections_and_edge_changes() -> None:
    a, b = v("a", 1, 2012), v("b", 2, 2017)
    plan = temporal.plan_key([a, b], [v("c", 3)], {("b", "a")})
    assert plan.corrections == [("c", "a"), ("c", "b")]
    assert plan.ends == {"c": OPEN}
    assert plan.add_successions == set() and plan.drop_successions == {("b", "a")}
    backfill = temporal.plan_key([b], [v("x", 3, 2001)], set())
    assert backfill.corrections == [] and backfill.ends["x"] == micros(y(2017))
    assert backfill.add_successions == {("b", "x")}


def test_live_versions_ignore_whether_the_corrector_is_itself_live() -> None:
    a, b, c = v("a", 1), v("b", 2), v("c", 3)
    assert [x.id for x in temporal.live_versions([c, a, b])] == ["c"]


def test_hidden_reason_uses_the_end_of_the_store_interval() -> None:
    # Live from revision 1; its window was closed at 2017 from revision 5 on.
    row = dict(recorded_revision=1, vis_from=[1, 5], vis_to=[5, OPEN], vis_until=[OPEN, micros(y(2017))],
               retracted_at_revision=None, valid_from=y(2012), valid_to=None)
    assert hidden_reason(**row, revision=4, valid_at=y(2018)) is None
    assert hidden_reason(**row, revision=5, valid_at=y(2018)) == "superseded"
    assert hidden_reason(**row, revision=5, valid_at=y(2016)) is None
    assert hidden_reason(**row, revision=5, valid_at=y(2011)) == "not_yet_valid"
    assert from_micros(micros(y(2017))) == y(2017) and from_micros(OPEN) is None
