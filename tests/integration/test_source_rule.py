"""The source rule (policy `source_penalty`) end to end on a real Neo4j: a question that names a speaker is
answered from what that speaker said, through Memory and GraphQL, and a packet under it replays.

The conversation is built the way agent memory holds one: each turn a claim, the speaker as source,
the turn it replies to as its declared subject (in its vector and, with `subject_terms`, in its lexical
match). The other speaker's question shares the most words with ours, so without the rule it ranks
first; with it the answer — the named speaker's own turn — does.
"""

from __future__ import annotations

from typing import Any

from palimpsest.api.memory import Memory
from palimpsest.schema.models import Policy
from tests.graphql_client import keyed_graphql

TURNS = [
    ("Caroline", "Caroline: Melanie, what do you and your kids like to do on weekends?", None),
    ("Melanie", "Melanie: We go camping by the lake and roast marshmallows, they love it!",
     "Caroline: Melanie, what do you and your kids like to do on weekends?"),
    ("Caroline", "Caroline: I mostly paint on weekends, it calms me down.", None),
    ("Melanie", "Melanie: That sounds lovely, you should show me your paintings.", None),
]
QUESTION = "What does Melanie like to do with her kids on weekends?"


def _write(memory: Memory) -> list[str]:
    result = memory.ingest_many([{"content": text, "source": speaker,
                                  "metadata": {"subject": subject} if subject else {}}
                                 for speaker, text, subject in TURNS])
    return [item.id or "" for item in result.items]


def test_a_question_naming_a_speaker_is_answered_from_their_own_turns(memory: Memory) -> None:
    ids = _write(memory)
    memory.register_policy(Policy(version="speaker-rule", subject_terms=True, source_penalty=0.7))
    memory.register_policy(Policy(version="no-rule", subject_terms=True))
    plain = memory.recall(QUESTION, k=2, policy_version="no-rule")
    logged = Memory(memory.rt, memory.namespace, log_packets=True)
    ruled = logged.recall(QUESTION, k=2, policy_version="speaker-rule", explain=True)
    assert plain.items[0].id == ids[0]   # Caroline's question shares the most words
    assert ruled.items[0].id == ids[1]   # Melanie's answer
    other = next(it for it in ruled.items if it.source == "Caroline")
    assert other.explanation is not None
    assert [(p.rule, p.factor) for p in other.explanation.penalties] == [("source", 0.7)]
    assert ruled.items[0].explanation is not None and ruled.items[0].explanation.penalties == []
    # Naming both speakers is no longer a question about one of them: the rule stands aside.
    both = memory.recall("What do Melanie and Caroline do on weekends?", k=4, policy_version="speaker-rule")
    assert [it.id for it in both.items] == [it.id for it in memory.recall(
        "What do Melanie and Caroline do on weekends?", k=4, policy_version="no-rule").items]
    assert logged.replay(ruled.fingerprint).matches


def test_graphql_takes_and_reports_the_source_penalty(runtime: Any, namespace: str) -> None:
    ids = _write(Memory(runtime, namespace))
    with keyed_graphql(runtime, namespace, "k-source", ("read", "write", "admin")) as gql:
        reg = gql("""mutation { registerPolicy(input: {version: "sp", sourcePenalty: 0.7, subjectTerms: true})
            { version sourcePenalty } }""")
        assert reg["data"]["registerPolicy"] == {"version": "sp", "sourcePenalty": 0.7}
        bad = gql("""mutation { registerPolicy(input: {version: "sp2", sourcePenalty: 0}) { version } }""")
        [error] = bad["errors"]
        assert error["extensions"]["code"] == "BAD_INPUT" and "sourcePenalty" in error["message"]
        packet = gql(f"""{{ recall(query: "{QUESTION}", k: 2, policyVersion: "sp") {{ items {{ id }} }} }}""")
        assert packet["data"]["recall"]["items"][0]["id"] == ids[1]
