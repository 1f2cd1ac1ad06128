"""Recall: hybrid candidates → visibility filter → relevance × freshness → a bounded packet.

The packet is a pure function of (namespace, store revision R, query vector, policy, k,
valid_at). Everything that could make it depend on something else is pinned down here:

* Visibility is evaluated at R (claims recorded after R never enter the pool), so a recall
  "now" at revision R and an as-of recall at R later produce the same packet.
* Freshness is measured at the reference time — `valid_at` if given, else the commit time of
  R — never the wall clock.
* Similarity is recomputed exactly for every candidate with `vector.similarity.cosine`,
  whichever index found it; lexical relevance is the IDF-weighted share of query terms a claim
  contains, with IDF taken over the candidate pool (not the corpus, which shifts as other
  documents are written).
* Relevance fuses the two by a convex combination of scores (policy `fusion: linear`, the
  default) or by reciprocal rank fusion (`fusion: rrf`). Measured on benchmarks/temporal.py,
  rank fusion throws away *how much* better a candidate matched, which is what separates one
  subject from a near-identical other.
* A superseded candidate lends its match to the current version of its claim_key (the
  versions are one fact), so a query worded like an older version still finds the fact.
* Every ordering ends in the claim id, so ties never fall back to engine order.

The stages, each in its own module: `text` (terms and lexical scores), `candidates` (every
statement recall runs), `pool` (what the index answers admit, and who lends to whom),
`expansion` (Personalized PageRank), `ranking` (pure scoring), the optional stages after fusion —
`rerank` (the fused head rescored: by a model's scores the caller hands in, or by sentence match) and
`dedup` (near-duplicates out, the next candidates in) — and `packet` (assembly).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from neo4j import Driver, ManagedTransaction

from palimpsest.graph.claims.inferred import inferred_successors
from palimpsest.graph.claims.revisions import default_policy_at, policy_changes
from palimpsest.graph.claims.sentence_vectors import known_first, stored_sentence_vectors
from palimpsest.graph.knowledge.facts import packet_beliefs
from palimpsest.graph.recall.candidates import VERSIONS_PER_KEY, IndexAnswers, admitted_rows, claims_by_id, item_links
from palimpsest.graph.recall.candidates import index_answers as _fetch  # a module global: tests count the round trips
from palimpsest.graph.recall.dedup import dedup
from palimpsest.graph.recall.expansion import ppr_candidates
from palimpsest.graph.recall.fact_source import fact_candidates
from palimpsest.graph.recall.packet import Staged, assemble
from palimpsest.graph.recall.pool import (
    Lenders,
    Pool,
    admit_answer,
    inferred_lenders,
    inferred_olds,
    key_lenders,
    lending_keys,
    with_full_rows,
)
from palimpsest.graph.recall.ranking import Ranking, rank
from palimpsest.graph.recall.request import PolicyChangedError, RecallRequest
from palimpsest.graph.recall.rerank import rerank
from palimpsest.graph.recall.router import route, routed
from palimpsest.graph.recall.rows import ClaimRow
from palimpsest.graph.text import (
    STOPWORDS,
    TextQuery,
    identifiers,
    lucene_query,
    names_sibling,
    pool_idf,
    term_set,
    terms,
    weighted_lexical,
)
from palimpsest.schema.errors import BadInputError
from palimpsest.schema.limits import MAX_CANDIDATES
from palimpsest.schema.models import ContextPacket

__all__ = [
    "STOPWORDS", "TEXT_MIN_FETCH", "VERSIONS_PER_KEY", "ClaimRow", "PolicyChangedError", "Ranking", "RecallRequest",
    "TextQuery", "identifiers", "lucene_query", "names_sibling", "pool_idf", "rank", "recall", "term_set",
    "terms", "weighted_lexical",
]

# The text list is cut on lexical share, not BM25; it is fetched this wide so that BM25's drift (its
# statistics move with every write to the namespace) does not decide that cut.
TEXT_MIN_FETCH = 200
# The vector index is asked for this many times the candidates the cut keeps. HNSW is approximate, and
# its misses gather towards the end of its own answer, where the cut (need visible rows, after the hidden
# ones) falls when the fetch is only twice as wide: on a 5,000-claim namespace written in 50 batches,
# 200 queries, a fetch of 2 × need missed a row of the exact top-1.5 × need in 4% (need 32) to 19% (need
# 20) of them, so the pool was not the one exact search gives; 4 × need missed none (docs/TENANCY.md).
VECTOR_BREADTH = 4


def vector_fetch(need: int) -> int:
    """How many rows the vector index is asked for when the cut keeps `need`."""
    return max(need * VECTOR_BREADTH, 20)


def recall(driver: Driver, req: RecallRequest, database: str | None = None) -> ContextPacket:
    """The packet for `req`. Without a reranker, read in one read transaction (so every step sees one
    snapshot). With one, the model runs between two: the ranking's, and the packet's links and beliefs,
    which are read as of the same (revision, seq) and so are what the first transaction would have read.
    Under a router policy without a decision in `req.route`, the rules decide (graph.recall.router)."""
    if req.policy.router != "none" and not req.route:
        req = routed(req, route(req.query, req.policy))
    with driver.session(database=database, default_access_mode="READ") as session:
        if req.policy.rerank == "none":
            return session.execute_read(_recall_tx, req)
        ranked = session.execute_read(_ranked_tx, req)
        return session.execute_read(_packet_tx, req, ranked, _staged(req, ranked))


class Ranked(NamedTuple):
    """What the ranking transaction hands on: the revision and reference served, the pool and its ranking."""

    revision: int
    reference: datetime | None
    seq: int
    has_facts: bool
    pool: Pool
    ranking: Ranking
    ppr: bool
    # The stored sentence vectors of the reranker's head, by sentence (graph.claims.sentence_vectors), read in
    # the ranking's snapshot; empty unless the policy reranks by sentences.
    sentence_vectors: Mapping[str, Any]


def _recall_tx(tx: ManagedTransaction, req: RecallRequest) -> ContextPacket:
    ranked = _ranked_tx(tx, req)
    return _packet_tx(tx, req, ranked, _staged(req, ranked))


def _ranked_tx(tx: ManagedTransaction, req: RecallRequest) -> Ranked:
    policy, need = req.policy, req.k * req.policy.oversampling
    # 1. Candidates: both index answers, cut to the visible ones at the revision served.
    got, pool = _admitted_candidates(tx, req, need)
    revision, reference = got.revision, req.valid_at or got.commit_time
    seq = min(got.projections_seq, revision)
    if req.projections_seq is not None:
        seq = min(seq, req.projections_seq)
    # 2. Full rows for what the cut admitted, with their keys' other versions (the vector answer's rows
    # keep the cosines it scored them with).
    vector_scores = {r.id: r.score for r in got.vrows if r.score is not None}
    admitted = admitted_rows(tx, req, sorted({*pool.rows, *pool.superseded}), lending_keys(pool),
                             sorted(pool.superseded), revision, vector_scores)
    pool = with_full_rows(pool, admitted.rows, admitted.inferred)
    versions = [*admitted.rows, *admitted.versions]
    # 3. Graph expansion: PPR's claims join the pool, its scores become a third list.
    graph_scores: dict[str, float] | None = None
    if policy.graph_expansion == "ppr" and policy.graph_weight > 0:
        pool, graph_scores = ppr_candidates(tx, req, pool, seq, revision, reference, need,
                                            held=(got.incarnation, got.projections_seq))
    ppr = graph_scores is not None
    # 3b. Fact retrieval: the claims behind the facts nearest the query join the graph list.
    if policy.fact_retrieval != "none" and got.has_facts:
        pool, graph_scores = fact_candidates(tx, req, pool, graph_scores, seq, revision, reference, need)
    # 4. Lending: hidden versions (by key, or by inferred chain) lend their match to the current one.
    pool, lenders = key_lenders(pool, versions, revision, reference)
    pool, lenders = _with_inferred_lenders(tx, req, pool, revision, reference, versions, lenders)
    # 5. Ranking. Every row carries its exact cosine, PPR's additions included; six decimals, because the
    # same text embedded in different batches differs around 1e-7 and that noise must not decide ranks.
    # Ranked as deep as the stages after it look: the reranker's head, every candidate for dedup.
    similarity = {r.id: round(float(r.sim or 0.0), 6) for r in [*versions, *pool.rows.values()]}
    ranking = rank(pool.rows.values(), similarity, req.query, policy, reference, lenders, graph_scores,
                   limit=_ranked_depth(req, len(pool.rows)), explain=req.explain)
    stored = (stored_sentence_vectors(tx, req.namespace, [(it.id, it.content)
                                                          for it in ranking.items[:policy.rerank_top]],
                                      req.embed_model)
              if policy.rerank == "sentences" and req.embed_model and req.embed_texts is not None else {})
    return Ranked(revision, reference, seq, got.has_facts, pool, ranking, ppr, stored)


def _staged(req: RecallRequest, ranked: Ranked) -> Staged:
    """6. Rerank the fused head (a model call: outside any transaction when there is one), 7. dedup
    near-duplicates while cutting to k."""
    policy = req.policy
    embed = (known_first(ranked.sentence_vectors, req.embed_texts)
             if ranked.sentence_vectors and req.embed_texts is not None else req.embed_texts)
    reranked = rerank(req.query, ranked.ranking.items, policy, req.rerank_scorer, vector=req.vector, embed=embed)
    deduped = dedup(reranked.items, policy.dedup_jaccard, req.k)
    ran = {"ppr": ranked.ppr, "facts": policy.fact_retrieval != "none", f"rerank:{policy.rerank}": reranked.ran,
           "dedup": policy.dedup_jaccard is not None}
    stages = [*req.route, *(stage for stage, on in ran.items() if on)]
    remaining = ranked.ranking.ranked - len(reranked.items) + deduped.remaining
    return Staged(deduped.items, remaining, deduped.removed, stages, reranked.unavailable)


def _packet_tx(tx: ManagedTransaction, req: RecallRequest, ranked: Ranked, staged: Staged) -> ContextPacket:
    """8. Packet: the items' links, contradictions and beliefs as of (revision, seq), then assembly."""
    revision, seq = ranked.revision, ranked.seq
    item_ids = [it.id for it in staged.items]
    supersedes, contradiction_rows = item_links(tx, req.namespace, item_ids, revision, seq)
    beliefs = (packet_beliefs(tx, req.namespace, item_ids, revision, seq, req.policy.b)
               if ranked.has_facts else ([], False))
    return assemble(req, revision, ranked.reference, seq, ranked.pool, ranked.ranking, staged, supersedes,
                    contradiction_rows, beliefs)


