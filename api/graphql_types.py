"""GraphQL types, derived from the Pydantic models in `schema/` so the two cannot drift apart.

Literal fields become String, free-form dicts become the JSON scalar; everything else is taken
field for field from the model (`all_fields=True`), so a new model field shows up in the SDL
and the drift test notices.
"""

from __future__ import annotations

from typing import Annotated, Any

import strawberry
import strawberry.experimental.pydantic as sp
from strawberry.scalars import JSON

from palimpsest.api.graphql_resolve import load
from palimpsest.schema import models as m


@sp.type(model=m.Freshness, all_fields=True, description="How fresh an item is at the packet's reference time.")
class Freshness:
    status: str


@sp.type(model=m.ClaimRef, all_fields=True)
class ClaimRef:
    pass


@sp.type(model=m.Claim, all_fields=True, description="A stored claim with its current status.")
class Claim:
    status: str
    metadata: JSON


@sp.type(model=m.ScoreTerm, all_fields=True, description="One ranked list's additive share of the fused relevance.")
class ScoreTerm:
    pass


@sp.type(model=m.ScoreLending, all_fields=True,
         description="What a hidden version's better-matching wording added over the item's own.")
class ScoreLending:
    pass


@sp.type(model=m.ScorePenalty, all_fields=True, description="A factor a rule multiplied the relevance by.")
class ScorePenalty:
    pass


@sp.type(model=m.ScoreDecay, all_fields=True, description="Freshness: exp(-age / tau) at the reference time.")
class ScoreDecay:
    pass


@sp.type(model=m.ScoreRerank, all_fields=True,
         description="A reranker's score, which replaced the fused score as the item's.")
class ScoreRerank:
    method: str


@sp.type(model=m.ScoreExplanation, all_fields=True,
         description="How the score was made (recall with explain): fused = vector + lexical + graph + lending "
                     "contributions; relevance = fused × penalties; score = relevance × decay.")
class ScoreExplanation:
    fusion: str
    vector: ScoreTerm
    lexical: ScoreTerm
    graph: ScoreTerm | None
    lending: ScoreLending | None
    penalties: list[ScorePenalty]
    decay: ScoreDecay
    rerank: ScoreRerank | None


@sp.type(model=m.HiddenRule, all_fields=True,
         description="Which rule hid which candidates, and the HiddenCounts field they are counted in.")
class HiddenRule:
    pass


@sp.type(model=m.PacketItem, all_fields=True, description="One recalled claim, ranked.")
class PacketItem:
    metadata: JSON
    freshness: Freshness
    supersedes: str | None
    explanation: ScoreExplanation | None

    @strawberry.field(description="The claim this item replaced, loaded in one batch for all items.")
    async def superseded_claim(self, info: strawberry.Info) -> Claim | None:
        if not self.supersedes:
            return None
        # The namespace rides along as a plain attribute (set by packet_to_gql), not a schema field.
        namespace = str(getattr(self, "_namespace", ""))
        found: m.Claim | None = await load(info, namespace, info.context["loaders"].claims,
                                           (namespace, self.supersedes))
        return None if found is None else Claim.from_pydantic(found)


@sp.type(model=m.PacketContradiction, all_fields=True)
class PacketContradiction:
    other: ClaimRef


@sp.type(model=m.PacketEdge, all_fields=True)
class PacketEdge:
    kind: str


@sp.type(model=m.Belief, all_fields=True)
class Belief:
    pass


@sp.type(model=m.Completeness, all_fields=True, description="True where a cap cut something off.")
class Completeness:
    pass


@sp.type(model=m.HiddenCounts, all_fields=True, description="Candidates the visibility filter removed.")
class HiddenCounts:
    pass


@sp.type(model=m.RouterCost, all_fields=True, description="What the LLM router's one call cost (USD null: unpriced).")
class RouterCost:
    pass


@sp.type(model=m.ContextPacket, all_fields=True, description="A bounded, replayable answer to recall.")
class ContextPacket:
    items: list[PacketItem]
    contradictions: list[PacketContradiction]
    edges: list[PacketEdge]
    beliefs: list[Belief]
    completeness: Completeness
    hidden: HiddenCounts
    hidden_explanation: list[HiddenRule] | None
    router_cost: RouterCost | None


