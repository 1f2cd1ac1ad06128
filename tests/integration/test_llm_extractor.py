"""The LLM extractor: litellm + instructor plumbing via `mock_response` (never a live key), then
the worker storing what the model said as typed entities and facts in a real Neo4j.

`scripted` wraps `litellm.completion` and sets `mock_response` per call to the JSON a model would
answer for the claims in that call's prompt, so batching, per-call failures and cost can be
checked; everything between the prompt and the parsed answer is the real litellm + instructor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from palimpsest.api.worker import WorkerConfig
from palimpsest.extraction.entities import ClaimText, KnownEntity, LlmExtractor, LlmExtractorOptions, build_matcher
from palimpsest.extraction.llm_client import RateLimiter
from palimpsest.graph.knowledge.facts import packet_beliefs
from palimpsest.schema.models import DEFAULT_POLICY, Fact, Policy

MARA = "Mara Quint joined Northwind Traders as head of data."
MOVE = "She moved to Berlin in February 2026."
HOSTS = "db-9 replaces db-7 in 2026."
ANSWERS: dict[str, dict[str, Any]] = {
    MARA: {"entities": [{"name": "Mara Quint", "type": "Person"},
                        {"name": "Northwind Traders", "type": "organisation"}],
           "facts": [{"subject": "Mara Quint", "predicate": "Works At", "object": "Northwind Traders",
                      "object_is_entity": True, "confidence": 0.9}]},
    MOVE: {"entities": [{"name": "Mara Quint", "type": "person"}, {"name": "Berlin", "type": "city"}],
           "facts": [
               # the pronoun resolved to the entity of the neighbouring claim
               {"subject": "Mara Quint", "predicate": "lives_in", "object": "Berlin", "object_is_entity": True,
                "valid_from": "2026-02", "confidence": 0.8},
               # two bad items: each is dropped alone, the rest of the batch stands
               {"subject": "she", "predicate": "likes", "object": "tea", "confidence": 0.7},
               {"subject": "Mara Quint", "predicate": "salary", "object": "90000", "valid_from": "last spring"},
           ]},
    HOSTS: {"entities": [{"name": "db-9", "type": "host"}, {"name": "db-7", "type": "host"},
                         {"name": "2026", "type": "year"}],
            "facts": [{"subject": "db-9", "predicate": "replaces", "object": "db-7", "object_is_entity": True,
                       "single_valued": False, "confidence": 0.95}]},
}
_LINE = re.compile(r"^Claim (\d+)(?: \(about: [^)]*\))?: (.*)$")


def scripted(answers: dict[str, dict[str, Any]], fail_on: str | None = None
             ) -> tuple[Callable[..., Any], list[list[str]]]:
    """A litellm.completion that answers each prompt's claims from `answers` (by claim text)."""
    import litellm

    calls: list[list[str]] = []

    def completion(*args: Any, **kwargs: Any) -> Any:
        prompt = next(m["content"] for m in kwargs["messages"] if m["role"] == "user")
        numbered = [m.groups() for m in map(_LINE.match, prompt.splitlines()) if m]
        calls.append([text for _, text in numbered])
        if fail_on is not None and any(fail_on in text for _, text in numbered):
            kwargs["mock_response"] = Exception("provider down")
        else:
            kwargs["mock_response"] = json.dumps({"claims": [
                {"claim": int(i), **answers.get(text, {"entities": [], "facts": []})} for i, text in numbered]})
        return litellm.completion(*args, **kwargs)

    return completion, calls


def _claims() -> list[ClaimText]:
    return [ClaimText("c1", MARA, {}, 1), ClaimText("c2", MOVE, {}, 2), ClaimText("c3", HOSTS, {}, 3)]


def _extractor(model: str = "gpt-4o-mini", **opts: Any) -> tuple[LlmExtractor, list[list[str]]]:
    completion, calls = scripted(ANSWERS, opts.pop("fail_on", None))
    options = LlmExtractorOptions(completion=completion, max_calls_per_second=None, max_retries=0, **opts)
    return LlmExtractor(model, options), calls


