"""The in-memory entity graph (graph.knowledge.mention_graph) against the statements it replaces, on a real Neo4j.

The statements in graph.knowledge.ppr are the reference: on random MENTIONS graphs with hubs, backfilled edges
(an edge written at a later revision than its claim) and random seqs, seeds and degrees, the walk over
a snapshot read whole and over one caught up by deltas must answer exactly as they do. Then end to end:
PPR packets with and without the cache are identical through writes, the worker, an erasure and a
drop-and-rewrite of the namespace.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from palimpsest.graph.knowledge import mention_graph, ppr
from palimpsest.graph.knowledge.mention_graph import MentionCache

pytestmark = pytest.mark.integration


def _random_graph(rng: random.Random) -> list[tuple[str, int, str, int]]:
    """(claim, claim revision, entity, edge revision): claims written over 12 revisions, one hub entity
    named by many claims, a share of edges backfilled at a later revision than their claim."""
    claims = {f"c{i:03d}": rng.randint(1, 12) for i in range(rng.randint(10, 70))}
    entities = [f"e{i:02d}" for i in range(rng.randint(3, 20))]
    edges: dict[tuple[str, str], tuple[str, int, str, int]] = {}
    for claim, revision in claims.items():
        for entity in rng.sample(entities, rng.randint(1, min(3, len(entities)))):
            late = rng.random() < 0.2
            edges[(claim, entity)] = (claim, revision, entity, rng.randint(revision, 12) if late else revision)
        if rng.random() < 0.5:
            edges[(claim, "hub")] = (claim, revision, "hub", revision)
    return sorted(edges.values())


def _write(driver: Any, ns: str, edges: list[tuple[str, int, str, int]]) -> None:
    driver.execute_query(
        "UNWIND $edges AS e MERGE (c:Claim {namespace: $ns, id: e[0]}) SET c.revision = e[1], "
        "c.content_hash = reverse(e[0]) "  # another order than the ids', which a revision's ties fall to
        "MERGE (x:Entity {namespace: $ns, id: e[2]}) SET x.canonical = 'name ' + e[2] "
        "MERGE (c)-[:MENTIONS {revision: e[3]}]->(x)", edges=[list(e) for e in edges], ns=ns)


def _statements(tx: Any, namespace: str, seq: int, seeds: list[str], degree: int, entities: list[str],
                phrases: list[str], claims: list[str]) -> tuple[Any, Any, Any]:
    """The reference answers: graph.knowledge.ppr's statements."""
    return (ppr.neighbourhood(tx, namespace, seq, seeds, degree),
            ppr.seed_facts(tx, namespace, seq, entities, degree),
            ppr.linked_entities(tx, namespace, seq, phrases, claims))


@pytest.mark.parametrize("seed", range(10))
def test_the_walk_in_memory_answers_as_the_statements_do(driver: Any, namespace: str, seed: int) -> None:
    rng = random.Random(seed)
    edges = _random_graph(rng)
    _write(driver, namespace, edges)
    claims = sorted({c for c, _, _, _ in edges})
    entities = sorted({e for _, _, e, _ in edges} | {"e99"})  # e99: an id nothing mentions
    with driver.session() as session:
        whole = session.execute_read(lambda tx: MentionCache().graph(tx, namespace, "life-1", 12))
        cache = MentionCache()
        session.execute_read(lambda tx: cache.graph(tx, namespace, "life-1", 5))
        caught_up = session.execute_read(lambda tx: cache.graph(tx, namespace, "life-1", 12))
        assert whole is not None and caught_up is not None and cache.held() == {namespace: 12}
        assert caught_up.edge_table() == whole.edge_table()
        for _ in range(12):
            seq = rng.randint(0, 12)
            degree = rng.randint(1, 8)
            seeds = rng.sample(entities, rng.randint(1, 4))
            some_claims = rng.sample(claims, rng.randint(1, 6))
            phrases = [f"name {e}" for e in rng.sample(entities, 2)] + ["nobody"]
            pairs, (df, name), linked = session.execute_read(_statements, namespace, seq, seeds, degree, entities,
                                                             phrases, some_claims)
            for graph in (whole, caught_up):
                assert mention_graph.neighbourhood(graph, seq, seeds, degree) == pairs
                held_df, held_name = mention_graph.seed_facts(graph, seq, entities, degree)
                assert held_df == {e: n for e, n in df.items() if n > 0}
                assert {e: held_name[e] for e in held_df} == {e: name[e] for e in held_df}
                assert mention_graph.linked(graph, seq, phrases, some_claims) == linked
                for damping, limit in ((0.5, 3), (0.85, 100)):
                    assert mention_graph.top_ranked(graph, seq, seeds, degree, damping=damping, limit=limit) == \
                        ppr.top_claims(ppr.rank(pairs, seeds, damping=damping), limit)