def _ranked_depth(req: RecallRequest, candidates: int) -> int:
    """How many ranked items the stages after fusion need: k, the reranker's head, or (dedup fills
    freed places from further down) every candidate."""
    if req.policy.dedup_jaccard is not None:
        return max(req.k, candidates)
    return max(req.k, req.policy.rerank_top) if req.policy.rerank != "none" else req.k


def _admitted_candidates(tx: ManagedTransaction, req: RecallRequest, need: int) -> tuple[IndexAnswers, Pool]:
    """Both index answers, cut to `need` visible candidates each; fetched again, wider, until the cut
    is whole or the index is exhausted. Also checks the policy the caller resolved (round trip 1)."""
    policy = req.policy
    # Under stem_terms a stem is searched as a prefix, as the ranking counts it (graph.text.TextQuery).
    text = TextQuery.of(req.query, stems=policy.stem_terms)
    lucene = text.lucene if policy.text_weight > 0 else ""
    vfetch = vector_fetch(need) if policy.vector_weight > 0 else 0
    # BM25 scores move with every write to the namespace's index, so the text list is cut on an order
    # that depends on the candidate's text alone instead — share of query terms present, then content and id
    # (graph.claims.order) —
    # over a fetch wide enough that the BM25 tail does not decide the cut.
    tfetch = max(need * 2, TEXT_MIN_FETCH) if lucene else 0

    def by_score(r: ClaimRow) -> tuple[float, tuple[str, str]]:
        return -round(float(r.score or 0.0), 6), r.tie_key()

    def by_terms(r: ClaimRow) -> tuple[float, tuple[str, str]]:
        # `hits` was counted by the statement on the stored analysis: the same share as analysing here.
        share = r.hits / text.counted if r.hits is not None and text.counted else text.share(r.term_set())
        return -round(share, 6), r.tie_key()

    adapt = True
    tcut = need * 2  # rows with a stored analysis shipped of the text answer; all of them if that falls short
    while True:
        got = _fetch(tx, req, vfetch, tfetch, lucene, adapt, text.exact, tcut, text.tokens, text.prefixes)
        _check_request(req, got)
        reference = req.valid_at or got.commit_time
        pool = Pool()
        vfetch, tfetch = got.vfetch, got.tfetch
        grow_v = grow_t = False
        if vfetch > 0:
            after = admit_answer(pool, got.vrows, got.vraw, vfetch, need, got.revision, reference, by_score)
            grow_v, pool = after is None, after or pool
        if tfetch > 0:
            trows = _whole_text_order(got, by_terms, need, reference)
            if trows is None:  # the shipped best held too few visible claims: ship them all, same fetch
                tcut = MAX_CANDIDATES
                continue
            after = admit_answer(pool, trows, got.traw, tfetch, need, got.revision, reference, by_terms)
            grow_t, pool = after is None, after or pool
        if not (grow_v or grow_t):
            return got, pool
        # Rare: filtering hid more than the index share predicted (supersession, validity windows).
        # Fetch again, wider, in one go.
        vfetch = min(vfetch * 4, MAX_CANDIDATES) if grow_v else vfetch
        tfetch = min(tfetch * 4, MAX_CANDIDATES) if grow_t else tfetch
        adapt = False


