"""Lexical match on word stems (policy `stem_terms`) end to end on a real Neo4j, through Memory and GraphQL.

The lexical list alone (`vector_weight` 0) sees two turns that share the speaker's name with the question,
one of them about what the question asks in another inflection ("camped" / "camping"). Without stems the
two tie on the name; with them the turn that answers ranks first, and its packet replays.
"""

from __future__ import annotations

from typing import Any

from palimpsest.api.memory import Memory
from palimpsest.schema.models import Policy
from tests.graphql_client import keyed_graphql

TURNS = ["Melanie went shopping at the mall with her sister.", "Melanie went camping at the beach with her kids."]
QUESTION = "Where has Melanie camped?"


def _write(memory: Memory) -> list[str]:
    return [item.id or "" for item in memory.ingest_many([{"content": t, "source": "chat"} for t in TURNS]).items]


def test_stems_match_another_inflection_of_the_asked_word(memory: Memory) -> None:
    ids = _write(memory)
    memory.register_policy(Policy(version="surface", vector_weight=0.0))
    memory.register_policy(Policy(version="stems", vector_weight=0.0, stem_terms=True))
    surface = memory.recall(QUESTION, k=2, policy_version="surface")
    assert {it.id for it in surface.items} == set(ids)
    assert surface.items[0].relevance == surface.items[1].relevance  # only "melanie" is shared
    logged = Memory(memory.rt, memory.namespace, log_packets=True)
    stems = logged.recall(QUESTION, k=2, policy_version="stems")
    assert [it.id for it in stems.items] == [ids[1], ids[0]]
    assert stems.items[0].relevance > stems.items[1].relevance
    camping, shopping = stems.items
    assert camping.lexical_score == 1.0 and shopping.lexical_score is not None and shopping.lexical_score < 1.0
    assert logged.replay(stems.fingerprint).matches
    assert stems.fingerprint != surface.fingerprint


def test_graphql_takes_and_reports_stem_terms(runtime: Any, namespace: str) -> None:
    ids = _write(Memory(runtime, namespace))
    with keyed_graphql(runtime, namespace, "k-stems", ("read", "write", "admin")) as gql:
        reg = gql("""mutation { registerPolicy(input: {version: "st", stemTerms: true, vectorWeight: 0})
            { version stemTerms } }""")
        assert reg["data"]["registerPolicy"] == {"version": "st", "stemTerms": True}
        packet = gql(f"""{{ recall(query: "{QUESTION}", k: 2, policyVersion: "st") {{ items {{ id }} }} }}""")
        assert packet["data"]["recall"]["items"][0]["id"] == ids[1]


def test_a_claim_sharing_only_a_stem_with_the_question_is_found_with_and_without_an_own_index(
        memory: Memory) -> None:
    """The text index stores words, so a turn that shares nothing with the question but a stem ("camped" /
    "camping", no name) was never fetched, and the ranking could not count what it never saw. Under
    stem_terms the stem is searched as a prefix: by the exact search of a namespace without its own index,
    then by Lucene once it has one — the same packet either way; without stems the turn stays unfound."""
    from palimpsest.graph.claims import index as claim_index

    filler = [f"Melanie said the weather on day {i} was mild and pleasant." for i in range(12)]
    ids = [item.id or "" for item in memory.ingest_many(
        [{"content": t, "source": "chat"} for t in [*filler, "We went camping at the beach with the kids."]]).items]
    camping = ids[-1]
    memory.register_policy(Policy(version="surface", vector_weight=0.0))
    memory.register_policy(Policy(version="stems", vector_weight=0.0, stem_terms=True))
    exact = {v: memory.recall(QUESTION, k=3, policy_version=v) for v in ("surface", "stems")}
    assert camping not in {it.id for it in exact["surface"].items}
    assert exact["stems"].items[0].id == camping
    assert claim_index.ensure(memory.rt.driver, memory.namespace, minimum=0)
    indexed = {v: memory.recall(QUESTION, k=3, policy_version=v) for v in ("surface", "stems")}
    assert camping not in {it.id for it in indexed["surface"].items}
    assert [(it.id, it.score) for it in indexed["stems"].items] == [(it.id, it.score) for it in exact["stems"].items]
