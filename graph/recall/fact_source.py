"""Fact retrieval: the claims behind the facts nearest the query, as a candidate list with scores.

Policy `fact_retrieval` (off by default) picks what runs:

* **"triples"** — the namespace's facts visible at the packet's projections_seq, each embedded as
  "subject predicate object" (`graph.knowledge.facts.fact_text`, written with the fact by the worker), scored
  by exact cosine with the query vector; the best `fact_top` are kept.
* **"beam"** — a beam search over the entity graph the facts make, anchored where the query is: from
  the entities the query names (its canonical n-grams equal an entity's canonical name; the `fact_beam`
  with fewest facts, as a hub says least; failing those, the subjects and objects of the best triple
  matches), each hop follows SUBJECT/OBJECT edges to the
  facts of the frontier entities; a path scores the mean cosine of its facts with the query, and the
  `fact_beam` best paths of a hop (each frontier entity offering its `fact_beam` best facts) give the
  next hop's frontier (the far ends of their last facts), up to `fact_depth` hops (at most 2). So a
  question that names X reaches "X directed_by Y" and then "Y married_to Z" — the claim about Z
  never needs to mention X or match the query on its own. Only facts on the kept paths are listed: a
  triple match that no path reaches is left to the triple list. On the question the tests ask,
  listing both gave the best of five unrelated marriages (worded exactly like the answer's) 0.470
  against the answer's 0.491; anchored, they are not on the list at all.

Each fact reached keeps its best score (a triple match's cosine, a path's mean); each claim that
supports a reached fact (`SUPPORTED_BY` written by `projections_seq`) takes the best score of its
facts. The best `need` claims join the pool through the same visibility filter as every other
candidate, and their scores are the graph list of the fusion (`graph.recall.ranking`, weighted by
`graph_weight`, scaled by its maximum under `fusion: linear`, ranked under `fusion: rrf`); when PPR
ran too, a claim takes the larger of its two shares (each list divided by its own maximum), so
neither list's scale decides for the other. One graph list rather than a fourth: the fused relevance,
its explanation and `ppr_protect_top` (ranks 1..n kept as the fusion without graph evidence has them)
all apply to fact evidence unchanged.

Why exact search and not a vector index over facts: one index spanning every namespace (the schema had
one, `fact_embedding`, dropped by migration 0011 as nothing asked it) would make one tenant's top-N
depend on every other tenant's facts — the crowding docs/TENANCY.md removed for claims. Here every
statement is scoped to the namespace and every score is an exact `vector.similarity.cosine`, so the
answer depends on the namespace's own facts alone. The cost is a scan of the namespace's visible facts
per recall (through the `fact_namespace` range index): linear in its facts, which are fewer than its
claims (only LLM extraction writes them, a few per claim). A namespace with hundreds of thousands of
facts would want the claim scheme (graph.claims.index): an index on the namespace's own label, built when
it crosses a limit. Facts written before facts were embedded have no vector and are never matched (nor
reached: the beam scores facts by their vectors).

Pure given (store state, query vector, policy, seq): every order ends in an id, cosines are rounded to
six decimals (the same text embedded in different batches differs around 1e-7), and fan-out is
bounded by the policy (`fact_top` facts, then at most `fact_beam` × `fact_beam` per hop).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from neo4j import ManagedTransaction, Record

from palimpsest.graph.recall.candidates import claims_by_id
from palimpsest.graph.recall.pool import Pool
from palimpsest.graph.recall.request import RecallRequest
from palimpsest.graph.similarity import cosine_from_index

# A fact is visible at seq if the worker had written it by then and not yet superseded it.
_VISIBLE = ("f.embedding IS NOT NULL AND f.revision <= $seq "
            "AND (f.superseded_at_revision IS NULL OR f.superseded_at_revision > $seq)")
_TRIPLES = (
    f"MATCH (f:Fact {{namespace: $ns}}) WHERE {_VISIBLE} "
    "WITH f, round(vector.similarity.cosine(f.embedding, $vector), 6) AS score "
    "ORDER BY score DESC, f.id LIMIT $top "
    "RETURN f.id AS id, f.subject_id AS s, f.object_id AS o, score"
)
# The query's entities with visible facts, most specific (fewest facts) first: a hub says least.
_QUERY_ENTITIES = (
    "UNWIND $phrases AS p MATCH (e:Entity {namespace: $ns, canonical: p}) "
    "WITH DISTINCT e WITH e, COUNT { MATCH (e)<-[:SUBJECT|OBJECT]-(f:Fact {namespace: $ns}) "
    f"WHERE {_VISIBLE} }} AS degree WHERE degree > 0 "
    "RETURN e.id AS id ORDER BY degree, id LIMIT $beam"
)
_INCIDENT = (
    "UNWIND $frontier AS eid "
    "CALL (eid) { "
    "  MATCH (:Entity {namespace: $ns, id: eid})<-[:SUBJECT|OBJECT]-(f:Fact {namespace: $ns}) "
    f"  WHERE {_VISIBLE} "
    "  WITH DISTINCT f WITH f, round(vector.similarity.cosine(f.embedding, $vector), 6) AS score "
    "  ORDER BY score DESC, f.id LIMIT $beam "
    "  RETURN f.id AS id, f.subject_id AS s, f.object_id AS o, score } "
    "RETURN eid, id, s, o, score"
)
_SUPPORTS = (
    "UNWIND $ids AS fid MATCH (f:Fact {namespace: $ns, id: fid})-[s:SUPPORTED_BY]->(c:Claim {namespace: $ns}) "
    "USING INDEX f:Fact(id) WHERE s.revision <= $seq RETURN fid, c.id AS cid ORDER BY fid, cid"
)


@dataclass(frozen=True)
class _Fact:
    id: str
    subject_id: str | None
    object_id: str | None
    cosine: float  # plain cosine in [-1, 1], rounded to six decimals

    def far_end(self, entity: str) -> str | None:
        """The entity at the other end from `entity` (None: a literal object, or a self-loop)."""
        other = self.object_id if self.subject_id == entity else self.subject_id
        return other if other and other != entity else None


@dataclass
class FactSearch:
    """What fact retrieval found: each reached fact's best score, each candidate claim's, and counts
    that show the fan-out stayed within the policy's bounds."""

    fact_scores: dict[str, float] = field(default_factory=dict)
    claim_scores: dict[str, float] = field(default_factory=dict)
    seeds: list[str] = field(default_factory=list)
    facts_scored: int = 0  # fact rows the statements returned (triple match + every hop)