def packet_to_gql(packet: m.ContextPacket) -> ContextPacket:
    out = ContextPacket.from_pydantic(packet)
    for item in out.items:
        item._namespace = packet.namespace  # type: ignore[attr-defined]
    return out


@sp.type(model=m.HistoryEvent, all_fields=True)
class HistoryEvent:
    kind: str


@sp.type(model=m.HistoryEntry, all_fields=True)
class HistoryEntry:
    claim: Claim
    events: list[HistoryEvent]


@sp.type(model=m.ContradictionSettings, all_fields=True)
class ContradictionSettings:
    detectors: list[str]


@sp.type(model=m.Policy, all_fields=True, description="An immutable, versioned set of recall knobs.")
class Policy:
    graph_expansion: str
    fusion: str
    extractor: str
    inferred_judge: str
    ask_expansion: str
    rerank: str
    fact_retrieval: str
    router: str
    contradiction: ContradictionSettings


@strawberry.type
class StatusCount:
    status: str
    count: int


@strawberry.type(description="Store revision, projection progress and claim counts of a namespace.")
class StoreStats:
    namespace: str
    revision: int
    projections_seq: int
    claims_by_status: list[StatusCount]


def stats_to_gql(s: m.StoreStats) -> StoreStats:
    return StoreStats(namespace=s.namespace, revision=s.revision, projections_seq=s.projections_seq,
                      claims_by_status=[StatusCount(status=k, count=v) for k, v in s.claims_by_status.items()])


@sp.type(model=m.IngestItemResult, all_fields=True)
class IngestItemResult:
    error: JSON | None


@sp.type(model=m.IngestResult, all_fields=True)
class IngestResult:
    items: list[IngestItemResult]


@sp.type(model=m.RetractResult, all_fields=True)
class RetractResult:
    pass


@sp.type(model=m.EraseCandidate, all_fields=True, description="A claim an erase selected (no content).")
class EraseCandidate:
    status: str


@sp.type(model=m.EraseResult, all_fields=True,
         description="What an erase did, or with dryRun would do: the claims selected, the revisions written (one "
                     "per batch), the claims restored, and counts of what went with them.")
class EraseResult:
    claims: list[EraseCandidate]


@sp.type(model=m.InferredLink, all_fields=True,
         description="A supersession the worker inferred between two claims without a claim key: newerId hides "
                     "olderId, with the judge's kind, confidence and reason; active at the revision asked about.")
class InferredLink:
    pass


@sp.type(model=m.UndoInferenceResult, all_fields=True,
         description="An inferred supersession undone at a new revision; restored: the older claim is current again.")
class UndoInferenceResult:
    pass


@sp.type(model=m.NamespaceSettings, all_fields=True,
         description="A namespace's stored settings: the default policy of recalls without a version and of the "
                     "worker, the store revision read at, and the revision that set the default (null: never set).")
class NamespaceSettings:
    pass


@strawberry.type
class ReplayResult:
    packet: ContextPacket
    recomputed_fingerprint: str
    matches: bool


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type
class ClaimEdge:
    cursor: str
    node: Claim


@strawberry.type(description="A Relay-style page of claims in write order.")
class ClaimConnection:
    edges: list[ClaimEdge]
    page_info: PageInfo


@strawberry.input
class ClaimInput:
    content: str
    source: str
    claim_key: str | None = None
    tau: float | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    metadata: JSON | None = None
    idempotency_key: str | None = None
    correction: bool = strawberry.field(default=False, description=(
        "With a claimKey: hide every version of the key whose window overlaps this one's, at every "
        "world time (docs/TEMPORAL.md)."))

    def to_raw(self) -> dict[str, Any]:
        raw: dict[str, Any] = {
            "content": self.content, "source": self.source, "claim_key": self.claim_key, "tau": self.tau,
            "valid_from": self.valid_from, "valid_to": self.valid_to, "idempotency_key": self.idempotency_key,
            "correction": self.correction,
               "metadata": self.metadata if self.metadata is not None else {}}
        return raw


@strawberry.input
class ClaimFilterInput:
    source: str | None = None
    claim_key: str | None = None
    status: str | None = None
    recorded_after: str | None = None
    recorded_before: str | None = None
    valid_at: str | None = None


