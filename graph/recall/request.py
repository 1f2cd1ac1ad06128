"""What a recall is asked (`RecallRequest`), and the one way it can ask to be asked again."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from palimpsest.graph.knowledge.mention_graph import MentionCache
from palimpsest.graph.sentences import EmbedTexts
from palimpsest.schema.models import Policy
from palimpsest.schema.rerank import RerankScorer


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
    # Explain the packet: each item's score in parts, and which rule hid what. Derived from the packet,
    # so never part of its fingerprint; off, the ranking builds nothing of it.
    explain: bool = False
    # The router's entries for the packet's `stages` (graph.recall.router), set with the policy it chose;
    # empty with a router policy: `recall` routes by the rules itself.
    route: tuple[str, ...] = ()
    # What scores the head for a model reranker (`rerank: cross-encoder | llm`): graph calls no model, the
    # caller hands one in (extraction.rerank.RerankOptions, with the process's device and provider
    # plumbing); None: that reranker is unavailable and the packet says so.
    rerank_scorer: RerankScorer | None = field(default=None, compare=False)
    # The namespace's embedder for texts a stage reads again and again (`rerank: sentences`); None: that
    # reranker is unavailable and the packet says so.
    embed_texts: EmbedTexts | None = field(default=None, compare=False)
    # The name of the model behind `embed_texts`: stored sentence vectors are read only when they were
    # embedded by it (graph.claims.sentence_vectors); "" reads none.
    embed_model: str = field(default="", compare=False)
    # The process's in-memory entity graphs (graph.knowledge.mention_graph), which graph expansion reads instead of
    # its statements when set: the packet is the same either way.
    mentions: MentionCache | None = field(default=None, compare=False)


class PolicyChangedError(Exception):
    """The stored policy is not the one the caller resolved (dropped and re-registered): reload it.
    With `default` set, the namespace's default at the revision served is that version instead."""

    def __init__(self, version: str, default: str | None = None) -> None:
        super().__init__(version)
        self.default = default