def _fact(record: Record) -> _Fact:
    subject, obj = record["s"], record["o"]
    return _Fact(str(record["id"]), None if subject is None else str(subject), None if obj is None else str(obj),
                 round(cosine_from_index(float(record["score"])), 6))


def search_facts(tx: ManagedTransaction, req: RecallRequest, seq: int, need: int) -> FactSearch:
    """The triple match, or (policy "beam") the beam search it seeds when the query names no entity, as of
    projections_seq `seq`; claims capped at `need`."""
    policy, ns = req.policy, req.namespace
    out = FactSearch()
    if policy.fact_retrieval == "beam":
        _beam(tx, req, seq, out)
    else:
        for f in _triples(tx, req, seq, out):
            _keep(out.fact_scores, f.id, f.cosine)
    if not out.fact_scores:
        return out
    for r in tx.run(_SUPPORTS, ids=sorted(out.fact_scores), ns=ns, seq=seq):
        _keep(out.claim_scores, str(r["cid"]), out.fact_scores[str(r["fid"])])
    best = sorted(out.claim_scores, key=lambda c: (-out.claim_scores[c], c))[:need]
    out.claim_scores = {c: out.claim_scores[c] for c in best}
    return out


def _triples(tx: ManagedTransaction, req: RecallRequest, seq: int, out: FactSearch) -> list[_Fact]:
    """The namespace's `fact_top` visible facts nearest the query (the whole-namespace scan)."""
    triples = [_fact(r) for r in tx.run(_TRIPLES, ns=req.namespace, seq=seq, vector=req.vector,
                                        top=req.policy.fact_top)]
    out.facts_scored += len(triples)
    return triples


