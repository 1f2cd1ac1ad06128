"""Fact retrieval end to end: facts the LLM extractor states (litellm `mock_response`, never a key) are
embedded when the worker writes them, and recall with `fact_retrieval` finds a claim through them.

The corpus asks a two-hop question: "Who is married to the director of Harbour Lights?" The answer
claim ("Mara Quint is married to Tobias Renn.") never names the film, and five other marriages read
just like it, so plain recall has nothing to tell it from them; the facts do — the query names Harbour
Lights, whose fact "Mara Quint directed Harbour Lights" leads to Mara Quint's marriage.
"""

from __future__ import annotations

from typing import Any

import pytest

from palimpsest.api.worker import WorkerConfig
from palimpsest.extraction.entities import LlmExtractorOptions, query_phrases
from palimpsest.graph.knowledge.facts import fact_text
from palimpsest.graph.policies import get_policy
from palimpsest.graph.recall.fact_source import search_facts
from palimpsest.graph.recall.request import RecallRequest
from palimpsest.schema.models import Policy
from tests.integration.test_llm_extractor import scripted

pytestmark = pytest.mark.integration

QUESTION = "Who is married to the director of Harbour Lights?"
ANSWER = "Mara Quint is married to Tobias Renn."
PHRASES = tuple(query_phrases(QUESTION))


def _fact(subject: str, predicate: str, obj: str, entity: bool = True) -> dict[str, Any]:
    return {"subject": subject, "predicate": predicate, "object": obj, "object_is_entity": entity,
            "confidence": 0.9, "single_valued": False}


def _claim(entities: list[tuple[str, str]], facts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"entities": [{"name": n, "type": t} for n, t in entities], "facts": facts}


COUPLES = [("Ivo Brandt", "Lena Sorel"), ("Paul Ostrow", "Mira Hale"), ("Jonas Eck", "Dora Fenn"),
           ("Karl Imhof", "Rita Vance"), ("Emil Tarr", "Nora Quill")]
ANSWERS: dict[str, dict[str, Any]] = {
    "Mara Quint directed the film Harbour Lights.": _claim(
        [("Mara Quint", "person"), ("Harbour Lights", "film")], [_fact("Mara Quint", "directed", "Harbour Lights")]),
    ANSWER: _claim([("Mara Quint", "person"), ("Tobias Renn", "person")],
                   [_fact("Mara Quint", "married_to", "Tobias Renn")]),
    "Harbour Lights premiered at the Venice film festival in 2019.": _claim(
        [("Harbour Lights", "film"), ("Venice film festival", "event")],
        [_fact("Harbour Lights", "premiered_at", "Venice film festival")]),
    "Harbour Lights was shot in the port of Trieste.": _claim(
        [("Harbour Lights", "film"), ("Trieste", "city")], [_fact("Harbour Lights", "filmed_in", "Trieste")]),
    "Harbour Lights tells the story of a lighthouse keeper and his wife.": _claim(
        [("Harbour Lights", "film")], [_fact("Harbour Lights", "genre", "drama", entity=False)]),
    "The director of a film is often married to one of its actors.": _claim([], []),
    **{f"{a} is married to {b}.": _claim([(a, "person"), (b, "person")], [_fact(a, "married_to", b)])
       for a, b in COUPLES},
}


def _project(memory: Any, texts: list[str] | None = None,
             answers: dict[str, dict[str, Any]] = ANSWERS) -> tuple[Any, dict[str, str]]:
    """Ingest the corpus and run the worker with the scripted LLM extractor: (report, text -> claim id)."""
    texts = list(answers) if texts is None else texts
    memory.register_policy({"version": "llm-v1", "extractor": "llm", "extractor_model": "gpt-4o-mini"})
    completion, _ = scripted(answers)
    cfg = WorkerConfig(policy_version="llm-v1", llm_extractor=LlmExtractorOptions(
        completion=completion, max_calls_per_second=None, max_retries=0))
    written = memory.ingest_many([{"content": t, "source": "notes"} for t in texts])
    report = memory.run_projections(cfg)
    return report, {t: str(it.id) for t, it in zip(texts, written.items, strict=True)}


def _policies(memory: Any) -> None:
    memory.register_policy({"version": "plain", "k": 3})
    memory.register_policy({"version": "triples", "k": 3, "fact_retrieval": "triples"})
    memory.register_policy({"version": "beam", "k": 3, "fact_retrieval": "beam"})


