"""Personalized PageRank for recall: the seeds' neighbourhood read in one statement, ranked in process.

Recall's graph expansion (HippoRAG-style) runs PPR on the bipartite Claim–Entity MENTIONS graph as
it was at the packet's projections_seq (`m.revision <= seq`), restricted to the seeds' three-hop
neighbourhood: the seed entities' mass flows to the claims that mention them and on to those
claims' other entities — passage nodes are in the graph, as in HippoRAG 2. That neighbourhood is
small (bounded by `max_degree` per entity), so the power iteration is a few thousand multiply-adds
per step.

It used to run in GDS (a Cypher projection under a fresh catalog name, `gds.pageRank.stream`,
`gds.graph.drop`). GDS's fixed cost per call — catalog entry, projection, algorithm set-up — was
~45 ms on a 2-core machine whatever the graph's size; the same iteration in numpy over the fetched
edges takes a few milliseconds. `rank` follows GDS's PageRank computation step for step (its Pregel
formulation: every node keeps its rank and sends the *change* of its rank, divided by its degree,
while that change exceeds the tolerance; superstep 0 sends the initial ranks `1 - damping` of the
sources), so its scores are GDS's at the 9 decimals they are rounded to — tests check it against
GDS on random graphs. Being in process also makes the scores independent of how the engine numbers
nodes: nodes are numbered by id, edges in id order, so equal graphs give equal scores bit for bit in
any database (an exported and re-imported namespace included).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from neo4j import ManagedTransaction

MAX_ITERATIONS = 40
TOLERANCE = 1e-9

# The seeds' neighbourhood: seed entities → (at most max_degree of) the claims that mention them (the
# newest; equal revisions — claims written in one call — by content, then id, so the same writes walk
# alike in any namespace) → those claims' entities → the claims that mention *those*. A bridge entity
# mentioned by more than max_degree claims is a hub ("United States", a team every ticket names): it keeps
# its edges to the seeds' claims but does not expand — through a hub each claim would get under
# 1/max_degree of its mass.
# MENTIONS only ever runs from a Claim to an Entity (graph.knowledge.entities writes it), so the far ends are not
# label-checked: that check was a third of the statement's cost at 100k claims.
_NEIGHBOURHOOD_CYPHER = (
    "MATCH (seed:Entity {namespace: $ns}) WHERE seed.id IN $entities "
    "CALL (seed) { MATCH (c1)-[m1:MENTIONS]->(seed) WHERE m1.revision <= $seq "
    "  RETURN c1 ORDER BY c1.revision DESC, coalesce(c1.content_hash, ''), c1.id LIMIT $max_degree } "
    "WITH DISTINCT c1 "
    "MATCH (c1)-[m2:MENTIONS]->(e2) WHERE m2.revision <= $seq "
    "WITH e2, collect(c1) AS near "
    "CALL (e2) { MATCH (c)-[m:MENTIONS]->(e2) WHERE m.revision <= $seq "
    "  WITH c LIMIT $over RETURN collect(c) AS bounded } "
    "UNWIND CASE WHEN size(bounded) > $max_degree THEN near ELSE bounded END AS c "
    "RETURN collect([c.id, e2.id]) AS pairs"
)


def neighbourhood(tx: ManagedTransaction, namespace: str, seq: int, seed_entities: Sequence[str],
                  max_degree: int) -> list[tuple[str, str]]:
    """The (claim id, entity id) MENTIONS pairs of the seeds' neighbourhood as of `seq`, distinct."""
    if not seed_entities:
        return []
    record = tx.run(_NEIGHBOURHOOD_CYPHER, ns=namespace, seq=seq, entities=sorted(set(seed_entities)),
                    max_degree=max_degree, over=max_degree + 1).single()
    if record is None:
        return []
    return sorted({(str(c), str(e)) for c, e in record["pairs"]})


def rank(pairs: Sequence[tuple[str, str]], seed_entities: Sequence[str], *, damping: float,
         max_iterations: int = MAX_ITERATIONS, tolerance: float = TOLERANCE) -> dict[str, float]:
    """PPR scores of the claims in the undirected bipartite graph `pairs` (claim id, entity id), seeded
    uniformly at `seed_entities` with restart probability `1 - damping`. A pure function: claims with
    a positive score, scores rounded to 9 decimals.

    GDS's computation, per superstep: a node that received messages adds `damping × their sum` to its
    rank; a node whose rank changed by more than `tolerance` (or any node at superstep 0) sends the
    change divided by its degree to every neighbour. `max_iterations` supersteps, superstep 0 included."""
    if not pairs:
        return {}
    # Nodes numbered by sorted id (claims first, then entities), edges deduplicated and in that order:
    # the sums below run in an order that depends on the graph alone. numpy sorts the strings in C.
    claims, left = np.unique(np.array([c for c, _ in pairs]), return_inverse=True)
    entities, right = np.unique(np.array([e for _, e in pairs] + sorted(set(seed_entities))), return_inverse=True)
    seeds, right = right[len(pairs):], right[:len(pairs)]
    scores = _iterate(left, right, seeds, len(claims), len(entities), damping, max_iterations, tolerance)
    positive = np.flatnonzero(scores > 0)
    return {str(claims[i]): round(float(scores[i]), 9) for i in positive}


