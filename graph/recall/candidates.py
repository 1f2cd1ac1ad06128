"""Every statement recall itself runs: the index answers, the admitted rows, claims by id, and the
packet's links. (The entity graph's reads for PPR, inferred chains and beliefs are shared with other
readers and live with them: graph.knowledge.gds, graph.claims.inferred, graph.knowledge.facts.)

Every value reaches Neo4j as a parameter; the statements are assembled only from the constant
row projections below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

from palimpsest.graph.claims.index import text_hits, vector_hits
from palimpsest.graph.claims.revisions import to_py_datetime
from palimpsest.graph.recall.request import RecallRequest
from palimpsest.graph.recall.rows import ClaimRow, rows_from
from palimpsest.graph.text import TERMS_VERSION
from palimpsest.schema.errors import NotFoundError
from palimpsest.schema.limits import MAX_CANDIDATES

# A fact is judged by its best wording among its latest versions, not all of them: a key rewritten
# a thousand times must not pull a thousand rows into every recall that touches it.
VERSIONS_PER_KEY = 8


def _row_map(*entries: str) -> str:
    return "{" + ", ".join(entries) + "}"


# What visibility needs. Times as strings: decoding driver DateTime values is slower (rows.ClaimRow).
_VISIBILITY = (
    "id: node.id", "content: node.content", "claim_key: node.claim_key", "revision: node.revision",
    "valid_from: toString(node.valid_from)", "valid_to: toString(node.valid_to)", "vis_from: node.vis_from",
    "vis_to: node.vis_to", "vis_until: node.vis_until", "retracted_at_revision: node.retracted_at_revision",
)
# What cutting an index answer needs: visibility and the words. The rest of a row (source, metadata,
# exact cosine) is fetched for the few rows the cut admits — an index answer is several times wider
# than what survives it, and reading those properties was half the cost of a recall at 100k claims.
_CUT_ROW = _row_map(*_VISIBILITY, "score: score")
_FULL_ROW = _row_map(
    *_VISIBILITY, "source: node.source", "metadata_json: node.metadata_json",
    "recorded_at: toString(node.recorded_at)", "tau: node.tau",
    # The vector answer already scored its rows with this very function (graph.claims.index): those are
    # passed in `$sims` and not computed again; reading a 384-float embedding is most of a full row.
    "sim: CASE WHEN $sims[node.id] IS NULL THEN vector.similarity.cosine(node.embedding, $vector) "
    "ELSE $sims[node.id] END",
    # The stored analysis, when it is the current one (graph.text.TERMS_VERSION): ranking reads it
    # instead of analysing the content again.
    "terms: CASE WHEN node.terms_v = $terms_v THEN node.terms END",
    "names: CASE WHEN node.terms_v = $terms_v THEN node.names END",
)

# Round trip 1: the store's state, the reference time, the stored hash of the policy, and both index
# answers, each cut to the revision. Each namespace searches only its own claims (graph.claims.index):
# exactly while it is small, in its own indexes after, so no other namespace's writes reach a packet.
_STATE_CYPHER = (
    "MATCH (s:Store {namespace: $ns}) "
    "WITH s, CASE WHEN $as_of IS NULL THEN s.revision ELSE $as_of END AS rev "
    "OPTIONAL MATCH (cm:Commit {namespace: $ns, revision: rev}) "
    "OPTIONAL MATCH (p:Policy {namespace: $ns, version: $policy_version}) "
    "WITH s, rev, cm, p.content_hash AS policy_hash, EXISTS { MATCH (:Fact {namespace: $ns}) } AS has_facts "
    # An as-of recall can see only what existed at R: the fetch is widened by the share of the
    # namespace's claims that existed then, so that an old revision does not need a second, wider
    # round trip. (Claim counts are kept on the Store and Commit nodes by every ingest.)
    "WITH s, rev, cm.at AS at, policy_hash, has_facts, CASE WHEN NOT $adapt OR $as_of IS NULL "
    "  OR coalesce(s.claims, 0) = 0 THEN 1.0 ELSE coalesce(cm.claims, s.claims) * 1.0 / s.claims END AS share "
    "WITH s, rev, at, policy_hash, has_facts, [f IN [$vfetch, $tfetch] | CASE WHEN f = 0 OR share >= 1.0 THEN f "
    "  WHEN f >= share * $max_fetch THEN $max_fetch ELSE toInteger(ceil(f / share)) END] AS sizes "
    "WITH s, rev, at, policy_hash, has_facts, sizes[0] AS vf, sizes[1] AS tf "
)
_VECTOR_PART = (
    f"CALL (s, rev, vf) {{ {vector_hits('s', '$vector', 'vf', ('vf',))}"
    f"RETURN count(*) AS vraw, collect(CASE WHEN node.revision <= rev THEN {_CUT_ROW} END) AS vrows }} "
)
# Without an index of its own, a namespace's text answer is its claims containing a query term as a word
# (what the fulltext analyzer would match), most terms first; with one, the index's answer.
# That answer is cut on the share of query terms a claim holds (recall's own analysis, not BM25). Claims
# carrying their stored analysis are counted here and only the `$tcut` best — most query terms, then content
# hash and id (graph.claims.order) —
# are shipped; the rest (no current stored analysis) are shipped whole and analysed in Python.
# `termed` says how many were counted, so recall knows whether the shipped order is whole.
# When the index's answer filled the fetch, the run of claims tied at its lowest BM25 score is left out
# whole: Lucene breaks ties by its internal document order, which a rebuilt index (an import, a merge)
# does not keep, so which of a tied run made the limit is not the data's to say. What is kept — every
# claim scoring above that run — is. (`traw` still counts the whole answer: the fetch grows as before
# when too few visible claims are left, and at MAX_CANDIDATES the answer is taken as it is.)
_TEXT_ROW = _row_map(*_VISIBILITY, "hits: qhits")
_TEXT_PART = (
    f"CALL (s, rev, tf) {{ {text_hits('s', '$lucene', 'tf', ('tf',))}"
    "WITH tf, node, score, CASE WHEN score IS NOT NULL THEN 1 "
    "  ELSE size([t IN $tokens WHERE node.content =~ ('(?is).*\\\\b' + t + '\\\\b.*')]) END AS hits "
    "WHERE hits > 0 AND (score IS NOT NULL OR node.revision <= rev) "
    "WITH tf, node, score ORDER BY hits DESC, node.content_hash, node.id "
    # (No grouping key: over no matches at all, the aggregation must still give its one row.)
    "WITH collect([node, score]) AS ranked, min(score) AS lowest WITH ranked[..tf] AS answer, lowest "
    "WITH answer, CASE WHEN size(answer) >= tf AND tf < $max_fetch THEN lowest END AS tied "
    "WITH size(answer) AS traw, [hit IN answer WHERE (tied IS NULL OR hit[1] IS NULL OR hit[1] > tied) "
    "  AND hit[0].revision <= rev | hit[0]] AS seen "
    "CALL (seen) { UNWIND seen AS node WITH node WHERE node.terms_v = $terms_v "
    "  WITH node, size([t IN $qterms WHERE t IN node.terms]) "
    "    + size([p IN $qprefixes WHERE any(x IN node.terms WHERE x STARTS WITH p)]) AS qhits "
    "  ORDER BY qhits DESC, node.content_hash, node.id "
    "  WITH collect([node, qhits]) AS counted RETURN size(counted) AS termed, counted[..$tcut] AS top } "
    "CALL (seen, top) { UNWIND top + [n IN seen WHERE n.terms_v IS NULL OR n.terms_v <> $terms_v | [n, null]] AS pick "
    f"  WITH pick[0] AS node, pick[1] AS qhits RETURN collect({_TEXT_ROW}) AS trows }} "
    "RETURN traw, termed, trows } "
)
_CANDIDATE_QUERIES = {
    (vector, text): _STATE_CYPHER
    + (_VECTOR_PART if vector else "WITH *, 0 AS vraw, [] AS vrows ")
    + (_TEXT_PART if text else "WITH *, 0 AS traw, 0 AS termed, [] AS trows ")
    + "RETURN s.revision AS revision, s.projections_seq AS seq, rev, at, policy_hash, has_facts, vf, vraw, vrows, tf, "
      "traw, termed, trows, s.policy_revisions AS policy_revisions, s.policy_versions AS policy_versions, "
      "coalesce(s.incarnation, elementId(s) + '@' + toString(s.created_at)) AS incarnation"
    for vector in (True, False) for text in (True, False)
}

# Round trip 2, for what the cuts admitted: full rows with exact cosines (whichever index found
# them), the latest versions of their claim_keys, and which hidden rows an *inferred* supersession
# (the worker's judgement, not a claim_key) hid at R — the packet counts what inference hid.
_ADMITTED_CYPHER = (
    "CALL () { UNWIND $ids AS id MATCH (node:Claim {namespace: $ns, id: id}) USING INDEX node:Claim(id) "
    f"RETURN collect({_FULL_ROW}) AS rows }} "
    "CALL () { UNWIND $keys AS k "
    "CALL (k) { MATCH (node:Claim {namespace: $ns, claim_key: k}) WHERE node.revision <= $rev "
    "RETURN node ORDER BY node.revision DESC, node.id LIMIT $versions_per_key } "
    "WITH node WHERE NOT node.id IN $ids "
    f"RETURN collect({_FULL_ROW}) AS versions }} "
    "CALL () { UNWIND $superseded AS id MATCH (node:Claim {namespace: $ns, id: id}) USING INDEX node:Claim(id) "
    "WHERE EXISTS { MATCH (node)<-[s:SUPERSEDES]-(:Claim) WHERE s.reason = 'inferred' AND s.revision <= $rev "
    "AND (s.undone_at_revision IS NULL OR s.undone_at_revision > $rev) } RETURN collect(id) AS inferred } "
    "RETURN rows, versions, inferred"
)

_BY_ID_CYPHER = (
    "UNWIND $ids AS id MATCH (node:Claim {namespace: $ns, id: id}) USING INDEX node:Claim(id) "
    f"WHERE node.revision <= $rev RETURN {_FULL_ROW} AS row ORDER BY node.id"
)

_LINKS_CYPHER = (
    "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id}) USING INDEX c:Claim(id) RETURN id, "
    "COLLECT { MATCH (c)-[s:SUPERSEDES]->(o:Claim) WHERE s.revision <= $rev "
    "AND (s.undone_at_revision IS NULL OR s.undone_at_revision > $rev) "
    "RETURN {rev: s.revision, old: o.id} } AS sup, "
    "COLLECT { MATCH (c)-[r:CONTRADICTS]-(o:Claim {namespace: $ns}) WHERE r.revision <= $seq "
    "RETURN DISTINCT {oid: o.id, content: o.content, source: o.source, key: o.claim_key, vf: o.vis_from, "
    "vt: o.vis_to, score: r.score, method: r.method, rrev: r.revision} } AS con"
)


@dataclass(frozen=True)
class IndexAnswers:
    """Round trip 1: the store's state at the revision asked and both index answers (narrow rows)."""

    store_revision: int
    projections_seq: int
    revision: int
    commit_time: datetime | None
    policy_hash: str | None
    has_facts: bool
    policy_revisions: Any
    policy_versions: Any
    vfetch: int
    vraw: int
    vrows: list[ClaimRow]
    tfetch: int
    traw: int
    trows: list[ClaimRow]
    termed: int  # text rows with a current stored analysis, of which only `tcut` were shipped
    tcut: int
    # Which life of the namespace this is (graph.knowledge.mention_graph): new when it is erased from, imported
    # into, or dropped and written again.
    incarnation: str = ""

    @property
    def text_cut_short(self) -> bool:
        """Were rows with a stored analysis left out of `trows` (the shipped order is whole only up to the
        last of them)?"""
        return self.termed > self.tcut


