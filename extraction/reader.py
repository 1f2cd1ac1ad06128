"""The reader of `ask`: a chat model reads the recalled claims and answers the question from them alone.

Through litellm and instructor in JSON mode (validated against `ReaderVerdict`; mockable with
litellm's `mock_response`), as the LLM judges of this project are. Its typed answer:

* `thought` — what the claims establish so far and what is still missing. In IRCoT it drives the
  next retrieval round, so it is asked for even when the answer is already found;
* `answer` and `cited_ids` — the ids of the claims the answer rests on. Only ids that were shown
  count: the rest are dropped and counted (`dropped_citations`), never trusted;
* `not_in_memory` — the claims do not support an answer. The reader is told to say so rather than
  answer from its own knowledge: an answer from memory must be traceable to memory. An answer
  left with no valid citation is turned into "not in memory" for the same reason.

The model comes from the policy (`reader_model`) or the caller; the provider's key only from its
own environment variable (litellm reads it). Calls are spaced by a rate limit and their tokens and
cost (litellm's price list; unpriced calls counted apart) are added up per `ask`. A failed call is
an `UnavailableError` naming the model, with what was spent so far.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from palimpsest.extraction.llm_client import LazyClient, RateLimiter, price
from palimpsest.schema.errors import UnavailableError

if TYPE_CHECKING:
    from palimpsest.schema.ask import FusedItem, ReaderCost

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You answer questions from an AI agent's long-term memory. You are given numbered memory claims, each "
    "with its id. Use only these claims, never your own knowledge. Reply with: thought — in one or two "
    "sentences, what the claims establish and which fact is still missing to answer (name the entity to look "
    "up next); answer — a short answer (a name, date, number or phrase), empty if the claims do not support "
    "one; cited_ids — the ids of the claims the answer rests on, copied exactly; not_in_memory — true if the "
    "claims do not support an answer."
)
MAX_CLAIM_CHARS = 2_000  # a claim is shown at most this long: the context stays bounded by k × rounds


class ReaderVerdict(BaseModel):
    thought: str = Field(default="", max_length=2_000)
    answer: str = Field(default="", max_length=2_000)
    cited_ids: list[str] = Field(default_factory=list, max_length=200)
    not_in_memory: bool = False


@dataclass
class ReaderOptions:
    """Process-level knobs of the reader (the model is policy): rate limit, retries, timeout, provider
    plumbing (`completion_kwargs`: api_base, or `mock_response` in tests — never a key), and
    `completion` to replace `litellm.completion` (tests script answers per call with it)."""

    max_calls_per_second: float | None = 2.0
    max_retries: int = 1
    timeout: float = 60.0
    temperature: float = 0.0
    completion_kwargs: dict[str, Any] = field(default_factory=dict)
    completion: Callable[..., Any] | None = None


@dataclass
class Reading:
    """One reader call's outcome: the verdict with its citations checked against what was shown."""

    thought: str
    answer: str
    cited_ids: list[str]
    dropped_citations: int
    not_in_memory: bool


def format_claims(items: Sequence[FusedItem]) -> str:
    lines = []
    for n, it in enumerate(items, start=1):
        subject = next((str(it.metadata[k]) for k in ("subject", "title") if isinstance(it.metadata.get(k), str)), "")
        head = f"[{n}] id={it.id}" + (f" subject={subject}" if subject else "")
        lines.append(f"{head}\n{it.content[:MAX_CLAIM_CHARS]}")
    return "\n\n".join(lines)


def user_prompt(question: str, items: Sequence[FusedItem], thoughts: Sequence[str]) -> str:
    parts = [f"Question: {question}", "", "Memory claims:", format_claims(items) if items else "(none)"]
    if thoughts:
        parts += ["", "Your notes from earlier rounds:", *(f"- {t}" for t in thoughts)]
    return "\n".join(parts)


def check_citations(verdict: ReaderVerdict, shown: Sequence[str]) -> Reading:
    """Keep the cited ids that were shown (first citation first, no repeats); count the others."""
    allowed, kept, dropped = set(shown), [], 0
    for cid in verdict.cited_ids:
        cid = cid.strip()
        if cid in allowed and cid not in kept:
            kept.append(cid)
        elif cid not in allowed:
            dropped += 1
    not_in_memory = verdict.not_in_memory or not verdict.answer.strip() or not kept
    return Reading(verdict.thought.strip(), "" if not_in_memory else verdict.answer.strip(),
                   [] if not_in_memory else kept, dropped, not_in_memory)


class Reader:
    def __init__(self, model: str, options: ReaderOptions | None = None, *,
                 limiter: RateLimiter | None = None) -> None:
        if not model:
            raise ValueError("the reader needs a model (policy.reader_model or llm_model)")
        self.model = model
        self.options = options or ReaderOptions()
        self.limiter = limiter or RateLimiter(self.options.max_calls_per_second)
        self._client = LazyClient(self.options.completion)

    def read(self, question: str, items: Sequence[FusedItem], thoughts: Sequence[str], cost: ReaderCost) -> Reading:
        """One call: the verdict on `items`, its citations checked; `cost` is updated in place."""
        self.limiter.acquire()
        cost.calls += 1
        try:
            verdict, raw = self._client.get().chat.completions.create_with_completion(
                model=self.model, response_model=ReaderVerdict, max_retries=self.options.max_retries,
                timeout=self.options.timeout, temperature=self.options.temperature,
                messages=[{"role": "system", "content": SYSTEM_PROMPT},
                          {"role": "user", "content": user_prompt(question, items, thoughts)}],
                **self.options.completion_kwargs,
            )
        except Exception as exc:  # provider, network, validation: no answer, and say why
            cost.failed_calls += 1
            # The provider's text (its URL, account, quota, a local port's answer) goes to the log; the
            # caller learns only that the reader failed, and which model, so nothing of the server leaks.
            log.warning("reader %r: %s: %s", self.model, type(exc).__name__, str(exc)[:1000])
            raise UnavailableError(f"the reader {self.model!r} failed ({type(exc).__name__}); the server log "
                                   "has the provider's answer", field="llm_model") from None
        self._account(raw, cost)
        return check_citations(verdict, [it.id for it in items])

    def _account(self, raw: Any, cost: ReaderCost) -> None:
        usage = getattr(raw, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        cost.prompt_tokens += prompt
        cost.completion_tokens += completion
        cost.total_tokens += int(getattr(usage, "total_tokens", 0) or prompt + completion)
        usd = price(raw, self.model)
        if usd is None:
            cost.unpriced_calls += 1
        else:
            cost.cost_usd = round(cost.cost_usd + usd, 8)


__all__ = ["MAX_CLAIM_CHARS", "SYSTEM_PROMPT", "Reader", "ReaderOptions", "ReaderVerdict", "Reading",
           "check_citations", "format_claims", "user_prompt"]
