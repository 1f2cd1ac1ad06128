"""The contract between the recall's rerank stage and the model rerankers that score for it.

The stage (graph.recall.rerank) reorders the fused head by scores; a model reads the query and the
claims to produce them (extraction.rerank: a cross-encoder, an LLM). graph never loads or calls a model
and extraction never reads the store, so neither may import the other: the composition (api) hands the
stage a `RerankScorer`, and what both sides must agree on — the call's shape and the error that means
"no scores, keep the fused ranking" — lives here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from palimpsest.schema.models import PacketItem


class RerankUnavailableError(Exception):
    """The reranker could not score (model missing, failed to load, provider error, bad answer). Never
    reaches a caller: the stage keeps the fused ranking and the packet says `rerank_unavailable`."""


class RerankScorer(Protocol):
    """Scores `items` (the fused head, in fused order) for `query` with the policy's reranker `method`
    ("cross-encoder" or "llm") and `model`: one score per item, higher is better. Raises
    RerankUnavailableError when it cannot."""

    def __call__(self, method: str, model: str, query: str, items: Sequence[PacketItem]) -> list[float]: ...


__all__ = ["RerankScorer", "RerankUnavailableError"]
