"""LLM judge: a chat model reads numbered claim pairs and returns a typed verdict for each.

Goes through litellm (any provider, or a local OpenAI-compatible server) and instructor in JSON
mode, so the answer is validated against a pydantic model instead of parsed by hand; JSON mode
rather than tool calls because it works with more providers and with litellm's `mock_response`.

Several pairs go into one call (`batch_size`) to keep the cost per pass down, calls are spaced
by a simple rate limit, and a provider error fails only the pairs of that call: the others keep
their verdicts and the error is raised as `DetectorUnavailableError` with the partial results,
which the job runner reports while the other detectors carry on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from palimpsest.extraction.contradiction.types import DetectorUnavailableError, TextPair, Verdict
from palimpsest.extraction.llm_client import LazyClient, RateLimiter

METHOD = "llm"
log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You check an AI agent's long-term memory for contradictions. Each numbered pair holds two "
    "statements recorded at different times. Label a pair 'contradicts' only if both statements cannot "
    "be true of the same subject at the same time (a changed value, state or fact counts). Label it "
    "'compatible' if both can hold (same topic, a refinement, a paraphrase, different subjects or "
    "different dates), and 'unrelated' if they are about different things. Give a confidence in [0, 1] "
    "and a reason of at most one short sentence. Answer for every pair, using its number."
)


class PairJudgement(BaseModel):
    pair: int = Field(ge=0, description="the pair's number as given")
    label: Literal["contradicts", "compatible", "unrelated"]
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str = Field(default="", max_length=400)


class Judgements(BaseModel):
    verdicts: list[PairJudgement]


def format_pairs(pairs: Sequence[TextPair]) -> str:
    return "\n".join(f"Pair {i}:\n  A: {p.older}\n  B: {p.newer}" for i, p in enumerate(pairs))


class LlmJudge:
    """Batched, rate-limited LLM verdicts. `completion_kwargs` pass through to litellm
    (api_base, api_key, temperature, or `mock_response` in tests)."""

    method = METHOD

    def __init__(self, model: str, threshold: float = 0.7, *, batch_size: int = 8,
                 max_calls_per_second: float | None = 2.0, max_retries: int = 1, timeout: float = 60.0,
                 completion_kwargs: dict[str, Any] | None = None, limiter: RateLimiter | None = None) -> None:
        if not model:
            raise ValueError("the LLM judge needs a model name (policy.contradiction.llm_model)")
        self.model = model
        self.threshold = threshold
        self.batch_size = max(1, batch_size)
        self.max_retries = max_retries
        self.timeout = timeout
        self.completion_kwargs = dict(completion_kwargs or {})
        self.limiter = limiter or RateLimiter(max_calls_per_second)
        self.calls = 0
        self._client = LazyClient()

    def _call(self, chunk: Sequence[TextPair]) -> Judgements:
        self.limiter.acquire()
        self.calls += 1
        result: Judgements = self._client.get().chat.completions.create(
            model=self.model, response_model=Judgements, max_retries=self.max_retries, timeout=self.timeout,
            messages=[{"role": "system", "content": SYSTEM_PROMPT},
                      {"role": "user", "content": format_pairs(chunk)}],
            **self.completion_kwargs,
        )
        return result

    def judge(self, pairs: Sequence[TextPair]) -> list[Verdict | None]:
        out: list[Verdict | None] = [None] * len(pairs)
        errors: list[str] = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start:start + self.batch_size]
            try:
                answer = self._call(chunk)
            except Exception as exc:  # provider, network, validation: all mean "no verdict for these"
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
                log.warning("LLM judge call failed for %d pairs: %s", len(chunk), errors[-1])
                continue
            for j in answer.verdicts:
                if 0 <= j.pair < len(chunk) and out[start + j.pair] is None:
                    out[start + j.pair] = self._verdict(j)
        if errors:
            raise DetectorUnavailableError(f"LLM judge {self.model!r}: {len(errors)} call(s) failed; "
                                           f"first: {errors[0]}", partial=out)
        return out

    def _verdict(self, j: PairJudgement) -> Verdict:
        # score means "how strongly they contradict": the model's confidence when it says so, else 0.
        if j.label == "contradicts":
            label: Literal["contradicts", "compatible", "unrelated"] = (
                "contradicts" if j.confidence >= self.threshold else "compatible")
            return Verdict(label, round(j.confidence, 4), METHOD, j.reason[:300])
        return Verdict(j.label, 0.0, METHOD, j.reason[:300])