def _whole_text_order(got: IndexAnswers, order: Callable[[ClaimRow], tuple[float, tuple[str, str]]], need: int,
                      reference: datetime | None) -> list[ClaimRow] | None:
    """The text rows whose place in the cut order is known, in that order; None when they hold fewer
    than `need` visible claims although rows were left out (the caller ships them all instead).

    When the statement shipped only the best rows with a stored analysis, a row ordered after the last
    of them may have an unshipped one before it: only the prefix up to that last row is the answer's
    own order, and the cut (with its hidden counts) is taken within it exactly as over the whole answer."""
    keyed = sorted(((order(r), r) for r in got.trows), key=lambda kr: kr[0])
    if not got.text_cut_short:
        return [r for _, r in keyed]
    last = max(key for key, r in keyed if r.hits is not None)
    prefix = [r for key, r in keyed if key <= last]
    visible = sum(1 for r in prefix if r.hidden_reason(got.revision, reference) is None)
    return prefix if visible >= need else None


def _check_request(req: RecallRequest, got: IndexAnswers) -> None:
    """The as-of revision must exist, and the policy must be the one the caller resolved."""
    if req.as_of_revision is not None and not 0 <= req.as_of_revision <= got.store_revision:
        raise BadInputError(
            f"as_of_revision must be between 0 and the store revision {got.store_revision}",
            field="as_of_revision", limit=got.store_revision,
        )
    if req.check_default:
        default = default_policy_at(policy_changes(got.policy_revisions, got.policy_versions), got.revision)
        if default != req.policy.version:
            raise PolicyChangedError(req.policy.version, default)
    if req.check_policy and got.policy_hash != req.policy_hash:
        raise PolicyChangedError(req.policy.version)


def _with_inferred_lenders(tx: ManagedTransaction, req: RecallRequest, pool: Pool, revision: int,
                           reference: datetime | None, versions: list[ClaimRow],
                           lenders: Lenders) -> tuple[Pool, Lenders]:
    """Keyless candidates hidden by inferred supersession lend to the end of their inferred chain
    (graph.claims.inferred.inferred_successors); a successor that was no candidate joins the pool if it is
    visible at R (its `matched_via` says which claim matched)."""
    known = {r.id: r for r in versions}
    olds = inferred_olds(pool, known)
    if not olds:
        return pool, lenders
    successors = inferred_successors(tx, req.namespace, olds, revision)
    missing = sorted({s for s in successors.values() if s not in pool.rows})
    if missing:
        visible = [r for r in claims_by_id(tx, req, missing, revision) if r.hidden_reason(revision, reference) is None]
        pool = pool.with_rows(visible, revision, reference)
    return pool, inferred_lenders(pool, successors, known, lenders)
