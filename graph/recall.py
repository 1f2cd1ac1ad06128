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

import functools
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from neo4j import Driver, ManagedTransaction

from graph import gds
from graph.facts import packet_beliefs
from graph.inferred import inferred_successors
from graph.revisions import default_policy_at, policy_changes, to_py_datetime
from graph.visibility import current_at, end_at, from_micros, hidden_reason
from schema.errors import BadInputError, NotFoundError
from schema.limits import MAX_CANDIDATES
from schema.models import (
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
    "metadata_json: node.metadata_json, revision: node.revision, recorded_at: toString(node.recorded_at), "
    "valid_from: toString(node.valid_from), valid_to: toString(node.valid_to), tau: node.tau, vis_from: node.vis_from, "
    "vis_to: node.vis_to, vis_until: node.vis_until, retracted_at_revision: node.retracted_at_revision}"
)


# Possessive quantifiers and the look-behind keep these linear: a name can only start where a word
# starts, and a failed match never backtracks into the word (tokenising was a third of a recall).
_COMPOUND_RE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]++(?:[-_/.\u2013\u2014][A-Za-z0-9]++)+")
_CODE_RE = re.compile(r"(?<![a-z0-9])[a-z]++[0-9][a-z0-9]*+")
_PART_RE = re.compile(r"[-_/.\u2013\u2014\s]+")
_HEAD_RE = re.compile(r"[ \t]+([a-z0-9]+)")
_NAME_RE = re.compile(r"\b[A-Z][a-z0-9]+(?:\s+[A-Z][a-z0-9]+)+")


def _fold(tok: str) -> str:
    if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
        return tok[:-1]
    return tok


def terms(text: str) -> list[str]:
    """Lower-cased content words with a light plural fold, plus identifier terms.

    Identifiers — hyphenated or dotted names (`ledger-scheduler`, `db-7`) and capitalised
    multi-word names (`Ravi Alvarez`) — are kept whole as extra terms: they name *which* thing
    a claim is about, and sharing one is much stronger evidence than sharing its parts.
    """
    return _terms_and_names(text)[0]


def _terms_and_names(text: str) -> tuple[list[str], list[str]]:
    lowered = text.lower()
    words = [_fold(tok) for tok in _TOKEN_RE.findall(lowered) if tok not in STOPWORDS]
    names, phrases = _identifier_terms(text, lowered)
    return words + names + phrases, names


@functools.lru_cache(maxsize=65536)
def _analysed(text: str) -> tuple[frozenset[str], frozenset[str]]:
    all_terms, names = _terms_and_names(text)
    return frozenset(all_terms), frozenset(names)


def term_set(text: str) -> frozenset[str]:
    """`terms` as a set, memoised: a recall scores a few hundred texts several ways, and popular
    claims come back recall after recall; the function is pure, so caching changes nothing."""
    return _analysed(text)[0]


def identifiers(text: str) -> frozenset[str]:
    """The names a text is about (identifier terms, without their head-word phrases)."""
    return _analysed(text)[1]


def _identifier_terms(text: str, lowered: str) -> tuple[list[str], list[str]]:
    # Codes that start with a letter and carry a digit (q3, v2, db7) name one thing: "q3" is not
    # "q2". Values with units (300ms, 5mg) and ordinals (99th) start with the digit and are not codes.
    names = ["~" + code for code in _CODE_RE.findall(lowered)]
    phrases: list[str] = []
    for m in _COMPOUND_RE.finditer(text):
        anchor = m.group(0).lower()
        names.append("~" + anchor)
        # A name's head words say *which* of its things: "Acme–Keystone reseller contract" is not
        # "Acme–Keystone supply contract", though both share the name. Only for names (several
        # capitalised parts, or a digit): after "long-term" the next word is just more prose.
        following = _HEAD_RE.match(text, m.end()) if _is_name(m.group(0)) else None
        head = following.group(1).lower() if following else ""
        if head and head not in STOPWORDS:
            phrases.append(f"~{anchor} {head}")
    for m in _NAME_RE.finditer(text):
        parts = [w for w in m.group(0).lower().split() if w not in STOPWORDS]  # "The Acme" -> "acme"
        if len(parts) > 1:
            names.append("~" + " ".join(parts))
    return names, phrases


