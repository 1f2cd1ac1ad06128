"""Personalized-PageRank recall and the entity graph queries, against a real Neo4j with GDS."""

from __future__ import annotations

from typing import Any

import pytest

from palimpsest.api.memory import Memory
from palimpsest.schema.models import Entity, EntityDetail, EntityNeighbour

pytestmark = pytest.mark.integration

# A two-hop chain: the query names "Lena Vogt"; only the bridge claim names her *and* Harrow
# Lake, and the answer claim talks about Harrow Lake without mentioning her at all.
CORPUS = [
    ("Lena Vogt was born in the town of Harrow Lake.", {"subject": "Lena Vogt"}),
    ("Harrow Lake hosts the annual Kestrel Regatta every August.", {"subject": "Harrow Lake"}),
    ("The Kestrel Regatta was first sailed by fishermen.", {"subject": "Kestrel Regatta"}),
] + [(f"Distractor town number {i} is known for its bakery and its tram line.", {"subject": f"Town {chr(65 + i)}"})
     for i in range(12)]

QUERY = "Which annual event takes place in the birthplace of Lena Vogt?"


def _setup(memory: Any) -> dict[str, str]:
    res = memory.ingest_many([{"content": c, "source": "wiki", "metadata": m} for c, m in CORPUS])
    memory.run_projections()
    # 8 seeds: the 12 distractors are each named by one claim, so they are as "specific" as the bridge.
    memory.register_policy({"version": "ppr-v1", "graph_expansion": "ppr", "k": 3, "ppr_seeds": 8})
    memory.register_policy({"version": "ppr-rrf", "graph_expansion": "ppr", "k": 3, "fusion": "rrf", "ppr_seeds": 8})
    memory.register_policy({"version": "plain", "k": 3})
    return {c: str(i.id) for (c, _), i in zip(CORPUS, res.items, strict=True)}


def test_ppr_reaches_the_second_hop_and_is_deterministic(memory: Any) -> None:
    ids = _setup(memory)
    answer = ids[CORPUS[1][0]]
    ppr = memory.recall(QUERY, policy_version="ppr-v1")
    again = memory.recall(QUERY, policy_version="ppr-v1")
    assert ppr.fingerprint == again.fingerprint
    assert ppr.model_dump(exclude={"served_at"}) == again.model_dump(exclude={"served_at"})
    got = [it.id for it in ppr.items]
    assert answer in got
    plain = memory.recall(QUERY, policy_version="plain")
    # the graph list lifts the bridge's neighbour above where similarity alone puts it
    plain_rank = {it.id: it.rank for it in plain.items}
    assert plain_rank.get(answer, 99) >= {it.id: it.rank for it in ppr.items}[answer]
    rrf = memory.recall(QUERY, policy_version="ppr-rrf")
    assert rrf.fingerprint == memory.recall(QUERY, policy_version="ppr-rrf").fingerprint


def test_ppr_respects_visibility_and_projections_seq(memory: Any) -> None:
    ids = _setup(memory)
    answer = ids[CORPUS[1][0]]
    memory.retract(answer, "wrong lake")
    packet = memory.recall(QUERY, policy_version="ppr-v1", k=5)
    assert answer not in [it.id for it in packet.items]
    assert packet.hidden.retracted >= 1
    # Pinning projections_seq to 0 (before any entity existed) gives a packet with no graph evidence,
    # the same as the plain policy's ranking of the same pool.
    pinned = memory.recall(QUERY, policy_version="ppr-v1", k=5, projections_seq=0)
    assert pinned.projections_seq == 0
    assert pinned.fingerprint == memory.recall(QUERY, policy_version="ppr-v1", k=5, projections_seq=0).fingerprint


def test_recall_creates_no_gds_catalog_entry(memory: Any, driver: Any, runtime: Any) -> None:
    """PPR ranks the neighbourhood in process (graph.knowledge.ppr): a recall leaves the GDS catalog as it found it."""
    from palimpsest.extraction.entities import query_phrases
    from palimpsest.graph.recall import RecallRequest, recall

    _setup(memory)
    req = RecallRequest(memory.namespace, QUERY, runtime.embedder.embed_query(QUERY), memory.policy("ppr-v1"), 3,
                        query_phrases=tuple(query_phrases(QUERY)))
    before, _, _ = driver.execute_query("CALL gds.graph.list() YIELD graphName RETURN graphName")
    packet = recall(driver, req)
    assert "ppr" in packet.stages
    after, _, _ = driver.execute_query("CALL gds.graph.list() YIELD graphName RETURN graphName")
    assert not {r["graphName"] for r in after if str(r["graphName"]).startswith("palimpsest-ppr")} - {
        r["graphName"] for r in before}


def test_entity_graph_queries(memory: Memory) -> None:
    _setup(memory)
    lena = memory.find_entities("lena VOGT")
    regatta = memory.find_entities("Kestrel Regatta")
    assert len(lena) == 1 and len(regatta) == 1
    assert type(lena[0]) is Entity and lena[0].name == "Lena Vogt" and lena[0].canonical == "lena vogt"
    path = memory.entity_path(lena[0].id, regatta[0].id, max_hops=3)
    assert all(type(p) is Entity for p in path)
    assert [p.canonical for p in path] == ["lena vogt", "harrow lake", "kestrel regatta"]
    assert memory.entity_path(lena[0].id, regatta[0].id, max_hops=1) == []
    # a path from an entity to itself is that entity, as a path lists it (no mention count)
    assert memory.entity_path(lena[0].id, lena[0].id) == [lena[0]]
    neighbours = memory.entity_neighbours(lena[0].id, first=5)
    assert all(isinstance(n, EntityNeighbour) for n in neighbours)
    assert [n.canonical for n in neighbours] == ["harrow lake"]
    assert neighbours[0].weight == 1.0
    assert memory.entity_neighbours_many([lena[0].id, "no-such-entity"], first=5) == {
        lena[0].id: neighbours, "no-such-entity": []}
    assert memory.refresh_pagerank(force=True)
    top = memory.top_entities(first=3)
    assert len(top) == 3 and all(type(t) is Entity and t.pagerank is not None for t in top)
    assert [t.pagerank for t in top] == sorted((t.pagerank or 0.0 for t in top), reverse=True)
    # the bridge entity (two RELATED edges) outranks a leaf
    assert top[0].canonical == "harrow lake"
    entity = memory.entity(lena[0].id)
    assert isinstance(entity, EntityDetail) and entity.mentions == 1
    assert entity.model_dump(exclude={"mentions", "pagerank"}) == lena[0].model_dump(exclude={"pagerank"})
