"""Sentence match: the head of the fused ranking read sentence by sentence (policy `rerank: sentences`).

Why: a claim's vector is one mean over all its words. A turn of a conversation opens with a greeting
and closes with a goodbye ("Yep, Caroline. Taking care of ourselves is vital. I'm off to go swimming
with the kids. Talk to you soon!"), a passage states several facts, and the one sentence that answers
a question is diluted by the others, so its claim ranks below claims whose words as a whole are nearer
the question's. Scoring a passage by its best part is the MaxP aggregation of passage retrieval (Dai &
Callan, SIGIR 2019); here the parts are sentences and the scorer is the embedder recall already uses,
so the stage needs no other model.

What it does, over the fused top `rerank_top`:

* each claim's content is cut into sentences (`sentences`), each read with the label its text opens
  with ("Melanie: …" is Melanie's in every sentence, not only the first), and embedded by the
  namespace's embedder (the caller's `embed`, which caches: the same claims come back recall after
  recall);
* a claim's sentence score is the best cosine between the query's vector and one of its sentences,
  six decimals (as every cosine in recall);
* the sentence order is fused with the fused order by weighted reciprocal rank — weight 1 for the
  fused rank, `sentence_weight` for the sentence rank, the policy's `rrf_k` — scaled so that first on
  both scores 1. Fused, not substituted: the claim's whole-text evidence (its declared subject, its
  other sentences, its lexical match, its freshness) still decides with it.

Every function here is pure given `embed`; ties fall to the fused rank, so the order is total.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

EmbedTexts = Callable[[Sequence[str]], Sequence[Sequence[float]]]

# A sentence ends at . ! ? (or an ellipsis), with closing quotes or brackets, before a space and a capital
# (after an opening quote or bracket); "e.g. this", "p. 4" or "3.5 km" do not end one.
_BOUNDARY = re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"'”’)\]]))\s+(?=[\"'“‘(\[]?[A-Z])")
# The label a text opens with: a name of at most four words and a colon ("Melanie: …", "Dr. Ada Brennan: …").
_LABEL = re.compile(r"^\s*((?:[A-Z][\w.'’-]*)(?:\s+[A-Z][\w.'’-]*){0,3}):\s+(?=\S)")
# Sentences a claim is read as, at most: a claim is bounded in length, but its cost here should be too.
MAX_SENTENCES = 16


def sentences(content: str) -> list[str]:
    """The units a claim is matched by: its sentences, each with the label the content opens with.
    A content of one sentence is itself; empty pieces are dropped; at most MAX_SENTENCES (the rest
    join the last)."""
    text = " ".join(content.split())
    label = _LABEL.match(text)
    prefix = f"{label.group(1)}: " if label else ""
    body = text[label.end():] if label else text
    parts = [p.strip() for p in _BOUNDARY.split(body) if p.strip()]
    if len(parts) > MAX_SENTENCES:
        parts = [*parts[:MAX_SENTENCES - 1], " ".join(parts[MAX_SENTENCES - 1:])]
    return [f"{prefix}{p}" for p in parts] or [text]


def best_sentence_cosines(query_vector: Sequence[float], contents: Sequence[str], embed: EmbedTexts) -> list[float]:
    """Per content, the best cosine between the query and one of its sentences (six decimals). One
    `embed` call for every sentence of every content."""
    units = [sentences(c) for c in contents]
    flat = [s for group in units for s in group]
    if not flat:
        return []
    matrix = np.asarray(embed(flat), dtype=np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    q = np.asarray(query_vector, dtype=np.float64)
    cosines = matrix @ (q / max(float(np.linalg.norm(q)), 1e-12))
    out: list[float] = []
    at = 0
    for group in units:
        out.append(round(float(cosines[at:at + len(group)].max()), 6))
        at += len(group)
    return out


def fused_with_sentences(cosines: Sequence[float], weight: float, rrf_k: int) -> list[float]:
    """Scores for a head given in fused order (position i is fused rank i + 1) and its sentence
    cosines: weighted reciprocal rank of the two orders, 1 for first on both. Equal cosines share a
    sentence rank (competition ranking), so equal evidence is never told apart by position alone."""
    n = len(cosines)
    srank = [1 + sum(1 for other in cosines if other > c) for c in cosines]
    best = (1 + weight) / (rrf_k + 1)
    return [(1 / (rrf_k + i + 1) + weight / (rrf_k + srank[i])) / best for i in range(n)]


__all__ = ["MAX_SENTENCES", "EmbedTexts", "best_sentence_cosines", "fused_with_sentences", "sentences"]
