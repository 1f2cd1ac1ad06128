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
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from neo4j import Driver, ManagedTransaction

from graph import gds
from graph.revisions import commit_time, store_state, to_py_datetime
from graph.visibility import current_at, hidden_reason
from schema.errors import BadInputError, NotFoundError
from schema.limits import MAX_CANDIDATES
from schema.models import (
    Belief,
    ClaimRef,
    Completeness,
    ContextPacket,
    Freshness,
    HiddenCounts,
    PacketContradiction,
    PacketEdge,
    PacketItem,
    Policy,
    iso,
    now_utc,
)

_TOKEN_RE = re.compile(r"[a-z0-9]+")
_STOPWORD_TEXT = (
    "a an and are as at be by can did do does for from had has have how i in is it its me my of on or our s so "
    "that the their them then there these they this to was we were what when where which who whom why will with "
    "you your now currently current still any about into"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_FIELDS = (
    "{id: node.id, content: node.content, source: node.source, claim_key: node.claim_key, "
    "metadata_json: node.metadata_json, revision: node.revision, recorded_at: node.recorded_at, "
    "valid_from: node.valid_from, valid_to: node.valid_to, tau: node.tau, vis_from: node.vis_from, "
    "vis_to: node.vis_to, retracted_at_revision: node.retracted_at_revision}"
)


_COMPOUND_RE = re.compile(r"[A-Za-z0-9]+(?:[-_/.\u2013\u2014][A-Za-z0-9]+)+")
_NAME_RE = re.compile(r"\b[A-Z][a-z0-9]+(?:\s+[A-Z][a-z0-9]+)+")


def _fold(tok: str) -> str:
    if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
        return tok[:-1]
    return tok


_FIELDS_SCORED = _FIELDS[:-1] + ", score: score}"


def terms(text: str) -> list[str]:
    """Lower-cased content words with a light plural fold, plus identifier terms.

    Identifiers — hyphenated or dotted names (`ledger-scheduler`, `db-7`) and capitalised
    multi-word names (`Ravi Alvarez`) — are kept whole as extra terms: they name *which* thing
    a claim is about, and sharing one is much stronger evidence than sharing its parts.
    """
    out = [_fold(tok) for tok in _TOKEN_RE.findall(text.lower()) if tok not in STOPWORDS]
    # Codes that start with a letter and carry a digit (q3, v2, db7) name one thing: "q3" is not
    # "q2". Values with units (300ms, 5mg) and ordinals (99th) start with the digit and are not codes.
    out.extend("~" + tok for tok in _TOKEN_RE.findall(text.lower())
               if tok[0].isalpha() and any(c.isdigit() for c in tok))
    out.extend("~" + m.group(0).lower() for m in _COMPOUND_RE.finditer(text))
    for m in _NAME_RE.finditer(text):
        words = [w for w in m.group(0).lower().split() if w not in STOPWORDS]  # "The Acme" -> "acme"
        if len(words) > 1:
            out.append("~" + " ".join(words))
    return out


def lexical_score(query_terms: set[str], content: str) -> float:
    if not query_terms:
        return 0.0
    return len(query_terms & set(terms(content))) / len(query_terms)


def lucene_query(text: str) -> str:
    """Terms are [a-z0-9]+ only, so no Lucene syntax can come through from user text."""
    return " ".join(sorted(set(_TOKEN_RE.findall(text.lower())) - STOPWORDS))


@dataclass(frozen=True)
class RecallRequest:
    namespace: str
    query: str
    vector: list[float]
    policy: Policy
    k: int
    as_of_revision: int | None = None
    valid_at: datetime | None = None
    # Replay pins how far the background projections had got, so edges found later
    # (contradictions, beliefs) do not change a packet that was served before them.
    projections_seq: int | None = None
    # Canonical n-grams of the query (extraction.entities.query_phrases), computed by the caller
    # because graph never imports extraction; a pure function of `query`, so purity holds.
    query_phrases: tuple[str, ...] = ()
    # Names of GDS projections this recall created, so `recall` can drop them if the transaction died.
    projections: list[str] = field(default_factory=list, compare=False)


@dataclass
class _Pool:
    rows: dict[str, dict[str, Any]]
    hidden: dict[str, str]
    exhausted: bool
    superseded: dict[str, dict[str, Any]] = field(default_factory=dict)


def _collect(tx: ManagedTransaction, cypher: str, params: dict[str, Any], need: int,
             revision: int, valid_at: datetime | None, pool: _Pool,
             order: Callable[[dict[str, Any]], Any] | None = None, min_fetch: int = 20) -> None:
    """Fetch from an index, growing the fetch until `need` visible candidates or the index runs dry.

    The fetch is at least twice what is needed, and the cut to `need` is made on our own total
    order (score, then id) — not on the order the index happened to return. Approximate search
    and tied scores can shuffle the tail of an index answer between two identical calls; with
    the cut made here, that tail never decides which candidates enter the pool.
    """
    fetch = max(need * 2, min_fetch)
    key = order or (lambda r: (-round(float(r["score"]), 6), r["id"]))
    while True:
        record = tx.run(cypher, fetch=fetch, **params).single(strict=True)
        raw = int(record["raw"])
        rows = sorted(record["rows"], key=key)
        visible = sum(1 for row in rows if _reason(row, revision, valid_at) is None)
        if visible >= need or raw < fetch or fetch >= MAX_CANDIDATES:
            pool.exhausted = pool.exhausted or (visible < need and raw >= fetch)
            break
        fetch = min(fetch * 4, MAX_CANDIDATES)
    taken = 0
    for row in rows:
        if taken >= need:
            break
        reason = _reason(row, revision, valid_at)
        if reason is None:
            taken += 1
            pool.rows.setdefault(row["id"], dict(row))
        else:
            pool.hidden.setdefault(row["id"], reason)
            if reason == "superseded" and row["claim_key"] is not None:
                pool.superseded.setdefault(row["id"], dict(row))


def _reason(row: dict[str, Any], revision: int, valid_at: datetime | None) -> str | None:
    return hidden_reason(
        recorded_revision=row["revision"], vis_from=row["vis_from"], vis_to=row["vis_to"],
        retracted_at_revision=row["retracted_at_revision"],
        valid_from=_dt(row["valid_from"]), valid_to=_dt(row["valid_to"]),
        revision=revision, valid_at=valid_at,
    )


def _dt(value: Any) -> datetime | None:
    return None if value is None else to_py_datetime(value)


_VECTOR_CYPHER = (
    "CALL db.index.vector.queryNodes('claim_embedding', $fetch, $vector) YIELD node, score "
    "WITH count(*) AS raw, collect(CASE WHEN node.namespace = $ns AND node.revision <= $rev "
    f"THEN {_FIELDS_SCORED} END) AS rows RETURN raw, rows"
)
_TEXT_CYPHER = (
    "CALL db.index.fulltext.queryNodes('claim_content', $lucene, {limit: $fetch}) YIELD node, score "
    "WITH count(*) AS raw, collect(CASE WHEN node.namespace = $ns AND node.revision <= $rev "
    f"THEN {_FIELDS_SCORED} END) AS rows RETURN raw, rows"
)


def _round(x: float) -> float:
    return float(f"{x:.12g}")


def _recall_tx(tx: ManagedTransaction, req: RecallRequest) -> ContextPacket:
    state = store_state(tx, req.namespace)
    if state is None:
        raise NotFoundError(f"unknown namespace {req.namespace!r}: nothing was ever written there",
                            field="namespace")
    revision = state.revision
    if req.as_of_revision is not None:
        if not 0 <= req.as_of_revision <= state.revision:
            raise BadInputError(
                f"as_of_revision must be between 0 and the store revision {state.revision}",
                field="as_of_revision", limit=state.revision,
            )
        revision = req.as_of_revision
    reference = req.valid_at or commit_time(tx, req.namespace, revision)
    policy, need = req.policy, req.k * req.policy.oversampling
    pool = _Pool({}, {}, False)
    params = {"ns": req.namespace, "rev": revision, "vector": req.vector}
    if policy.vector_weight > 0:
        _collect(tx, _VECTOR_CYPHER, params, need, revision, reference, pool)
    lucene = lucene_query(req.query)
    if policy.text_weight > 0 and lucene:
        # BM25 scores move with every write to the shared index (any namespace), so the text list
        # is cut on a corpus-independent order instead: share of query terms present, then id.
        qset = set(terms(req.query))
        _collect(tx, _TEXT_CYPHER, {**params, "lucene": lucene}, need, revision, reference, pool,
                 order=lambda r: (-round(lexical_score(qset, r["content"]), 6), r["id"]), min_fetch=200)

    seq = min(state.projections_seq, revision)
    if req.projections_seq is not None:
        seq = min(seq, req.projections_seq)
    graph_scores: dict[str, float] | None = None
    if policy.graph_expansion == "ppr" and policy.graph_weight > 0:
        graph_scores = _graph_candidates(tx, req, pool, seq, revision, reference, need)
    lenders = _successors(tx, req.namespace, pool, revision, reference)
    similarity = _similarities(tx, sorted(set(pool.rows) | set(pool.superseded)), req.vector)
    qterms = set(terms(req.query))
    ranked = _rank(pool.rows.values(), similarity, qterms, policy, reference,
                   {cid: [pool.superseded[o] for o in olds] for cid, olds in lenders.items()}, graph_scores)
    items = ranked[: req.k]
    item_ids = [it.id for it in items]
    supersedes = _supersedes_at(tx, req.namespace, item_ids, revision)
    items = [it.model_copy(update={"supersedes": supersedes.get(it.id)}) for it in items]
    edges, edges_cut = _edges(items, supersedes, policy.d)
    contradictions, contra_cut = _contradictions(tx, req.namespace, item_ids, revision, seq, policy.c)

    hidden = HiddenCounts()
    for reason in pool.hidden.values():
        if reason != "recorded_later":
            setattr(hidden, reason, getattr(hidden, reason) + 1)
    beliefs: list[Belief] = []
    packet = ContextPacket(
        namespace=req.namespace, query=req.query, policy_version=policy.version, k=req.k,
        store_revision=revision, valid_at=iso(req.valid_at), reference_time=iso(reference),
        projections_seq=seq, items=items,
        contradictions=contradictions, edges=edges, beliefs=beliefs,
        completeness=Completeness(
            items_truncated=len(ranked) > req.k, edges_truncated=edges_cut,
            contradictions_truncated=contra_cut, beliefs_truncated=False, candidates_exhausted=pool.exhausted,
        ),
        hidden=hidden, served_at=iso(now_utc()) or "", fingerprint="",
    )
    return packet.model_copy(update={"fingerprint": packet.compute_fingerprint()})


def _graph_candidates(tx: ManagedTransaction, req: RecallRequest, pool: _Pool, seq: int, revision: int,
                      reference: datetime | None, need: int) -> dict[str, float]:
    """Personalized PageRank as a third candidate list (HippoRAG-style), as of projections_seq `seq`.

    Seeds: entities the query names (its canonical n-grams equal an entity's canonical name) and
    entities mentioned by the top `ppr_seed_candidates` vector candidates. GDS 2.13 has no
    per-seed weights, so specificity is applied by *choosing*: query-named entities first, then
    by document frequency ascending (an entity in few claims says more than one in every claim),
    then id; at most `ppr_seeds`. The claims PPR reaches go through the same visibility filter as
    every other candidate. Scores are rounded by `graph.gds`; only visible claims are returned.
    """
    policy = req.policy
    similarity = _similarities(tx, sorted(pool.rows), req.vector)
    top = sorted(pool.rows, key=lambda cid: (-similarity.get(cid, 0.0), cid))[: policy.ppr_seed_candidates]
    query_ids, by_claim = gds.linked_entities(tx, req.namespace, seq, req.query_phrases, top)
    candidate_ids = sorted({e for ids in by_claim.values() for e in ids})
    df = gds.entity_specificity(tx, req.namespace, seq, sorted(set(query_ids) | set(candidate_ids)))
    named = set(query_ids)
    ordered = sorted(df, key=lambda e: (e not in named, df[e], e))
    seeds = [e for e in ordered if df[e] > 0][: policy.ppr_seeds]
    if not seeds:
        return {}
    name = gds.projection_name("ppr")
    req.projections.append(name)
    scores = gds.personalized_pagerank(tx, req.namespace, seq, seeds, name, damping=policy.ppr_damping, limit=need)
    missing = sorted(set(scores) - set(pool.rows) - set(pool.hidden))
    if missing:
        for record in tx.run(
            f"UNWIND $ids AS id MATCH (node:Claim {{namespace: $ns, id: id}}) WHERE node.revision <= $rev "
            f"RETURN {_FIELDS} AS row ORDER BY node.id",
            ids=missing, ns=req.namespace, rev=revision,
        ):
            row = dict(record["row"])
            reason = hidden_reason(
                recorded_revision=row["revision"], vis_from=row["vis_from"], vis_to=row["vis_to"],
                retracted_at_revision=row["retracted_at_revision"], valid_from=_dt(row["valid_from"]),
                valid_to=_dt(row["valid_to"]), revision=revision, valid_at=reference,
            )
            if reason is None:
                pool.rows.setdefault(row["id"], row)
            else:
                pool.hidden.setdefault(row["id"], reason)
    return {cid: score for cid, score in scores.items() if cid in pool.rows}


def _successors(tx: ManagedTransaction, ns: str, pool: _Pool, revision: int,
                valid_at: datetime | None) -> dict[str, list[str]]:
    """Superseded candidates lend their match to the version of their key that is current.

    A claim_key says "these claims are versions of one fact". If the query matches an older
    wording of that fact, the answer is the fact's current value: so the current version joins
    the pool and is ranked by the best match among its versions (its `matched_via` says which).
    Retracted claims lend nothing — they were mistakes, not earlier truths.
    """
    keys = sorted({row["claim_key"] for row in pool.superseded.values()})
    if not keys:
        return {}
    rows = tx.run(
        "UNWIND $keys AS k MATCH (node:Claim {namespace: $ns, claim_key: k}) WHERE node.revision <= $rev "
        f"RETURN {_FIELDS} AS row ORDER BY node.revision, node.id",
        keys=keys, ns=ns, rev=revision,
    )
    current: dict[str, dict[str, Any]] = {}
    for record in rows:
        row = dict(record["row"])
        reason = hidden_reason(
            recorded_revision=row["revision"], vis_from=row["vis_from"], vis_to=row["vis_to"],
            retracted_at_revision=row["retracted_at_revision"], valid_from=_dt(row["valid_from"]),
            valid_to=_dt(row["valid_to"]), revision=revision, valid_at=valid_at,
        )
        if reason is None:
            current[row["claim_key"]] = row
    lenders: dict[str, list[str]] = {}
    for old_id, old in sorted(pool.superseded.items()):
        successor = current.get(old["claim_key"])
        if successor is None:
            continue
        pool.rows.setdefault(successor["id"], successor)
        lenders.setdefault(successor["id"], []).append(old_id)
    return lenders


def _similarities(tx: ManagedTransaction, ids: list[str], vector: list[float]) -> dict[str, float]:
    if not ids:
        return {}
    rows = tx.run(
        "UNWIND $ids AS id MATCH (c:Claim {id: id}) RETURN id, vector.similarity.cosine(c.embedding, $v) AS s",
        ids=ids, v=vector,
    )
    # Six decimals: the same text embedded in different batches differs around 1e-7, and that
    # noise must not decide ranks.
    return {r["id"]: round(float(r["s"]), 6) for r in rows}


def pool_idf(candidates: list[dict[str, Any]], qterms: set[str], identifier_boost: float = 1.0) -> dict[str, float]:
    """BM25-style IDF of the query terms over the candidate pool itself.

    Corpus-wide statistics would make a packet drift as unrelated writes arrive; the pool is a
    function of what is visible at the packet's revision, so these weights are replay-stable.
    Within the pool a subject's name is rare and a word every candidate shares is not, which is
    what tells "Ravi Alvarez" from "Hiroshi Alvarez". Terms no candidate contains carry no
    evidence either way and are left out; identifier terms are weighted up by the policy.
    """
    n = len(candidates)
    doc_terms = [set(terms(r["content"])) for r in candidates]
    idf = {}
    for t in sorted(qterms):
        df = sum(1 for d in doc_terms if t in d)
        if df == 0:
            continue
        weight = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        idf[t] = weight * (identifier_boost if t.startswith("~") else 1.0)
    return idf


def weighted_lexical(idf: dict[str, float], content: str) -> float:
    total = sum(idf.values())
    if total <= 0:
        return 0.0
    present = set(terms(content))
    return sum(w for t, w in idf.items() if t in present) / total


def _rank(rows: Iterable[dict[str, Any]], similarity: dict[str, float], qterms: set[str],
          policy: Policy, reference: datetime | None,
          lenders: dict[str, list[dict[str, Any]]] | None = None,
          graph: dict[str, float] | None = None) -> list[PacketItem]:
    """Fuse the ranked lists. `graph` (PPR scores, None when graph expansion is off) is a third list:
    scaled by its maximum under linear fusion, ranked under RRF, weighted by `graph_weight`."""
    candidates = list(rows)
    lenders = lenders or {}
    idf = pool_idf(candidates, qterms, policy.identifier_boost)
    lexical = {r["id"]: _round(weighted_lexical(idf, r["content"])) for r in candidates}
    own_similarity = dict(similarity)
    similarity = dict(similarity)
    matched_via: dict[str, str] = {}
    for cid, olds in lenders.items():
        # Best match among the key's versions: by the fused evidence of each version.
        for old in sorted(olds, key=lambda o: o["id"]):
            sim = similarity.get(old["id"], 0.0)
            lex = _round(weighted_lexical(idf, old["content"]))
            if (sim, lex) > (similarity.get(cid, 0.0), lexical.get(cid, 0.0)):
                matched_via[cid] = old["id"]
            similarity[cid] = max(similarity.get(cid, 0.0), sim)
            lexical[cid] = max(lexical.get(cid, 0.0), lex)
    wv, wt = policy.vector_weight, policy.text_weight
    wg = policy.graph_weight if graph is not None else 0.0
    graph = graph or {}
    top_graph = max(graph.values(), default=0.0)
    by_graph = sorted((r for r in candidates if graph.get(r["id"], 0.0) > 0),
                      key=lambda r: (-graph[r["id"]], r["id"]))
    grank = _competition_ranks(by_graph, lambda r: graph[r["id"]])
    if policy.fusion == "rrf":
        by_vector = sorted(candidates, key=lambda r: (-similarity.get(r["id"], 0.0), r["id"]))
        by_text = sorted((r for r in candidates if lexical[r["id"]] > 0),
                         key=lambda r: (-lexical[r["id"]], -similarity.get(r["id"], 0.0), r["id"]))
        vrank = _competition_ranks(by_vector, lambda r: similarity.get(r["id"], 0.0))
        trank = _competition_ranks(by_text, lambda r: (lexical[r["id"]], similarity.get(r["id"], 0.0)))
        kk = policy.rrf_k
        best = (wv + wt + wg) / (kk + 1)

        def relevance_of(r: dict[str, Any]) -> float:
            fused = (wv / (kk + vrank[r["id"]]) if wv else 0.0) + (
                wt / (kk + trank[r["id"]]) if r["id"] in trank else 0.0) + (
                wg / (kk + grank[r["id"]]) if r["id"] in grank else 0.0)
            return fused / best
    else:
        # Convex combination of scores: keeps how much better one candidate is, which ranks lose.
        def relevance_of(r: dict[str, Any]) -> float:
            cosine = max(0.0, 2.0 * similarity.get(r["id"], 0.0) - 1.0)  # index scale (1+cos)/2 -> cos
            g = graph.get(r["id"], 0.0) / top_graph if top_graph > 0 else 0.0
            return (wv * cosine + wt * lexical[r["id"]] + wg * g) / (wv + wt + wg)

    scored = []
    for r in candidates:
        relevance = _round(relevance_of(r))
        tau = float(r["tau"] or policy.default_tau)
        recorded = to_py_datetime(r["recorded_at"])
        age = max(0.0, (reference - recorded).total_seconds()) if reference else 0.0
        decay = _round(math.exp(-age / tau))
        score = _round(relevance * decay)
        scored.append((score, r, relevance, decay, age, tau))
    scored.sort(key=lambda s: (-s[0], -s[1]["revision"], s[1]["id"]))
    items = []
    for rank, (score, r, relevance, decay, age, tau) in enumerate(scored, start=1):
        items.append(PacketItem(
            id=r["id"], content=r["content"], source=r["source"], claim_key=r["claim_key"],
            metadata=json.loads(r["metadata_json"] or "{}"), revision=r["revision"],
            recorded_at=iso(to_py_datetime(r["recorded_at"])) or "",
            valid_from=iso(_dt(r["valid_from"])), valid_to=iso(_dt(r["valid_to"])), rank=rank, score=score,
            relevance=relevance, vector_similarity=_round(own_similarity.get(r["id"], 0.0)),
            matched_via=matched_via.get(r["id"]),
            lexical_score=lexical[r["id"]],
            freshness=Freshness(age_seconds=_round(age), tau_seconds=tau, decay=decay, status="current",
                                superseded=False, retracted=False),
        ))
    return items


def _competition_ranks(ordered: list[dict[str, Any]], key: Callable[[dict[str, Any]], Any]) -> dict[str, int]:
    """Equal keys share a rank (1, 1, 3): identical claims must get identical relevance."""
    ranks: dict[str, int] = {}
    previous: Any = object()
    rank = 0
    for position, row in enumerate(ordered, start=1):
        current = key(row)
        if current != previous:
            rank, previous = position, current
        ranks[row["id"]] = rank
    return ranks


def _supersedes_at(tx: ManagedTransaction, ns: str, ids: list[str], revision: int) -> dict[str, str]:
    """Which claim each item had replaced, as of the packet's revision."""
    if not ids:
        return {}
    rows = tx.run(
        "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id})-[s:SUPERSEDES]->(o:Claim) "
        "WHERE s.revision <= $rev AND (s.undone_at_revision IS NULL OR s.undone_at_revision > $rev) "
        "RETURN id, o.id AS old ORDER BY s.revision DESC, old",
        ids=ids, ns=ns, rev=revision,
    )
    out: dict[str, str] = {}
    for r in rows:
        out.setdefault(r["id"], r["old"])
    return out


def _edges(items: list[PacketItem], supersedes: dict[str, str], cap: int) -> tuple[list[PacketEdge], bool]:
    position = {it.id: i for i, it in enumerate(items)}
    edges: list[tuple[int, int, str, PacketEdge]] = []
    for new, old in supersedes.items():
        if old in position:
            edges.append((position[new], position[old], "supersedes",
                          PacketEdge(kind="supersedes", source_id=new, target_id=old)))
    for i, a in enumerate(items):
        for b in items[i + 1:]:
            if a.source == b.source:
                edges.append((i, position[b.id], "shared_source",
                               PacketEdge(kind="shared_source", source_id=a.id, target_id=b.id, detail=a.source)))
    edges.sort(key=lambda e: (e[0], e[1], e[2]))
    return [e[3] for e in edges[:cap]], len(edges) > cap


def _contradictions(tx: ManagedTransaction, ns: str, ids: list[str], revision: int, seq: int,
                    cap: int) -> tuple[list[PacketContradiction], bool]:
    """CONTRADICTS edges the projections had found by `seq` whose other side was current at the revision.

    An edge's `revision` is the revision of the claim whose processing found it, so it exists
    for a packet exactly when the worker had moved past that revision.
    """
    if not ids:
        return [], False
    rows = list(tx.run(
        "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id})-[r:CONTRADICTS]-(o:Claim {namespace: $ns}) "
        "WHERE r.revision <= $seq "
        "RETURN DISTINCT id, o.id AS oid, o.content AS content, o.source AS source, o.claim_key AS key, "
        "o.vis_from AS vf, o.vis_to AS vt, r.score AS score, r.method AS method, r.revision AS rrev",
        ids=ids, ns=ns, seq=seq,
    ))
    in_packet = set(ids)
    per_item: dict[str, list[PacketContradiction]] = {}
    for r in rows:
        if not current_at(r["vf"], r["vt"], revision):
            continue
        per_item.setdefault(r["id"], []).append(PacketContradiction(
            item_id=r["id"], other=ClaimRef(id=r["oid"], content=r["content"], source=r["source"],
                                            claim_key=r["key"]),
            score=_round(float(r["score"])), method=str(r["method"]), revision=int(r["rrev"]),
            other_in_packet=r["oid"] in in_packet,
        ))
    out: list[PacketContradiction] = []
    cut = False
    for item_id in ids:
        found = sorted(per_item.get(item_id, []), key=lambda c: (-c.score, c.other.id, c.method))
        cut = cut or len(found) > cap
        out.extend(found[:cap])
    return out, cut


def recall(driver: Driver, req: RecallRequest, database: str | None = None) -> ContextPacket:
    try:
        with driver.session(database=database, default_access_mode="READ") as session:
            return session.execute_read(_recall_tx, req)
    except BaseException:
        # The transaction died: its in-transaction drop may not have run. Drop by name, quietly.
        if req.projections:
            gds.drop_quietly(driver, req.projections, database)
        raise
