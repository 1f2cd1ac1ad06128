"""Ranking: relevance × freshness over the candidate pool, as a pure function of rows, query and policy.

Relevance fuses the vector list, the lexical list and (with graph expansion) the PPR list, by a
convex combination of scores (`fusion: linear`) or by reciprocal rank fusion (`fusion: rrf`).
A candidate that lends from hidden versions is judged by its best version's wording. Freshness
decays with age at the reference time, never the wall clock. Every order ends in the claim id.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from graph.recall.rows import ClaimRow
from graph.recall.text import identifiers, names_sibling, pool_idf, terms, weighted_lexical
from graph.similarity import cosine_from_index
from schema.models import Freshness, PacketItem, Policy, iso


class Ranking(NamedTuple):
    items: list[PacketItem]  # the first `limit`, ranked from 1
    ranked: int  # how many candidates were ranked in all (above the relevance floor)
    below_floor: set[str]  # ids the relevance floor (`policy.min_relevance`) cut


def stable_round(x: float) -> float:
    """Twelve significant digits: float noise below that must not separate two packets."""
    return float(f"{x:.12g}")


def rank(rows: Iterable[ClaimRow], similarity: Mapping[str, float], query: str, policy: Policy,
         reference: datetime | None, lenders: Mapping[str, Sequence[ClaimRow]] | None = None,
         graph: Mapping[str, float] | None = None, *, limit: int) -> Ranking:
    """Rank the candidates; `similarity` holds every row's and lender's cosine (index scale).

    `graph` (PPR scores, None when graph expansion is off) is a third list: scaled by its maximum
    under linear fusion, ranked under RRF, weighted by `graph_weight`. With `ppr_protect_top`, the
    top ranks without graph evidence stay on top; the graph reorders and fills the rest."""
    candidates = list(rows)
    lenders = lenders or {}
    if graph is not None and policy.graph_weight > 0 and policy.ppr_protect_top > 0:
        return _protected(candidates, similarity, query, policy, reference, lenders, graph, limit)
    qterms = set(terms(query))
    idf = pool_idf([r.content for r in candidates], qterms, policy.identifier_boost)
    lexical = {r.id: stable_round(weighted_lexical(idf, r.content)) for r in candidates}
    judged, matched_via = _best_versions(lenders, similarity, lexical, idf, policy)
    relevance_of = (_rrf if policy.fusion == "rrf" else _linear)(candidates, judged, lexical, policy, graph)
    query_names = identifiers(query)
    scored = []
    for r in candidates:
        relevance = relevance_of(r.id)
        if names_sibling(query_names, r.content):
            relevance *= policy.sibling_penalty
        relevance = stable_round(relevance)
        decay, age, tau = _freshness(r, policy, reference)
        scored.append(_Scored(r, relevance, stable_round(relevance * decay), decay, age, tau))
    # The floor: a candidate that matches the query this little is not an answer, however fresh; an
    # empty packet that says so beats k unrelated claims (e.g. when nothing was valid at the time asked).
    cut = {s.row.id for s in scored if s.relevance < policy.min_relevance}
    scored = [s for s in scored if s.row.id not in cut]
    scored.sort(key=lambda s: (-s.score, -s.row.revision, s.row.id))
    items = [_item(s, rank, similarity, lexical, matched_via) for rank, s in enumerate(scored[:limit], start=1)]
    return Ranking(items, len(scored), cut)


def _protected(candidates: list[ClaimRow], similarity: Mapping[str, float], query: str, policy: Policy,
               reference: datetime | None, lenders: Mapping[str, Sequence[ClaimRow]],
               graph: Mapping[str, float], limit: int) -> Ranking:
    head, total, _ = rank(candidates, similarity, query, policy, reference, lenders, None,
                          limit=min(policy.ppr_protect_top, limit))
    tail, tail_total, tail_cut = rank(candidates, similarity, query, policy.model_copy(update={"ppr_protect_top": 0}),
                                      reference, lenders, graph, limit=limit + len(head))
    kept = {it.id for it in head}
    merged = (head + [it for it in tail if it.id not in kept])[:limit]
    return Ranking([it.model_copy(update={"rank": n}) for n, it in enumerate(merged, start=1)],
                   max(total, tail_total), tail_cut - kept)


def _evidence(policy: Policy, sim: float, lex: float) -> float:
    """The convex vector/lexical fusion, by which a key's versions are compared."""
    wv, wt = policy.vector_weight, policy.text_weight
    return (wv * max(0.0, cosine_from_index(sim)) + wt * lex) / (wv + wt)