# ------------------------------------------------------------------------------ extractor alone
def test_one_call_reads_a_batch_into_typed_entities_and_facts() -> None:
    ex, calls = _extractor()
    out = ex.extract(_claims(), build_matcher([]))
    assert len(calls) == 1 and calls[0] == [MARA, MOVE, HOSTS] and out.calls == 1
    assert out.cost_usd > 0 and out.unpriced_calls == 0        # gpt-4o-mini is in litellm's price list
    proposed = {(p.claim_id, p.mention.canonical, p.type) for p in out.linked.unresolved}
    assert proposed == {("c1", "mara quint", "person"), ("c1", "northwind traders", "organisation"),
                        ("c2", "mara quint", "person"), ("c2", "berlin", "city"),
                        ("c3", "db 9", "host"), ("c3", "db 7", "host")}   # "2026" is a value, not an entity
    facts = {(f.claim_id, f.subject_key, f.predicate, f.object_key): f for f in out.facts}
    assert set(facts) == {("c1", "mara quint", "works_at", "northwind traders"),
                          ("c2", "mara quint", "lives_in", "berlin"), ("c3", "db 9", "replaces", "db 7")}
    lives = facts[("c2", "mara quint", "lives_in", "berlin")]
    assert lives.valid_from is not None and lives.valid_from.isoformat() == "2026-02-01T00:00:00+00:00"
    assert lives.confidence == 0.8 and lives.single_valued
    assert not facts[("c3", "db 9", "replaces", "db 7")].single_valued
    assert len(out.dropped) == 2
    assert any("unresolved subject 'she'" in d for d in out.dropped)
    assert any("unreadable date" in d for d in out.dropped)
    assert out.failed_claims == [] and out.problems == []


def test_batches_known_names_and_a_failing_call_failing_alone() -> None:
    ex, calls = _extractor(batch_size=1, fail_on="db-9")
    known = [KnownEntity("ent-berlin", "Berlin", ())]
    out = ex.extract(_claims(), build_matcher(known))
    assert len(calls) == 3 and out.calls == 3
    # the known name is linked, not proposed again
    assert "ent-berlin" in out.linked.links["c2"]
    assert all(p.mention.canonical != "berlin" for p in out.linked.unresolved)
    # the failed call costs only its claim: it gets the offline extractor's links and proposals
    assert out.failed_claims == ["c3"] and "provider down" in out.problems[0]
    offline = {p.mention.canonical for p in out.linked.unresolved if p.claim_id == "c3"}
    assert offline == {"db 9", "db 7"}
    assert {f.claim_id for f in out.facts} == {"c1", "c2"}


def test_calls_are_rate_limited_and_unknown_models_are_reported_unpriced() -> None:
    now = [0.0]
    sleeps: list[float] = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        now[0] += s

    completion, _ = scripted(ANSWERS)
    ex = LlmExtractor("openai/palimpsest-local", LlmExtractorOptions(completion=completion, batch_size=1,
                                                                       max_retries=0),
                      limiter=RateLimiter(2.0, clock=lambda: now[0], sleep=sleep))
    out = ex.extract(_claims(), build_matcher([]))
    assert out.calls == 3 and sleeps == [0.5, 0.5]
    assert out.unpriced_calls == 3 and out.cost_usd == 0.0
    assert len(out.facts) == 3


def test_policy_chooses_the_extractor_and_default_stays_offline() -> None:
    assert DEFAULT_POLICY.extractor == "offline" and DEFAULT_POLICY.extractor_model is None
    with pytest.raises(ValueError, match="extractor_model"):
        Policy(version="llm-no-model", extractor="llm")
    assert Policy(version="llm-v1", extractor="llm", extractor_model="gpt-4o-mini").extractor == "llm"


# ------------------------------------------------------------------------------ through the worker
def _llm_worker(memory: Any, answers: dict[str, dict[str, Any]]) -> tuple[WorkerConfig, list[list[str]]]:
    memory.register_policy({"version": "llm-v1", "extractor": "llm", "extractor_model": "gpt-4o-mini"})
    completion, calls = scripted(answers)
    return WorkerConfig(policy_version="llm-v1", llm_extractor=LlmExtractorOptions(
        completion=completion, max_calls_per_second=None, max_retries=0)), calls


