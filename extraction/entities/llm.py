"""LLM extractor: a chat model reads numbered claims and returns typed entities and facts.

Same plumbing as the LLM contradiction judge (`extraction.contradiction.llm`): litellm (any
provider, or a local OpenAI-compatible server) behind instructor in JSON mode, so the answer is
validated against pydantic models instead of parsed by hand, and JSON mode rather than tool
calls because it works with more providers and with litellm's `mock_response` in tests.

Why the shape of the code:

* **Batched.** Several claims go into one call (`batch_size`, and a character budget), numbered,
  so the cost per claim stays low and the model can resolve a pronoun in one claim to a name in
  a neighbouring claim of the same batch.
* **Rate-limited.** Calls are spaced by the shared `RateLimiter` (max calls per second, from the
  worker's configuration), held by the worker across passes.
* **Cost reported.** Each call's cost comes from `litellm.completion_cost` on the raw response
  (instructor's `create_with_completion`); a failed call's tokens are priced from instructor's
  `total_usage`, since they were paid for too. Models litellm cannot price (local servers) are
  counted as `unpriced_calls` instead of silently costing 0.
* **Lenient response model, strict items.** The response models accept what a model plausibly
  sends (dates as strings, free-form types); every fact is then checked on its own (subject not a
  pronoun or value, dates that parse, confidence in (0, 1], a real predicate). A bad fact is
  dropped alone with its reason; one malformed value never costs the whole batch a retry.
* **Never worse than offline for entities.** Dictionary links (Aho-Corasick over known names)
  and declared subjects are added deterministically, whatever the model said; claims of a failed
  call get the offline extractor's links and proposals and are reported as failed.

Dates a model writes without a timezone are read as UTC; a date without a time is its midnight.
Facts that state no dates take the claim's own world-time window (`ClaimText.valid_from/to`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from palimpsest.extraction.entities.extractor import ExtractorOptions, Mention, declared_subjects
from palimpsest.extraction.entities.extractors import (
    MAX_OBJECT_CHARS,
    ExtractedFact,
    Extraction,
    is_pronoun,
    literal_key,
    normalize_predicate,
)
from palimpsest.extraction.entities.job import ClaimText, LinkResult, Proposal, link_and_propose
from palimpsest.extraction.entities.matcher import EntityMatcher
from palimpsest.extraction.entities.normalize import canonical, is_value
from palimpsest.extraction.llm_client import LazyClient, RateLimiter, import_litellm, price

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You build a knowledge graph from an AI agent's memory. For every numbered claim return:\n"
    "- entities: the named things it mentions (people, organisations, places, products, services, hosts, "
    "projects, events), each with a short lower-case type. Numbers, amounts, dates and durations are values, "
    "not entities.\n"
    "- facts: the (subject, predicate, object) statements the claim makes. The subject is always an entity "
    "name as listed in entities; replace every pronoun (he, she, it, they, ...) by the entity it refers to, "
    "using the declared subject or the other claims of this batch if needed. The predicate is a short "
    "lower-case verb phrase such as works_at, lives_in, owns, status. The object is an entity name "
    "(object_is_entity true) or a value (false). valid_from / valid_to: ISO-8601 dates only when the claim "
    "says when the fact starts or stops holding, otherwise null. single_valued: true when the subject holds "
    "one object for this predicate at a time (a new one replaces the old: lives_in, employer, status), false "
    "when several hold together (knows, owns, likes). confidence in [0, 1]: how plainly the claim states it.\n"
    "Answer for every claim, using its number; a claim with nothing to extract gets empty lists."
)


# ---------------------------------------------------------------------------- response models
class LlmEntity(BaseModel):
    name: str = Field(description="the entity's name as written (pronouns resolved)")
    type: str = Field(default="thing", description="short lower-case type, e.g. person, organisation, service")


class LlmFact(BaseModel):
    subject: str
    predicate: str
    object: str
    object_is_entity: bool = False
    valid_from: str | None = None
    valid_to: str | None = None
    confidence: float = 0.9
    single_valued: bool = True


class LlmClaim(BaseModel):
    claim: int = Field(description="the claim's number as given")
    entities: list[LlmEntity] = Field(default_factory=list)
    facts: list[LlmFact] = Field(default_factory=list)


class LlmExtraction(BaseModel):
    claims: list[LlmClaim]


# ---------------------------------------------------------------------------- options
@dataclass
class LlmExtractorOptions:
    """Process-level knobs of the LLM extractor (the model itself comes from the policy).

    `completion_kwargs` pass through to litellm (api_base, api_key, temperature, or
    `mock_response` in tests). `completion` replaces `litellm.completion` (tests that need a
    different mocked answer per call wrap it).
    """

    batch_size: int = 8
    max_chars_per_call: int = 12_000
    max_chars_per_claim: int = 4_000
    max_calls_per_second: float | None = 2.0
    max_retries: int = 1
    timeout: float = 60.0
    completion_kwargs: dict[str, Any] = field(default_factory=dict)
    completion: Callable[..., Any] | None = None


def parse_when(value: str | None) -> datetime | None:
    """"2024", "2024-03", "2024-03-05" or a full ISO timestamp → aware UTC datetime (naive = UTC)."""
    if value is None or not value.strip():
        return None
    text = value.strip().replace("Z", "+00:00")
    if len(text) == 4 and text.isdigit():
        text += "-01-01"
    elif len(text) == 7 and text[4] == "-":
        text += "-01"
    parsed = datetime.fromisoformat(text)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def format_claims(claims: Sequence[ClaimText], max_chars: int) -> str:
    lines = []
    for i, c in enumerate(claims):
        declared = declared_subjects(c.metadata)
        about = f" (about: {'; '.join(declared)})" if declared else ""
        lines.append(f"Claim {i}{about}: {c.content[:max_chars]}")
    return "\n".join(lines)


def _type(value: str) -> str:
    cleaned = " ".join(value.strip().casefold().split())[:64]
    return cleaned or "thing"


class LlmExtractor:
    """Batched, rate-limited, cost-reporting entity and fact extraction by a chat model."""

    name = "llm"

    def __init__(self, model: str, options: LlmExtractorOptions | None = None, *,
                 offline: ExtractorOptions | None = None, limiter: RateLimiter | None = None) -> None:
        if not model:
            raise ValueError("the LLM extractor needs a model name (policy.extractor_model)")
        self.model = model
        self.options = options or LlmExtractorOptions()
        self.offline = offline or ExtractorOptions()
        self.limiter = limiter or RateLimiter(self.options.max_calls_per_second)
        self.calls = 0
        self.cost_usd = 0.0
        self._client = LazyClient(self.options.completion)

    # ------------------------------------------------------------------------ model calls
    def _price(self, raw: Any) -> float | None:
        return price(raw, self.model)

    def _price_usage(self, usage: Any) -> float | None:
        litellm = import_litellm()
        try:
            prompt, completion = litellm.cost_per_token(
                model=self.model, prompt_tokens=int(usage.prompt_tokens or 0),
                completion_tokens=int(usage.completion_tokens or 0))
            return float(prompt) + float(completion)
        except Exception:
            return None

    def _call(self, chunk: Sequence[ClaimText], out: Extraction) -> LlmExtraction:
        self.limiter.acquire()
        self.calls += 1
        out.calls += 1
        opts = self.options
        try:
            answer, raw = self._client.get().chat.completions.create_with_completion(
                model=self.model, response_model=LlmExtraction, max_retries=opts.max_retries, timeout=opts.timeout,
                messages=[{"role": "system", "content": SYSTEM_PROMPT},
                          {"role": "user", "content": format_claims(chunk, opts.max_chars_per_claim)}],
                **opts.completion_kwargs,
            )
        except Exception as exc:
            usage = getattr(exc, "total_usage", None)
            self._account(out, None if usage is None else self._price_usage(usage), usage is not None)
            raise
        self._account(out, self._price(raw), True)
        result: LlmExtraction = answer
        return result

    def _account(self, out: Extraction, cost: float | None, billed: bool) -> None:
        if cost is None:
            out.unpriced_calls += int(billed)
            return
        out.cost_usd += cost
        self.cost_usd += cost

    def _chunks(self, claims: Sequence[ClaimText]) -> list[list[ClaimText]]:
        opts = self.options
        chunks: list[list[ClaimText]] = [[]]
        size = 0
        for c in claims:
            n = min(len(c.content), opts.max_chars_per_claim)
            if chunks[-1] and (len(chunks[-1]) >= max(1, opts.batch_size) or size + n > opts.max_chars_per_call):
                chunks.append([])
                size = 0
            chunks[-1].append(c)
            size += n
        return [ch for ch in chunks if ch]

    # ------------------------------------------------------------------------ extraction
    def extract(self, claims: Sequence[ClaimText], matcher: EntityMatcher) -> Extraction:
        ordered = sorted(claims, key=lambda c: (c.revision, c.id))
        out = Extraction(LinkResult({}, []))
        answered: dict[str, LlmClaim] = {}
        for chunk in self._chunks(ordered):
            try:
                answer = self._call(chunk, out)
            except Exception as exc:  # provider, network, validation: these claims fall back to offline
                reason = f"{type(exc).__name__}: {exc}"[:300]
                out.problems.append(f"llm extractor {self.model!r}: call for {len(chunk)} claim(s) failed: {reason}")
                log.warning("LLM extractor call failed for %d claims: %s", len(chunk), reason)
                continue
            for got in answer.claims:
                if 0 <= got.claim < len(chunk) and chunk[got.claim].id not in answered:
                    answered[chunk[got.claim].id] = got
        fallback: list[ClaimText] = []
        for c in ordered:
            item = answered.get(c.id)
            if item is None:
                fallback.append(c)
                continue
            self._read_claim(c, item, matcher, out)
        if fallback:
            out.failed_claims.extend(c.id for c in fallback)
            offline = link_and_propose(fallback, matcher, self.offline)
            for cid, ids in offline.links.items():
                out.linked.links.setdefault(cid, set()).update(ids)
            out.linked.unresolved.extend(offline.unresolved)
        return out

    def _read_claim(self, c: ClaimText, item: LlmClaim, matcher: EntityMatcher, out: Extraction) -> None:
        links = out.linked.links.setdefault(c.id, set())
        links.update(m.entity_id for m in matcher.find_all(c.content))
        proposed: dict[str, Proposal] = {}

        def mention(surface: str, kind: str, type_: str) -> str | None:
            surface = " ".join(surface.split())[:200]
            key = canonical(surface)
            if not key or len(key) < 2 or is_value(surface) or is_pronoun(surface):
                return None
            owner = matcher.owner(key)
            if owner is not None:
                links.add(owner)
            elif key not in proposed or (kind == "declared" and proposed[key].mention.kind != "declared"):
                proposed[key] = Proposal(c.id, c.revision, Mention(surface, key, "declared" if kind == "declared"
                                                                    else "name"), type_, c.position)
            return key

        llm_types = {canonical(e.name): _type(e.type) for e in item.entities}
        declared_type = c.metadata.get("type")
        for subject in declared_subjects(c.metadata):
            default = declared_type.strip()[:64] if isinstance(declared_type, str) and declared_type.strip() else None
            mention(subject, "declared", default or llm_types.get(canonical(subject), "subject"))
        for e in item.entities:
            mention(e.name, "name", _type(e.type))
        for i, f in enumerate(item.facts):
            fact = self._fact(c, i, f, out)
            if fact is None:
                continue
            if mention(fact.subject, "name", llm_types.get(fact.subject_key, "thing")) is None:
                out.dropped.append(f"claim {c.id} fact {i}: subject {fact.subject!r} is not an entity name")
                continue
            if fact.object_is_entity:
                mention(fact.object, "name", llm_types.get(fact.object_key, "thing"))
            out.facts.append(fact)
        out.linked.unresolved.extend(proposed[k] for k in sorted(proposed))

    def _fact(self, c: ClaimText, i: int, f: LlmFact, out: Extraction) -> ExtractedFact | None:
        def drop(why: str) -> None:
            out.dropped.append(f"claim {c.id} fact {i}: {why}")

        subject, obj = " ".join(f.subject.split())[:200], " ".join(f.object.split())[:MAX_OBJECT_CHARS]
        predicate = normalize_predicate(f.predicate)
        if not subject or is_pronoun(subject):
            drop(f"unresolved subject {f.subject!r}")
            return None
        if is_value(subject):
            drop(f"subject {f.subject!r} is a value, not an entity")
            return None
        if not predicate:
            drop(f"empty predicate {f.predicate!r}")
            return None
        if not obj or is_pronoun(obj):
            drop(f"unresolved object {f.object!r}")
            return None
        if not 0.0 < f.confidence <= 1.0:
            drop(f"confidence {f.confidence} outside (0, 1]")
            return None
        try:
            valid_from, valid_to = parse_when(f.valid_from), parse_when(f.valid_to)
        except ValueError as exc:
            drop(f"unreadable date: {exc}")
            return None
        if valid_from is None and valid_to is None:
            valid_from, valid_to = c.valid_from, c.valid_to
        if valid_from is not None and valid_to is not None and valid_to <= valid_from:
            drop("valid_to is not after valid_from")
            return None
        return ExtractedFact(
            c.id, c.revision, subject, canonical(subject), predicate, obj, literal_key(obj),
            bool(f.object_is_entity) and not is_value(obj), valid_from, valid_to, round(float(f.confidence), 6),
            bool(f.single_valued),
        )

