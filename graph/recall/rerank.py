"""Rerank: a reranker rescores the top of the fused ranking before the cut to k.

Fusion scores each list separately (a cosine, a share of query terms, a PPR mass); a reranker
reads the query and the claim together, which is what separates a passage that mentions the
query's words from one that answers it. It is a policy choice (`rerank`, `rerank_model`,
`rerank_top`), applied to the fused top `rerank_top`:

* `cross-encoder` and `llm` — a model scores the head (extraction.rerank: a sentence-transformers
  `CrossEncoder`, or one chat-model call ordering the candidates). graph never loads or calls a model:
  the stage is handed the scorer (`RecallRequest.rerank_scorer`, schema.rerank.RerankScorer, set by
  api.memory) and uses the scores it returns, each rounded to twelve significant digits, in place of
  the fused scores on those items; without a scorer the reranker is unavailable;
* `sentences` — the namespace's own embedder reads each claim sentence by sentence, and the order of
  the claims' best sentences is fused with the fused order (graph.sentences): no other model.

The rescored head is ordered by its new score (ties by fused rank); the candidates below it keep
their fused order and scores, after the head. The reranker runs outside the read transaction
(graph.recall.recall), so a slow model holds nothing open.

A reranker that cannot score degrades to no rerank: the packet is the fused ranking and says so
(`completeness.rerank_unavailable`); a recall never fails for it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from palimpsest.graph.recall.ranking import stable_round
from palimpsest.graph.sentences import EmbedTexts, best_sentence_cosines, fused_with_sentences
from palimpsest.schema.models import PacketItem, Policy, ScoreExplanation, ScoreRerank
from palimpsest.schema.rerank import RerankScorer, RerankUnavailableError

log = logging.getLogger(__name__)


class Reranked(NamedTuple):
    items: list[PacketItem]  # the head rescored and reordered, then the rest; ranked from 1
    ran: bool  # a reranker rescored the head
    unavailable: bool  # the policy asked for one and it could not score


def rerank(query: str, items: Sequence[PacketItem], policy: Policy, scorer: RerankScorer | None = None, *,
           vector: Sequence[float] | None = None, embed: EmbedTexts | None = None) -> Reranked:
    """The fused list with its top `policy.rerank_top` rescored by the policy's reranker: `scorer` for a
    model's (None: unavailable), `vector` (the query's) and `embed` (the namespace's embedder) for
    `sentences`."""
    if policy.rerank == "none" or not items:
        return Reranked(list(items), False, False)
    head, tail = list(items[:policy.rerank_top]), list(items[policy.rerank_top:])
    model = policy.rerank_model or ""
    try:
        if policy.rerank == "sentences":
            model = policy.embedding_model
            scores = sentence_scores(head, policy, vector, embed)
        else:
            scores = model_scores(scorer, policy.rerank, model, query, head)
    except RerankUnavailableError as exc:
        log.warning("rerank skipped, the fused ranking stands: %s", exc)
        return Reranked(list(items), False, True)
    rescored = sorted(zip(head, scores, strict=True), key=lambda p: (-p[1], p[0].rank))
    out = [_rescored(it, score, policy.rerank, model) for it, score in rescored] + tail
    return Reranked([it.model_copy(update={"rank": n}) for n, it in enumerate(out, start=1)], True, False)


def model_scores(scorer: RerankScorer | None, method: str, model: str, query: str,
                 head: Sequence[PacketItem]) -> list[float]:
    """The head's scores from the model reranker the stage was handed, one per item, twelve significant
    digits (so a scorer's float noise cannot reorder items)."""
    if scorer is None:
        raise RerankUnavailableError(f"no {method} reranker was given to the recall")
    scores = scorer(method, model, query, head)
    if len(scores) != len(head):
        raise RerankUnavailableError(f"the {method} reranker returned {len(scores)} scores for {len(head)} items")
    return [stable_round(s) for s in scores]


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


__all__ = ["Reranked", "model_scores", "rerank", "sentence_scores"]
