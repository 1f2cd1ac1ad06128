"""Ranking: relevance × freshness over the candidate pool, as a pure function of rows, query and policy.

Relevance fuses the vector list, the lexical list and (with graph expansion) the PPR list, by a
convex combination of scores (`fusion: linear`) or by reciprocal rank fusion (`fusion: rrf`).
A candidate that lends from hidden versions is judged by its best version's wording. Freshness
decays with age at the reference time, never the wall clock. Every order ends in the claim's content
hash and id (graph.claims.order).

With `explain`, each item carries a `ScoreExplanation` built from the same `_Terms` its relevance was
summed from (one list's numerator each, over one scale), so the explanation cannot drift from the
score: the contributions add up to the fused relevance, × penalties × decay gives the score.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from palimpsest.graph.recall.rows import ClaimRow
from palimpsest.graph.similarity import cosine_from_index
from palimpsest.graph.text import (
    identifiers,
    named_source,
    names_sibling,
    pool_idf,
    stemmed,
    term_set,
    weighted_lexical,
)
from palimpsest.schema.models import (
    Freshness,
    PacketItem,
    Policy,
    ScoreDecay,
    ScoreExplanation,
    ScoreLending,
    ScorePenalty,
    ScoreTerm,
    iso,
)
from palimpsest.schema.subjects import declared_subject


class Ranking(NamedTuple):
    items: list[PacketItem]  # the first `limit`, ranked from 1
    ranked: int  # how many candidates were ranked in all (above the relevance floor)
    below_floor: set[str]  # ids the relevance floor (`policy.min_relevance`) cut


def stable_round(x: float) -> float:
    """Twelve significant digits: float noise below that must not separate two packets."""
    return float(f"{x:.12g}")


def rank(rows: Iterable[ClaimRow], similarity: Mapping[str, float], query: str, policy: Policy,
         reference: datetime | None, lenders: Mapping[str, Sequence[ClaimRow]] | None = None,
         graph: Mapping[str, float] | None = None, *, limit: int, explain: bool = False) -> Ranking:
    """Rank the candidates; `similarity` holds every row's and lender's cosine (index scale).

    `graph` (PPR scores, None when graph expansion is off) is a third list: scaled by its maximum
    under linear fusion, ranked under RRF, weighted by `graph_weight`. With `ppr_protect_top`, the
    top ranks without graph evidence stay on top; the graph reorders and fills the rest. With
    `explain`, every returned item carries its `explanation` (nothing else changes)."""
    candidates = list(rows)
    lenders = lenders or {}
    if graph is not None and policy.graph_weight > 0 and policy.ppr_protect_top > 0:
        return _protected(candidates, similarity, query, policy, reference, lenders, graph, limit, explain)
    qterms = set(stemmed(term_set(query)) if policy.stem_terms else term_set(query))
    present = {r.id: lexical_terms(r, policy) for r in candidates}
    idf = pool_idf([present[r.id] for r in candidates], qterms, policy.identifier_boost)
    lexical = {r.id: stable_round(weighted_lexical(idf, present[r.id])) for r in candidates}
    own_lexical = dict(lexical) if explain else lexical  # _best_versions lends into `lexical` in place
    judged, matched_via = _best_versions(lenders, similarity, lexical, idf, policy)
    fusion: _Linear | _RRF = (_RRF if policy.fusion == "rrf" else _Linear)(candidates, judged, lexical, policy, graph)
    query_names = identifiers(query)
    asked_source = (named_source(query, [r.source for r in candidates if r.source])
                    if policy.source_penalty < 1 else None)
    scored = []
    for r in candidates:
        parts = fusion.terms(r.id)
        relevance = parts.fused()
        sibling = names_sibling(query_names, r.identifiers())
        if sibling:
            relevance *= policy.sibling_penalty
        another = asked_source is not None and r.source != asked_source
        if another:
            relevance *= policy.source_penalty
        relevance = stable_round(relevance)
        decay, age, tau = _freshness(r, policy, reference)
        scored.append(_Scored(r, relevance, stable_round(relevance * decay), decay, age, tau, parts, sibling,
                              asked_source if another else None))
    # The floor: a candidate that matches the query this little is not an answer, however fresh; an
    # empty packet that says so beats k unrelated claims (e.g. when nothing was valid at the time asked).
    cut = {s.row.id for s in scored if s.relevance < policy.min_relevance}
    scored = [s for s in scored if s.row.id not in cut]
    scored.sort(key=lambda s: (-s.score, -s.row.revision, s.row.tie_key()))
    items = [_item(s, rank, similarity, lexical, matched_via) for rank, s in enumerate(scored[:limit], start=1)]
    if explain:
        items = [it.model_copy(update={"explanation": _explanation(s, fusion, policy, similarity, own_lexical,
                                                                   matched_via)})
                 for it, s in zip(items, scored, strict=False)]
    return Ranking(items, len(scored), cut)


def _protected(candidates: list[ClaimRow], similarity: Mapping[str, float], query: str, policy: Policy,
               reference: datetime | None, lenders: Mapping[str, Sequence[ClaimRow]],
               graph: Mapping[str, float], limit: int, explain: bool) -> Ranking:
    head, total, _ = rank(candidates, similarity, query, policy, reference, lenders, None,
                          limit=min(policy.ppr_protect_top, limit), explain=explain)
    tail, tail_total, tail_cut = rank(candidates, similarity, query, policy.model_copy(update={"ppr_protect_top": 0}),
                                      reference, lenders, graph, limit=limit + len(head), explain=explain)
    kept = {it.id for it in head}
    if explain:  # the head was ranked without the graph: say so on each of its items
        head = [it.model_copy(update={"explanation": it.explanation.model_copy(update={"protected": True})})
                if it.explanation else it for it in head]
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
            lex = stable_round(weighted_lexical(idf, lexical_terms(old, policy)))
            if _evidence(policy, sim, lex) > best:
                best = _evidence(policy, sim, lex)
                matched_via[cid] = old.id
                judged[cid], lexical[cid] = sim, lex
    return judged, matched_via


def lexical_terms(row: ClaimRow, policy: Policy) -> frozenset[str]:
    """The terms a claim's lexical match is scored on: its content's, and with `subject_terms` those of
    the subject its metadata declares (schema.subjects) too — a passage often names its subject only
    in its title; with `stem_terms`, as stems. The subject is read from the row's own metadata, so the
    score stays a pure function of rows, query and policy."""
    found = row.term_set()
    if policy.subject_terms and row.metadata_json:
        subject = declared_subject(json.loads(row.metadata_json))
        found = term_set(f"{subject} {row.content}") if subject else found
    return stemmed(found) if policy.stem_terms else found


class _Terms(NamedTuple):
    """One candidate's fused relevance, kept in its parts: each list's numerator over one `scale`
    (the weights' sum under linear fusion, rank 1's fused value under RRF), with the similarity
    (index scale) and lexical share it was judged by and, under RRF, its ranks. Made for every
    candidate on every recall, so it is built with `_new` (no keyword handling) and holds only what
    the arithmetic had at hand; what only an explanation needs is derived there."""

    vector: float
    lexical: float
    graph: float
    scale: float
    similarity: float
    lexical_share: float
    vector_rank: int | None
    text_rank: int | None
    graph_rank: int | None

    def fused(self) -> float:
        return (self.vector + self.lexical + self.graph) / self.scale


_new = tuple.__new__


class _Linear:
    """Convex combination of scores: keeps how much better one candidate is, which ranks lose."""

    def __init__(self, candidates: list[ClaimRow], similarity: Mapping[str, float], lexical: Mapping[str, float],
                 policy: Policy, graph: Mapping[str, float] | None) -> None:
        self.similarity, self.lexical = similarity, lexical
        self.wv, self.wt = policy.vector_weight, policy.text_weight
        self.wg = policy.graph_weight if graph is not None else 0.0
        self.graph_on = graph is not None
        self.scores = graph or {}
        self.top_graph = max(self.scores.values(), default=0.0)
        self.scale = self.wv + self.wt + self.wg

    def graph_share(self, cid: str) -> float:
        return self.scores.get(cid, 0.0) / self.top_graph if self.top_graph > 0 else 0.0

    def terms(self, cid: str) -> _Terms:
        return self.terms_with(cid, self.similarity.get(cid, 0.0), self.lexical[cid])

    def terms_with(self, cid: str, sim: float, lex: float) -> _Terms:
        """The terms `cid` would have with cosine `sim` (index scale) and lexical share `lex`."""
        return _new(_Terms, (self.wv * _cosine(sim), self.wt * lex, self.wg * self.graph_share(cid), self.scale,
                             sim, lex, None, None, None))


class _RRF:
    """Reciprocal rank fusion, normalised so that rank 1 on every list scores 1."""

    def __init__(self, candidates: list[ClaimRow], similarity: Mapping[str, float], lexical: Mapping[str, float],
                 policy: Policy, graph: Mapping[str, float] | None) -> None:
        self.similarity, self.lexical, self.candidates = similarity, lexical, candidates
        wv, wt = self.wv, self.wt = policy.vector_weight, policy.text_weight
        wg = self.wg = policy.graph_weight if graph is not None else 0.0
        self.graph_on = graph is not None
        scores = self.scores = graph or {}
        self.top_graph = max(scores.values(), default=0.0)
        by_graph = sorted((r for r in candidates if scores.get(r.id, 0.0) > 0), key=lambda r: (-scores[r.id], r.id))
        self.grank = _competition_ranks(by_graph, lambda r: scores[r.id])
        by_vector = sorted(candidates, key=lambda r: (-similarity.get(r.id, 0.0), r.id))
        by_text = sorted((r for r in candidates if lexical[r.id] > 0),
                         key=lambda r: (-lexical[r.id], -similarity.get(r.id, 0.0), r.id))
        self.vrank = _competition_ranks(by_vector, lambda r: similarity.get(r.id, 0.0))
        self.trank = _competition_ranks(by_text, lambda r: (lexical[r.id], similarity.get(r.id, 0.0)))
        self.kk = kk = policy.rrf_k
        self.best = (wv + wt + wg) / (kk + 1)

    def graph_share(self, cid: str) -> float:
        return self.scores.get(cid, 0.0) / self.top_graph if self.top_graph > 0 else 0.0

    def terms(self, cid: str) -> _Terms:
        return self._terms(cid, self.vrank[cid], self.trank.get(cid), self.similarity.get(cid, 0.0),
                           self.lexical[cid])

    def terms_with(self, cid: str, sim: float, lex: float) -> _Terms:
        """The terms `cid` would have with cosine `sim` and lexical share `lex`, every other candidate
        keeping its place: the competition rank those values would take on each list."""
        others = [r.id for r in self.candidates if r.id != cid]
        vrank = 1 + sum(1 for o in others if self.similarity.get(o, 0.0) > sim)
        trank = (1 + sum(1 for o in others if self.lexical[o] > 0
                         and (self.lexical[o], self.similarity.get(o, 0.0)) > (lex, sim))) if lex > 0 else None
        return self._terms(cid, vrank, trank, sim, lex)

    def _terms(self, cid: str, vrank: int, trank: int | None, sim: float, lex: float) -> _Terms:
        wv, wt, wg, kk = self.wv, self.wt, self.wg, self.kk
        grank = self.grank.get(cid)
        return _new(_Terms, (wv / (kk + vrank) if wv else 0.0, wt / (kk + trank) if trank is not None else 0.0,
                             wg / (kk + grank) if grank is not None else 0.0, self.best, sim, lex, vrank, trank,
                             grank))


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
    terms: _Terms
    sibling: bool  # the sibling penalty applied
    asked_source: str | None  # the source the query names, when this claim is another's (source penalty applied)


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


def _explanation(s: _Scored, fusion: _Linear | _RRF, policy: Policy, similarity: Mapping[str, float],
                 own_lexical: Mapping[str, float], matched_via: Mapping[str, str]) -> ScoreExplanation:
    """The item's score in parts, from the `_Terms` it was summed from. A lending item's vector and
    lexical terms are its own wording's (`fusion.terms_with`); what the lender's wording added over
    them is the `lending` contribution, so the parts still add up to the fused relevance (to the
    twelve significant digits every part is rounded to, as scores are)."""
    cid, t = s.row.id, s.terms
    r = stable_round
    via = matched_via.get(cid)
    own = fusion.terms_with(cid, similarity.get(cid, 0.0), own_lexical[cid]) if via else t
    lending = None
    if via:
        lent = (t.vector + t.lexical - own.vector - own.lexical) / t.scale
        lending = ScoreLending(via=via, vector_value=r(_cosine(t.similarity)), lexical_value=r(t.lexical_share),
                               contribution=r(lent))
    graph = None
    if fusion.graph_on:
        graph = ScoreTerm(weight=fusion.wg, value=r(fusion.graph_share(cid)), rank=t.graph_rank,
                          contribution=r(t.graph / t.scale))
    penalties = [ScorePenalty(rule="sibling", factor=policy.sibling_penalty,
                              reason="names a sibling of what the query names (shares a part with it), "
                                     "not the thing itself")] if s.sibling else []
    if s.asked_source is not None:
        penalties.append(ScorePenalty(rule="source", factor=policy.source_penalty,
                                      reason=f"the query names {s.asked_source!r}; this claim's source is "
                                             f"{s.row.source!r}"))
    return ScoreExplanation(
        fusion="rrf" if isinstance(fusion, _RRF) else "linear",
        vector=ScoreTerm(weight=fusion.wv, value=r(_cosine(own.similarity)), rank=own.vector_rank,
                         contribution=r(own.vector / t.scale)),
        lexical=ScoreTerm(weight=fusion.wt, value=r(own.lexical_share), rank=own.text_rank,
                          contribution=r(own.lexical / t.scale)),
        graph=graph, lending=lending, fused=r(t.fused()), penalties=penalties, relevance=s.relevance,
        decay=ScoreDecay(factor=s.decay, age_seconds=r(s.age), tau_seconds=s.tau), score=s.score,
    )


def _cosine(similarity: float) -> float:
    """The cosine a list measured, from the index-scale similarity: as `_Linear` fuses it (clipped at 0)."""
    return max(0.0, cosine_from_index(similarity))