def _is_name(compound: str) -> bool:
    parts = [p for p in _PART_RE.split(compound) if p]
    return sum(p[0].isupper() for p in parts) >= 2 or any(c.isdigit() for c in compound)


@functools.lru_cache(maxsize=65536)
def _stems(term: str) -> tuple[str, ...]:
    # Truncated parts, so inflections of one name ("auto-renewal", "auto-renews") stay one name.
    return tuple(p[:5] for p in _PART_RE.split(term[1:]) if p)


def names_sibling(query_names: frozenset[str], content: str) -> bool:
    """Does the text name a *sibling* of what the query names, and not the thing itself?

    "checkout-gateway" shares a part with "checkout-scheduler", "Sterling Systems" with
    "Sterling Holdings": a claim that names such a sibling but none of the query's names is about
    something else, however well its other words match. Texts that name nothing are not judged.
    """
    if not query_names:
        return False
    asked = {_stems(q) for q in query_names}
    own = {_stems(c) for c in identifiers(content)}
    others = own - asked  # naming two things the query names is not naming a sibling
    return any(q not in own and any(set(q) & set(c) for c in others) for q in sorted(asked))


def lexical_score(query_terms: set[str], content: str) -> float:
    if not query_terms:
        return 0.0
    return len(query_terms & term_set(content)) / len(query_terms)


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
    # Set by callers that resolved the policy from a cache: the stored policy's content hash they
    # resolved (None: not stored, the built-in default). A mismatch raises PolicyChangedError.
    check_policy: bool = False
    policy_hash: str | None = None
    # Set by callers that took `policy` to be the namespace's default (no version asked): the default
    # in effect at the revision served is checked in the same first round trip; if it is another
    # version, PolicyChangedError carries it (`.default`) and the caller retries with that one.
    check_default: bool = False
    # Names of GDS projections this recall created, so `recall` can drop them if the transaction died.
    projections: list[str] = field(default_factory=list, compare=False)


@dataclass
class _Pool:
    rows: dict[str, dict[str, Any]]
    hidden: dict[str, str]
    exhausted: bool
    superseded: dict[str, dict[str, Any]] = field(default_factory=dict)  # hidden as superseded at R
    inferred: set[str] = field(default_factory=set)  # of those, hidden by an inferred supersession


def _take(rows: list[dict[str, Any]], raw: int, fetch: int, need: int, revision: int,
          valid_at: datetime | None, pool: _Pool, order: Callable[[dict[str, Any]], Any]) -> bool:
    """Admit the first `need` visible rows of one index answer; True when the fetch must grow.

    The cut to `need` is made on our own total order (score, then id) — not on the order the
    index happened to return. Approximate search and tied scores can shuffle the tail of an
    index answer between two identical calls; with the cut made here, that tail never decides
    which candidates enter the pool.
    """
    rows = sorted(rows, key=order)
    visible = sum(1 for row in rows if _reason(row, revision, valid_at) is None)
    if visible < need and raw >= fetch and fetch < MAX_CANDIDATES:
        return True
    pool.exhausted = pool.exhausted or (visible < need and raw >= fetch)
    taken = 0
    for row in rows:
        if taken >= need:
            break
        reason = _reason(row, revision, valid_at)
        if reason is None:
            taken += 1
            pool.rows.setdefault(row["id"], row)
        else:
            pool.hidden.setdefault(row["id"], reason)
            if reason == "superseded":
                pool.superseded.setdefault(row["id"], row)
    return False


def _reason(row: dict[str, Any], revision: int, valid_at: datetime | None) -> str | None:
    return hidden_reason(
        recorded_revision=row["revision"], vis_from=row["vis_from"], vis_to=row["vis_to"],
        retracted_at_revision=row["retracted_at_revision"],
        valid_from=_dt(row["valid_from"]), valid_to=_dt(row["valid_to"]),
        revision=revision, valid_at=valid_at, vis_until=row.get("vis_until"),
    )


def _window_end(row: dict[str, Any], revision: int) -> datetime | None:
    """Where a visible row's world-time window ended as of `revision` (its stated end if it records none)."""
    until = end_at(row["vis_from"], row["vis_to"], row.get("vis_until"), revision)
    return _dt(row["valid_to"]) if until is None else from_micros(until)