def _facts(driver: Any, ns: str) -> dict[str, dict[str, Any]]:
    records, _, _ = driver.execute_query(
        "MATCH (f:Fact {namespace: $ns}) RETURN f.id AS id, f.subject AS s, f.predicate AS p, f.object AS o, "
        "f.embedding AS v ORDER BY id", ns=ns)
    return {r["id"]: dict(r) for r in records}


def test_facts_are_embedded_when_written(memory: Any, driver: Any, embedder: Any) -> None:
    report, _ = _project(memory)
    assert report.facts_created == len(ANSWERS) - 1  # the generic claim states none
    facts = _facts(driver, memory.namespace)
    assert len(facts) == report.facts_created
    texts = [fact_text(f["s"], f["p"], f["o"]) for f in facts.values()]
    assert "Mara Quint married to Tobias Renn" in texts
    # Every vector is the model's, at its dimension, and the same bits as embedding the text alone.
    expected = dict(zip(texts, embedder.embed_stable(texts), strict=True))
    for f, text in zip(facts.values(), texts, strict=True):
        assert len(f["v"]) == embedder.dimension
        assert f["v"] == expected[text]


def test_the_same_writes_embed_the_same_facts_in_another_namespace(memory: Any, driver: Any, runtime: Any) -> None:
    from palimpsest.api.memory import Memory
    from tests.conftest import wipe_namespace

    _project(memory)
    other = Memory(runtime, memory.namespace + "-twin")
    try:
        _project(other, list(reversed(ANSWERS)))  # another write order, other batches: the same vectors
        mine = {(f["s"], f["p"], f["o"]): f["v"] for f in _facts(driver, memory.namespace).values()}
        theirs = {(f["s"], f["p"], f["o"]): f["v"] for f in _facts(driver, other.namespace).values()}
        assert mine == theirs
    finally:
        wipe_namespace(driver, other.namespace)


def test_beam_search_finds_the_claim_plain_recall_misses(memory: Any) -> None:
    _, ids = _project(memory)
    _policies(memory)
    answer = ids[ANSWER]
    plain = memory.recall(QUESTION, policy_version="plain", k=5)
    beam = memory.recall(QUESTION, policy_version="beam", k=5)
    assert answer not in [it.id for it in plain.items]
    assert answer in [it.id for it in beam.items]
    # The bridge is there too, and the marriages the question does not lead to are not.
    assert ids["Mara Quint directed the film Harbour Lights."] in [it.id for it in beam.items]
    assert not {ids[f"{a} is married to {b}."] for a, b in COUPLES} & {it.id for it in beam.items}
    assert beam.stages == ["facts"] and plain.stages == []
    # Replayable: the same recall gives the same packet.
    assert memory.recall(QUESTION, policy_version="beam", k=5).fingerprint == beam.fingerprint
    # Ranked deeper, plain recall has it below where the beam puts it.
    deep = [it.id for it in memory.recall(QUESTION, policy_version="plain", k=12).items]
    beam_rank = [it.id for it in beam.items].index(answer)
    assert answer not in deep or deep.index(answer) > beam_rank


def test_triple_match_and_beam_scores(memory: Any, driver: Any, runtime: Any) -> None:
    """What the source itself returns: the triple match scores every marriage alike; the beam reaches the
    answer's through the directing fact and lists no other."""
    report, ids = _project(memory)
    _policies(memory)
    vector = runtime.embedder.embed_query(QUESTION)

    def search(version: str) -> Any:
        policy = get_policy(driver, memory.namespace, version)
        req = RecallRequest(memory.namespace, QUESTION, vector, policy, 3, query_phrases=PHRASES)
        with driver.session() as session:
            return session.execute_read(search_facts, req, report.to_seq, 12)

    facts = _facts(driver, memory.namespace)
    by_text = {fact_text(f["s"], f["p"], f["o"]): fid for fid, f in facts.items()}
    triples, beam = search("triples"), search("beam")
    assert triples.seeds == [] and beam.seeds  # the query names Harbour Lights
    married = by_text["Mara Quint married to Tobias Renn"]
    others = [by_text[f"{a} married to {b}"] for a, b in COUPLES]
    assert set(others) <= set(triples.fact_scores) and married in triples.fact_scores
    assert married in beam.fact_scores and not set(others) & set(beam.fact_scores)
    directed = by_text["Mara Quint directed Harbour Lights"]
    # A two-fact path scores the mean of its facts' cosines.
    assert beam.fact_scores[married] == round((beam.fact_scores[directed] + triples.fact_scores[married]) / 2, 6)
    assert beam.claim_scores[ids[ANSWER]] == beam.fact_scores[married]


