"""GDS inside the database: global PageRank over entities.

Global PageRank builds a *Cypher-aggregation* projection filtered to one namespace
(`gds.graph.project` called as an aggregation function), under a fresh uuid name, and drops it in
`finally`: two runs never share or collide on a catalog entry, and a failed call never leaves a
graph behind.

It ranks entities on the RELATED co-mention graph (UNDIRECTED, weighted) and writes
`Entity.pagerank`. It is a derived view for `topEntities`, not an input of recall, so refreshing it
never changes a packet. It is recomputed when the graph grew enough since the last run (recorded on
the Store node): ≥ `min_growth` more RELATED edges or ≥ `min_new_entities` more entities — and,
once the worker has caught up, whenever the graph differs at all from the one last ranked
(`exact`), so the idle state's scores are a function of the final graph only.

Recall's Personalized PageRank does not run here: GDS's fixed cost per call (~45 ms) was most of
a recall, and the seeds' neighbourhood is small enough to rank in process (graph.knowledge.ppr).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence

from neo4j import Driver, ManagedTransaction

from palimpsest.graph.knowledge.entities import PageRankRun, graph_fingerprint


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


def gds_available(driver: Driver, database: str | None = None) -> bool:
    try:
        records, _, _ = driver.execute_query("RETURN gds.version() AS v", database_=database, routing_="r")
        return bool(records)
    except Exception:
        return False


__all__ = ["drop_quietly", "gds_available", "projection_name", "refresh_pagerank"]