def _dt(value: Any) -> datetime | None:
    """Candidate rows carry times as ISO strings (`toString`): decoding hundreds of driver DateTime
    values per recall cost more than the rest of the row; "…Z[UTC]" loses only its zone name."""
    if value is None:
        return None
    if isinstance(value, str):
        return datetime.fromisoformat(value.partition("[")[0])
    return to_py_datetime(value)


_FIELDS_SIM = _FIELDS[:-1] + ", sim: vector.similarity.cosine(node.embedding, $vector)}"
# What cutting an index answer needs: visibility and the words. The rest of a row (source, metadata,
# exact cosine) is fetched for the few rows the cut admits — an index answer is several times wider
# than what survives it, and reading those properties was half the cost of a recall at 100k claims.
_FIELDS_CUT = (
    "{id: node.id, content: node.content, claim_key: node.claim_key, revision: node.revision, "
    "valid_from: toString(node.valid_from), valid_to: toString(node.valid_to), vis_from: node.vis_from, "
    "vis_to: node.vis_to, vis_until: node.vis_until, retracted_at_revision: node.retracted_at_revision, score: score}"
)

# Round trip 1: the store's state, the reference time, the stored hash of the policy, and both index
# answers, each cut to the namespace and revision.
_STATE_CYPHER = (
    "MATCH (s:Store {namespace: $ns}) "
    "WITH s, CASE WHEN $as_of IS NULL THEN s.revision ELSE $as_of END AS rev "
    "OPTIONAL MATCH (cm:Commit {namespace: $ns, revision: rev}) "
    "OPTIONAL MATCH (p:Policy {namespace: $ns, version: $policy_version}) "
    "WITH s, rev, cm, p.content_hash AS policy_hash, EXISTS { MATCH (:Fact {namespace: $ns}) } AS has_facts, "
    "COUNT { (:Claim) } AS indexed "
    # The indexes are shared by every namespace, and an as-of recall can see only what existed at R:
    # the fetch is widened by the share of index entries that can pass the filter, so that a small
    # tenant or an old revision does not need a second, wider round trip. (Claim counts are kept on the
    # Store and Commit nodes by every ingest; `indexed` comes from the count store.)
    "WITH s, rev, cm.at AS at, policy_hash, has_facts, CASE WHEN NOT $adapt OR indexed = 0 THEN 1.0 "
    "  ELSE coalesce(CASE WHEN $as_of IS NULL THEN s.claims ELSE cm.claims END, s.claims, indexed) * 1.0 / indexed "
    "  END AS share "
    "WITH s, rev, at, policy_hash, has_facts, [f IN [$vfetch, $tfetch] | CASE WHEN f = 0 OR share >= 1.0 THEN f "
    "  WHEN f >= share * $max_fetch THEN $max_fetch ELSE toInteger(ceil(f / share)) END] AS sizes "
    "WITH s, rev, at, policy_hash, has_facts, sizes[0] AS vf, sizes[1] AS tf "
)
_VECTOR_PART = (
    "CALL (rev, vf) { CALL db.index.vector.queryNodes('claim_embedding', vf, $vector) YIELD node, score "
    "RETURN count(*) AS vraw, collect(CASE WHEN node.namespace = $ns AND node.revision <= rev "
    f"THEN {_FIELDS_CUT} END) AS vrows }} "
)
_TEXT_PART = (
    "CALL (rev, tf) { CALL db.index.fulltext.queryNodes('claim_content', $lucene, {limit: tf}) YIELD node, score "
    "RETURN count(*) AS traw, collect(CASE WHEN node.namespace = $ns AND node.revision <= rev "
    f"THEN {_FIELDS_CUT} END) AS trows }} "
)
_CANDIDATE_QUERIES = {
    (vector, text): _STATE_CYPHER
    + (_VECTOR_PART if vector else "WITH *, 0 AS vraw, [] AS vrows ")
    + (_TEXT_PART if text else "WITH *, 0 AS traw, [] AS trows ")
    + "RETURN s.revision AS revision, s.projections_seq AS seq, rev, at, policy_hash, has_facts, vf, vraw, vrows, tf, "
      "traw, trows, s.policy_revisions AS policy_revisions, s.policy_versions AS policy_versions"
    for vector in (True, False) for text in (True, False)
}

