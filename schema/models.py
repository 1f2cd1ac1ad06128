"""The shapes of Palimpsest's data: what callers send, what the store keeps, what recall returns.

Models are Pydantic so every face validates the same way and the GraphQL types can be derived
from them. Timestamps are timezone-aware UTC; naive inputs are refused rather than guessed.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from palimpsest.schema import limits
from palimpsest.schema.dates import parse_instant
from palimpsest.schema.errors import BadInputError, LimitExceededError

ClaimStatus = Literal["current", "superseded", "retracted"]


def utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamp must carry a timezone (e.g. 2026-01-31T12:00:00Z)")
    return value.astimezone(UTC)


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat().replace("+00:00", "Z")


class ClaimInput(BaseModel):
    """One claim an agent writes. `tau` is its freshness half-life-like time constant in seconds."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    content: str = Field(min_length=1, max_length=limits.MAX_CONTENT_CHARS)
    source: str = Field(min_length=1, max_length=limits.MAX_SOURCE_CHARS)
    claim_key: str | None = Field(default=None, min_length=1, max_length=limits.MAX_CLAIM_KEY_CHARS)
    tau: float | None = Field(default=None, gt=0, le=limits.MAX_TAU_SECONDS, allow_inf_nan=False)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: str | None = Field(
        default=None, min_length=1, max_length=limits.MAX_IDEMPOTENCY_KEY_CHARS
    )
    # With a claim_key: this write corrects (hides at every world time) every version of the key
    # whose stated window overlaps its own, instead of the default rules of docs/TEMPORAL.md.
    correction: bool = False

    @field_validator("valid_from", "valid_to", mode="before")
    @classmethod
    def _instant(cls, v: Any, info: ValidationInfo) -> datetime | None:
        # "before": pydantic's own datetime coercion (numbers and numeric strings as Unix seconds,
        # so "2017" would be 1970-01-01T00:33:37Z) never sees the raw value; see schema/dates.py.
        return parse_instant(v, info.field_name or "input")

    @field_validator("metadata")
    @classmethod
    def _metadata_size(cls, v: dict[str, Any]) -> dict[str, Any]:
        # Our typed errors (ValueErrors, so pydantic collects them) keep their field, limit and words
        # through api.memory.bad_input_from; a bare ValueError would read "metadata: Value error, …".
        try:
            encoded = json.dumps(v, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise BadInputError(f"metadata must be JSON-serialisable: {exc}", field="metadata") from exc
        if len(encoded.encode()) > limits.MAX_METADATA_BYTES:
            raise LimitExceededError(f"metadata must be at most {limits.MAX_METADATA_BYTES} bytes as JSON",
                                     field="metadata", limit=limits.MAX_METADATA_BYTES)
        return v

    @model_validator(mode="after")
    def _window(self) -> ClaimInput:
        # A whole-model check has no field of its own: name the one the caller should change.
        if self.valid_from and self.valid_to and self.valid_to <= self.valid_from:
            raise BadInputError("valid_to must be after valid_from", field="valid_to")
        if self.correction and self.claim_key is None:
            raise BadInputError("correction needs a claim_key: it says which versions it corrects",
                                field="correction")
        return self


class ContradictionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    detectors: tuple[Literal["nli", "heuristic", "llm"], ...] = ("heuristic",)
    nli_model: str = "cross-encoder/nli-MiniLM2-L6-H768"
    nli_threshold: float = Field(default=0.7, ge=0, le=1)
    heuristic_threshold: float = Field(default=0.6, ge=0, le=1)
    llm_model: str | None = None
    llm_threshold: float = Field(default=0.7, ge=0, le=1)
    neighbour_similarity: float = Field(default=0.55, ge=0, le=1)
    max_pairs_per_claim: int = Field(default=10, ge=1, le=100)


class Policy(BaseModel):
    """A versioned, immutable set of recall knobs; packets name the version they used."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str = Field(min_length=1, max_length=64, pattern=limits.POLICY_VERSION_RE.pattern)
    k: int = Field(default=8, ge=1, le=limits.MAX_K_CEILING)
    max_k: int = Field(default=50, ge=1, le=limits.MAX_K_CEILING)
    d: int = Field(default=16, ge=0, le=1000)
    c: int = Field(default=3, ge=0, le=100)
    b: int = Field(default=5, ge=0, le=100)
    default_tau: float = Field(default=30 * 24 * 3600.0, gt=0, le=limits.MAX_TAU_SECONDS)
    oversampling: int = Field(default=4, ge=1, le=50)
    fusion: Literal["linear", "rrf"] = "linear"
    identifier_boost: float = Field(default=2.0, ge=1, le=10)
    # Lexical match also scores the subject a claim's metadata declares (`subject`, else `title`;
    # schema.subjects), as its vector already embeds it at ingest. Recall-time only: the fulltext
    # index that proposes candidates covers `content`. Off until measured (docs/research-log.md).
    subject_terms: bool = False
    # Lexical match on word stems (English Snowball): "camped" matches "camping". Recall-time only, like
    # `subject_terms`: the fulltext index proposes candidates by surface words. Off in default-v1:
    # measured (docs/research-log.md), it pays on conversation, where a question seldom repeats its
    # answer's inflection, and costs passage retrieval over encyclopedic text.
    stem_terms: bool = False
    # Relevance factor for a claim that names a sibling of what the query names ("checkout-gateway"
    # for "checkout-scheduler") and not the thing itself; 1.0 turns the rule off.
    sibling_penalty: float = Field(default=0.5, gt=0, le=1)
    # Relevance factor for a claim whose source is not the one the query names by name ("What does
    # Melanie's family do?" asks for what Melanie said; graph.text.named_source). Only when the
    # query names exactly one of the candidates' sources; 1.0 turns the rule off.
    source_penalty: float = Field(default=1.0, gt=0, le=1)
    # Relevance floor: visible candidates whose fused relevance (0..1, before freshness decay) is below
    # it never enter the packet, and `hidden.below_relevance` counts them. Off in default-v1: measured
    # (docs/research-log.md), 0.1 costs nothing on the multi-hop, temporal and SituatedQA runs but
    # buys little, 0.2 and up cost multi-hop recall.
    min_relevance: float = Field(default=0.0, ge=0, le=1)
    rrf_k: int = Field(default=60, ge=1, le=1000)
    vector_weight: float = Field(default=1.0, ge=0, le=10)
    text_weight: float = Field(default=1.0, ge=0, le=10)
    graph_expansion: Literal["none", "ppr"] = "none"
    # Personalized PageRank expansion (graph_expansion = "ppr"): the weight of its ranked list in
    # the fusion, the probability of following an edge, how many seed entities (most specific
    # first) and how many top vector candidates lend their entities as seeds.
    graph_weight: float = Field(default=1.0, ge=0, le=10)
    ppr_damping: float = Field(default=0.5, gt=0, lt=1)
    ppr_seeds: int = Field(default=3, ge=1, le=100)  # tuned on MuSiQue (benchmarks/multihop.py)
    ppr_seed_candidates: int = Field(default=5, ge=0, le=100)
    # Bridge entities mentioned by more claims than this do not expand PPR's neighbourhood (hubs).
    ppr_max_degree: int = Field(default=100, ge=1, le=100_000)
    # Ranks 1..ppr_protect_top come from the fusion without the graph list; PPR only reorders and
    # fills the ranks below, so bridge passages join without displacing direct hits (tuned on
    # MuSiQue: 2). Packets under PPR are ordered by (protected tier, score, revision, id).
    ppr_protect_top: int = Field(default=2, ge=0, le=limits.MAX_K_CEILING)
    # Multi-round recall (graph/recall/rounds.py, api/ask.py). The offline second round expands the query
    # with what the round before found — the declared subjects of its top `expansion_items` items (if
    # `expansion_subjects`) and the most specific other entities they mention, at most
    # `expansion_terms` — recalls again, and fuses the rounds by reciprocal rank (`rrf_k`; later
    # rounds weighted `expansion_weight`), ranks 1..`expansion_protect_top` kept as round 1 had them.
    expansion_items: int = Field(default=3, ge=1, le=50)
    expansion_terms: int = Field(default=6, ge=0, le=50)
    # Tuned on MuSiQue (docs/research-log.md): at 2 the later round orders the ranks below the
    # protected top two (R@5 62.7 → 72.5 over hybrid + PPR); 1 gained less, 0.5 nothing, 3 and 5 the same.
    expansion_weight: float = Field(default=2.0, ge=0, le=10)
    expansion_protect_top: int = Field(default=2, ge=0, le=limits.MAX_K_CEILING)
    # Off: measured on MuSiQue (docs/research-log.md), a top item's own subject mostly finds that item
    # again; the other entities it names are the bridges.
    expansion_subjects: bool = False
    # `ask`: the reader (a litellm model name; the provider's key is read from its own environment
    # variable, never stored), at most `ask_rounds` retrieval rounds (≤ limits.MAX_ASK_ROUNDS), and
    # what drives a round after the first: the reader's thought (IRCoT) or the offline expansion.
    # With `ask_stop_when_answered` a round whose reader answered with a valid citation is the last.
    reader_model: str | None = Field(default=None, min_length=1, max_length=200)
    ask_rounds: int = Field(default=2, ge=1, le=limits.MAX_ASK_ROUNDS)
    ask_expansion: Literal["thought", "offline"] = "thought"
    ask_stop_when_answered: bool = True
    # Stages after fusion (graph/recall/rerank.py, graph/recall/dedup.py), both off by default. `rerank`
    # rescores the top `rerank_top` of the fused ranking before the cut to k — a sentence-transformers
    # CrossEncoder (`rerank_model`: a name or a local path) or one batched chat-model call (`rerank_model`:
    # a litellm model) — and its score replaces the fused one on those items; or `sentences`: the
    # embedder reads each claim sentence by sentence, and the order of their best sentences is fused with
    # the fused order, the sentence rank weighted `sentence_weight` (graph/sentences.py; no
    # `rerank_model`: the namespace's embedding model). `dedup_jaccard` removes an
    # item whose token Jaccard with a higher-ranked kept item is at least the threshold; the next
    # candidates fill the freed places.
    rerank: Literal["none", "cross-encoder", "llm", "sentences"] = "none"
    rerank_model: str | None = Field(default=None, min_length=1, max_length=500)
    rerank_top: int = Field(default=20, ge=1, le=limits.MAX_RERANK_TOP)
    sentence_weight: float = Field(default=1.0, gt=0, le=10)
    dedup_jaccard: float | None = Field(default=None, gt=0, le=1)
    # Fact retrieval (graph/recall/fact_source.py), off by default: "triples" makes the claims that
    # support the namespace's `fact_top` facts nearest the query (each embedded as "subject predicate
    # object") a candidate list; "beam" lists instead the facts a beam search reaches from the entities
    # the query names over SUBJECT/OBJECT edges, `fact_depth` hops, keeping the `fact_beam` best paths per
    # hop (triple matches seed it when the query names no entity). The list is fused as the graph list
    # (`graph_weight`; with PPR, each claim takes the larger of its two shares).
    fact_retrieval: Literal["none", "triples", "beam"] = "none"
    fact_top: int = Field(default=20, ge=1, le=limits.MAX_FACT_TOP)
    fact_beam: int = Field(default=8, ge=1, le=limits.MAX_FACT_BEAM)
    fact_depth: int = Field(default=2, ge=1, le=2)
    # The router (graph/recall/router.py) picks, per query, which of the stages this policy allows run:
    # "rules" reads the question's structure (nested descriptions — "the X of the Y", relative clauses,
    # possessives —, comparisons, time expressions); "llm" asks `router_model` (one call, a typed answer)
    # for the same three properties and falls back to the rules when the call fails. Questions with
    # neither multi-hop nor comparison structure skip later rounds (unless round 1 names a bridge another
    # claim is about); time questions skip dedup. The packet's `stages` records the decision
    # ("router:…"). "none": the policy decides.
    router: Literal["none", "rules", "llm"] = "none"
    router_model: str | None = Field(default=None, min_length=1, max_length=200)
    embedding_model: str = "all-MiniLM-L6-v2"
    contradiction: ContradictionSettings = Field(default_factory=ContradictionSettings)
    # Inferred supersession (background worker, off by default): a newer claim without a
    # claim_key supersedes a current claim about the same subject and attribute with another
    # value (extraction/supersession.py). A wrong inference hides a true claim, so it is opt-in
    # and precision-first: cosine ≥ `inferred_min_similarity` to be considered at all, and
    # confidence (cosine × conflict strength) ≥ `inferred_min_confidence` to act. The defaults
    # were set on benchmarks/temporal.py --no-keys, where 0.75 was the lowest confidence with no
    # supersession of a sibling fact (same patient, another drug) in the pairs probed.
    inferred_supersession: bool = False
    inferred_min_similarity: float = Field(default=0.7, ge=0, le=1)
    inferred_min_confidence: float = Field(default=0.75, ge=0, le=1)
    # Which judge decides (docs/WORKER.md, "Memory without keys"): "offline" — the frame judge (the two
    # texts share a frame and differ in one value: a date, amount, quantity, version, state or
    # name) and then the entity judge, no model; or "llm" — a chat model via litellm + instructor
    # (`inferred_llm_model`), asked only about the bounded candidates. Candidates are the claims
    # that share an entity with the new one plus its nearest neighbours in the namespace (vector
    # index and fulltext), at most `contradiction.max_pairs_per_claim`, with cosine ≥
    # `inferred_candidate_similarity` (the frame judge's floor; the entity judge keeps its own).
    inferred_judge: Literal["offline", "llm"] = "offline"
    inferred_llm_model: str | None = Field(default=None, min_length=1, max_length=200)
    inferred_candidate_similarity: float = Field(default=0.3, ge=-1, le=1)
    # Entity/fact extraction in the background worker: "offline" (deterministic dictionary and
    # name matching, entities only) or "llm" (a chat model via litellm; entities with types and
    # facts). The model is part of the policy because it decides what the graph contains;
    # provider plumbing (api_base, keys, rate limit) is process configuration (WorkerConfig).
    extractor: Literal["offline", "llm"] = "offline"
    extractor_model: str | None = Field(default=None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        if self.k > self.max_k:
            raise ValueError("k must not exceed max_k")
        if self.vector_weight == 0 and self.text_weight == 0:
            raise ValueError("at least one of vector_weight and text_weight must be positive")
        if self.extractor == "llm" and not self.extractor_model:
            raise ValueError("extractor 'llm' needs extractor_model (a litellm model name)")
        if self.inferred_judge == "llm" and not self.inferred_llm_model:
            raise ValueError("inferred_judge 'llm' needs inferred_llm_model (a litellm model name)")
        if self.rerank in ("cross-encoder", "llm") and not self.rerank_model:
            raise BadInputError(f"rerank {self.rerank!r} needs rerank_model (a CrossEncoder name or path, or a "
                                "litellm model name)", field="rerank_model")
        if self.router == "llm" and not self.router_model:
            raise BadInputError("router 'llm' needs router_model (a litellm model name)", field="router_model")
        return self

    def stored_body(self) -> dict[str, Any]:
        """The knobs as stored and hashed. Knobs added later are left out while they hold their defaults:
        a policy that uses none of them keeps the hash it was registered with, and what is stored stays
        readable by a build from before them (a rollback), since `extra="forbid"` would refuse the field."""
        body = self.model_dump(mode="json")
        for name in _OMITTED_AT_DEFAULT:
            if body.get(name) == Policy.model_fields[name].default:
                body.pop(name, None)
        return body

    def content_hash(self) -> str:
        """Identity of the knobs, so re-registering a version with other content is caught."""
        payload = json.dumps(self.stored_body(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()


# Policy knobs added after policies were first stored: out of `content_hash` at their defaults.
_OMITTED_AT_DEFAULT = ("fact_retrieval", "fact_top", "fact_beam", "fact_depth", "router", "router_model",
                       "source_penalty", "stem_terms", "sentence_weight")
DEFAULT_POLICY = Policy(version="default-v1")


class Claim(BaseModel):
    """A stored claim as the store knows it now (status is the current status)."""

    id: str
    namespace: str
    content: str
    source: str
    claim_key: str | None
    tau: float
    metadata: dict[str, Any]
    recorded_at: str
    revision: int
    valid_from: str | None
    valid_to: str | None
    status: ClaimStatus
    # Where the claim's world-time window ends now: its stated `valid_to`, or earlier where a later
    # version of its key starts (docs/TEMPORAL.md). None: unbounded.
    valid_until: str | None = None
    superseded_at_revision: int | None = None
    retracted_at_revision: int | None = None
    retraction_reason: str | None = None


class IngestItemResult(BaseModel):
    index: int
    ok: bool
    id: str | None = None
    revision: int | None = None
    supersedes: str | None = None
    # The version of the key whose world-time window this claim's start closed (a succession).
    closes: str | None = None
    duplicate: bool = False
    error: dict[str, Any] | None = None


class IngestResult(BaseModel):
    revision: int
    items: list[IngestItemResult]

    @property
    def ids(self) -> list[str | None]:
        return [i.id for i in self.items]


class RetractResult(BaseModel):
    id: str
    revision: int
    restored: str | None = None


class InferredLink(BaseModel):
    """A supersession the worker inferred between two claims without a claim_key (`newer` hides
    `older`), as the store recorded it: at `revision` (found while projecting `found_at_revision`),
    with the judge's `kind` (the slot that changed: value, state, name, code, llm …), `confidence`
    and `reason`. `undone_at_revision` is set when a retraction or an operator undid it; `active`
    says whether it hides `older` at the revision asked about."""

    newer_id: str
    older_id: str
    newer_content: str
    older_content: str
    revision: int
    found_at_revision: int | None = None
    confidence: float | None = None
    kind: str | None = None
    reason: str | None = None
    undone_at_revision: int | None = None
    undone_reason: str | None = None
    active: bool = True


class UndoInferenceResult(BaseModel):
    """An inferred supersession undone by an operator at `revision`; `restored` says whether the older
    claim became current again (it stays hidden when something else hides it, e.g. a retraction)."""

    newer_id: str
    older_id: str
    revision: int
    restored: bool


class HistoryEvent(BaseModel):
    """One change to a claim, on either axis. Store time: `recorded`, `superseded` (a correction hid
    it at every world time), `restored`, `retracted`. World time: `closed` (a later version's start
    ended its window at `valid_until`) and `reopened` (that closing was undone)."""

    kind: Literal["recorded", "superseded", "retracted", "restored", "closed", "reopened"]
    revision: int
    at: str
    by: str | None = None
    reason: str | None = None
    valid_until: str | None = None


class HistoryEntry(BaseModel):
    claim: Claim
    events: list[HistoryEvent]


class Freshness(BaseModel):
    age_seconds: float
    tau_seconds: float
    decay: float
    status: ClaimStatus
    superseded: bool
    retracted: bool


class ScoreTerm(BaseModel):
    """One ranked list's additive share of an item's fused relevance.

    `value` is what the list measured for the item: the cosine with the query (clipped at 0; not the
    index's (1 + cos) / 2 scale of `vector_similarity`), the IDF-weighted share of query terms, or the
    PPR score divided by the pool's highest. Under `rrf`, `rank` is the item's rank on the list
    (None: not on it), and the contribution comes from the rank, not the value."""

    weight: float
    value: float
    rank: int | None = None
    contribution: float


class ScoreLending(BaseModel):
    """A hidden version's wording matched the query better than the item's own: `via` lent its cosine
    and lexical share (`vector_value`, `lexical_value`), and `contribution` is what that added to the
    fused relevance over the item's own wording (the `vector` and `lexical` terms)."""

    via: str
    vector_value: float
    lexical_value: float
    contribution: float


class ScorePenalty(BaseModel):
    """A factor a rule multiplied the fused relevance by."""

    rule: str
    factor: float
    reason: str


class ScoreDecay(BaseModel):
    """Freshness: `factor` = exp(−age / tau), the age taken at the packet's reference time."""

    factor: float
    age_seconds: float
    tau_seconds: float


class ScoreRerank(BaseModel):
    """A reranker's verdict on an item: `score` replaced the fused score `replaced` (which had ranked it
    `fused_rank`) as the item's score. Under `llm` the score is the model's order, (N − position) / N; under
    `sentences` the fusion of the fused rank with the rank of the item's best sentence (graph.sentences)."""

    method: Literal["cross-encoder", "llm", "sentences"]
    model: str
    score: float
    replaced: float
    fused_rank: int


class RouterCost(BaseModel):
    """What the LLM router's one call cost: tokens as the provider counted them, USD from litellm's price
    list (None: it cannot price the model — never guessed); `failed` when it fell back to the rules."""

    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    failed: bool = False


class ScoreExplanation(BaseModel):
    """How an item's score was made, by the ranking's own arithmetic (graph.recall.ranking):

    fused = vector + lexical + graph + lending (contributions), relevance = fused × Π penalties
    (rounded to 12 significant digits), score = relevance × decay (rounded likewise).

    `graph` is None when no graph list took part (graph expansion off, or the item was placed by the
    protected top tier, `protected`: ranked without the graph, as `ppr_protect_top` asks)."""

    fusion: Literal["linear", "rrf"]
    vector: ScoreTerm
    lexical: ScoreTerm
    graph: ScoreTerm | None = None
    lending: ScoreLending | None = None
    fused: float
    penalties: list[ScorePenalty] = Field(default_factory=list)
    relevance: float
    decay: ScoreDecay
    score: float
    protected: bool = False
    # Set when a reranker rescored the item: its score replaced `score` (the fused one) as the item's.
    rerank: ScoreRerank | None = None


class HiddenRule(BaseModel):
    """Which rule hid which candidates: `count` names the `HiddenCounts` field the ids are counted in
    (`inferred` ids are counted in `superseded` too), `rule` a stable name, `detail` the rule with this
    packet's values. Only candidates the indexes answered are judged (and counted)."""

    count: str
    rule: str
    detail: str
    ids: list[str]


class PacketItem(BaseModel):
    id: str
    content: str
    source: str
    claim_key: str | None
    metadata: dict[str, Any]
    revision: int
    recorded_at: str
    valid_from: str | None
    valid_to: str | None
    # Where its window ended as of the packet's revision: `valid_to`, or earlier where a later version
    # of its key starts (docs/TEMPORAL.md). None: unbounded.
    valid_until: str | None = None
    rank: int
    score: float
    relevance: float
    vector_similarity: float | None
    lexical_score: float | None
    freshness: Freshness
    supersedes: str | None = None
    # Set when the query matched an older version of this claim's key better than this one:
    # the id of that version. The item is still the current value.
    matched_via: str | None = None
    # With `explain`: how the score was made. Derived, so never part of the fingerprint (PACKET_DERIVED).
    explanation: ScoreExplanation | None = None


class ClaimRef(BaseModel):
    id: str
    content: str
    source: str
    claim_key: str | None


class PacketContradiction(BaseModel):
    item_id: str
    other: ClaimRef
    score: float
    method: str
    revision: int
    other_in_packet: bool


class PacketEdge(BaseModel):
    kind: Literal["supersedes", "shared_source"]  # contradictions have their own list (PacketContradiction)
    source_id: str
    target_id: str
    detail: str | None = None


class Belief(BaseModel):
    """A current fact the packet's items support, as of the packet's revision and projections_seq.

    `confidence` is the Noisy-OR of the supports that were visible then (1 − Π(1 − p_i)), and
    `supported_by` lists those claims' ids (sorted), so a caller can see which evidence it rests on.
    Times are ISO-8601 UTC; a missing bound means "unbounded" (nothing was stated).
    """

    id: str
    subject: str
    predicate: str
    object: str
    confidence: float
    supported_by: list[str]
    subject_id: str | None = None
    object_id: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    recorded_at: str | None = None
    revision: int | None = None


class Completeness(BaseModel):
    """Each flag is True when a cap cut something off, so the caller knows the packet is partial."""

    items_truncated: bool = False
    edges_truncated: bool = False
    contradictions_truncated: bool = False
    beliefs_truncated: bool = False
    candidates_exhausted: bool = False
    # The policy asked for a rerank and none ran (the model could not be loaded or called): the packet
    # is the fused ranking.
    rerank_unavailable: bool = False


class HiddenCounts(BaseModel):
    """Candidates the visibility filter removed, by reason: proof that the filter worked."""

    superseded: int = 0
    retracted: int = 0
    not_yet_valid: int = 0
    expired: int = 0
    # Of `superseded`: how many were hidden by an inferred supersession (the worker's judgement,
    # not a writer's claim_key), so a caller can tell inference from declared versions.
    inferred: int = 0
    # Visible candidates left out because their relevance was below the policy's `min_relevance`.
    below_relevance: int = 0
    # Visible candidates the dedup stage removed as near-duplicates of a higher-ranked item (policy
    # `dedup_jaccard`).
    deduplicated: int = 0


# What `explain` adds to a packet: derived from it, so the fingerprint and the packet log leave it out
# (a packet's identity is the same whether it was explained or not). A pydantic `exclude` value.
# The LLM router's cost is left out the same way: what a call cost is not what the packet says.
PACKET_DERIVED: dict[str, Any] = {"hidden_explanation": True, "router_cost": True,
                                  "items": {"__all__": {"explanation"}}}


class ContextPacket(BaseModel):
    """What recall returns. `store_revision` is the revision the packet reflects: a recall now at
    revision R and an as-of recall at R later are the same packet, with the same fingerprint."""

    namespace: str
    query: str
    policy_version: str
    k: int
    store_revision: int
    valid_at: str | None
    reference_time: str | None
    projections_seq: int
    items: list[PacketItem]
    contradictions: list[PacketContradiction]
    edges: list[PacketEdge]
    beliefs: list[Belief]
    completeness: Completeness
    hidden: HiddenCounts
    served_at: str
    fingerprint: str
    # With `explain`: which rule hid what (HiddenRule). Derived, like the items' `explanation`.
    hidden_explanation: list[HiddenRule] | None = None
    # The optional stages that ran, in order: the router's decisions first when the policy has a router
    # ("router:rules", the question's properties, what it skipped; graph/recall/router.py), then "ppr",
    # "facts", "rerank:cross-encoder" or "rerank:llm", "dedup".
    stages: list[str] = Field(default_factory=list)
    # The LLM router's call, when one was made for this packet (derived: not in the fingerprint or the log).
    router_cost: RouterCost | None = None

    def canonical_json(self) -> str:
        """What the fingerprint hashes. Fields added to the packet later are left out while they hold
        their defaults, so a packet that used none of them keeps the fingerprint it always had (logged
        packets still replay as matching). Of `stages` only the router's decisions are in (as `route`,
        when there are any): the other stages follow from the policy and `completeness.rerank_unavailable`,
        which are in, but what the router decided may come from a model or an earlier round."""
        body = self.model_dump(mode="json", exclude={"served_at": True, "fingerprint": True, **PACKET_DERIVED})
        route = [s for s in body.pop("stages", None) or [] if s.startswith("router:")]
        if route:
            body["route"] = route
        if not body["completeness"].get("rerank_unavailable"):
            body["completeness"].pop("rerank_unavailable", None)
        if not body["hidden"].get("deduplicated"):
            body["hidden"].pop("deduplicated", None)
        return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def compute_fingerprint(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()


class CheckViolation(BaseModel):
    check: str
    detail: str


class CheckReport(BaseModel):
    """What `palimpsest check` found: how many cases each invariant was checked on, and what broke
    (`violation_counts` is exact; `violations` lists the first few of each check)."""

    namespace: str
    revision: int
    claims: int
    checked: dict[str, int]
    violations: list[CheckViolation]
    violation_counts: dict[str, int]

    @property
    def ok(self) -> bool:
        return not self.violation_counts


class StoreStats(BaseModel):
    namespace: str
    revision: int
    projections_seq: int
    claims_by_status: dict[str, int]


class NamespaceSettings(BaseModel):
    """A namespace's stored settings. `default_policy` is the policy every recall without a version
    and every worker pass use (`default-v1` until one is set); `revision` is the store revision the
    settings were read at, `changed_at_revision` the write that set the default (None: never set)."""

    namespace: str
    default_policy: str
    revision: int
    changed_at_revision: int | None = None


def now_utc() -> datetime:
    return datetime.now(UTC)


class ContradictionRecord(BaseModel):
    """A detected conflict between two claims, as stored: newer claim → older claim."""

    claim: ClaimRef
    other: ClaimRef
    score: float
    method: str
    detected_at: str
    revision: int


class EraseCandidate(BaseModel):
    """A claim an erase selected: enough to see what goes (no content: a dry run shows what would
    be erased without copying it anywhere new)."""

    id: str
    revision: int
    status: ClaimStatus
    source: str
    claim_key: str | None = None


class EraseResult(BaseModel):
    """What an erase did (or, with `dry_run`, would do). `claims` lists what was selected, in write
    order; `revisions` holds one store revision per batch written (none for a dry run); the counts
    are of what went with the claims: derived facts, supports, entities, links and logged packets."""

    namespace: str
    dry_run: bool
    matched: int
    claims: list[EraseCandidate]
    already_erased: list[str] = Field(default_factory=list)
    revisions: list[int] = Field(default_factory=list)
    restored: list[str] = Field(default_factory=list)
    facts_removed: int = 0
    supports_removed: int = 0
    entities_removed: int = 0
    mentions_removed: int = 0
    contradictions_removed: int = 0
    supersessions_removed: int = 0
    packets_erased: int = 0


class ImportResult(BaseModel):
    """What `import` wrote: the mode (`copy`: ids kept, into an empty namespace; `remap`: fresh ids;
    `merge`: fresh ids appended after a non-empty namespace's revisions), the store revision after it,
    the offset added to every imported revision, and per record kind how many were written or skipped."""

    namespace: str
    source_namespace: str
    format_version: int
    mode: Literal["copy", "remap", "merge"]
    revision: int
    revision_offset: int = 0
    written: dict[str, int] = Field(default_factory=dict)
    skipped: dict[str, int] = Field(default_factory=dict)
    # Nodes an earlier, interrupted import into this namespace had staged and this one removed first.
    cleared_staging: int = 0


# ------------------------------------------------------------------------------------ entity graph
# What `Memory`'s entity and fact reads return (graph/knowledge/entities.py and facts.py build them from
# their Cypher maps, one conversion per shape), so every face — GraphQL derives its Entity and Fact from
# these, MCP and CLI serialise them — sees the same fields, and a typed caller is checked against them.
FactStatus = Literal["current", "superseded"]


class Entity(BaseModel):
    """A thing claims mention, as the worker recorded it (graph.knowledge.entities).

    `canonical` is the key names are matched on ("checkout api" for "Checkout-API"), `aliases` the other
    spellings claims used for it, `type` what an LLM extractor called it (None when nothing typed it), and
    `pagerank` its global PageRank over RELATED edges as the worker last computed it (None: not yet).
    """

    id: str
    name: str
    canonical: str
    type: str | None = None
    aliases: list[str] = Field(default_factory=list)
    pagerank: float | None = None


class EntityDetail(Entity):
    """One entity read by id (`Memory.entity`), with `mentions`: how many claims mention it. Counted only
    for a single entity: in a list (neighbours, top entities) the count would cost a pass over each
    entity's claims, and a hub's are many."""

    mentions: int


class EntityNeighbour(Entity):
    """An entity RELATED to the one asked about (`Memory.entity_neighbours`). `weight` is the edge's: the
    claims that mention both plus the facts that link them (graph.knowledge.entities.RELATED_RECOUNT), the
    first key neighbours are ordered by."""

    weight: float


class Fact(BaseModel):
    """A (subject, predicate, object) belief the worker derived from claims (graph.knowledge.facts), as
    the store holds it now.

    `confidence` is the Noisy-OR over its supports and `supported_by` lists those claims' ids (sorted).
    A superseded fact still says what held before: its `valid_to` was closed where its successor
    (`superseded_by`, written at `superseded_at_revision`) starts. Times are ISO-8601 UTC; a missing bound
    means nothing was stated. Unlike `Belief`, which is pinned to a packet's revision, a Fact is read now.
    """

    id: str
    subject: str
    subject_id: str | None = None
    predicate: str
    object: str
    object_id: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    recorded_at: str | None = None
    revision: int | None = None
    confidence: float
    status: FactStatus
    supported_by: list[str] = Field(default_factory=list)
    superseded_at_revision: int | None = None
    superseded_by: str | None = None
