"""Inferred supersession without entities, against a real Neo4j: the frame judge, its candidates, its
guards, what packets can say about it, an operator's undo, and the LLM judge through litellm's
`mock_response` (no key, no network).

None of the sentences here is from benchmarks/data/nokeys_eval.jsonl (the frozen evaluation set).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from neo4j import Driver

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.memory import Memory
from palimpsest.api.worker import WorkerConfig
from palimpsest.extraction.supersession_llm import LlmInferenceOptions
from palimpsest.graph.claims import inferred
from palimpsest.graph.claims.check import check
from palimpsest.schema.errors import NotFoundError
from palimpsest.schema.models import Policy

pytestmark = pytest.mark.integration

POLICY = Policy(version="frames-test-v1", inferred_supersession=True)
LLM_POLICY = Policy(version="frames-llm-v1", inferred_supersession=True, inferred_judge="llm",
                    inferred_llm_model="gpt-4o-mini")


def config(**kw: Any) -> WorkerConfig:
    return WorkerConfig(policy_version=kw.pop("version", POLICY.version), pagerank=False, **kw)


def links(driver: Driver, ns: str) -> list[tuple[str, str]]:
    records, _, _ = driver.execute_query(
        "MATCH (n:Claim {namespace: $ns})-[s:SUPERSEDES {reason: 'inferred'}]->(o:Claim) "
        "WHERE s.undone_at_revision IS NULL RETURN n.content AS n, o.content AS o ORDER BY n, o", ns=ns)
    return [(r["n"], r["o"]) for r in records]


def rounds(memory: Memory, *batches: list[str], cfg: WorkerConfig | None = None) -> list[list[str]]:
    """Each batch ingested, then the worker caught up; returns the ids per batch."""
    memory.register_policy(POLICY)
    out = []
    for batch in batches:
        res = memory.ingest_many([{"content": c, "source": "t"} for c in batch])
        out.append([it.id or "" for it in res.items])
        report = memory.run_projections(cfg or config())
        assert report.caught_up
    return out


def test_a_paraphrased_update_with_no_entity_supersedes(memory: Memory, driver: Driver) -> None:
    # Nothing here is an entity the extractor finds, and the cosine of the two is modest.
    old = "The Starter bundle is billed at $9 per seat each month."
    new = "From March on, a seat on the Starter bundle costs $11 a month."
    [[old_id], [new_id]] = rounds(memory, [old], [new])
    assert links(driver, memory.namespace) == [(new, old)]
    packet = memory.recall("What does a Starter bundle seat cost?", k=3)
    assert packet.items[0].id == new_id and old_id not in [it.id for it in packet.items]
    assert packet.hidden.inferred == 1
    assert check(driver, memory.namespace).ok


def test_dates_are_compared_as_dates_and_a_restatement_is_no_update(memory: Memory, driver: Driver) -> None:
    first = "The vendor audit is scheduled for March 15."
    again = "The vendor audit is still set for 15 March."          # the same date, other words: no update
    moved = "The vendor audit was moved to April 20."
    rounds(memory, [first], [again], [moved])
    found = links(driver, memory.namespace)
    # the move replaces both the first statement and its restatement; the restatement replaced nothing
    assert sorted(found) == sorted([(moved, first), (moved, again)])
    assert check(driver, memory.namespace).ok


@pytest.mark.parametrize(("older", "newer"), [
    # same attribute, another subject (a code, a name, a modifier)
    ("Warehouse W-7 can hold 4,000 pallets.", "Warehouse W-9 can hold 5,500 pallets."),
    ("The Basic plan costs $5 per month.", "The Premium plan costs $25 per month."),
    ("The north depot has 12 loading docks.", "The south depot has 16 loading docks."),
    # same subject, another attribute with a value of the same kind
    ("The Starter bundle includes 3 user seats.", "The Starter bundle includes 20 GB of storage."),
    ("The gym opens at 6:00 on weekdays.", "The gym closes at 22:00 on weekdays."),
    ("The Starter bundle costs $9 per month.", "The Starter bundle has a setup fee of $49."),
    # someone else's preference
    ("The user wants a window seat.", "The user's partner wants an aisle seat."),
])
def test_guards_never_supersede_another_subject_or_attribute(memory: Memory, driver: Driver,
                                                             older: str, newer: str) -> None:
    rounds(memory, [older], [newer])
    assert links(driver, memory.namespace) == []
    assert memory.stats().claims_by_status == {"current": 2}


def test_a_keyed_claim_is_never_the_older_side(memory: Memory, driver: Driver) -> None:
    """The refusal docs/TEMPORAL.md states: inference never hides a claim that has a key, so a keyed
    claim never gets a second current sibling or a hidden version through inference."""
    memory.register_policy(POLICY)
    keyed = memory.ingest("The Starter bundle is billed at $9 per seat each month.", "t", claim_key="starter.price")
    memory.run_projections(config())
    rounds(memory, ["From March on, a seat on the Starter bundle costs $11 a month."])
    assert links(driver, memory.namespace) == []
    assert keyed.id is not None and memory.claim(keyed.id).status == "current"
    assert check(driver, memory.namespace).ok


def test_candidates_need_no_shared_entity_and_stay_bounded(memory: Memory, driver: Driver) -> None:
    texts = [f"Locker bank {n} at the gym holds {20 + n} lockers." for n in range(12)]
    [ids] = rounds(memory, texts)
    subject = memory.ingest("The gym's locker count went up to 40.", "t")
    assert subject.id
    with driver.session() as session:
        without = session.execute_read(inferred._candidates, memory.namespace, [subject.id], {}, {}, {}, 0.7, 5)
        with_neighbours = session.execute_read(inferred._candidates, memory.namespace, [subject.id], {}, {}, {},
                                               0.7, 5, 0.2, {})
    assert without == []   # no MENTIONS in common: the entity path alone finds nothing
    [found] = with_neighbours
    assert 0 < len(found.candidates) <= 5 and {c.id for c, _ in found.candidates} <= set(ids)
    assert [cos for _, cos in found.candidates] == sorted((cos for _, cos in found.candidates), reverse=True)


def test_packets_can_list_what_inference_did_and_an_operator_can_undo_it(memory: Memory, driver: Driver) -> None:
    old = "The Starter bundle is billed at $9 per seat each month."
    new = "From March on, a seat on the Starter bundle costs $11 a month."
    [[old_id], [new_id]] = rounds(memory, [old], [new])
    packet = memory.recall("What does a Starter bundle seat cost?", k=3)
    [link] = memory.inferred_links([it.id for it in packet.items], as_of_revision=packet.store_revision)
    assert (link.newer_id, link.older_id, link.active) == (new_id, old_id, True)
    assert link.kind == "value" and link.confidence and link.confidence >= POLICY.inferred_min_confidence
    assert link.reason and "$9" in link.reason and "$11" in link.reason
    assert memory.inferred_links() == [link]
    inferred_at = link.revision

    undone = memory.undo_inferred(new_id, old_id, "the bundle has two seat prices")
    assert undone.restored and undone.revision > inferred_at
    assert memory.claim(old_id).status == "current"
    assert old_id in [it.id for it in memory.recall("What does a Starter bundle seat cost?", k=3).items]
    # as of before the undo, the packet is what it was
    assert old_id not in [it.id for it in memory.recall("What does a Starter bundle seat cost?", k=3,
                                                        as_of_revision=undone.revision - 1).items]
    assert memory.inferred_links() == []
    [history] = memory.inferred_links(include_undone=True)
    assert history.undone_at_revision == undone.revision and history.undone_reason
    assert history.undone_reason.startswith("operator:") and not history.active
    assert check(driver, memory.namespace).ok
    with pytest.raises(NotFoundError):
        memory.undo_inferred(new_id, old_id, "again")
    # A full rebuild of the projections does not infer the undone pair again.
    driver.execute_query("MATCH (s:Store {namespace: $ns}) SET s.projections_seq = 0", ns=memory.namespace)
    assert memory.run_projections(config()).inferred_supersessions == 0
    assert memory.claim(old_id).status == "current"


def test_recall_finds_the_new_claim_through_the_old_wording(memory: Memory, driver: Driver) -> None:
    old = "Shipment RX-204 is expected to arrive at the Antwerp dock on June 3."
    new = "New ETA for RX-204: June 9."
    [[old_id], [new_id]] = rounds(memory, [old], [new])
    assert links(driver, memory.namespace) == [(new, old)]
    packet = memory.recall("When does shipment RX-204 arrive at the Antwerp dock?", k=3)
    assert packet.items[0].id == new_id and packet.items[0].matched_via == old_id


def test_graphql_lists_and_undoes_inferred_links(memory: Memory, driver: Driver, runtime: Any) -> None:
    [[old_id], [new_id]] = rounds(memory, ["The Starter bundle is billed at $9 per seat each month."],
                                  ["From March on, a seat on the Starter bundle costs $11 a month."])
    key, writer = "frames-key", "frames-writer"
    keys = KeyStore.from_json(json.dumps([
        {"name": "a", "sha256": hash_key(key), "namespaces": {memory.namespace: ["read", "admin"]}},
        {"name": "w", "sha256": hash_key(writer), "namespaces": {memory.namespace: ["read", "write"]}}]))
    with TestClient(create_app(runtime, keys=keys), base_url="http://localhost") as client:
        def gql(query: str, as_key: str = key, **variables: Any) -> dict[str, Any]:
            resp = client.post("/graphql", json={"query": query, "variables": variables},
                               headers={"Authorization": f"Bearer {as_key}"})
            body: dict[str, Any] = resp.json()
            return body

        # Undoing an inference changes what every reader gets: the admin right, not write.
        refused = gql("mutation($n: String!, $o: String!) { undoInference(newerId: $n, olderId: $o, reason: \"x\") "
                      "{ revision } }", as_key=writer, n=new_id, o=old_id)
        assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
        assert memory.claim(old_id).status != "current"

        listed = gql("query($ids: [String!]) { inferredLinks(claimIds: $ids) { newerId olderId kind confidence "
                     "reason active } }", ids=[new_id])
        [link] = listed["data"]["inferredLinks"]
        assert (link["newerId"], link["olderId"], link["active"]) == (new_id, old_id, True)
        done = gql("mutation($n: String!, $o: String!) { undoInference(newerId: $n, olderId: $o, reason: \"two "
                   "prices\") { revision restored } }", n=new_id, o=old_id)
        assert done["data"]["undoInference"]["restored"] is True
        again = gql("mutation($n: String!, $o: String!) { undoInference(newerId: $n, olderId: $o, reason: \"x\") "
                    "{ revision } }", n=new_id, o=old_id)
        assert again["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert memory.claim(old_id).status == "current"


# ------------------------------------------------------------------------------------------ LLM judge
_PAIR = re.compile(r"^Pair (\d+):$")


def scripted(answer: Callable[[str, str], dict[str, Any]], fail: bool = False
             ) -> tuple[Callable[..., Any], list[int]]:
    """A litellm.completion that answers each prompt's pairs with `answer(older, newer)`."""
    import litellm

    calls: list[int] = []

    def completion(*args: Any, **kwargs: Any) -> Any:
        prompt = next(m["content"] for m in kwargs["messages"] if m["role"] == "user").splitlines()
        pairs = []
        for i, line in enumerate(prompt):
            m = _PAIR.match(line)
            if m:
                pairs.append((int(m[1]), prompt[i + 1].split("OLDER: ", 1)[1], prompt[i + 2].split("NEWER: ", 1)[1]))
        calls.append(len(pairs))
        kwargs["mock_response"] = Exception("provider down") if fail else json.dumps(
            {"verdicts": [{"pair": n, **answer(o, nw)} for n, o, nw in pairs]})
        return litellm.completion(*args, **kwargs)

    return completion, calls