# Round trip 2, for what the cuts admitted: full rows with exact cosines (whichever index found
# them), the latest versions of their claim_keys, and which hidden rows an *inferred* supersession
# (the worker's judgement, not a claim_key) hid at R — the packet counts what inference hid.
_ADMITTED_CYPHER = (
    "CALL () { UNWIND $ids AS id MATCH (node:Claim {namespace: $ns, id: id}) USING INDEX node:Claim(id) "
    f"RETURN collect({_FIELDS_SIM}) AS rows }} "
    "CALL () { UNWIND $keys AS k "
    "CALL (k) { MATCH (node:Claim {namespace: $ns, claim_key: k}) WHERE node.revision <= $rev "
    "RETURN node ORDER BY node.revision DESC, node.id LIMIT $versions_per_key } "
    "WITH node WHERE NOT node.id IN $ids "
    f"RETURN collect({_FIELDS_SIM}) AS versions }} "
    "CALL () { UNWIND $superseded AS id MATCH (node:Claim {namespace: $ns, id: id}) USING INDEX node:Claim(id) "
    "WHERE EXISTS { MATCH (node)<-[s:SUPERSEDES]-(:Claim) WHERE s.reason = 'inferred' AND s.revision <= $rev "
    "AND (s.undone_at_revision IS NULL OR s.undone_at_revision > $rev) } RETURN collect(id) AS inferred } "
    "RETURN rows, versions, inferred"
)


# The text list is cut on lexical share, not BM25; it is fetched this wide so that BM25's drift
# (its statistics span every namespace in the shared index) does not decide that cut.
TEXT_MIN_FETCH = 200

# A fact is judged by its best wording among its latest versions, not all of them: a key rewritten
# a thousand times must not pull a thousand rows into every recall that touches it.
VERSIONS_PER_KEY = 8


class PolicyChangedError(Exception):
    """The stored policy is not the one the caller resolved (dropped and re-registered): reload it.
    With `default` set, the namespace's default at the revision served is that version instead."""

    def __init__(self, version: str, default: str | None = None) -> None:
        super().__init__(version)
        self.default = default


def _round(x: float) -> float:
    return float(f"{x:.12g}")


def _fetch(tx: ManagedTransaction, req: RecallRequest, vfetch: int, tfetch: int, lucene: str,
           adapt: bool) -> dict[str, Any]:
    """One index round trip; with `adapt` the fetch sizes are minimums, widened by the filter's pass rate."""
    record = tx.run(
        _CANDIDATE_QUERIES[(vfetch > 0, tfetch > 0)],
        ns=req.namespace, as_of=req.as_of_revision, policy_version=req.policy.version,
        vector=req.vector, vfetch=vfetch, lucene=lucene, tfetch=tfetch, adapt=adapt, max_fetch=MAX_CANDIDATES,
    ).single()
    if record is None:
        raise NotFoundError(f"unknown namespace {req.namespace!r}: nothing was ever written there",
                            field="namespace")
    return dict(record)