def _best_versions(lenders: Mapping[str, Sequence[ClaimRow]], similarity: Mapping[str, float],
                   lexical: dict[str, float], idf: dict[str, float],
                   policy: Policy) -> tuple[dict[str, float], dict[str, str]]:
    """Each lending candidate takes the similarity and lexical match of its best version: the
    similarity it is judged by (`lexical` is updated in place) and which version matched.

    Similarity and lexical match move together, so one version's wording is never mixed with another's."""
    judged = dict(similarity)
    matched_via: dict[str, str] = {}
    for cid, olds in sorted(lenders.items()):
        best = _evidence(policy, judged.get(cid, 0.0), lexical.get(cid, 0.0))
        for old in sorted(olds, key=lambda o: o.id):
            sim = judged.get(old.id, 0.0)
            lex = stable_round(weighted_lexical(idf, old.content))
            if _evidence(policy, sim, lex) > best:
                best = _evidence(policy, sim, lex)
                matched_via[cid] = old.id
                judged[cid], lexical[cid] = sim, lex
    return judged, matched_via


def _linear(candidates: list[ClaimRow], similarity: Mapping[str, float], lexical: Mapping[str, float],
            policy: Policy, graph: Mapping[str, float] | None) -> Callable[[str], float]:
    """Convex combination of scores: keeps how much better one candidate is, which ranks lose."""
    wv, wt = policy.vector_weight, policy.text_weight
    wg = policy.graph_weight if graph is not None else 0.0
    scores = graph or {}
    top_graph = max(scores.values(), default=0.0)

    def relevance(cid: str) -> float:
        cosine = max(0.0, cosine_from_index(similarity.get(cid, 0.0)))
        g = scores.get(cid, 0.0) / top_graph if top_graph > 0 else 0.0
        return (wv * cosine + wt * lexical[cid] + wg * g) / (wv + wt + wg)
    return relevance


def _rrf(candidates: list[ClaimRow], similarity: Mapping[str, float], lexical: Mapping[str, float],
         policy: Policy, graph: Mapping[str, float] | None) -> Callable[[str], float]:
    """Reciprocal rank fusion, normalised so that rank 1 on every list scores 1."""
    wv, wt = policy.vector_weight, policy.text_weight
    wg = policy.graph_weight if graph is not None else 0.0
    scores = graph or {}
    by_graph = sorted((r for r in candidates if scores.get(r.id, 0.0) > 0), key=lambda r: (-scores[r.id], r.id))
    grank = _competition_ranks(by_graph, lambda r: scores[r.id])
    by_vector = sorted(candidates, key=lambda r: (-similarity.get(r.id, 0.0), r.id))
    by_text = sorted((r for r in candidates if lexical[r.id] > 0),
                     key=lambda r: (-lexical[r.id], -similarity.get(r.id, 0.0), r.id))
    vrank = _competition_ranks(by_vector, lambda r: similarity.get(r.id, 0.0))
    trank = _competition_ranks(by_text, lambda r: (lexical[r.id], similarity.get(r.id, 0.0)))
    kk = policy.rrf_k
    best = (wv + wt + wg) / (kk + 1)

    def relevance(cid: str) -> float:
        fused = (wv / (kk + vrank[cid]) if wv else 0.0) + (
            wt / (kk + trank[cid]) if cid in trank else 0.0) + (
            wg / (kk + grank[cid]) if cid in grank else 0.0)
        return fused / best
    return relevance


def _competition_ranks(ordered: list[ClaimRow], key: Callable[[ClaimRow], Any]) -> dict[str, int]:
    """Equal keys share a rank (1, 1, 3): identical claims must get identical relevance."""
    ranks: dict[str, int] = {}
    previous: Any = object()
    position_rank = 0
    for position, row in enumerate(ordered, start=1):
        current = key(row)
        if current != previous:
            position_rank, previous = position, current
        ranks[row.id] = position_rank
    return ranks


class _Scored(NamedTuple):
    row: ClaimRow
    relevance: float
    score: float
    decay: float
    age: float
    tau: float


def _freshness(row: ClaimRow, policy: Policy, reference: datetime | None) -> tuple[float, float, float]:
    """(decay, age, tau) of a row: exponential decay with its age at the reference time."""
    tau = float(row.tau or policy.default_tau)
    recorded = row.recorded_at
    age = max(0.0, (reference - recorded).total_seconds()) if reference and recorded else 0.0
    return stable_round(math.exp(-age / tau)), age, tau


def _item(s: _Scored, rank_: int, similarity: Mapping[str, float], lexical: Mapping[str, float],
          matched_via: Mapping[str, str]) -> PacketItem:
    r = s.row
    return PacketItem(
        id=r.id, content=r.content, source=r.source or "", claim_key=r.claim_key,
        metadata=json.loads(r.metadata_json or "{}"), revision=r.revision, recorded_at=iso(r.recorded_at) or "",
        valid_from=iso(r.valid_from), valid_to=iso(r.valid_to), rank=rank_, score=s.score,
        relevance=s.relevance, vector_similarity=stable_round(similarity.get(r.id, 0.0)),
        matched_via=matched_via.get(r.id), lexical_score=lexical[r.id],
        freshness=Freshness(age_seconds=stable_round(s.age), tau_seconds=s.tau, decay=s.decay, status="current",
                            superseded=False, retracted=False),
    )
