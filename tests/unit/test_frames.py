"""The frame judge without Neo4j: values read by what they mean, and each guard on its look-alike.

None of these sentences is from benchmarks/data/nokeys_eval.jsonl (the frozen evaluation set).
"""

from __future__ import annotations

import pytest

from palimpsest.extraction.frames import analyse, compare
from palimpsest.extraction.supersession import Candidate, ClaimView, judge_frames, judge_offline, plan


def values(text: str) -> list[tuple[str, tuple[object, ...]]]:
    return [(v.kind, v.key) for v in analyse(text).values if not v.context]


def test_dates_are_dates() -> None:
    assert values("The review is on March 15.") == [("date", (None, 3, 15))]
    assert values("The review is on 15 March 2027.") == [("date", (2027, 3, 15))]
    assert values("Review: Friday 6 March.") == [("date", (None, 3, 6))]
    assert values("It moved to 2026-04-20.") == [("date", (2026, 4, 20))]
    # a missing year matches any year; another month is another date, whatever the day numbers say
    same = compare(analyse("The review is still set for 15 March 2027."), analyse("The review is on March 15."))
    assert same.slot == "restatement"
    moved = compare(analyse("The review moved to April 20."), analyse("The review is on March 15."))
    assert moved.supersedes and moved.detail.startswith("date 'March 15' → 'April 20'")


def test_money_quantities_times_versions_states() -> None:
    assert values("It costs $2 million.") == [("money:usd", (2_000_000.0,))]
    assert values("It costs 100 CAD.") == [("money:cad", (100.0,))]
    assert values("Meetings last 45 minutes.") == values("Meetings last 0.75 hours.")
    assert values("The bag may weigh 23 kg.") == [("qty:mass", (23_000.0,))]
    assert values("Stand-up is at 9:15 am.") == values("Stand-up is at 09:15.") == [("time", (555,))]
    assert values("The kiosk runs firmware 4.2.1.") == [("version", (4, 2, 1))]
    assert values("The lane is closed.") == [("state", ("closed",))]
    assert values("The lane is on hold.") == [("state", ("on_hold",))]
    # an identifier is no quantity: "room 12", "14 Oak Road", "CHEM 301"
    assert values("The class meets in room 12.") == []
    assert values("14 Oak Road is listed at $300,000.")[-1] == ("money:usd", (300_000.0,))
    assert [m.text for m in analyse("CHEM 301 is full.").marks] == ["chem 301"]


@pytest.mark.parametrize(("newer", "older", "slot"), [
    ("From June the Basic tier is billed at $7 a month.", "The Basic tier costs $5 per month.", "value"),
    ("Berth 4 at the marina is now assigned to Lena Ortiz.", "Berth 4 at the marina is assigned to Tomas Kell.",
     "name"),
    ("The north lift is closed for repairs.", "The north lift is open.", "state"),
    ("Kiosk K-12 was patched to firmware 4.3.0 last night.", "Kiosk K-12 runs firmware 4.2.1.", "value"),
])
def test_updates_of_one_subject_supersede(newer: str, older: str, slot: str) -> None:
    c = compare(analyse(newer), analyse(older))
    assert c.supersedes and c.slot == slot, c.detail


@pytest.mark.parametrize(("newer", "older", "failed"), [
    # another subject: a code, a name, a variant of the name, someone's relative
    ("Kiosk K-14 runs firmware 4.3.0.", "Kiosk K-12 runs firmware 4.2.1.", "subject"),
    ("The Premium tier costs $25 per month.", "The Basic tier costs $5 per month.", "subject"),
    ("The Junior Chess Club meets 12 times a term.", "The Senior Chess Club meets 8 times a term.", "subject"),
    ("The user's sister wants an aisle seat.", "The user wants a window seat.", "subject"),
    ("Berth 5 is assigned to Lena Ortiz.", "Berth 4 is assigned to Tomas Kell.", "subject"),
    # the same subject, another attribute
    ("The Basic tier has a setup fee of $49.", "The Basic tier costs $5 per month.", "no_value"),
    ("The evening course midterm is on October 20.", "The evening course final is on December 12.",
     "substitution"),
    ("The gym's sauna holds 12 people.", "The gym's pool holds 40 people.", "substitution"),
    # the same value said again is no update
    ("The Basic tier is still $5 a month.", "The Basic tier costs $5 per month.", "restatement"),
    # a reading on another day is another occasion
    ("The tank read 300 litres on 2026-03-02.", "The tank read 120 litres on 2026-03-01.", "occasion"),
])
def test_look_alikes_do_not_supersede(newer: str, older: str, failed: str) -> None:
    c = compare(analyse(newer), analyse(older))
    assert not c.supersedes and c.slot == failed, c.detail


def test_context_clauses_may_differ() -> None:
    # the reason for an update, the agent who made it and a header are not part of the frame
    c = compare(analyse("Because the hall was double-booked, the Spring Gala moved to May 9."),
                analyse("The Spring Gala is on May 2."))
    assert c.supersedes
    c = compare(analyse("The landlord raised the rent on Unit 3C to $1,900 a month."),
                analyse("Unit 3C rents for $1,750 a month."))
    assert c.supersedes
    c = compare(analyse("Gate change: LX 310 now boards at gate D4."), analyse("LX 310 boards from gate D2."))
    assert c.supersedes and c.slot == "code"


def test_judge_offline_lets_the_frame_judge_veto_the_entity_judge() -> None:
    newer = ClaimView("n", "16 Oak Road is listed at $512,000.", frozenset({"Oak Road"}))
    older = ClaimView("o", "14 Oak Road is listed at $485,000.", frozenset({"Oak Road"}))
    kw = {"min_similarity": 0.7, "min_confidence": 0.75, "frame_min_similarity": 0.3}
    assert not judge_offline(newer, older, 0.97, **kw).supersedes
    assert judge_frames(newer, older, 0.2, min_similarity=0.3, min_confidence=0.75).kind == "similarity"


def test_plan_retires_a_restatement_with_the_statement_it_restates() -> None:
    kw = {"min_similarity": 0.7, "min_confidence": 0.75}

    def fn(n: ClaimView, o: ClaimView, cos: float) -> object:
        return judge_offline(n, o, cos, frame_min_similarity=0.3, **kw)

    first = ClaimView("v1", "The vendor audit is scheduled for March 15.")
    again = ClaimView("r1", "The vendor audit is still set for 15 March.")
    moved = ClaimView("v2", "The vendor audit was moved to April 20.")
    other = ClaimView("d", "The vendor audit budget is $4,000.")
    decided = plan([(moved, 3)], {"v2": [Candidate(first, 0.9), Candidate(again, 0.85), Candidate(other, 0.8)]},
                   judge_fn=fn, **kw)   # type: ignore[arg-type]
    assert sorted(d.older_id for d in decided) == ["r1", "v1"]