def _recall_tx(tx: ManagedTransaction, req: RecallRequest) -> ContextPacket:
    policy, need = req.policy, req.k * req.policy.oversampling
    lucene = lucene_query(req.query) if policy.text_weight > 0 else ""
    qset = set(terms(req.query))
    vfetch = max(need * 2, 20) if policy.vector_weight > 0 else 0
    # BM25 scores move with every write to the shared index (any namespace), so the text list is
    # cut on a corpus-independent order instead — share of query terms present, then id — over a
    # fetch wide enough that the BM25 tail does not decide the cut.
    tfetch = max(need * 2, TEXT_MIN_FETCH) if lucene else 0

    def by_score(r: dict[str, Any]) -> tuple[float, str]:
        return -round(float(r["score"]), 6), r["id"]

    def by_terms(r: dict[str, Any]) -> tuple[float, str]:
        return -round(lexical_score(qset, r["content"]), 6), r["id"]

    adapt = True
    while True:
        got = _fetch(tx, req, vfetch, tfetch, lucene, adapt)
        state_revision = int(got["revision"])
        if req.as_of_revision is not None and not 0 <= req.as_of_revision <= state_revision:
            raise BadInputError(
                f"as_of_revision must be between 0 and the store revision {state_revision}",
                field="as_of_revision", limit=state_revision,
            )
        if req.check_default:
            default = default_policy_at(policy_changes(got["policy_revisions"], got["policy_versions"]),
                                        int(got["rev"]))
            if default != req.policy.version:
                raise PolicyChangedError(req.policy.version, default)
        if req.check_policy and got["policy_hash"] != req.policy_hash:
            raise PolicyChangedError(req.policy.version)
        revision = int(got["rev"])
        reference = req.valid_at or (None if got["at"] is None else to_py_datetime(got["at"]))
        pool = _Pool({}, {}, False)
        vfetch, tfetch = int(got["vf"]), int(got["tf"])
        grow_v = vfetch > 0 and _take(got["vrows"], int(got["vraw"]), vfetch, need, revision, reference, pool,
                                      by_score)
        grow_t = tfetch > 0 and _take(got["trows"], int(got["traw"]), tfetch, need, revision, reference, pool,
                                      by_terms)
        if not (grow_v or grow_t):
            break
        # Rare: filtering hid more than the index share predicted (supersession, validity windows).
        # Fetch again, wider, in one go.
        vfetch = min(vfetch * 4, MAX_CANDIDATES) if grow_v else vfetch
        tfetch = min(tfetch * 4, MAX_CANDIDATES) if grow_t else tfetch
        adapt = False
    state_seq = int(got["seq"] or 0)
    versions = _admit(tx, req, pool, revision)
    seq = min(state_seq, revision)
    if req.projections_seq is not None:
        seq = min(seq, req.projections_seq)
    graph_scores: dict[str, float] | None = None
    if policy.graph_expansion == "ppr" and policy.graph_weight > 0:
        graph_scores = _graph_candidates(tx, req, pool, seq, revision, reference, need)
    lenders = _successors(versions, pool, revision, reference)
    _inferred_lenders(tx, req, pool, revision, reference, {r["id"]: r for r in versions}, lenders)
    # Every row carries its exact cosine, PPR's additions included; six decimals, because the same
    # text embedded in different batches differs around 1e-7 and that noise must not decide ranks.
    similarity = {r["id"]: round(float(r["sim"]), 6) for r in [*versions, *pool.rows.values()]}
    items, ranked_total, below_floor = _rank(pool.rows.values(), similarity, req.query, policy, reference, lenders,
                                             graph_scores, limit=req.k)
    item_ids = [it.id for it in items]
    supersedes, contradiction_rows = _item_links(tx, req.namespace, item_ids, revision, seq)
    items = [it.model_copy(update={"supersedes": supersedes.get(it.id),
                                   "valid_until": iso(_window_end(pool.rows[it.id], revision))}) for it in items]
    edges, edges_cut = _edges(items, supersedes, policy.d)
    contradictions, contra_cut = _contradictions(contradiction_rows, item_ids, revision, policy.c)
    beliefs, beliefs_cut = (packet_beliefs(tx, req.namespace, item_ids, revision, seq, policy.b)
                            if got["has_facts"] else ([], False))

    hidden = HiddenCounts()
    for reason in pool.hidden.values():
        if reason != "recorded_later":
            setattr(hidden, reason, getattr(hidden, reason) + 1)
    hidden.inferred = len(pool.inferred)
    hidden.below_relevance = len(below_floor)
    packet = ContextPacket(
        namespace=req.namespace, query=req.query, policy_version=policy.version, k=req.k,
        store_revision=revision, valid_at=iso(req.valid_at), reference_time=iso(reference),
        projections_seq=seq, items=items,
        contradictions=contradictions, edges=edges, beliefs=beliefs,
        completeness=Completeness(
            items_truncated=ranked_total > req.k, edges_truncated=edges_cut,
            contradictions_truncated=contra_cut, beliefs_truncated=beliefs_cut, candidates_exhausted=pool.exhausted,
        ),
        hidden=hidden, served_at=iso(now_utc()) or "", fingerprint="",
    )
    return packet.model_copy(update={"fingerprint": packet.compute_fingerprint()})