@pytest.mark.integration
def test_worker_stores_llm_entities_and_facts(memory: Any, driver: Any) -> None:
    ns = memory.namespace
    cfg, calls = _llm_worker(memory, ANSWERS)
    written = memory.ingest_many([{"content": t, "source": "chat"} for t in (MARA, MOVE, HOSTS)])
    report = memory.run_projections(cfg)
    assert report.extractor == "llm" and report.extraction_calls == len(calls) == 1
    assert report.extraction_cost_usd > 0 and report.extraction_failed_claims == 0
    assert report.facts_created == 3 and report.facts_dropped == 2 and report.facts_superseded == 0
    assert report.as_dict()["extraction_cost_usd"] > 0
    records, _, _ = driver.execute_query(
        "MATCH (e:Entity {namespace: $ns}) RETURN e.canonical AS k, e.type AS type, e.id AS id", ns=ns)
    ents = {r["k"]: (r["type"], r["id"]) for r in records}
    assert {k: t for k, (t, _) in ents.items()} == {
        "mara quint": "person", "northwind traders": "organisation", "berlin": "city", "db 9": "host",
        "db 7": "host"}
    assert ents["db 7"][1] != ents["db 9"][1]          # codes never merge, whatever the model proposes
    # the pronoun claim is linked to the person it is about (its text never names her)
    move_id = written.items[1].id
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns, id: $id})-[:MENTIONS]->(e:Entity) RETURN e.canonical AS k ORDER BY k",
        ns=ns, id=move_id)
    assert [r["k"] for r in records] == ["berlin", "mara quint"]
    facts = {(f.subject, f.predicate, f.object): f for f in memory.facts()}
    assert all(type(f) is Fact and f.status == "current" for f in facts.values())
    assert set(facts) == {("Mara Quint", "works_at", "Northwind Traders"), ("Mara Quint", "lives_in", "Berlin"),
                          ("db-9", "replaces", "db-7")}
    lives = facts[("Mara Quint", "lives_in", "Berlin")]
    assert lives.valid_from == "2026-02-01T00:00:00Z" and lives.supported_by == [move_id]
    assert lives.subject_id == ents["mara quint"][1] and lives.object_id == ents["berlin"][1]
    # the same facts, by entity, in one round trip: each under its subject and under an entity object
    by_entity = memory.facts_many([ents["mara quint"][1], ents["berlin"][1]])
    assert {f.id for f in by_entity[ents["mara quint"][1]]} == {facts[k].id for k in facts if k[0] == "Mara Quint"}
    assert by_entity[ents["berlin"][1]] == [lives] == memory.facts(ents["berlin"][1])
    # RELATED = co-mentions + facts: one claim names both, one fact links them
    records, _, _ = driver.execute_query(
        "MATCH (a:Entity {namespace: $ns, canonical: 'mara quint'})-[r:RELATED]-"
        "(b:Entity {namespace: $ns, canonical: 'northwind traders'}) RETURN r.weight AS w, r.facts AS f", ns=ns)
    assert [(r["w"], r["f"]) for r in records] == [(2.0, 1)]
    # what recall will attach for a packet holding the Berlin claim
    with driver.session() as session:
        beliefs, cut = session.execute_read(packet_beliefs, ns, [move_id], written.revision, report.to_seq, 5)
    assert not cut and [(b.subject, b.predicate, b.object, b.confidence) for b in beliefs] == [
        ("Mara Quint", "lives_in", "Berlin", 0.8)]


@pytest.mark.integration
def test_worker_supersedes_adds_support_and_a_rerun_changes_nothing(memory: Any, driver: Any,
                                                                   runtime: Any) -> None:
    ns = memory.namespace

    def lives(city: str, p: float) -> dict[str, Any]:
        return {"entities": [{"name": "Mara Quint", "type": "person"}, {"name": city, "type": "city"}],
                "facts": [{"subject": "Mara Quint", "predicate": "lives_in", "object": city,
                           "object_is_entity": True, "confidence": p}]}

    texts = ["Mara Quint lives in Berlin.", "Mara Quint moved to Lisbon.", "Mara Quint still lives in Lisbon."]
    cfg, _ = _llm_worker(memory, {texts[0]: lives("Berlin", 0.9), texts[1]: lives("Lisbon", 0.6),
                                  texts[2]: lives("Lisbon", 0.5)})
    memory.ingest(texts[0], "chat")
    first = memory.run_projections(cfg)
    assert first.facts_created == 1
    memory.ingest(texts[1], "chat")
    second = memory.run_projections(cfg)
    assert second.facts_created == 1 and second.facts_superseded == 1
    memory.ingest(texts[2], "chat")
    third = memory.run_projections(cfg)
    assert third.facts_created == 0 and third.fact_supports_created == 1
    current = memory.facts()
    assert [(f.object, f.confidence) for f in current] == [("Lisbon", pytest.approx(1 - 0.4 * 0.5))]
    history = {f.object: f for f in memory.facts(include_superseded=True)}
    assert history["Berlin"].status == "superseded" and history["Berlin"].superseded_by == current[0].id
    assert history["Berlin"].superseded_at_revision == history["Lisbon"].revision
    assert history["Berlin"].valid_to is not None
    assert history["Lisbon"].superseded_by is None and history["Lisbon"].superseded_at_revision is None
    # GraphQL's Fact is derived from the model: the superseded fact names its successor there too.
    from fastapi.testclient import TestClient

    from palimpsest.api.app import create_app
    from palimpsest.api.auth import KeyStore, hash_key

    keys = KeyStore.from_json(json.dumps([{"name": "a", "sha256": hash_key("k-a"),
                                           "namespaces": {ns: ["read"]}}]))
    with TestClient(create_app(runtime, keys=keys), base_url="http://localhost") as client:
        body = client.post("/graphql", headers={"Authorization": "Bearer k-a"}, json={"query": """
            query($ns: String!) { entity(namespace: $ns, name: "Mara Quint") {
              facts(includeSuperseded: true) { id object status supersededBy supersededAtRevision } } }""",
            "variables": {"ns": ns}}).json()
    assert "errors" not in body, body
    assert {f["object"]: (f["id"], f["status"], f["supersededBy"], f["supersededAtRevision"])
            for f in body["data"]["entity"]["facts"]} == {
        f.object: (f.id, f.status, f.superseded_by, f.superseded_at_revision) for f in history.values()}

    def snapshot() -> tuple[Any, ...]:
        records, _, _ = driver.execute_query(
            "CALL () { MATCH (n {namespace: $ns}) WHERE n:Fact OR n:Entity RETURN count(n) AS nodes } "
            "CALL () { MATCH (n {namespace: $ns})-[r]->() WHERE n:Fact OR n:Entity OR n:Claim "
            "  RETURN count(r) AS rels, sum(coalesce(r.weight, 0)) AS weight } RETURN nodes, rels, weight", ns=ns)
        return (tuple(records[0].values()), memory.facts(include_superseded=True))

    before = snapshot()
    # Replay every batch from the start (as after a crash that lost projections_seq): same graph.
    driver.execute_query("MATCH (s:Store {namespace: $ns}) SET s.projections_seq = 0", ns=ns)
    replay = memory.run_projections(cfg)
    assert replay.to_seq == third.to_seq and replay.extraction_calls >= 1   # the model was asked again
    assert (replay.facts_created, replay.fact_supports_created, replay.facts_superseded) == (0, 0, 0)
    assert snapshot() == before