def yes(older: str, newer: str) -> dict[str, Any]:
    same = "Starter" in older and "Starter" in newer
    return {"same_subject": same, "same_attribute": same, "newer_replaces_older": same, "confidence": 0.9,
            "reason": "the seat price changed" if same else "other things"}


def test_llm_judge_decides_on_bounded_candidates_in_batched_calls(memory: Memory, driver: Driver) -> None:
    completion, calls = scripted(yes)
    cfg = config(version=LLM_POLICY.version,
                 llm_inference=LlmInferenceOptions(completion=completion, max_calls_per_second=None, batch_size=2,
                                                   max_retries=0))
    memory.register_policy(LLM_POLICY)
    memory.ingest_many([{"content": c, "source": "t"} for c in [
        "The Starter bundle is billed at $9 per seat each month.", "The Team bundle includes 10 seats.",
        "The office wifi password rotates every week."]])
    memory.run_projections(cfg)
    memory.ingest("Starter bundle seats are now $11 a month.", "t")
    report = memory.run_projections(cfg)
    assert report.inference_llm_calls >= 1 and all(n <= 2 for n in calls)        # batched, bounded
    assert report.inference_llm_cost_usd > 0                                     # priced from litellm's list
    assert links(driver, memory.namespace) == [("Starter bundle seats are now $11 a month.",
                                                "The Starter bundle is billed at $9 per seat each month.")]
    [link] = memory.inferred_links()
    assert link.kind == "llm" and link.confidence == 0.9 and link.reason and "price" in link.reason
    assert check(driver, memory.namespace).ok


def test_llm_judge_failure_decides_nothing(memory: Memory, driver: Driver) -> None:
    completion, _ = scripted(yes, fail=True)
    cfg = config(version=LLM_POLICY.version,
                 llm_inference=LlmInferenceOptions(completion=completion, max_calls_per_second=None, max_retries=0))
    memory.register_policy(LLM_POLICY)
    memory.ingest("The Starter bundle is billed at $9 per seat each month.", "t")
    memory.run_projections(cfg)
    memory.ingest("Starter bundle seats are now $11 a month.", "t")
    report = memory.run_projections(cfg)
    assert report.caught_up and report.inferred_supersessions == 0
    assert report.inference_llm_failed_pairs >= 1 and report.problems
    assert links(driver, memory.namespace) == []
