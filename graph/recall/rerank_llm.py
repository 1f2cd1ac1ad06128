"""The LLM reranker: one chat-model call orders the top candidates by how well they answer the query.

Through litellm and instructor in JSON mode, validated against `RerankOrder` (mockable with litellm's
`mock_response`), as the project's other LLM judges are. The candidates are shown numbered, each as its
vector was computed from ("subject: content", graph.recall.rerank.rerank_text), and the model answers
with the numbers in order, best first: numbers are short and cannot be misspelt into
another claim's id. Numbers out of range or repeated are dropped; candidates it leaves out follow in
fused order (graph.recall.rerank.order_scores). Any failure — provider, network, an answer that does
not validate — is a `RerankUnavailableError`, which the stage turns into "no rerank".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from palimpsest.graph.recall.rerank import RerankOptions, RerankUnavailableError, rerank_text
from palimpsest.schema.limits import MAX_RERANK_TOP
from palimpsest.schema.models import PacketItem

SYSTEM_PROMPT = (
    "You rank memory claims for a question. You are given the question and numbered claims. Reply with "
    "order: the claim numbers, most useful for answering the question first. Include every number once."
)
MAX_CLAIM_CHARS = 1_000  # a claim is shown at most this long: the prompt stays bounded by rerank_top


class RerankOrder(BaseModel):
    order: list[int] = Field(default_factory=list, max_length=4 * MAX_RERANK_TOP)


def user_prompt(query: str, items: Sequence[PacketItem]) -> str:
    lines = [f"Question: {query}", "", "Claims:"]
    lines += [f"[{n}] {rerank_text(it)[:MAX_CLAIM_CHARS]}" for n, it in enumerate(items, start=1)]
    return "\n".join(lines)


def llm_order(model: str, query: str, items: Sequence[PacketItem], options: RerankOptions) -> list[int]:
    """The model's order of `items`, as 0-based indices (whatever it answered, unchecked)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import instructor
        import litellm

        client: Any = instructor.from_litellm(options.completion or litellm.completion, mode=instructor.Mode.JSON)
        verdict = client.chat.completions.create(
            model=model, response_model=RerankOrder, max_retries=options.max_retries, timeout=options.timeout,
            temperature=0.0,
            messages=[{"role": "system", "content": SYSTEM_PROMPT},
                      {"role": "user", "content": user_prompt(query, items)}],
            **options.completion_kwargs,
        )
    except Exception as exc:  # provider, network, validation: no rerank, and say why
        raise RerankUnavailableError(f"LLM reranker {model!r}: {type(exc).__name__}: {exc}"[:500]) from None
    return [n - 1 for n in verdict.order]


__all__ = ["MAX_CLAIM_CHARS", "SYSTEM_PROMPT", "RerankOrder", "llm_order", "user_prompt"]