def _beam(tx: ManagedTransaction, req: RecallRequest, seq: int, out: FactSearch) -> None:
    """Beam search from the query's entities: `fact_depth` hops of `fact_beam` paths each. Only a query
    that names none pays the whole-namespace triple scan, to start where the best matches are."""
    policy, ns = req.policy, req.namespace
    seeds: list[str] = []
    if req.query_phrases:
        seeds = [str(r["id"]) for r in tx.run(_QUERY_ENTITIES, phrases=sorted(set(req.query_phrases)), ns=ns,
                                              seq=seq, beam=policy.fact_beam)]
    if not seeds:  # nothing named: start where the best triple matches are
        for f in _triples(tx, req, seq, out)[:policy.fact_beam]:
            seeds.extend(e for e in (f.subject_id, f.object_id) if e and e not in seeds)
    out.seeds = seeds[:policy.fact_beam]
    # A path: (facts on it, their cosine sum, the entity it ends at).
    paths: list[tuple[tuple[str, ...], float, str]] = [((), 0.0, e) for e in out.seeds]
    for _ in range(policy.fact_depth):
        frontier = sorted({end for _, _, end in paths})
        if not frontier:
            break
        offered: dict[str, list[_Fact]] = {}
        for r in tx.run(_INCIDENT, frontier=frontier, ns=ns, seq=seq, vector=req.vector, beam=policy.fact_beam):
            offered.setdefault(str(r["eid"]), []).append(_fact(r))
            out.facts_scored += 1
        grown: list[tuple[tuple[str, ...], float, str, float]] = []
        for facts, total, end in paths:
            for f in offered.get(end, []):
                if f.id in facts:
                    continue
                far = f.far_end(end)
                mean = round((total + f.cosine) / (len(facts) + 1), 6)
                grown.append(((*facts, f.id), total + f.cosine, far or "", mean))
        grown.sort(key=lambda p: (-p[3], p[0]))
        kept = grown[:policy.fact_beam]
        for facts, _, _, mean in kept:
            _keep(out.fact_scores, facts[-1], mean)
        paths = [(facts, total, far) for facts, total, far, _ in kept if far]


def _keep(scores: dict[str, float], key: str, score: float) -> None:
    if score > scores.get(key, float("-inf")):
        scores[key] = score


def fact_candidates(tx: ManagedTransaction, req: RecallRequest, pool: Pool, graph_scores: dict[str, float] | None,
                    seq: int, revision: int, reference: datetime | None,
                    need: int) -> tuple[Pool, dict[str, float] | None]:
    """The pool with the claims fact retrieval reached (visible at `revision` only), and the graph list
    with their scores fused in: the list itself without PPR, the larger share per claim with it."""
    found = search_facts(tx, req, seq, need)
    scores = {c: s for c, s in found.claim_scores.items() if s > 0}
    missing = sorted(set(scores) - set(pool.rows) - set(pool.hidden))
    if missing:
        pool = pool.with_rows(claims_by_id(tx, req, missing, revision), revision, reference)
    scores = {c: s for c, s in scores.items() if c in pool.rows}
    if not scores:
        return pool, graph_scores
    if not graph_scores:
        return pool, scores
    top_graph, top_fact = max(graph_scores.values()), max(scores.values())
    graph_share = {c: g / top_graph if top_graph > 0 else 0.0 for c, g in graph_scores.items()}
    merged = {c: round(max(graph_share.get(c, 0.0), scores.get(c, 0.0) / top_fact), 9)
              for c in sorted({*graph_scores, *scores})}
    return pool, merged