@dataclass(frozen=True)
class Admitted:
    """Round trip 2: full rows of the admitted and lending ids, their keys' latest other versions, and
    which of the hidden-as-superseded ids an inferred supersession hid."""

    rows: list[ClaimRow]
    versions: list[ClaimRow]
    inferred: frozenset[str]


@dataclass(frozen=True)
class ContradictionRow:
    item_id: str
    other_id: str
    content: str
    source: str
    claim_key: str | None
    vis_from: Sequence[int]
    vis_to: Sequence[int]
    score: float
    method: str
    revision: int


def index_answers(tx: ManagedTransaction, req: RecallRequest, vfetch: int, tfetch: int, lucene: str,
                  adapt: bool, qterms: Sequence[str] = (), tcut: int = MAX_CANDIDATES,
                  tokens: Sequence[str] | None = None, qprefixes: Sequence[str] = ()) -> IndexAnswers:
    """One index round trip; with `adapt` the fetch sizes are minimums, widened by the filter's pass rate.
    Of the text answer's rows with a stored analysis, the `tcut` holding most of `qterms` (whole) and
    `qprefixes` (beginning a stored term) are shipped. `tokens` are the word patterns a namespace without
    its own index is searched by (default: the Lucene query's words). graph.text.TextQuery makes all
    three from one query."""
    record = tx.run(
        _CANDIDATE_QUERIES[(vfetch > 0, tfetch > 0)],
        ns=req.namespace, as_of=req.as_of_revision, policy_version=req.policy.version,
        vector=req.vector, vfetch=vfetch, lucene=lucene, tokens=list(lucene.split() if tokens is None else tokens),
        tfetch=tfetch, adapt=adapt, max_fetch=MAX_CANDIDATES, terms_v=TERMS_VERSION, qterms=list(qterms),
        qprefixes=list(qprefixes), tcut=tcut,
    ).single()
    if record is None:
        raise NotFoundError(f"unknown namespace {req.namespace!r}: nothing was ever written there",
                            field="namespace")
    return IndexAnswers(
        store_revision=int(record["revision"]), projections_seq=int(record["seq"] or 0), revision=int(record["rev"]),
        commit_time=None if record["at"] is None else to_py_datetime(record["at"]),
        policy_hash=record["policy_hash"], has_facts=bool(record["has_facts"]),
        policy_revisions=record["policy_revisions"], policy_versions=record["policy_versions"],
        vfetch=int(record["vf"]), vraw=int(record["vraw"]), vrows=rows_from(record["vrows"]),
        tfetch=int(record["tf"]), traw=int(record["traw"]), trows=rows_from(record["trows"]),
        termed=int(record["termed"]), tcut=tcut, incarnation=str(record["incarnation"]),
    )


