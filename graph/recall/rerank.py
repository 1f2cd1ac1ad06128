"""Rerank: a model rescores the top of the fused ranking before the cut to k.

Fusion scores each list separately (a cosine, a share of query terms, a PPR mass); a reranker
reads the query and the claim together, which is what separates a passage that mentions the
query's words from one that answers it. It is a policy choice (`rerank`, `rerank_model`,
`rerank_top`), applied to the fused top `rerank_top`:

* `cross-encoder` — a sentence-transformers `CrossEncoder` by name or local path, one batch of
  (query, claim) pairs, the claim as its vector was computed from ("subject: content", `rerank_text`);
  its score (rounded to six decimals, so float noise between batches cannot reorder items) replaces
  the fused score on those items;
* `llm` — one chat-model call through litellm + instructor with the query and the candidates' texts,
  returning a typed ordering of their ids (graph.recall.rerank_llm); an item's score is its place in
  that order, (N − position) / N;
* `sentences` — the namespace's own embedder reads each claim sentence by sentence, and the order of
  the claims' best sentences is fused with the fused order (graph.sentences): no other model.

The rescored head is ordered by its new score (ties by fused rank); the candidates below it keep
their fused order and scores, after the head. The reranker runs outside the read transaction
(graph.recall.recall), so a slow model holds nothing open.

A model that cannot be loaded or called degrades to no rerank: the packet is the fused ranking and
says so (`completeness.rerank_unavailable`); a recall never fails for it. A cross-encoder is loaded
once per (model, device) per process; a failed load is retried only after `retry_after` seconds,
so a missing model does not cost a load attempt on every recall (schema.load_once, shared with
extraction.contradiction.nli).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from palimpsest.graph.recall.ranking import stable_round
from palimpsest.graph.sentences import EmbedTexts, best_sentence_cosines, fused_with_sentences
from palimpsest.schema.load_once import LoadOnce
from palimpsest.schema.models import PacketItem, Policy, ScoreExplanation, ScoreRerank
from palimpsest.schema.subjects import text_for_vector

log = logging.getLogger(__name__)


class RerankUnavailableError(Exception):
    """The reranker could not score (model missing, failed to load, provider error, bad answer)."""


@dataclass(frozen=True)
class RerankOptions:
    """Process-level knobs of the rerankers (the model is policy): the cross-encoder's device, batch
    and input length; the LLM call's timeout, retries and provider plumbing (`completion_kwargs`:
    api_base, or `mock_response` in tests — never a key) and `completion` to replace
    `litellm.completion`."""

    device: str = "cpu"
    batch_size: int = 32
    max_length: int = 256
    retry_after: float = 300.0
    timeout: float = 60.0
    max_retries: int = 1
    completion_kwargs: dict[str, Any] = field(default_factory=dict)
    completion: Callable[..., Any] | None = None


DEFAULT_OPTIONS = RerankOptions()
_process_options = DEFAULT_OPTIONS


def configure(options: RerankOptions | None) -> None:
    """Set the process's reranker options (None: the defaults), used by recalls that name none
    (`RecallRequest.rerank_options`): how a server points the LLM reranker at its provider."""
    global _process_options
    _process_options = options or DEFAULT_OPTIONS


def process_options() -> RerankOptions:
    return _process_options


class Reranked(NamedTuple):
    items: list[PacketItem]  # the head rescored and reordered, then the rest; ranked from 1
    ran: bool  # a reranker rescored the head
    unavailable: bool  # the policy asked for one and it could not score


class _Loaded:
    def __init__(self, model: Any) -> None:
        self.model = model
        self.lock = threading.Lock()  # CrossEncoder inference is not documented as thread-safe


_loaded: LoadOnce[_Loaded] = LoadOnce(RerankUnavailableError)


def load_cross_encoder(name: str, options: RerankOptions = DEFAULT_OPTIONS) -> _Loaded:
    """The CrossEncoder `name` (a hub name or a local directory), loaded once per process."""

    def build() -> _Loaded:
        if os.path.isdir(name):
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import CrossEncoder

        return _Loaded(CrossEncoder(name, device=options.device, max_length=options.max_length))

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
    first scores 1; candidates the order left out follow in fused order."""
    placed = [i for i in dict.fromkeys(order) if 0 <= i < n]
    seen = set(placed)
    full = placed + [i for i in range(n) if i not in seen]
    scores = [0.0] * n
    for position, i in enumerate(full):
        scores[i] = stable_round((n - position) / n)
    return scores