def _admit(tx: ManagedTransaction, req: RecallRequest, pool: _Pool, revision: int) -> list[dict[str, Any]]:
    """Replace the admitted cut rows by full rows; return them, the hidden superseded rows that can lend
    (those with a claim_key) and the latest versions of every key among them, each with its exact cosine."""
    # Keyed versions lend to their key's current version; keyless claims hidden by inference lend to
    # the end of their inferred chain (_inferred_lenders), so both need their full rows.
    lending = set(pool.superseded)
    ids = sorted({*pool.rows, *lending})
    keys = sorted({r["claim_key"] for r in (*pool.rows.values(), *pool.superseded.values())
                   if r["claim_key"] is not None})
    record = tx.run(
        _ADMITTED_CYPHER, ns=req.namespace, ids=ids, keys=keys, rev=revision, vector=req.vector,
        versions_per_key=VERSIONS_PER_KEY, superseded=sorted(pool.superseded),
    ).single()
    assert record is not None  # UNWIND … collect() always returns one row
    full = {row["id"]: row for row in record["rows"]}
    # Claims are immutable while their namespace lives; one can only vanish with it (a concurrent drop).
    pool.rows = {cid: full[cid] for cid in pool.rows if cid in full}
    pool.inferred = set(record["inferred"])
    return [*full.values(), *record["versions"]]


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
    similarity = {cid: round(float(r["sim"]), 6) for cid, r in pool.rows.items()}
    top = sorted(pool.rows, key=lambda cid: (-similarity.get(cid, 0.0), cid))[: policy.ppr_seed_candidates]
    query_ids, by_claim = gds.linked_entities(tx, req.namespace, seq, req.query_phrases, top)
    candidate_ids = sorted({e for ids in by_claim.values() for e in ids})
    df = gds.entity_specificity(tx, req.namespace, seq, sorted(set(query_ids) | set(candidate_ids)),
                                policy.ppr_max_degree)
    named = set(query_ids)
    ordered = sorted(df, key=lambda e: (e not in named, df[e], e))
    seeds = [e for e in ordered if df[e] > 0][: policy.ppr_seeds]
    if not seeds:
        return {}
    name = gds.projection_name("ppr")
    req.projections.append(name)
    scores = gds.personalized_pagerank(tx, req.namespace, seq, seeds, name, damping=policy.ppr_damping, limit=need,
                                       max_degree=policy.ppr_max_degree)
    missing = sorted(set(scores) - set(pool.rows) - set(pool.hidden))
    if missing:
        for record in tx.run(
            f"UNWIND $ids AS id MATCH (node:Claim {{namespace: $ns, id: id}}) USING INDEX node:Claim(id) "
            f"WHERE node.revision <= $rev "
            f"RETURN {_FIELDS_SIM} AS row ORDER BY node.id",
            ids=missing, ns=req.namespace, rev=revision, vector=req.vector,
        ):
            row = dict(record["row"])
            reason = _reason(row, revision, reference)
            if reason is None:
                pool.rows.setdefault(row["id"], row)
            else:
                pool.hidden.setdefault(row["id"], reason)
    return {cid: score for cid, score in scores.items() if cid in pool.rows}


def _inferred_lenders(tx: ManagedTransaction, req: RecallRequest, pool: _Pool, revision: int,
                      reference: datetime | None, rows: dict[str, dict[str, Any]],
                      lenders: dict[str, list[dict[str, Any]]]) -> None:
    """A keyless candidate hidden by inferred supersession lends its match to the claim at the end
    of its inferred chain, as a key's versions do (graph.inferred.inferred_successors): the worker
    judged them one fact, so a query worded like the old statement still finds the new one. The
    successor joins the pool if it was not a candidate (it must be visible at R; `matched_via`
    says which claim matched)."""
    olds = sorted(cid for cid in pool.inferred if cid in rows and rows[cid]["claim_key"] is None)
    if not olds:
        return
    successors = inferred_successors(tx, req.namespace, olds, revision)
    missing = sorted({s for s in successors.values() if s not in pool.rows})
    if missing:
        for record in tx.run(
            f"UNWIND $ids AS id MATCH (node:Claim {{namespace: $ns, id: id}}) USING INDEX node:Claim(id) "
            f"WHERE node.revision <= $rev RETURN {_FIELDS_SIM} AS row ORDER BY node.id",
            ids=missing, ns=req.namespace, rev=revision, vector=req.vector,
        ):
            row = dict(record["row"])
            if _reason(row, revision, reference) is None:
                pool.rows.setdefault(row["id"], row)
    for old, successor in sorted(successors.items()):
        if successor in pool.rows:
            lenders.setdefault(successor, []).append(rows[old])


