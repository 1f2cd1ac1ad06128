"""The inferred-supersession judge without Neo4j: each of its tests, on the look-alikes it exists for."""

from __future__ import annotations

import pytest

from palimpsest.extraction.supersession import Candidate, ClaimView, judge, plan

KW = {"min_similarity": 0.7, "min_confidence": 0.75}


def view(text: str, *entities: str, cid: str = "") -> ClaimView:
    return ClaimView(cid or text, text, frozenset(entities))


def test_paraphrased_value_change_of_one_subject_supersedes() -> None:
    j = judge(view("The prescriber adjusted Ravi Alvarez's warfarin to 7.5 mg daily.", "Ravi Alvarez's"),
              view("Ravi Alvarez's warfarin dose is 5 mg daily.", "Ravi Alvarez's"), 0.93, **KW)
    assert j.supersedes and j.kind == "value" and j.confidence == pytest.approx(0.93 * 0.9)


def test_extraction_noise_does_not_block_a_true_pair() -> None:
    # A possessive turned into its own entity on one side only: the same person.
    j = judge(view("Current insulin glargine order for Fatima Nakamura: 12 units at bedtime.", "Fatima Nakamura"),
              view("The prescriber adjusted Fatima Nakamura's insulin glargine to 24 units at bedtime.",
                   "Fatima Nakamura", "Fatima Nakamura's"), 0.9, **KW)
    assert j.supersedes


def test_identifier_value_swap_supersedes_when_confident_enough() -> None:
    newer = view("ledger-api writes to db-9", "ledger-api", "db-9")
    older = view("ledger-api writes to db-7", "ledger-api", "db-7")
    # The swapped identifiers may differ (entities and codes), nothing else may; the heuristic's
    # identifier signal is weaker than a typed value's, so the default bar leaves it out.
    j = judge(newer, older, 0.95, min_similarity=0.7, min_confidence=0.6)
    assert j.supersedes and j.kind == "identifier"
    assert judge(newer, older, 0.95, **KW).kind == "confidence"


@pytest.mark.parametrize(("newer", "older", "entities", "failed"), [
    # same attribute, another subject named only by words the entity extractor missed
    ("The Acme–Keystone distribution contract is governed by the law of Texas.",
     "The Acme–Keystone reseller contract is governed by the law of Delaware.", ("Acme–Keystone",), "identifiers"),
    ("Per the latest amendment, the Cobalt–Juniper services contract auto-renews in 12 months increments.",
     "Per the latest amendment, the Cobalt–Ironwood licensing contract auto-renews in 24 months increments.",
     ("auto-renews",), "identifiers"),
    # same subject and wording, another contract type / another drug: a word swapped in place
    ("The Acme-Keystone distribution contract requires 90 days of notice to terminate.",
     "The Acme-Keystone reseller contract requires 30 days of notice to terminate.", ("Acme-Keystone",),
     "substitution"),
    ("Ravi Alvarez's metformin dose is 500 mg daily.", "Ravi Alvarez's warfarin dose is 5 mg daily.",
     ("Ravi Alvarez's",), "substitution"),
    # same company, another quarter: codes must agree
    ("Evergreen Foods guides Q2 revenue to $170 million.", "Evergreen Foods guides Q1 revenue to $210 million.",
     ("Evergreen Foods",), "identifiers"),
])
def test_siblings_are_never_superseded(newer: str, older: str, entities: tuple[str, ...], failed: str) -> None:
    j = judge(view(newer, *entities), view(older, *entities), 0.95, **KW)
    assert not j.supersedes and j.kind == failed, j.reason


def test_entities_must_be_shared_and_must_agree() -> None:
    assert judge(view("checkout-api p99 latency is 120 ms", "checkout-api"),
                 view("payments-api p99 latency is 800 ms", "payments-api"), 0.9, **KW).kind == "entities"
    # overlap is not agreement: a second subject named on one side only
    j = judge(view("Maria Okafor and James Lindqvist take warfarin 5 mg daily.", "Maria Okafor", "James Lindqvist"),
              view("Maria Okafor takes warfarin 7.5 mg daily.", "Maria Okafor"), 0.9, **KW)
    assert not j.supersedes and j.kind in {"entities", "identifiers"}


@pytest.mark.parametrize(("newer", "older"), [
    # a bound admits the other value
    ("Containers of the search-api service may use at most 6 GiB of memory.",
     "The memory limit of the search-api container is 2 GiB."),
    # another reading on another day is another occasion
    ("search-api p99 latency was 300 ms on 2026-03-02.", "search-api p99 latency was 120 ms on 2026-03-01."),
    # nothing to compare
    ("The search-api service is owned by the edge team.", "The search-api service is owned by the platform team."),
])
def test_no_value_conflict_no_supersession(newer: str, older: str) -> None:
    j = judge(view(newer, "search-api"), view(older, "search-api"), 0.9, **KW)
    assert not j.supersedes and j.kind == "conflict", j.reason


def test_thresholds() -> None:
    newer = view("The prescriber adjusted Ravi Alvarez's warfarin to 7.5 mg daily.", "Ravi Alvarez's")
    older = view("Ravi Alvarez's warfarin dose is 5 mg daily.", "Ravi Alvarez's")
    assert judge(newer, older, 0.69, **KW).kind == "similarity"
    assert judge(newer, older, 0.8, **KW).kind == "confidence"  # 0.8 × 0.9 = 0.72 < 0.75
    assert judge(newer, older, 0.8, min_similarity=0.7, min_confidence=0.7).supersedes


def test_plan_chains_versions_in_write_order() -> None:
    texts = ["Ravi Alvarez's warfarin dose is 5 mg daily.",
             "The prescriber adjusted Ravi Alvarez's warfarin to 7.5 mg daily.",
             "Ravi Alvarez's warfarin dose is 10 mg daily."]
    v = [view(t, "Ravi Alvarez's", cid=f"v{i + 1}") for i, t in enumerate(texts)]
    decided = plan([(v[1], 2), (v[2], 3)],
                   {"v2": [Candidate(v[0], 0.93)], "v3": [Candidate(v[0], 0.97), Candidate(v[1], 0.93)]}, **KW)
    assert [(d.newer_id, d.older_id, d.revision) for d in decided] == [("v2", "v1", 2), ("v3", "v2", 3)]


def test_plan_supersedes_only_the_closest_of_several_passing_candidates() -> None:
    newer = view("The prescriber adjusted Yuki Benali's furosemide to 80 mg daily.", "Yuki Benali's", cid="n")
    same = view("Yuki Benali's furosemide dose is 40 mg daily.", "Yuki Benali's", cid="o-same")
    sibling = view("Sertraline for Yuki Benali was changed to 50 mg daily.", "Yuki Benali's", cid="o-sibling")
    # The sibling alone would pass (nothing on its surface says "another drug" across two wordings) …
    assert judge(newer, sibling, 0.85, **KW).supersedes
    # … but next to the real predecessor it loses: one statement replaces one statement.
    decided = plan([(newer, 5)], {"n": [Candidate(same, 0.9), Candidate(sibling, 0.85)]}, **KW)
    assert [(d.newer_id, d.older_id) for d in decided] == [("n", "o-same")]