def admitted_rows(tx: ManagedTransaction, req: RecallRequest, ids: Sequence[str], keys: Sequence[str],
                  superseded: Sequence[str], revision: int, sims: Mapping[str, float] | None = None) -> Admitted:
    """`sims`: the cosines (index scale) the vector answer gave its rows, taken as they are."""
    record = tx.run(
        _ADMITTED_CYPHER, ns=req.namespace, ids=list(ids), keys=list(keys), rev=revision, vector=req.vector,
        versions_per_key=VERSIONS_PER_KEY, superseded=list(superseded), sims=dict(sims or {}),
        terms_v=TERMS_VERSION,
    ).single()
    assert record is not None  # UNWIND … collect() always returns one row
    return Admitted(rows_from(record["rows"]), rows_from(record["versions"]), frozenset(record["inferred"]))


def claims_by_id(tx: ManagedTransaction, req: RecallRequest, ids: Sequence[str], revision: int) -> list[ClaimRow]:
    """Full rows of claims recorded by `revision`, in id order (visibility is the caller's to judge)."""
    return [ClaimRow.from_record(record["row"])
            for record in tx.run(_BY_ID_CYPHER, ids=list(ids), ns=req.namespace, rev=revision, vector=req.vector,
                                      sims={}, terms_v=TERMS_VERSION)]


def item_links(tx: ManagedTransaction, ns: str, ids: Sequence[str], revision: int,
               seq: int) -> tuple[dict[str, str], list[ContradictionRow]]:
    """In one statement: which claim each item had replaced as of the revision, and the CONTRADICTS
    edges the projections had found by `seq` (filtered and capped by packet assembly)."""
    if not ids:
        return {}, []
    supersedes: dict[str, str] = {}
    contradictions: list[ContradictionRow] = []
    for record in tx.run(_LINKS_CYPHER, ids=list(ids), ns=ns, rev=revision, seq=seq):
        latest = sorted(record["sup"], key=lambda x: (-int(x["rev"]), x["old"]))
        if latest:
            supersedes[record["id"]] = latest[0]["old"]
        contradictions.extend(_contradiction(record["id"], row) for row in record["con"])
    return supersedes, contradictions


def _contradiction(item_id: str, row: Mapping[str, Any]) -> ContradictionRow:
    return ContradictionRow(
        item_id=item_id, other_id=row["oid"], content=row["content"], source=row["source"], claim_key=row["key"],
        vis_from=row["vf"], vis_to=row["vt"], score=float(row["score"]), method=str(row["method"]),
        revision=int(row["rrev"]),
    )
