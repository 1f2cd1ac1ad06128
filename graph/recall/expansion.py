"""Graph expansion: Personalized PageRank over the entity graph as a third candidate list."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import NamedTuple

from neo4j import ManagedTransaction

from palimpsest.graph.knowledge import mention_graph, ppr
from palimpsest.graph.recall.candidates import claims_by_id
from palimpsest.graph.recall.pool import Pool
from palimpsest.graph.recall.request import RecallRequest


class _Walk(NamedTuple):
    """The three steps of graph expansion that read the entity graph, each taking seq first: by
    statements (graph.knowledge.ppr) or over the process's snapshot (graph.knowledge.mention_graph), with the
    same answers.
    `seeds` gives each entity's specificity and canonical name (graph.knowledge.ppr.seed_facts); `ranked` is the
    seeds' neighbourhood ranked by PPR and cut to the best `limit` claims (ties at the cut kept)."""

    linked: Callable[[int, Sequence[str], Sequence[str]], tuple[list[str], dict[str, list[str]]]]
    seeds: Callable[[int, Sequence[str], int], tuple[dict[str, int], dict[str, str]]]
    ranked: Callable[[int, Sequence[str], int, float, int], dict[str, float]]


def _ranked_by_statements(tx: ManagedTransaction, namespace: str, seq: int, seeds: Sequence[str], max_degree: int,
                          damping: float, limit: int) -> dict[str, float]:
    pairs = ppr.neighbourhood(tx, namespace, seq, seeds, max_degree)
    return ppr.top_claims(ppr.rank(pairs, seeds, damping=damping), limit)


def _walk(tx: ManagedTransaction, req: RecallRequest, held: tuple[str, int] | None) -> _Walk:
    graph = (req.mentions.graph(tx, req.namespace, held[0], held[1])
             if req.mentions is not None and held is not None else None)
    if graph is None:
        return _Walk(partial(ppr.linked_entities, tx, req.namespace), partial(ppr.seed_facts, tx, req.namespace),
                     partial(_ranked_by_statements, tx, req.namespace))
    return _Walk(partial(mention_graph.linked, graph), partial(mention_graph.seed_facts, graph),
                 partial(mention_graph.top_ranked, graph))


def ppr_candidates(tx: ManagedTransaction, req: RecallRequest, pool: Pool, seq: int, revision: int,
                   reference: datetime | None, need: int, held: tuple[str, int] | None = None,
                   ) -> tuple[Pool, dict[str, float]]:
    """Personalized PageRank (HippoRAG-style) as of projections_seq `seq`: the pool with the claims it
    reached, and their scores.

    Seeds: entities the query names (its canonical n-grams equal an entity's canonical name) and
    entities mentioned by the top `ppr_seed_candidates` vector candidates, seeded uniformly (as
    GDS's PageRank does, which graph.knowledge.ppr follows), so specificity is applied by *choosing*:
    query-named entities first, then by document frequency ascending (an entity in few claims says
    more than one in every claim), then by canonical name (an entity id is derived from the namespace,
    and the same claims must seed alike in any namespace), then id; at most `ppr_seeds`. The claims PPR
    reaches (the best `need`, with any tie at the cut: graph.knowledge.ppr.top_claims) go through the same
    visibility filter as every other candidate; only visible claims are returned.

    `held` (the namespace's incarnation and projections_seq, from round trip 1) lets the walk read the
    process's in-memory entity graph (`req.mentions`) instead of three statements, when it holds one.
    """
    policy = req.policy
    similarity = {cid: round(float(r.sim or 0.0), 6) for cid, r in pool.rows.items()}
    top = sorted(pool.rows, key=lambda cid: (-similarity.get(cid, 0.0), pool.rows[cid].tie_key()))[
        : policy.ppr_seed_candidates]
    walk = _walk(tx, req, held)
    query_ids, by_claim = walk.linked(seq, req.query_phrases, top)
    candidate_ids = sorted({e for ids in by_claim.values() for e in ids})
    df, name = walk.seeds(seq, sorted(set(query_ids) | set(candidate_ids)), policy.ppr_max_degree)
    named = set(query_ids)
    ordered = sorted(df, key=lambda e: (e not in named, df[e], name.get(e, ""), e))
    seeds = [e for e in ordered if df[e] > 0][: policy.ppr_seeds]
    if not seeds:
        return pool, {}
    scores = walk.ranked(seq, seeds, policy.ppr_max_degree, policy.ppr_damping, need)
    missing = sorted(set(scores) - set(pool.rows) - set(pool.hidden))
    if missing:
        pool = pool.with_rows(claims_by_id(tx, req, missing, revision), revision, reference)
    return pool, {cid: score for cid, score in scores.items() if cid in pool.rows}
