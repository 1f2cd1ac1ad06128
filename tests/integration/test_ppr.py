"""Recall's Personalized PageRank (graph.knowledge.ppr) against GDS's PageRank as the reference, on a real Neo4j.

graph.knowledge.ppr ranks the seeds' neighbourhood in process, following GDS's computation step for step; GDS
itself is the oracle here: the same edges projected into a GDS catalog graph, `gds.pageRank.stream`
with the same source nodes, damping, iterations and tolerance must give the same scores.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from palimpsest.graph.knowledge import ppr

pytestmark = pytest.mark.integration


def _mentions_graph(driver: Any, ns: str, edges: list[tuple[str, str]]) -> None:
    """Claims and entities named by their ids, MENTIONS edges at revision 1 (the shape the entity job writes)."""
    driver.execute_query(
        "UNWIND $edges AS e MERGE (c:Claim {namespace: $ns, id: e[0]}) MERGE (x:Entity {namespace: $ns, id: e[1]}) "
        "MERGE (c)-[:MENTIONS {revision: 1}]->(x)", edges=[list(e) for e in edges], ns=ns)


def _ppr(tx: Any, ns: str, seq: int, seeds: list[str], max_degree: int) -> dict[str, float]:
    """What graph expansion ranks by statements: the seeds' neighbourhood, ranked (damping 0.5, top 100)."""
    return ppr.top_claims(ppr.rank(ppr.neighbourhood(tx, ns, seq, seeds, max_degree), seeds, damping=0.5), 100)


def _gds_scores(driver: Any, ns: str, pairs: list[tuple[str, str]], seeds: list[str],
                damping: float) -> dict[str, float]:
    """The reference: GDS PageRank over the same pairs, undirected, seeded at the same entities."""
    name = f"palimpsest-test-ppr-{ns}"
    try:
        driver.execute_query(
            "UNWIND $pairs AS p MATCH (c:Claim {namespace: $ns, id: p[0]}) MATCH (e:Entity {namespace: $ns, id: p[1]}) "
            "WITH gds.graph.project($name, c, e, {}, {undirectedRelationshipTypes: ['*']}) AS g RETURN g.nodeCount",
            pairs=[list(p) for p in pairs], ns=ns, name=name)
        records, _, _ = driver.execute_query(
            "MATCH (e:Entity {namespace: $ns}) WHERE e.id IN $seeds WITH collect(e) AS seeds "
            "CALL gds.pageRank.stream($name, {sourceNodes: seeds, dampingFactor: $damping, maxIterations: $iterations, "
            "tolerance: $tolerance, concurrency: 1}) YIELD nodeId, score "
            "WITH gds.util.asNode(nodeId) AS n, score WHERE n:Claim AND score > 0 RETURN n.id AS id, score",
            ns=ns, seeds=seeds, name=name, damping=damping, iterations=ppr.MAX_ITERATIONS, tolerance=ppr.TOLERANCE)
        return {r["id"]: float(r["score"]) for r in records}
    finally:
        driver.execute_query("CALL gds.graph.drop($name, false) YIELD graphName RETURN graphName", name=name)


@pytest.mark.parametrize("seed", range(6))
def test_local_ppr_matches_gds(driver: Any, namespace: str, seed: int) -> None:
    rng = random.Random(seed)
    claims, entities = rng.randint(5, 60), rng.randint(3, 25)
    pairs = sorted({(f"c{rng.randrange(claims)}", f"e{rng.randrange(entities)}") for _ in range(rng.randint(5, 150))})
    _mentions_graph(driver, namespace, pairs)
    mentioned = sorted({e for _, e in pairs})
    seeds = sorted(rng.sample(mentioned, min(len(mentioned), rng.randint(1, 4))))
    damping = rng.choice([0.5, 0.85])
    expected = _gds_scores(driver, namespace, pairs, seeds, damping)
    got = ppr.rank(pairs, seeds, damping=damping)
    assert set(got) == set(expected)
    for cid, score in expected.items():
        assert got[cid] == pytest.approx(score, abs=2e-9), cid


def test_neighbourhood_stops_at_three_hops_and_hubs_do_not_expand(driver: Any, namespace: str) -> None:
    # seed S -> claim c1 -> bridge B -> answer c2 -> E3 -> c3 (four hops: outside the neighbourhood).
    # c1 also names the hub H, which 5 other claims name too.
    edges = [("c1", "S"), ("c1", "B"), ("c1", "H"), ("c2", "B"), ("c2", "E3"), ("c3", "E3")]
    edges += [(f"h{i}", "H") for i in range(5)]
    _mentions_graph(driver, namespace, edges)

    def scores(max_degree: int) -> dict[str, float]:
        with driver.session() as session:
            return session.execute_read(lambda tx: _ppr(tx, namespace, 1, ["S"], max_degree))

    narrow = scores(3)   # H (5 claims + c1) is a hub: keeps its edge to c1, does not expand
    assert {"c1", "c2"} <= set(narrow)
    assert not {f"h{i}" for i in range(5)} & set(narrow)
    assert "c3" not in narrow
    wide = scores(10)    # now H is an ordinary bridge
    assert {f"h{i}" for i in range(5)} <= set(wide)
    assert "c3" not in wide
    assert narrow == scores(3)  # bit-stable
    with driver.session() as session:  # nothing is seen before the mentions' revision
        assert session.execute_read(lambda tx: _ppr(tx, namespace, 0, ["S"], 100)) == {}


def test_scores_do_not_depend_on_edge_order() -> None:
    rng = random.Random(3)
    pairs = sorted({(f"c{rng.randrange(40)}", f"e{rng.randrange(12)}") for _ in range(120)})
    shuffled = pairs[:]
    rng.shuffle(shuffled)
    assert ppr.rank(pairs, ["e1", "e2"], damping=0.5) == ppr.rank(shuffled + pairs[:7], ["e2", "e1"], damping=0.5)
    top = ppr.top_claims(ppr.rank(pairs, ["e1"], damping=0.5), 5)
    assert list(top.values()) == sorted(top.values(), reverse=True)