def _successors(versions: list[dict[str, Any]], pool: _Pool, revision: int,
                valid_at: datetime | None) -> dict[str, list[dict[str, Any]]]:
    """Every version of a candidate's claim_key lends its match to the version current at R.

    A claim_key says "these claims are versions of one fact", so a fact is judged by its best
    wording among the versions that existed at R — not only by the versions that happened to
    make the index cut. Judging by the cut alone is asymmetric: a similar fact about another
    subject whose old wording made the cut would borrow that match, while the asked-about fact
    whose old wording fell just below it would not. The current version joins the pool (its
    `matched_via` says which version matched). Retracted claims lend nothing — they were
    mistakes, not earlier truths. `versions` holds every claim recorded by R of every key the
    index answers touched (the candidate query fetched them), so no further round trip is needed.
    """
    keys = {row["claim_key"] for row in (*pool.rows.values(), *pool.superseded.values())
            if row["claim_key"] is not None}
    current: dict[str, dict[str, Any]] = {}
    earlier: dict[str, dict[str, dict[str, Any]]] = {}
    for row in versions:
        key = row["claim_key"]
        if key not in keys:
            continue
        reason = _reason(row, revision, valid_at)
        if reason is None:
            current[key] = row
        elif reason == "superseded":
            earlier.setdefault(key, {})[row["id"]] = row
    lenders: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(keys):
        successor = current.get(key)
        if successor is None or not earlier.get(key):
            continue
        pool.rows.setdefault(successor["id"], successor)
        lenders[successor["id"]] = [earlier[key][i] for i in sorted(earlier[key])]
    return lenders


def pool_idf(candidates: list[dict[str, Any]], qterms: set[str], identifier_boost: float = 1.0) -> dict[str, float]:
    """BM25-style IDF of the query terms over the candidate pool itself.

    Corpus-wide statistics would make a packet drift as unrelated writes arrive; the pool is a
    function of what is visible at the packet's revision, so these weights are replay-stable.
    Within the pool a subject's name is rare and a word every candidate shares is not, which is
    what tells "Ravi Alvarez" from "Hiroshi Alvarez". Terms no candidate contains carry no
    evidence either way and are left out; identifier terms are weighted up by the policy.
    """
    n = len(candidates)
    doc_terms = [term_set(r["content"]) for r in candidates]
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
    present = term_set(content)
    return sum(w for t, w in idf.items() if t in present) / total