def rank_numbered(claims: np.ndarray, entities: np.ndarray, seeds: np.ndarray, *, damping: float,
                  max_iterations: int = MAX_ITERATIONS, tolerance: float = TOLERANCE) -> tuple[np.ndarray, np.ndarray]:
    """`rank` on numbered nodes (graph.knowledge.mention_graph numbers claims and entities in id order): the edges
    (claims[i], entities[i]) and seed entity numbers. Returns the claims' numbers and their unrounded
    scores (every claim of the graph). Numbers ordered as the ids are give `rank`'s node order, so the
    scores are `rank`'s bit for bit (tests compare both)."""
    if not claims.size:
        return claims, np.zeros(0)
    claim_numbers, left = np.unique(claims, return_inverse=True)
    entity_numbers, right = np.unique(np.concatenate([entities, seeds]), return_inverse=True)
    local_seeds, right = right[len(entities):], right[:len(entities)]
    return claim_numbers, _iterate(left, right, local_seeds, len(claim_numbers), len(entity_numbers), damping,
                                   max_iterations, tolerance)


def _iterate(left: np.ndarray, right: np.ndarray, seeds: np.ndarray, n_claims: int, n_entities: int, damping: float,
             max_iterations: int, tolerance: float) -> np.ndarray:
    """The power iteration over edges (claim left[i], entity right[i]) in local numbers; the claims' scores."""
    edge = np.unique(left.astype(np.int64) * n_entities + right)
    left, right = edge // n_entities, edge % n_entities + n_claims
    n = n_claims + n_entities
    source = np.concatenate([left, right])  # undirected: each pair is an edge both ways
    target = np.concatenate([right, left])
    degree = np.bincount(source, minlength=n).astype(np.float64)
    has_edges = degree > 0
    safe_degree = np.where(has_edges, degree, 1.0)
    scores = np.zeros(n)
    scores[seeds + n_claims] = 1.0 - damping
    delta = scores.copy()
    sending = has_edges.copy()  # superstep 0: every node sends its initial rank
    for _ in range(1, max_iterations):
        if not sending.any():
            break
        share = np.where(sending, delta / safe_degree, 0.0)
        received = np.bincount(target, weights=share[source], minlength=n)
        got_message = np.bincount(target, weights=sending[source].astype(np.float64), minlength=n) > 0
        delta = np.where(got_message, damping * received, 0.0)
        scores = scores + delta
        sending = got_message & (delta > tolerance) & has_edges
    return scores[:n_claims]


def top_claims(scores: dict[str, float], limit: int) -> dict[str, float]:
    """The `limit` best-scored claims and every claim tied with the last of them, by (score desc, id).

    Claims a seed reaches alike score alike, and a claim id is random: a cut through a tie would admit
    claims by their ids, so two namespaces holding the same claims would walk to different packets. The
    whole tie goes on; the ranking orders it by content (graph.claims.order). Bounded by the neighbourhood
    (at most `ppr_max_degree` claims per seed)."""
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    if 0 < limit < len(ordered):
        last = ordered[limit - 1][1]
        while limit < len(ordered) and ordered[limit][1] == last:
            limit += 1
    return dict(ordered[:max(limit, 0)])


def top_numbered(claims: np.ndarray, scores: np.ndarray, names: np.ndarray, limit: int) -> dict[str, float]:
    """top_claims(rank's dict) from rank_numbered's arrays, `names[number]` being a claim's id, without
    rounding and sorting every claim: only those that can make the cut once rounded to 9 decimals
    (rounding is monotone, so none scoring below the limit-th best by more than 1e-9 can)."""
    positive = np.flatnonzero(scores > 0)
    if positive.size > limit > 0:
        nth = np.partition(scores[positive], positive.size - limit)[positive.size - limit]
        positive = positive[scores[positive] >= nth - 1e-9]
    picked = {str(names[claims[i]]): round(float(scores[i]), 9) for i in positive}
    return top_claims(picked, limit)


def seed_facts(tx: ManagedTransaction, namespace: str, seq: int, entity_ids: Sequence[str],
               cap: int) -> tuple[dict[str, int], dict[str, str]]:
    """What seed choice reads of each entity, in one statement: how many claims mention it as of `seq`
    (document frequency: low = specific), counted up to `cap` + 1 — beyond the hub degree every entity
    is equally unspecific, and counting a hub's every mention cost more than the rest of the seed
    choice — and its canonical name, which breaks ties of specificity (an entity id is derived from its
    namespace: extraction.entities.job.entity_id)."""
    if not entity_ids:
        return {}, {}
    rows = list(tx.run(
        "UNWIND $ids AS id MATCH (e:Entity {namespace: $ns, id: id}) USING INDEX e:Entity(id) "
        "CALL (e) { MATCH (c)-[m:MENTIONS]->(e) WHERE m.revision <= $seq WITH c LIMIT $over "
        "RETURN count(c) AS df } RETURN id, df, e.canonical AS canonical",
        ids=sorted(set(entity_ids)), ns=namespace, seq=seq, over=cap + 1,
    ))
    return {r["id"]: int(r["df"]) for r in rows}, {r["id"]: str(r["canonical"]) for r in rows}


def linked_entities(tx: ManagedTransaction, namespace: str, seq: int, phrases: Sequence[str],
                    claim_ids: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Entities named by the query (canonical phrase = entity canonical) and those mentioned by the
    given claims, both as of `seq`: (query entity ids, claim id → entity ids)."""
    query_ids: list[str] = []
    if phrases:
        query_ids = [r["id"] for r in tx.run(
            "UNWIND $phrases AS p MATCH (e:Entity {namespace: $ns, canonical: p}) "
            "WHERE EXISTS { MATCH ()-[m:MENTIONS]->(e) WHERE m.revision <= $seq } "
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


__all__ = ["MAX_ITERATIONS", "TOLERANCE", "linked_entities", "neighbourhood", "rank", "rank_numbered", "seed_facts",
           "top_claims", "top_numbered"]
