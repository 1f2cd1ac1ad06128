"""The router as a pure function: the question's structure by the rules, the stages that follows from it,
and a decision read back from a packet's stages. The questions are written here to show each
construction; none is taken from a benchmark."""

from __future__ import annotations

import hashlib
import json

import pytest
from pydantic import ValidationError

from palimpsest.api.memory import bad_input_from
from palimpsest.graph.recall import router
from palimpsest.graph.recall.router import COMPARISON, MULTI_HOP, TEMPORAL
from palimpsest.schema.models import _OMITTED_AT_DEFAULT, Policy

FULL = Policy(version="full", graph_expansion="ppr", dedup_jaccard=0.7, router="rules")


@pytest.mark.parametrize("question", [
    "When was the director of Titanic born?",  # the X of Y, then a predicate about it
    "Who founded the label that signed the band?",  # a relative clause
    "What river runs through the city where the painter died?",
    "Where did the author of the novel's sister study?",  # nested descriptions
    "Which team does the coach of Ajax's son play for?",
    "What language is spoken in the country Vega is from?",  # a reduced relative
    "What instrument did the composer known as the Red Priest play?",  # a participle
    "When did the country containing the lake join the union?",
    "Who is the sibling of the drummer of the band?",  # copular, but the description is nested
    "What is the population of the town where the treaty was signed?",
    "Which region is Ada Lovelace's city of birth located in?",  # a passive is no copula
    "Who sang the Goldfinger theme with the Abbey Road singer?",  # a role named by what it is the role of
    "Which guest appeared in the March 5, 2001 episode of Frasier?",  # a date before the head noun
    "Who wrote the 1968 British edition of Solaris?",  # a year and a proper adjective before it
    "What language were texts being copied into during the reign of Offa?",  # "be" an auxiliary, no copula
    "What was Dana listening to on the day of Ada's wedding?",
    "Ada Lovelace worked with a mathematician from what country?",  # the question word in a modifier
    "Where did the Dutch painter born in Leiden study?",  # a proper adjective before a participle's noun
    "Which 1971 comedy produced by Hammer starred Ada Byron?",  # a participle with its agent after "which N"
])
def test_nested_descriptions_are_multi_hop(question: str) -> None:
    assert MULTI_HOP in router.features(question), (question, router.relations(question))


@pytest.mark.parametrize("question", [
    "What is the capital of France?",  # copular: asks for the relation of a named thing itself
    "What is Dana's favourite colour?",
    "What might Dana's favourite colour be?",
    "What is the name of Dana's dog?",  # "name of" is no relation
    "Who directed Titanic?",
    "How many children does Dana have?",
    "What books has Dana read?",
    "Where is the city of Lyon?",  # "city of Lyon": an apposition, the place is named
    "What did Dana say that she liked?",  # "say that": a conjunction, not a relative clause
    "What was Dana's reason for taking up rowing?",  # a copula: the -ing verb sits in a prepositional phrase
    "What did Dana cook in the first week of June?",  # "of" a month dates a time, it names no thing
    "Where did Dana hike in the summer of 2022?",
    "What did Dana buy to remind her of the trip?",  # "her" is an object, not the head of a noun phrase
    "What was produced by Hammer in 1971?",  # a passive main verb: "be" before the participle
    "Which team played in the 1990 final?",  # a past tense main verb, no agent
    "In what city did Dana grow up?",  # the question word opens the question, it modifies nothing
])
def test_direct_questions_are_single_hop(question: str) -> None:
    assert MULTI_HOP not in router.features(question), (question, router.relations(question))


@pytest.mark.parametrize("question", [
    "Which tower is taller, the Eiffel Tower or the Shard?",
    "Were Ravel and Satie both French?",
    "Are the two rivers of the same length?",
    "Who was born earlier, Ada or Grace?",
    "Which lake is the deepest in Europe?",
    "Is the bridge longer than the tunnel?",
    "Did Dana go hiking or swimming?",
    "What do Ada Lovelace and Grace Hopper have in common?",
    "What roles did the two founders play in their respective companies?",
])
def test_comparisons(question: str) -> None:
    assert COMPARISON in router.features(question)


def test_two_names_joined_by_and_are_no_comparison() -> None:
    """A collective reading (one event the two shared) needs one hit; only words that distribute
    ("both", "respective", "in common") make it two."""
    assert COMPARISON not in router.features("Did Ada and Grace go hiking together?")
    assert COMPARISON in router.features("Did Ada and Grace both go hiking?")


@pytest.mark.parametrize("question", [
    "When did Dana move to Lisbon?",
    "What year was the bridge opened?",
    "How long has Dana worked there?",
    "What did Dana do after the concert?",
    "Where did Dana live in 2019?",
    "What did Dana cook last weekend?",
    "What happened on 3 May 2021?",
    "What does Dana do in the summer?",
])
def test_time_expressions(question: str) -> None:
    assert TEMPORAL in router.features(question)


def test_plain_questions_have_no_properties() -> None:
    assert router.features("Who directed Titanic?") == frozenset()
    assert router.features("What is the capital of France?") == frozenset()


def test_a_single_hop_question_skips_later_rounds_and_keeps_graph_expansion() -> None:
    decision = router.route("Who directed Titanic?", FULL)
    assert not decision.rounds
    assert decision.stages == ("router:rules", "router:single-hop", "router:one-round")
    # PPR is the policy's choice for its corpus; from a direct question's own entities it costs a few
    # milliseconds, and it still finds the hop a wording hid. Everything else is as the policy says.
    assert decision.policy == FULL


