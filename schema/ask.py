"""What multi-round recall and `ask` return.

Every round is an ordinary recall, so each keeps its own `ContextPacket` with its fingerprint: the
packet can be replayed like any other (`replay(fingerprint)` recomputes it at its revision). What
the rounds add — the fused ranking and, for `ask`, the reader's answer — is derived from those
packets by pure functions, so it is reproducible from them and carries no fingerprint of its own.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from palimpsest.schema.models import ContextPacket

RoundOrigin = Literal["question", "thought", "expansion"]


class RecallRound(BaseModel):
    """One retrieval round: the query it ran (the question, the question plus the reader's thought,
    or the question plus the offline expansion terms), the terms added, and its packet."""

    round: int = Field(ge=1)
    origin: RoundOrigin
    query: str
    added_terms: list[str] = Field(default_factory=list)
    packet: ContextPacket


class FusedItem(BaseModel):
    """A claim of the fused ranking, with its rank in each round (None: that round did not return it)."""

    id: str
    content: str
    source: str
    metadata: dict[str, Any]
    rank: int
    score: float
    round_ranks: list[int | None]


class MultiRoundRecall(BaseModel):
    """Recall in rounds: the rounds' packets and their deterministic fusion (the first `k` items)."""

    namespace: str
    query: str
    policy_version: str
    k: int
    store_revision: int
    rounds: list[RecallRound]
    items: list[FusedItem]


class ReaderCost(BaseModel):
    """What the reader's calls cost: tokens as the provider counted them, USD from litellm's price list
    (calls it cannot price are counted in `unpriced_calls`, never guessed)."""

    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0


class AskResult(BaseModel):
    """An answer from memory. `cited_ids` are claims of the rounds' packets the answer rests on (ids the
    reader cited that no packet holds are dropped and counted in `dropped_citations`);
    `not_in_memory` says the packets do not support an answer (then `answer` is empty)."""

    namespace: str
    question: str
    answer: str
    thought: str
    not_in_memory: bool
    cited_ids: list[str]
    dropped_citations: int
    model: str
    policy_version: str
    store_revision: int
    rounds: list[RecallRound]
    items: list[FusedItem]
    cost: ReaderCost


__all__ = ["AskResult", "FusedItem", "MultiRoundRecall", "ReaderCost", "RecallRound", "RoundOrigin"]