def test_fan_out_is_bounded_by_the_policy(memory: Any, driver: Any, runtime: Any) -> None:
    """A hub entity with many facts: each hop reads at most fact_beam facts per frontier entity and keeps
    fact_beam paths, so what is scored and reached is bounded whatever the hub's degree."""
    crew = [f"Crew Member {i:02d}" for i in range(30)]
    hub = {f"{c} worked on Harbour Lights.": _claim([(c, "person"), ("Harbour Lights", "film")],
                                                    [_fact(c, "worked_on", "Harbour Lights")]) for c in crew}
    report, _ = _project(memory, answers={**ANSWERS, **hub})
    vector = runtime.embedder.embed_query(QUESTION)
    for top, width, depth in [(1, 1, 1), (2, 2, 2), (5, 3, 2)]:
        policy = Policy(version="bounded", k=3, fact_retrieval="beam", fact_top=top, fact_beam=width,
                        fact_depth=depth)
        req = RecallRequest(memory.namespace, QUESTION, vector, policy, 3, query_phrases=PHRASES)
        with driver.session() as session:
            found = session.execute_read(search_facts, req, report.to_seq, 4)
        assert len(found.seeds) <= width
        assert found.facts_scored <= top + depth * width * width
        assert len(found.fact_scores) <= top + depth * width
        assert len(found.claim_scores) <= 4


def test_another_namespace_never_reaches_or_moves_a_fact_search(memory: Any, driver: Any, runtime: Any) -> None:
    from palimpsest.api.memory import Memory
    from tests.conftest import wipe_namespace

    _, ids = _project(memory)
    _policies(memory)
    before = memory.recall(QUESTION, policy_version="beam", k=5)
    other = Memory(runtime, memory.namespace + "-other")
    try:
        # The other tenant states the same facts, and more that match the question better.
        extra = {"The director of Harbour Lights is married to the director of Harbour Lights.": _claim(
            [("Harbour Lights", "film")], [_fact("Harbour Lights", "director_married_to", "Harbour Lights")])}
        _project(other, answers={**ANSWERS, **extra})
        theirs = set(_facts(driver, other.namespace))
        assert theirs and not theirs & set(_facts(driver, memory.namespace))
        after = memory.recall(QUESTION, policy_version="beam", k=5)
        assert after.fingerprint == before.fingerprint
        assert {it.id for it in after.items} <= set(ids.values())
        vector = runtime.embedder.embed_query(QUESTION)
        req = RecallRequest(memory.namespace, QUESTION, vector, get_policy(driver, memory.namespace, "beam"), 3,
                            query_phrases=PHRASES)
        with driver.session() as session:
            found = session.execute_read(search_facts, req, 10**9, 50)
        assert set(found.fact_scores) <= set(_facts(driver, memory.namespace))
        assert set(found.claim_scores) <= set(ids.values())
    finally:
        wipe_namespace(driver, other.namespace)


def test_an_exported_and_imported_namespace_retrieves_the_same_facts(memory: Any, driver: Any,
                                                                      runtime: Any) -> None:
    """Fact vectors travel with the export, stored the same way (a float32 vector property), so the copy's
    fact retrieval answers as the original's: the same facts, the same vectors, the same claims ranked."""
    from palimpsest.api.memory import Memory
    from tests.conftest import wipe_namespace

    _project(memory)
    _policies(memory)
    lines = list(memory.export_lines())
    copy = Memory(runtime, memory.namespace + "-copy")
    try:
        copy.import_lines(lines, remap=True)  # ids are unique in the database: the copy gets fresh ones
        mine = {(f["s"], f["p"], f["o"]): f["v"] for f in _facts(driver, memory.namespace).values()}
        theirs = {(f["s"], f["p"], f["o"]): f["v"] for f in _facts(driver, copy.namespace).values()}
        assert mine == theirs and all(v is not None for v in mine.values())
        original = memory.recall(QUESTION, policy_version="beam", k=5)
        imported = copy.recall(QUESTION, policy_version="beam", k=5)
        assert [(it.content, it.score) for it in imported.items] == [(it.content, it.score) for it in original.items]
    finally:
        wipe_namespace(driver, copy.namespace)