def rerank_text(item: PacketItem) -> str:
    """What a cross-encoder reads of an item: the text its vector was computed from ("subject: content"
    when a subject was declared and the content does not open with it, schema.subjects), so the model
    sees the title a passage names its subject in, as the embedder did."""
    return text_for_vector(item.content, item.metadata)


def rerank(query: str, items: Sequence[PacketItem], policy: Policy, options: RerankOptions | None = None, *,
           vector: Sequence[float] | None = None, embed: EmbedTexts | None = None) -> Reranked:
    """The fused list with its top `policy.rerank_top` rescored by the policy's reranker; `vector` (the
    query's) and `embed` (the namespace's embedder) are what `sentences` reads with."""
    if policy.rerank == "none" or not items:
        return Reranked(list(items), False, False)
    options = options or _process_options
    head, tail = list(items[:policy.rerank_top]), list(items[policy.rerank_top:])
    model = policy.rerank_model or ""
    try:
        if policy.rerank == "cross-encoder":
            scores = cross_encoder_scores(model, query, [rerank_text(it) for it in head], options)
        elif policy.rerank == "sentences":
            model = policy.embedding_model
            scores = sentence_scores(head, policy, vector, embed)
        else:
            from palimpsest.graph.recall.rerank_llm import llm_order

            scores = order_scores(llm_order(model, query, head, options), len(head))
    except RerankUnavailableError as exc:
        log.warning("rerank skipped, the fused ranking stands: %s", exc)
        return Reranked(list(items), False, True)
    rescored = sorted(zip(head, scores, strict=True), key=lambda p: (-p[1], p[0].rank))
    out = [_rescored(it, score, policy.rerank, model) for it, score in rescored] + tail
    return Reranked([it.model_copy(update={"rank": n}) for n, it in enumerate(out, start=1)], True, False)


def sentence_scores(head: Sequence[PacketItem], policy: Policy, vector: Sequence[float] | None,
                    embed: EmbedTexts | None) -> list[float]:
    """The head's scores under `sentences`: its fused order fused with its best sentences' order."""
    if vector is None or embed is None:
        raise RerankUnavailableError("the sentence reranker needs the query's vector and the namespace's embedder")
    try:
        cosines = best_sentence_cosines(vector, [it.content for it in head], embed)
    except Exception as exc:  # the embedder raises many types; the stage degrades on any
        raise RerankUnavailableError(f"sentence embeddings failed: {type(exc).__name__}: {exc}"[:500]) from exc
    return fused_with_sentences(cosines, policy.sentence_weight, policy.rrf_k)


def _rescored(item: PacketItem, score: float, method: str, model: str) -> PacketItem:
    score = stable_round(score)
    update: dict[str, Any] = {"score": score}
    if item.explanation is not None:
        verdict = ScoreRerank(method=method, model=model, score=score, replaced=item.score,  # type: ignore[arg-type]
                              fused_rank=item.rank)
        explanation: ScoreExplanation = item.explanation.model_copy(update={"rerank": verdict})
        update["explanation"] = explanation
    return item.model_copy(update=update)


__all__ = ["DEFAULT_OPTIONS", "RerankOptions", "RerankUnavailableError", "Reranked", "configure",
           "cross_encoder_scores", "load_cross_encoder", "order_scores", "process_options", "rerank", "rerank_text",
           "sentence_scores"]