@strawberry.input(description="Knobs of a new policy version; omitted fields take the defaults.")
class PolicyInput:
    version: str
    k: int | None = None
    max_k: int | None = None
    d: int | None = None
    c: int | None = None
    b: int | None = None
    default_tau: float | None = None
    oversampling: int | None = None
    rrf_k: int | None = None
    vector_weight: float | None = None
    text_weight: float | None = None
    graph_expansion: str | None = None
    graph_weight: float | None = None
    ppr_damping: float | None = None
    ppr_seeds: int | None = None
    ppr_seed_candidates: int | None = None
    ppr_max_degree: int | None = None
    ppr_protect_top: int | None = None
    expansion_items: int | None = None
    expansion_terms: int | None = None
    expansion_weight: float | None = None
    expansion_protect_top: int | None = None
    expansion_subjects: bool | None = None
    reader_model: str | None = None
    ask_rounds: int | None = None
    ask_expansion: str | None = None
    ask_stop_when_answered: bool | None = None
    fusion: str | None = None
    identifier_boost: float | None = None
    sibling_penalty: float | None = None
    source_penalty: float | None = None
    min_relevance: float | None = None
    embedding_model: str | None = None
    extractor: str | None = None
    extractor_model: str | None = None
    contradiction: JSON | None = None
    inferred_supersession: bool | None = None
    inferred_min_similarity: float | None = None
    inferred_min_confidence: float | None = None
    inferred_judge: str | None = None
    inferred_llm_model: str | None = None
    inferred_candidate_similarity: float | None = None
    rerank: str | None = None
    rerank_model: str | None = None
    rerank_top: int | None = None
    sentence_weight: float | None = None
    dedup_jaccard: float | None = None
    subject_terms: bool | None = None
    stem_terms: bool | None = None
    fact_retrieval: str | None = None
    fact_top: int | None = None
    fact_beam: int | None = None
    fact_depth: int | None = None
    router: str | None = None
    router_model: str | None = None

    def to_raw(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


@sp.type(model=m.ContradictionRecord, all_fields=True, description="Two claims that cannot both be true.")
class Contradiction:
    claim: ClaimRef
    other: ClaimRef


@sp.type(model=m.Fact, all_fields=True,
         description="A belief the worker derived from claims: subject, predicate, object, with Noisy-OR "
                     "confidence over its supporting claims. Superseded facts say what held before.")
class Fact:
    status: str


# `sp.type` evaluates a resolver's return type while it builds the class, before the name Entity is bound:
# the neighbours' type refers to it lazily, by module, as strawberry resolves it when the schema is built.
_LazyEntity = Annotated["Entity", strawberry.lazy("palimpsest.api.graphql_types")]


@sp.type(model=m.Entity, all_fields=True,
         description="A thing claims mention; ranked by GDS PageRank over co-mentions.")
class Entity:
    id: str  # from the model; declared so type checkers see it in the resolvers below
    # Not a field of m.Entity: only a neighbour (m.EntityNeighbour) has a weight. from_pydantic reads every
    # field of this type off the instance it is given, so a neighbour's weight comes along and others' is null.
    weight: float | None = strawberry.field(default=None, description="Co-mention weight, in neighbour lists.")

    # Both lists load through the request's DataLoaders (api/graphql_schema.py Loaders): the
    # neighbours of every entity at one level cost one round trip, not one each.
    @strawberry.field(description="RELATED neighbours, strongest co-mention first.")
    async def neighbors(self, info: strawberry.Info, first: int = 20) -> list[_LazyEntity]:
        namespace = str(getattr(self, "_namespace", ""))
        found: list[m.EntityNeighbour] = await load(info, namespace, info.context["loaders"].neighbours,
                                                    (namespace, self.id, first))
        return [entity_to_gql(n, namespace) for n in found]

    @strawberry.field(description="Facts with this entity as subject or object, newest first.")
    async def facts(self, info: strawberry.Info, first: int = 50, include_superseded: bool = False) -> list[Fact]:
        namespace = str(getattr(self, "_namespace", ""))
        found: list[m.Fact] = await load(info, namespace, info.context["loaders"].facts,
                                         (namespace, self.id, first, include_superseded))
        return [Fact.from_pydantic(f) for f in found]


def entity_to_gql(entity: m.Entity, namespace: str) -> Entity:
    """The GraphQL Entity of any of the three entity models (an EntityDetail's mention count is not a field),
    carrying its namespace for the neighbours and facts it loads."""
    out = Entity.from_pydantic(entity)
    out._namespace = namespace  # type: ignore[attr-defined]
    return out