@pytest.mark.integration
def test_offline_policy_calls_no_model_and_writes_no_facts(memory: Any) -> None:
    memory.ingest(MARA, "chat")
    report = memory.run_projections(WorkerConfig())
    assert report.extractor == "offline" and report.extraction_calls == 0 and report.extraction_cost_usd == 0
    assert report.facts_created == 0 and memory.facts() == []
    assert report.entities_created >= 2


@pytest.mark.integration
def test_packets_and_graphql_carry_the_facts(memory: Any, runtime: Any) -> None:
    """End to end: LLM facts become packet beliefs (capped at b) and Entity.facts in GraphQL."""
    from fastapi.testclient import TestClient

    from palimpsest.api.app import create_app
    from palimpsest.api.auth import KeyStore, hash_key

    cfg, _ = _llm_worker(memory, ANSWERS)
    written = memory.ingest_many([{"content": t, "source": "chat"} for t in (MARA, MOVE, HOSTS)])
    memory.run_projections(cfg)
    packet = memory.recall("Where does Mara Quint live now?", k=3)
    triples = {(b.subject, b.predicate, b.object) for b in packet.beliefs}
    assert ("Mara Quint", "lives_in", "Berlin") in triples
    assert all(set(b.supported_by) & {it.id for it in packet.items} for b in packet.beliefs)  # the items' beliefs
    assert [b.confidence for b in packet.beliefs] == sorted((b.confidence for b in packet.beliefs), reverse=True)
    memory.register_policy(Policy(version="one-belief", b=1))
    capped = memory.recall("Where does Mara Quint live now?", k=3, policy_version="one-belief")
    assert len(capped.beliefs) == 1 and capped.completeness.beliefs_truncated == (len(packet.beliefs) > 1)
    before = memory.recall("Where does Mara Quint live now?", k=3, as_of_revision=written.revision,
                           projections_seq=0)
    assert before.beliefs == []  # pinned before the worker ran: no beliefs yet

    keys = KeyStore.from_json(json.dumps([{"name": "a", "sha256": hash_key("k-a"),
                                           "namespaces": {memory.namespace: ["read"]}}]))
    with TestClient(create_app(runtime, keys=keys), base_url="http://localhost") as client:
        resp = client.post("/graphql", headers={"Authorization": "Bearer k-a"}, json={"query": """
            query($ns: String!) { entity(namespace: $ns, name: "Mara Quint") {
              name facts { predicate object confidence supportedBy status } } }""",
            "variables": {"ns": memory.namespace}})
    body = resp.json()
    assert "errors" not in body, body
    facts = {(f["predicate"], f["object"]) for f in body["data"]["entity"]["facts"]}
    assert facts == {("works_at", "Northwind Traders"), ("lives_in", "Berlin")}