def test_a_namespace_above_the_bound_is_not_held(driver: Any, namespace: str) -> None:
    _write(driver, namespace, [(f"c{i}", 1, "e", 1) for i in range(5)])
    cache = MentionCache(max_edges=4)
    with driver.session() as session:
        assert session.execute_read(lambda tx: cache.graph(tx, namespace, "life-1", 1)) is None
        assert cache.held() == {}
        # a larger bound holds it; the deltas that would overflow the bound read the whole graph
        roomy = MentionCache(max_edges=5)
        assert session.execute_read(lambda tx: roomy.graph(tx, namespace, "life-1", 1)).edges == 5  # type: ignore[union-attr]


CORPUS = [
    ("Lena Vogt was born in the town of Harrow Lake.", "Lena Vogt"),
    ("Harrow Lake hosts the annual Kestrel Regatta every August.", "Harrow Lake"),
    ("The Kestrel Regatta was first sailed by fishermen from Dunmore.", "Kestrel Regatta"),
] + [(f"Town {chr(65 + i)} is known for its bakery and its tram line to Harrow Lake.", f"Town {chr(65 + i)}")
     for i in range(8)]
QUERIES = ["Which annual event takes place in the birthplace of Lena Vogt?", "Who first sailed the regatta?",
           "Which towns have a tram line?"]


def _packets(memory: Any, other: Any) -> list[Any]:
    out = []
    for query in QUERIES:
        for as_of in (None, 1):
            warm = memory.recall(query, policy_version="ppr", as_of_revision=as_of)
            cold = other.recall(query, policy_version="ppr", as_of_revision=as_of)
            assert warm.model_dump(exclude={"served_at"}) == cold.model_dump(exclude={"served_at"}), query
            out.append(warm)
    return out


def test_ppr_packets_are_the_same_with_and_without_the_cache(runtime: Any, namespace: str) -> None:
    from palimpsest.api.memory import Memory
    from palimpsest.graph.lifecycle.maintenance import drop_namespace

    inline = dataclasses.replace(runtime, mentions=MentionCache())  # reads in the recall's transaction
    background = dataclasses.replace(runtime, mentions=MentionCache(driver=runtime.driver))  # as a server does
    uncached = dataclasses.replace(runtime, mentions=MentionCache(max_edges=0))
    memory, other = Memory(inline, namespace), Memory(uncached, namespace)
    served = Memory(background, namespace)

    def fill(items: list[tuple[str, str]]) -> list[str]:
        res = memory.ingest_many([{"content": c, "source": "wiki", "metadata": {"subject": s}} for c, s in items])
        memory.run_projections()
        return [str(i.id) for i in res.items]

    def same_everywhere() -> list[Any]:
        packets = _packets(memory, other)
        assert background.mentions is not None
        _packets(served, other)  # stale: served by the statements while a thread reads the entity graph
        background.mentions.settle(30)
        assert namespace in background.mentions.held()
        assert [p.model_dump(exclude={"served_at"}) for p in _packets(served, other)] == \
            [p.model_dump(exclude={"served_at"}) for p in packets]
        return packets

    ids = fill(CORPUS[:6])
    memory.register_policy({"version": "ppr", "graph_expansion": "ppr", "k": 4, "ppr_seeds": 6})
    first = same_everywhere()
    assert inline.mentions is not None and uncached.mentions is not None
    held = inline.mentions.held()[namespace]
    assert uncached.mentions.held() == {}
    assert any("ppr" in p.stages for p in first)

    ids += fill(CORPUS[6:])  # caught up by a delta read
    same_everywhere()
    assert inline.mentions.held()[namespace] > held

    memory.erase(ids=[ids[1]], reason="test")  # a new incarnation: read whole again, without the claim
    after = same_everywhere()
    assert all(ids[1] not in [it.id for it in p.items] for p in after)
    assert not inline.mentions._graphs[namespace].has_claim(ids[1])

    drop_namespace(runtime.driver, namespace)  # written again from scratch: other claims, same revisions
    fill([(c.replace("Harrow", "Marsh"), s) for c, s in CORPUS[:6]])
    memory.register_policy({"version": "ppr", "graph_expansion": "ppr", "k": 4, "ppr_seeds": 6})
    same_everywhere()
