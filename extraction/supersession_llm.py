"""The LLM judge of inferred supersession: a chat model reads numbered (older, newer) claim pairs and
returns a typed verdict for each — same subject? same attribute? does the newer replace the older?
how confident? — through litellm and instructor in JSON mode (validated against pydantic models,
and mockable with litellm's `mock_response`).

It is only ever asked about the bounded candidates the worker found for a batch (at most
`contradiction.max_pairs_per_claim` per new claim), `batch_size` pairs per call, calls spaced by
a rate limit, and the cost of every call is added up from litellm's price list (calls it cannot
price are counted apart). A failed call decides nothing for its pairs: they stay unlinked and are
counted, never guessed. A supersession needs all three answers yes and a confidence of at least
the policy's `inferred_min_confidence`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from palimpsest.extraction.llm_client import LazyClient, RateLimiter, price
from palimpsest.extraction.supersession import ClaimView, Judgement

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You maintain an AI agent's long-term memory. Each numbered pair holds an OLDER and a NEWER statement, "
    "written in that order. For each pair answer: same_subject — are both about the very same thing "
    "(the same person, plan, shipment, room, event …, not merely the same kind of thing)? same_attribute — "
    "do both state the same property of it (its price, date, owner, status, limit …)? newer_replaces_older — "
    "does the newer statement give a different value for that property, so the older one is no longer true? "
    "A restatement of the same value is not a replacement, and neither is an extra fact about the subject. "
    "Give a confidence in [0, 1] and a reason of at most one short sentence. Answer every pair by its number."
)


class PairVerdict(BaseModel):
    pair: int = Field(ge=0, description="the pair's number as given")
    same_subject: bool
    same_attribute: bool
    newer_replaces_older: bool
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str = Field(default="", max_length=400)


class PairVerdicts(BaseModel):
    verdicts: list[PairVerdict]


@dataclass
class LlmInferenceOptions:
    """Process-level knobs of the LLM judge (the model is policy): batching, rate limit, retries,
    provider plumbing (`completion_kwargs`: api_base, api_key, or `mock_response` in tests), and
    `completion` to replace `litellm.completion` (tests script answers per prompt with it)."""

    batch_size: int = 12
    max_calls_per_second: float | None = 2.0
    max_retries: int = 1
    timeout: float = 60.0
    completion_kwargs: dict[str, Any] = field(default_factory=dict)
    completion: Callable[..., Any] | None = None


@dataclass
class Verdicts:
    """The verdicts of one batch, by (newer id, older id); what the calls cost."""

    decided: dict[tuple[str, str], Judgement] = field(default_factory=dict)
    calls: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    failed_pairs: int = 0
    problems: list[str] = field(default_factory=list)

    def get(self, newer_id: str, older_id: str) -> Judgement:
        found = self.decided.get((newer_id, older_id))
        if found is None:
            return Judgement(False, 0.0, "llm_unavailable", "no verdict (the call failed or was not made)")
        return found


def format_pairs(pairs: Sequence[tuple[ClaimView, ClaimView]]) -> str:
    return "\n".join(f"Pair {i}:\n  OLDER: {older.content}\n  NEWER: {newer.content}"
                     for i, (newer, older) in enumerate(pairs))


class LlmSupersessionJudge:
    def __init__(self, model: str, options: LlmInferenceOptions | None = None, *,
                 limiter: RateLimiter | None = None) -> None:
        if not model:
            raise ValueError("the LLM supersession judge needs a model (policy.inferred_llm_model)")
        self.model = model
        self.options = options or LlmInferenceOptions()
        self.limiter = limiter or RateLimiter(self.options.max_calls_per_second)
        self._client = LazyClient(self.options.completion)

    def _cost(self, raw: Any) -> float | None:
        return price(raw, self.model)

    def judge_pairs(self, pairs: Sequence[tuple[ClaimView, ClaimView]], *, min_confidence: float) -> Verdicts:
        """Verdicts for (newer, older) pairs, `batch_size` per call."""
        out = Verdicts()
        size = max(1, self.options.batch_size)
        for start in range(0, len(pairs), size):
            chunk = list(pairs[start:start + size])
            self.limiter.acquire()
            out.calls += 1
            try:
                answer, raw = self._client.get().chat.completions.create_with_completion(
                    model=self.model, response_model=PairVerdicts, max_retries=self.options.max_retries,
                    timeout=self.options.timeout,
                    messages=[{"role": "system", "content": SYSTEM_PROMPT},
                              {"role": "user", "content": format_pairs(chunk)}],
                    **self.options.completion_kwargs,
                )
            except Exception as exc:  # provider, network, validation: no verdict for these pairs
                problem = f"inference llm {self.model!r}: {type(exc).__name__}: {exc}"[:300]
                log.warning("%s (%d pairs left undecided)", problem, len(chunk))
                out.problems.append(problem)
                out.failed_pairs += len(chunk)
                continue
            cost = self._cost(raw)
            if cost is None:
                out.unpriced_calls += 1
            else:
                out.cost_usd += cost
            seen: set[int] = set()
            for v in answer.verdicts:
                if not 0 <= v.pair < len(chunk) or v.pair in seen:
                    continue
                seen.add(v.pair)
                newer, older = chunk[v.pair]
                out.decided[(newer.id, older.id)] = self._judgement(v, min_confidence)
            out.failed_pairs += len(chunk) - len(seen)
        return out

    @staticmethod
    def _judgement(v: PairVerdict, min_confidence: float) -> Judgement:
        if not v.same_subject:
            return Judgement(False, 0.0, "subject", f"llm: another subject — {v.reason}"[:300])
        if not v.same_attribute:
            return Judgement(False, 0.0, "attribute", f"llm: another attribute — {v.reason}"[:300])
        if not v.newer_replaces_older:
            return Judgement(False, 0.0, "restatement", f"llm: not replaced — {v.reason}"[:300])
        if v.confidence < min_confidence:
            return Judgement(False, 0.0, "confidence",
                             f"llm: confidence {v.confidence:.2f} < {min_confidence:.2f} — {v.reason}"[:300])
        return Judgement(True, round(v.confidence, 4), "llm", f"llm: {v.reason}"[:300])


__all__ = ["LlmInferenceOptions", "LlmSupersessionJudge", "PairVerdict", "PairVerdicts", "Verdicts", "format_pairs"]