def test_a_recorded_decision_is_applied_as_recorded() -> None:
    """A packet logged when the rules decided otherwise (a one-hop reading then skipped PPR) replays with
    the stages it ran: the decision is read back from its stages, not made again."""
    earlier = ("router:rules", "router:single-hop", "router:skip-ppr", "router:one-round")
    held = router.pinned([*earlier, "rerank:sentences"])
    assert held is not None and held.stages == earlier
    again = router.held(FULL, held)
    assert again.policy.graph_expansion == "none" and again.policy.dedup_jaccard == 0.7 and not again.rounds
    assert again.stages == earlier and again.features == frozenset()
    assert router.decide(FULL, held.features, held.how).policy.graph_expansion == "ppr"  # today's rules differ


def test_a_multi_hop_question_keeps_every_stage() -> None:
    decision = router.route("When was the director of Titanic born?", FULL)
    assert decision.policy.graph_expansion == "ppr" and decision.rounds
    # a time question keeps near-duplicates: the same words said at two times are two events
    assert decision.policy.dedup_jaccard is None
    assert decision.stages == ("router:rules", "router:multi-hop", "router:temporal", "router:skip-dedup")


def test_a_comparison_keeps_graph_expansion_and_rounds() -> None:
    decision = router.route("Were Ravel and Satie both French?", FULL)
    assert decision.policy == FULL and decision.rounds
    assert decision.stages == ("router:rules", "router:comparison")


def test_the_router_only_removes_stages_the_policy_allows() -> None:
    bare = Policy(version="bare", router="rules")
    decision = router.route("Who directed Titanic?", bare)
    assert decision.policy == bare  # nothing to skip: no PPR, no dedup
    assert decision.stages == ("router:rules", "router:single-hop", "router:one-round")
    assert router.route("When was the director of Titanic born?", bare).policy == bare


def test_a_decision_reads_back_from_the_stages_it_wrote() -> None:
    for question in ["Who directed Titanic?", "When was the director of Titanic born?", "Were A and B both tall?"]:
        decision = router.route(question, FULL)
        stages = [*decision.stages, "ppr", "dedup"]
        held = router.pinned(stages)
        assert held is not None and held.how == "rules" and held.features == decision.features
        assert router.decide(FULL, held.features, held.how) == decision == router.held(FULL, held)
        assert router.allows_rounds(stages) == decision.rounds
    assert router.pinned(["ppr", "dedup"]) is None and router.allows_rounds(["ppr"])


def test_later_rounds_take_the_second_hop_instead_of_graph_expansion() -> None:
    hop = router.route("When was the director of Titanic born?", FULL, later_rounds=True)
    assert hop.policy.graph_expansion == "none" and hop.rounds
    assert hop.stages == ("router:rules", "router:multi-hop", "router:temporal", "router:later-rounds",
                          "router:skip-ppr", "router:skip-dedup")
    assert hop.policy.model_dump(exclude={"graph_expansion", "dedup_jaccard"}) == FULL.model_dump(
        exclude={"graph_expansion", "dedup_jaccard"})
    # a comparison too; a one-hop question has no later rounds to leave a hop to, so nothing changes
    assert router.route("Were Ravel and Satie both French?", FULL, later_rounds=True).stages == (
        "router:rules", "router:comparison", "router:later-rounds", "router:skip-ppr")
    assert router.route("Who directed Titanic?", FULL, later_rounds=True) == router.route("Who directed Titanic?", FULL)
    # nothing to skip without PPR: the stages stay those of a single recall
    bare = Policy(version="bare", router="rules")
    assert router.route("Were A and B both tall?", bare, later_rounds=True) == router.route("Were A and B both tall?",
                                                                                          bare)
    # the decision reads back from its stages, later rounds included
    held = router.pinned([*hop.stages, "dedup"])
    assert held is not None and held.later_rounds
    assert router.decide(FULL, held.features, held.how, later_rounds=held.later_rounds) == hop
    plain = router.pinned(router.route("Were A and B both tall?", FULL).stages)
    assert plain is not None and not plain.later_rounds


def test_an_llm_policy_decided_by_the_rules_says_so() -> None:
    llm = Policy(version="llm", router="llm", router_model="gpt-4o-mini")
    assert router.route("Who directed Titanic?", llm).stages[0] == "router:llm-unavailable"
    assert router.decide(llm, {MULTI_HOP}, "llm").stages == ("router:llm", "router:multi-hop")
    with pytest.raises(ValueError):
        router.decide(llm, set(), "guess")


def test_policy_fields_and_hash() -> None:
    with pytest.raises(ValidationError) as err:
        Policy(version="x", router="llm")
    assert bad_input_from(err.value).field == "router_model"
    with pytest.raises(ValueError):
        Policy.model_validate({"version": "x", "router": "sometimes"})
    # a policy that uses no router keeps the content hash it had before the router existed
    plain = Policy(version="p", k=4)
    body = {k: v for k, v in plain.model_dump(mode="json").items() if k not in _OMITTED_AT_DEFAULT}
    before = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert plain.content_hash() == before and {"router", "router_model"} <= set(_OMITTED_AT_DEFAULT)
    assert Policy(version="p", k=4, router="none").content_hash() == plain.content_hash()
    assert Policy(version="p", k=4, router="rules").content_hash() != plain.content_hash()
    assert json.loads(plain.model_dump_json())["router"] == "none"
