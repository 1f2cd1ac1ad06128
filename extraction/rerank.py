"""The model rerankers: a cross-encoder and an LLM score the top of the fused ranking for a query.

The recall's rerank stage (graph.recall.rerank) reorders the fused head by scores it is given; the models
that produce them live here, because graph never loads or calls a model. `RerankOptions` — the
process-level knobs of both, the model itself being policy — is the scorer the composition (api.memory)
hands the stage (schema.rerank.RerankScorer):

* `cross-encoder` — a sentence-transformers `CrossEncoder` by name or local path, one batch of
  (query, claim) pairs, the claim as its vector was computed from ("subject: content", `rerank_text`);
  its score is rounded to six decimals, so float noise between batches cannot reorder items;
* `llm` — one chat-model call through litellm and instructor in JSON mode, validated against
  `RerankOrder` (mockable with litellm's `mock_response`), as the project's other LLM judges are. The
  candidates are shown numbered, each as `rerank_text` reads it, and the model answers with the numbers in
  order, best first: numbers are short and cannot be misspelt into another claim's id. Numbers out of range
  or repeated are dropped; candidates it leaves out follow in fused order (`order_scores`); an item's
  score is its place in that order, (N − position) / N.

Any failure — a model that cannot be loaded, a provider or network error, an answer that does not
validate — is a `RerankUnavailableError`, which the stage turns into "no rerank". A cross-encoder is
loaded once per (model, device) per process; a failed load is retried only after `retry_after` seconds,
so a missing model does not cost a load attempt on every recall (extraction.load_once, shared with
extraction.contradiction.nli).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from palimpsest.extraction.hub import local_files_only
from palimpsest.extraction.llm_client import json_client
from palimpsest.extraction.load_once import LoadOnce
from palimpsest.schema.limits import MAX_RERANK_TOP
from palimpsest.schema.models import PacketItem
from palimpsest.schema.rerank import RerankUnavailableError
from palimpsest.schema.subjects import text_for_vector

SYSTEM_PROMPT = (
    "You rank memory claims for a question. You are given the question and numbered claims. Reply with "
    "order: the claim numbers, most useful for answering the question first. Include every number once."
)
MAX_CLAIM_CHARS = 1_000  # a claim is shown at most this long: the prompt stays bounded by rerank_top


@dataclass(frozen=True)
class RerankOptions:
    """Process-level knobs of the rerankers (the model is policy): the cross-encoder's device, batch
    and input length; the LLM call's timeout, retries and provider plumbing (`completion_kwargs`:
    api_base, or `mock_response` in tests — never a key) and `completion` to replace
    `litellm.completion`.

    Called, the options are the scorer the rerank stage receives (schema.rerank.RerankScorer): the
    knobs and the models they configure travel together, so a recall scores with the options it was
    handed and no other."""

    device: str = "cpu"
    batch_size: int = 32
    max_length: int = 256
    retry_after: float = 300.0
    timeout: float = 60.0
    max_retries: int = 1
    completion_kwargs: dict[str, Any] = field(default_factory=dict)
    completion: Callable[..., Any] | None = None

    def __call__(self, method: str, model: str, query: str, items: Sequence[PacketItem]) -> list[float]:
        """One score per item of the fused head under the policy's reranker `method` and `model`."""
        if method == "cross-encoder":
            return cross_encoder_scores(model, query, [rerank_text(it) for it in items], self)
        if method == "llm":
            return order_scores(llm_order(model, query, items, self), len(items))
        raise RerankUnavailableError(f"no model reranker {method!r}")


DEFAULT_OPTIONS = RerankOptions()
_process_options = DEFAULT_OPTIONS


def configure(options: RerankOptions | None) -> None:
    """Set the process's reranker options (None: the defaults), which `Memory.recall` hands its recalls:
    how a server points the LLM reranker at its provider."""
    global _process_options
    _process_options = options or DEFAULT_OPTIONS


def process_options() -> RerankOptions:
    return _process_options


class _Loaded:
    def __init__(self, model: Any) -> None:
        self.model = model
        self.lock = threading.Lock()  # CrossEncoder inference is not documented as thread-safe


_loaded: LoadOnce[_Loaded] = LoadOnce(RerankUnavailableError)


def load_cross_encoder(name: str, options: RerankOptions = DEFAULT_OPTIONS) -> _Loaded:
    """The CrossEncoder `name` (a hub name or a local directory), loaded once per process."""

    def build() -> _Loaded:
        from sentence_transformers import CrossEncoder

        return _Loaded(CrossEncoder(name, device=options.device, max_length=options.max_length,
                                    local_files_only=local_files_only(name)))

    return _loaded.get((name, options.device, options.max_length), f"cross-encoder {name!r}", build,
                       options.retry_after)


def cross_encoder_scores(name: str, query: str, texts: Sequence[str],
                         options: RerankOptions = DEFAULT_OPTIONS) -> list[float]:
    """One score per text for (query, text), six decimals. A model with several outputs per pair is
    not a relevance model and is refused."""
    loaded = load_cross_encoder(name, options)
    try:
        with loaded.lock:
            raw = loaded.model.predict([(query, t) for t in texts], batch_size=options.batch_size,
                                       show_progress_bar=False, convert_to_numpy=True)
    except Exception as exc:
        raise RerankUnavailableError(f"cross-encoder {name!r} failed: {type(exc).__name__}: {exc}"[:500]) from exc
    shape = tuple(getattr(raw, "shape", ()))
    if shape not in ((len(texts),), (len(texts), 1)):
        raise RerankUnavailableError(f"cross-encoder {name!r} returned scores of shape {shape}, expected "
                                     f"({len(texts)},): one relevance score per pair")
    return [round(float(x), 6) for x in raw.reshape(-1)]


def order_scores(order: Sequence[int], n: int) -> list[float]:
    """Scores for `n` candidates from a model's order of their indices: (n − position) / n, so the
    first scores 1; candidates the order left out follow in fused order. (The stage rounds every score
    it is given to twelve significant digits, graph.recall.ranking.stable_round.)"""
    placed = [i for i in dict.fromkeys(order) if 0 <= i < n]
    seen = set(placed)
    full = placed + [i for i in range(n) if i not in seen]
    scores = [0.0] * n
    for position, i in enumerate(full):
        scores[i] = (n - position) / n
    return scores


def rerank_text(item: PacketItem) -> str:
    """What a reranker reads of an item: the text its vector was computed from ("subject: content"
    when a subject was declared and the content does not open with it, schema.subjects), so the model
    sees the title a passage names its subject in, as the embedder did."""
    return text_for_vector(item.content, item.metadata)


class RerankOrder(BaseModel):
    order: list[int] = Field(default_factory=list, max_length=4 * MAX_RERANK_TOP)


def user_prompt(query: str, items: Sequence[PacketItem]) -> str:
    lines = [f"Question: {query}", "", "Claims:"]
    lines += [f"[{n}] {rerank_text(it)[:MAX_CLAIM_CHARS]}" for n, it in enumerate(items, start=1)]
    return "\n".join(lines)


def llm_order(model: str, query: str, items: Sequence[PacketItem], options: RerankOptions) -> list[int]:
    """The model's order of `items`, as 0-based indices (whatever it answered, unchecked)."""
    try:
        client: Any = json_client(options.completion)
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


__all__ = ["DEFAULT_OPTIONS", "MAX_CLAIM_CHARS", "SYSTEM_PROMPT", "RerankOptions", "RerankOrder",
           "RerankUnavailableError", "configure", "cross_encoder_scores", "llm_order", "load_cross_encoder",
           "order_scores", "process_options", "rerank_text", "user_prompt"]
