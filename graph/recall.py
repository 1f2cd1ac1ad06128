"""Recall: hybrid candidates → visibility filter → relevance × freshness → a bounded packet.

The packet is a pure function of (namespace, store revision R, query vector, policy, k,
valid_at). Everything that could make it depend on something else is pinned down here:

* Visibility is evaluated at R (claims recorded after R never enter the pool), so a recall
  "now" at revision R and an as-of recall at R later produce the same packet.
* Freshness is measured at the reference time — `valid_at` if given, else the commit time of
  R — never the wall clock.
* Similarity is recomputed exactly for every candidate with `vector.similarity.cosine`,
  whichever index found it; lexical relevance is the share of query terms a claim contains,
  which (unlike BM25) does not shift as other documents are written.
* Every ordering ends in the claim id, so ties never fall back to engine order.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from neo4j import Driver, ManagedTransaction

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


def terms(text: str) -> list[str]:
    """Lower-cased content words with a light plural fold; the unit of lexical relevance."""
    out = []
    for tok in _TOKEN_RE.findall(text.lower()):
        if tok in STOPWORDS:
            continue
        if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
            tok = tok[:-1]
        out.append(tok)
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


@dataclass
class _Pool:
    rows: dict[str, dict[str, Any]]
    hidden: dict[str, str]
    exhausted: bool


def _collect(tx: ManagedTransaction, cypher: str, params: dict[str, Any], need: int,
             revision: int, valid_at: datetime | None, pool: _Pool) -> None:
    """Fetch from an index, growing the fetch until `need` visible candidates or the index runs dry."""
    fetch = max(need * 2, 20)
    while True:
        record = tx.run(cypher, fetch=fetch, **params).single(strict=True)
        raw, rows = int(record["raw"]), record["rows"]
        visible = 0
        for row in rows:
            reason = hidden_reason(
                recorded_revision=row["revision"], vis_from=row["vis_from"], vis_to=row["vis_to"],
                retracted_at_revision=row["retracted_at_revision"],
                valid_from=_dt(row["valid_from"]), valid_to=_dt(row["valid_to"]),
                revision=revision, valid_at=valid_at,
            )
            if visible >= need:
                break
            if reason is None:
                visible += 1
                pool.rows.setdefault(row["id"], dict(row))
            else:
                pool.hidden.setdefault(row["id"], reason)
        if visible >= need or raw < fetch:
            return
        if fetch >= MAX_CANDIDATES:
            pool.exhausted = True
            return
        fetch = min(fetch * 4, MAX_CANDIDATES)


def _dt(value: Any) -> datetime | None:
    return None if value is None else to_py_datetime(value)


_VECTOR_CYPHER = (
    "CALL db.index.vector.queryNodes('claim_embedding', $fetch, $vector) YIELD node, score "
    "WITH count(*) AS raw, collect(CASE WHEN node.namespace = $ns AND node.revision <= $rev "
    f"THEN {_FIELDS} END) AS rows RETURN raw, rows"
)
_TEXT_CYPHER = (
    "CALL db.index.fulltext.queryNodes('claim_content', $lucene, {limit: $fetch}) YIELD node, score "
    "WITH count(*) AS raw, collect(CASE WHEN node.namespace = $ns AND node.revision <= $rev "
    f"THEN {_FIELDS} END) AS rows RETURN raw, rows"
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
        _collect(tx, _TEXT_CYPHER, {**params, "lucene": lucene}, need, revision, reference, pool)

    similarity = _similarities(tx, list(pool.rows), req.vector)
    qterms = set(terms(req.query))
    ranked = _rank(pool.rows.values(), similarity, qterms, policy, reference)
    items = ranked[: req.k]
    item_ids = [it.id for it in items]
    supersedes = _supersedes_at(tx, req.namespace, item_ids, revision)
    items = [it.model_copy(update={"supersedes": supersedes.get(it.id)}) for it in items]
    edges, edges_cut = _edges(items, supersedes, policy.d)
    seq = min(state.projections_seq, revision)
    if req.projections_seq is not None:
        seq = min(seq, req.projections_seq)
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


def _rank(rows: Iterable[dict[str, Any]], similarity: dict[str, float], qterms: set[str],
          policy: Policy, reference: datetime | None) -> list[PacketItem]:
    candidates = list(rows)
    lexical = {r["id"]: lexical_score(qterms, r["content"]) for r in candidates}
    by_vector = sorted(candidates, key=lambda r: (-similarity.get(r["id"], 0.0), r["id"]))
    by_text = sorted((r for r in candidates if lexical[r["id"]] > 0),
                     key=lambda r: (-lexical[r["id"]], -similarity.get(r["id"], 0.0), r["id"]))
    vrank = _competition_ranks(by_vector, lambda r: similarity.get(r["id"], 0.0))
    trank = _competition_ranks(by_text, lambda r: (lexical[r["id"]], similarity.get(r["id"], 0.0)))
    wv, wt, kk = policy.vector_weight, policy.text_weight, policy.rrf_k
    best = (wv + wt) / (kk + 1)
    scored = []
    for r in candidates:
        fused = (wv / (kk + vrank[r["id"]]) if wv else 0.0) + (wt / (kk + trank[r["id"]]) if r["id"] in trank else 0.0)
        relevance = _round(fused / best)
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
            relevance=relevance, vector_similarity=_round(similarity.get(r["id"], 0.0)),
            lexical_score=_round(lexical[r["id"]]),
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
    with driver.session(database=database, default_access_mode="READ") as session:
        return session.execute_read(_recall_tx, req)
