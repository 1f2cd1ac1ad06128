"""The LLM router: one token-minimal chat-model call says what the question's structure is.

It answers the same three properties the rules read (graph.recall.router: multi-hop, comparison,
temporal) as a typed verdict (`RouteVerdict`, through litellm + instructor in JSON mode; mockable with
litellm's `mock_response`), and graph.recall.router.decide maps them to stages exactly as it maps
the rules' answer. So the stages stay the project's, testable without a model, and a packet's stages
pin the decision for replay. The prompt is the question alone and the answer three booleans: a few
dozen tokens each way. Any failure — provider, network, an answer that does not validate — returns
no properties, and the caller lets the rules decide ("router:llm-unavailable").
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel

from palimpsest.extraction.llm_client import json_client, price
from palimpsest.extraction.reader import ReaderOptions
from palimpsest.schema.models import RouterCost

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "Classify a question for a retrieval system. Reply with three booleans. multi_hop: answering needs an "
    "intermediate entity the question describes but does not name (e.g. 'the director of X', 'the city where Y "
    "was born'). comparison: it compares or combines two or more things. temporal: it asks for, or is limited "
    "by, a time or date."
)
MAX_QUESTION_CHARS = 2_000
MAX_TOKENS = 40  # three booleans in JSON


class RouteVerdict(BaseModel):
    """The question's structure (the caller maps it to graph.recall.router's properties)."""

    multi_hop: bool = False
    comparison: bool = False
    temporal: bool = False


def classify(question: str, model: str, options: ReaderOptions | None = None) -> tuple[RouteVerdict | None,
                                                                                         RouterCost]:
    """The question's structure by `model` (None when the call failed) and what the call cost."""
    opts = options or ReaderOptions()
    try:
        verdict, raw = json_client(opts.completion).chat.completions.create_with_completion(
            model=model, response_model=RouteVerdict, max_retries=opts.max_retries, timeout=opts.timeout,
            temperature=0.0, max_tokens=MAX_TOKENS,
            messages=[{"role": "system", "content": SYSTEM_PROMPT},
                      {"role": "user", "content": question[:MAX_QUESTION_CHARS]}],
            **opts.completion_kwargs,
        )
    except Exception as exc:  # provider, network, validation: the rules decide, and say why
        log.warning("router %r: %s: %s", model, type(exc).__name__, str(exc)[:300])
        return None, RouterCost(model=model, failed=True)
    return verdict, _cost(raw, model)


def _cost(raw: Any, model: str) -> RouterCost:
    usage = getattr(raw, "usage", None)
    return RouterCost(model=model, prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                      completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0), cost_usd=price(raw, model))


__all__ = ["MAX_TOKENS", "SYSTEM_PROMPT", "RouteVerdict", "classify"]