def _rank(rows: Iterable[dict[str, Any]], similarity: dict[str, float], query: str,
          policy: Policy, reference: datetime | None,
          lenders: dict[str, list[dict[str, Any]]] | None = None,
          graph: dict[str, float] | None = None, *, limit: int) -> tuple[list[PacketItem], int, set[str]]:
    """Fuse the ranked lists; the first `limit` items, how many were ranked in all, and the ids the
    relevance floor (`policy.min_relevance`) cut.

    `graph` (PPR scores, None when graph expansion is off) is a third list: scaled by its maximum
    under linear fusion, ranked under RRF, weighted by `graph_weight`."""
    candidates = list(rows)
    lenders = lenders or {}
    if graph is not None and policy.graph_weight > 0 and policy.ppr_protect_top > 0:
        # The top ranks without graph evidence stay on top; the graph reorders and fills the rest.
        head, total, _ = _rank(candidates, similarity, query, policy, reference, lenders, None,
                               limit=min(policy.ppr_protect_top, limit))
        tail, tail_total, tail_cut = _rank(candidates, similarity, query,
                                           policy.model_copy(update={"ppr_protect_top": 0}),
                                           reference, lenders, graph, limit=limit + len(head))
        kept = {it.id for it in head}
        merged = (head + [it for it in tail if it.id not in kept])[:limit]
        return ([it.model_copy(update={"rank": n}) for n, it in enumerate(merged, start=1)],
                max(total, tail_total), tail_cut - kept)
    qterms = set(terms(query))
    idf = pool_idf(candidates, qterms, policy.identifier_boost)
    lexical = {r["id"]: _round(weighted_lexical(idf, r["content"])) for r in candidates}
    own_similarity = dict(similarity)
    similarity = dict(similarity)
    matched_via: dict[str, str] = {}
    wv, wt = policy.vector_weight, policy.text_weight

    def evidence(sim: float, lex: float) -> float:
        return (wv * max(0.0, 2.0 * sim - 1.0) + wt * lex) / (wv + wt)

    for cid, olds in sorted(lenders.items()):
        # The key's best version, judged by the same convex fusion linear ranking uses; its
        # similarity and lexical match move together, so one version's wording is never mixed
        # with another's.
        best = evidence(similarity.get(cid, 0.0), lexical.get(cid, 0.0))
        for old in sorted(olds, key=lambda o: o["id"]):
            sim = similarity.get(old["id"], 0.0)
            lex = _round(weighted_lexical(idf, old["content"]))
            if evidence(sim, lex) > best:
                best = evidence(sim, lex)
                matched_via[cid] = old["id"]
                similarity[cid], lexical[cid] = sim, lex
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

    query_names = identifiers(query)
    scored = []
    for r in candidates:
        relevance = relevance_of(r)
        if names_sibling(query_names, r["content"]):
            relevance *= policy.sibling_penalty
        relevance = _round(relevance)
        tau = float(r["tau"] or policy.default_tau)
        recorded = _dt(r["recorded_at"])
        age = max(0.0, (reference - recorded).total_seconds()) if reference and recorded else 0.0
        decay = _round(math.exp(-age / tau))
        score = _round(relevance * decay)
        scored.append((score, r, relevance, decay, age, tau))
    # The floor: a candidate that matches the query this little is not an answer, however fresh; an
    # empty packet that says so beats k unrelated claims (e.g. when nothing was valid at the time asked).
    cut = {s[1]["id"] for s in scored if s[2] < policy.min_relevance}
    scored = [s for s in scored if s[1]["id"] not in cut]
    scored.sort(key=lambda s: (-s[0], -s[1]["revision"], s[1]["id"]))
    items = []
    for rank, (score, r, relevance, decay, age, tau) in enumerate(scored[:limit], start=1):
        items.append(PacketItem(
            id=r["id"], content=r["content"], source=r["source"], claim_key=r["claim_key"],
            metadata=json.loads(r["metadata_json"] or "{}"), revision=r["revision"],
            recorded_at=iso(_dt(r["recorded_at"])) or "",
            valid_from=iso(_dt(r["valid_from"])), valid_to=iso(_dt(r["valid_to"])), rank=rank, score=score,
            relevance=relevance, vector_similarity=_round(own_similarity.get(r["id"], 0.0)),
            matched_via=matched_via.get(r["id"]),
            lexical_score=lexical[r["id"]],
            freshness=Freshness(age_seconds=_round(age), tau_seconds=tau, decay=decay, status="current",
                                superseded=False, retracted=False),
        ))
    return items, len(scored), cut


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


def _item_links(tx: ManagedTransaction, ns: str, ids: list[str], revision: int,
                seq: int) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """In one statement: which claim each item had replaced as of the revision, and the CONTRADICTS
    edges the projections had found by `seq` (filtered and capped by `_contradictions`)."""
    if not ids:
        return {}, []
    records = tx.run(
        "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id}) USING INDEX c:Claim(id) RETURN id, "
        "COLLECT { MATCH (c)-[s:SUPERSEDES]->(o:Claim) WHERE s.revision <= $rev "
        "AND (s.undone_at_revision IS NULL OR s.undone_at_revision > $rev) "
        "RETURN {rev: s.revision, old: o.id} } AS sup, "
        "COLLECT { MATCH (c)-[r:CONTRADICTS]-(o:Claim {namespace: $ns}) WHERE r.revision <= $seq "
        "RETURN DISTINCT {oid: o.id, content: o.content, source: o.source, key: o.claim_key, vf: o.vis_from, "
        "vt: o.vis_to, score: r.score, method: r.method, rrev: r.revision} } AS con",
        ids=ids, ns=ns, rev=revision, seq=seq,
    )
    supersedes: dict[str, str] = {}
    contradictions: list[dict[str, Any]] = []
    for record in records:
        latest = sorted(record["sup"], key=lambda x: (-int(x["rev"]), x["old"]))
        if latest:
            supersedes[record["id"]] = latest[0]["old"]
        contradictions.extend({"id": record["id"], **row} for row in record["con"])
    return supersedes, contradictions


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


def _contradictions(rows: list[dict[str, Any]], ids: list[str], revision: int,
                    cap: int) -> tuple[list[PacketContradiction], bool]:
    """CONTRADICTS edges the projections had found by `seq` whose other side was current at the revision.

    An edge's `revision` is the revision of the claim whose processing found it, so it exists
    for a packet exactly when the worker had moved past that revision.
    """
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
