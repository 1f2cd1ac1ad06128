"""GDS inside the database: global PageRank over entities, personalized PageRank for recall.

Both build a *Cypher-aggregation* projection filtered to one namespace (`gds.graph.project`
called as an aggregation function), under a fresh uuid name, and drop it in `finally`: two
recalls (or a recall and the worker) never share or collide on a catalog entry, and a failed
call never leaves a graph behind (`recall` also drops by name from a fresh session if the
transaction itself died).

* **Global PageRank** ranks entities on the RELATED co-mention graph (UNDIRECTED, weighted)
  and writes `Entity.pagerank`. It is a derived view for `topEntities`, not an input of recall,
  so refreshing it never changes a packet. It is recomputed when the graph grew enough since the
  last run (recorded on the Store node): ≥ `min_growth` more RELATED edges or ≥ `min_new_entities`
  more entities — and, once the worker has caught up, whenever the graph differs at all from the
  one last ranked (`exact`), so the idle state's scores are a function of the final graph only.
* **Personalized PageRank** runs on the bipartite Claim–Entity MENTIONS graph as it was at the
  packet's projections_seq (`m.revision <= $seq`), on the seeds' three-hop neighbourhood: the seed
  entities' mass flows to the claims that mention them and on to their other entities — passage
  nodes are in the graph, as in HippoRAG 2. GDS 2.13 takes no per-seed weights, so specificity is
  enforced by choosing seeds (recall keeps only entities mentioned by few claims). `concurrency: 1`
  and rounding make the scores bit-stable; results are ordered by (score desc, id). Projections
  use `readConcurrency: 1`: on a small machine the default thread fan-out costs more than it saves.
  GDS's own cost per recall (catalog entry, projection, algorithm call) is ~45 ms on this machine
  whatever the graph's size; the neighbourhood keeps the rest small (see benchmarks/README.md).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence

from neo4j import Driver, ManagedTransaction

from graph.entities import PageRankRun, graph_fingerprint


def projection_name(kind: str) -> str:
    return f"palimpsest-{kind}-{uuid.uuid4().hex}"


def drop_quietly(driver: Driver, names: Sequence[str], database: str | None = None) -> None:
    """Drop projections by name if they still exist (after a failed transaction)."""
    for name in names:
        with contextlib.suppress(Exception):  # best effort: the catalog entry may be gone already
            driver.execute_query("CALL gds.graph.drop($name, false) YIELD graphName RETURN graphName",
                                 name=name, database_=database)


# ------------------------------------------------------------------------------------ global PageRank
def refresh_pagerank(driver: Driver, namespace: str, *, min_growth: float = 0.1, min_new_entities: int = 50,
                     force: bool = False, exact: bool = False, database: str | None = None) -> PageRankRun:
    """Recompute global PageRank if the graph grew enough since the last run — or, with `exact`
    (the worker passes it once a namespace is caught up), if it changed at all: so once projections
    are idle, `Entity.pagerank` is PageRank of the final graph, whatever batches and passes built it."""
    with driver.session(database=database) as session:
        entities, related, weight = session.execute_read(graph_fingerprint, namespace)
        record = session.run(
            "MATCH (s:Store {namespace: $ns}) RETURN s.pagerank_entities AS e, s.pagerank_related AS r, "
            "s.pagerank_weight AS w", ns=namespace,
        ).single()
        last_e = int(record["e"] or 0) if record else 0
        last_r = int(record["r"] or 0) if record else 0
        last_w = record["w"] if record else None
        if entities == 0:
            return PageRankRun(False, entities, related, "no entities")
        grew = related - last_r >= max(1.0, min_growth * last_r) or entities - last_e >= min_new_entities
        stale = (last_e, last_r, last_w) != (entities, related, weight)
        if not (force or grew or (last_e == 0 and last_r == 0) or (exact and stale)):
            return PageRankRun(False, entities, related, "graph unchanged" if exact else "graph unchanged enough")
        name = projection_name("pagerank")
        try:
            session.execute_write(_pagerank_write, namespace, name)
        finally:
            drop_quietly(driver, [name], database)
        session.run(
            "MATCH (s:Store {namespace: $ns}) SET s.pagerank_entities = $e, s.pagerank_related = $r, "
            "s.pagerank_weight = $w, s.pagerank_at = datetime.transaction()",
            ns=namespace, e=entities, r=related, w=weight,
        ).consume()
        return PageRankRun(True, entities, related, "forced" if force else "graph grew" if grew else "graph changed")


def _pagerank_write(tx: ManagedTransaction, namespace: str, name: str) -> None:
    tx.run(
        # Rows in (canonical, id) order, so GDS numbers the nodes and their edges the same way for the
        # same graph (in any namespace: ids hash the namespace, canonical names do not), and the
        # power iteration sums in the same order: equal graphs give equal scores, bit for bit.
        "MATCH (a:Entity {namespace: $ns}) WITH a ORDER BY a.canonical, a.id "
        "OPTIONAL MATCH (a)-[r:RELATED]->(b:Entity) "  # RELATED stays in $ns
        "WITH a, r, b ORDER BY a.canonical, a.id, b.canonical, b.id "
        "WITH gds.graph.project($name, a, b, {relationshipProperties: {weight: coalesce(r.weight, 1.0)}}, "
        "{undirectedRelationshipTypes: ['*']}) AS g RETURN g.graphName AS graph",
        ns=namespace, name=name,
    ).consume()
    rows = list(tx.run(
        "CALL gds.pageRank.stream($name, {relationshipWeightProperty: 'weight', dampingFactor: 0.85, "
        "maxIterations: 50, tolerance: 1e-9, concurrency: 1}) YIELD nodeId, score "
        "RETURN gds.util.asNode(nodeId).id AS id, score",
        name=name,
    ))
    tx.run(
        "UNWIND $rows AS row MATCH (e:Entity {namespace: $ns, id: row.id}) USING INDEX e:Entity(id) "
        "SET e.pagerank = row.score",
        rows=[{"id": r["id"], "score": round(float(r["score"]), 9)} for r in rows], ns=namespace,
    ).consume()
    tx.run("CALL gds.graph.drop($name, false) YIELD graphName RETURN graphName", name=name).consume()


# ------------------------------------------------------------------------------------ personalized PageRank
def personalized_pagerank(tx: ManagedTransaction, namespace: str, seq: int, seed_entities: Sequence[str],
                          name: str, *, damping: float = 0.5, limit: int = 100,
                          max_degree: int = 100) -> dict[str, float]:
    """PPR over the seeds' neighbourhood in the Claim–Entity MENTIONS graph (as of projections_seq `seq`).

    The projection is the seeds' three-hop neighbourhood, not the namespace: seed entities → the
    claims that mention them → those claims' entities → the claims that mention *those*. That is as
    far as a multi-hop bridge goes (question entity → passage → bridge entity → answer passage), and
    with restart probability 1 - damping the mass beyond it is at most damping³ of the total.
    Projecting the whole namespace cost ~0.7 s per recall at 100k claims, and PageRank over it
    ~0.5 s more. Bridge entities mentioned by more than `max_degree` claims are hubs ("United
    States", a team every ticket names): they keep their edges to the seeds' claims but do not
    expand — through a hub each claim would get under 1/`max_degree` of its mass anyway.

    `damping` is the probability of following an edge (GDS's dampingFactor). Scores are rounded to
    9 decimals; the top `limit` claims by (score desc, id) are returned.
    """
    if not seed_entities:
        return {}
    try:
        pairs = tx.run(
            "MATCH (seed:Entity {namespace: $ns}) WHERE seed.id IN $entities "
            "CALL (seed) { MATCH (c1:Claim)-[m1:MENTIONS]->(seed) WHERE m1.revision <= $seq "
            "  RETURN c1 ORDER BY c1.revision DESC, c1.id LIMIT $max_degree } "
            "WITH DISTINCT c1 "
            "MATCH (c1)-[m2:MENTIONS]->(e2:Entity) WHERE m2.revision <= $seq "
            "WITH e2, collect(c1) AS near "
            "CALL (e2) { MATCH (c:Claim)-[m:MENTIONS]->(e2) WHERE m.revision <= $seq "
            "  WITH c LIMIT $over RETURN collect(c) AS bounded } "
            "UNWIND CASE WHEN size(bounded) > $max_degree THEN near ELSE bounded END AS c "
            "RETURN collect([elementId(c), elementId(e2)]) AS pairs",
            ns=namespace, seq=seq, entities=sorted(seed_entities), max_degree=max_degree, over=max_degree + 1,
        ).single()
        if pairs is None or not pairs["pairs"]:
            return {}
        # Projected from the fetched pairs in a statement of its own: run inside the neighbourhood
        # query, the same projection took ~80 ms instead of ~25 (measured on GDS 2.13).
        tx.run(
            "UNWIND $pairs AS p MATCH (c) WHERE elementId(c) = p[0] MATCH (e) WHERE elementId(e) = p[1] "
            "WITH gds.graph.project($name, c, e, {}, {undirectedRelationshipTypes: ['*'], readConcurrency: 1}) AS g "
            "RETURN g.nodeCount AS nodes",
            pairs=pairs["pairs"], name=name,
        ).consume()
        rows = tx.run(
            "MATCH (e:Entity {namespace: $ns}) WHERE e.id IN $entities WITH collect(e) AS seeds "
            "CALL gds.pageRank.stream($name, {sourceNodes: seeds, dampingFactor: $damping, maxIterations: 40, "
            "tolerance: 1e-9, concurrency: 1}) YIELD nodeId, score "
            "WITH gds.util.asNode(nodeId) AS n, score WHERE n:Claim AND score > 0 "
            "RETURN n.id AS id, round(score, 9) AS score ORDER BY score DESC, id LIMIT $limit",
            ns=namespace, entities=sorted(seed_entities), name=name, damping=damping, limit=limit,
        )
        return {r["id"]: float(r["score"]) for r in rows}
    finally:
        # If the transaction already failed this raises too; `recall` then drops by name from a new session.
        with contextlib.suppress(Exception):
            tx.run("CALL gds.graph.drop($name, false) YIELD graphName RETURN graphName", name=name).consume()


def entity_specificity(tx: ManagedTransaction, namespace: str, seq: int,
                       entity_ids: Sequence[str], cap: int) -> dict[str, int]:
    """How many claims mention each entity as of `seq` (document frequency: low = specific), counted
    up to `cap` + 1: beyond the hub degree every entity is equally unspecific, and counting a hub's
    every mention cost more than the rest of the seed choice."""
    if not entity_ids:
        return {}
    rows = tx.run(
        "UNWIND $ids AS id MATCH (e:Entity {namespace: $ns, id: id}) USING INDEX e:Entity(id) "
        "CALL (e) { MATCH (c:Claim)-[m:MENTIONS]->(e) WHERE m.revision <= $seq WITH c LIMIT $over "
        "RETURN count(c) AS df } RETURN id, df",
        ids=sorted(set(entity_ids)), ns=namespace, seq=seq, over=cap + 1,
    )
    return {r["id"]: int(r["df"]) for r in rows}


def linked_entities(tx: ManagedTransaction, namespace: str, seq: int, phrases: Sequence[str],
                    claim_ids: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Entities named by the query (canonical phrase = entity canonical) and those mentioned by the
    given claims, both as of `seq`: (query entity ids, claim id → entity ids)."""
    query_ids: list[str] = []
    if phrases:
        query_ids = [r["id"] for r in tx.run(
            "UNWIND $phrases AS p MATCH (e:Entity {namespace: $ns, canonical: p}) "
            "WHERE EXISTS { MATCH (:Claim {namespace: $ns})-[m:MENTIONS]->(e) WHERE m.revision <= $seq } "
            "RETURN DISTINCT e.id AS id ORDER BY id",
            phrases=sorted(set(phrases)), ns=namespace, seq=seq,
        )]
    by_claim: dict[str, list[str]] = {}
    if claim_ids:
        for r in tx.run(
            "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id})-[m:MENTIONS]->(e:Entity) "
            "USING INDEX c:Claim(id) WHERE m.revision <= $seq RETURN id, e.id AS eid ORDER BY id, eid",
            ids=list(claim_ids), ns=namespace, seq=seq,
        ):
            by_claim.setdefault(r["id"], []).append(r["eid"])
    return query_ids, by_claim


def gds_available(driver: Driver, database: str | None = None) -> bool:
    try:
        records, _, _ = driver.execute_query("RETURN gds.version() AS v", database_=database, routing_="r")
        return bool(records)
    except Exception:
        return False


__all__ = ["drop_quietly", "entity_specificity", "gds_available", "linked_entities", "personalized_pagerank",
           "projection_name", "refresh_pagerank"]

