"""The fact retrieval knobs: off by default, bounded, and invisible in the content hash at their defaults."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from palimpsest.graph.knowledge.facts import fact_text
from palimpsest.schema import limits
from palimpsest.schema.models import DEFAULT_POLICY, Policy


def test_off_by_default_and_the_default_policy_keeps_its_hash() -> None:
    assert DEFAULT_POLICY.fact_retrieval == "none"
    # The hash default-v1 had before the knobs existed: registered policies still compare equal.
    assert DEFAULT_POLICY.content_hash() == "a46d135f2b26727ee96167770ead65fc77941c08696b0245ea55bef24c3cec26"
    assert Policy(version="v", fact_top=DEFAULT_POLICY.fact_top).content_hash() == Policy(version="v").content_hash()
    assert Policy(version="v", fact_retrieval="beam").content_hash() != Policy(version="v").content_hash()


@pytest.mark.parametrize("knobs", [{"fact_retrieval": "graph"}, {"fact_top": 0},
                                   {"fact_top": limits.MAX_FACT_TOP + 1}, {"fact_beam": 0},
                                   {"fact_beam": limits.MAX_FACT_BEAM + 1}, {"fact_depth": 3}])
def test_bad_knobs_are_refused(knobs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Policy(version="v", **knobs)  # type: ignore[arg-type]


def test_a_fact_reads_as_a_sentence() -> None:
    assert fact_text("Mara Quint", "works_at", "Northwind Traders") == "Mara Quint works at Northwind Traders"
    assert fact_text(" db-9 ", "replaces", "db-7") == "db-9 replaces db-7"


def test_knobs_added_later_are_stored_only_when_set() -> None:
    """A build from before the knobs reads stored policies with `extra="forbid"`: a policy that does not
    use them must be stored without them, so rolling back never makes a namespace's policies unreadable."""
    from palimpsest.schema.models import _OMITTED_AT_DEFAULT, Policy

    plain = Policy(version="plain-v1", k=7).stored_body()
    assert not set(_OMITTED_AT_DEFAULT) & set(plain)
    routed = Policy(version="routed-v1", router="rules", fact_retrieval="beam").stored_body()
    assert routed["router"] == "rules" and routed["fact_retrieval"] == "beam"
    assert Policy.model_validate(plain) == Policy(version="plain-v1", k=7)
