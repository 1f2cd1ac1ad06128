"""Dedup: near-duplicate items leave the packet, and the next candidates take their places.

Two claims that say the same thing in nearly the same words spend two of the packet's k places on
one piece of evidence. The test is token Jaccard over recall's own terms (`graph.text.term_set`:
content words with the plural fold, plus identifier terms), so "the same words" means what the
lexical match means. The ranking's order decides which one stays: the list is walked from rank 1,
and an item whose Jaccard with an item already kept is at least the threshold is removed, so the
result is a pure function of the ranked list and the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from palimpsest.graph.text import term_set
from palimpsest.schema.models import PacketItem


class Deduped(NamedTuple):
    items: list[PacketItem]  # at most k, ranked from 1
    removed: list[str]  # ids removed as near-duplicates, in rank order
    remaining: int  # candidates past the last one examined (not judged, not in the packet)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; two texts without terms share no evidence, so 0."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def dedup(items: Sequence[PacketItem], threshold: float | None, k: int) -> Deduped:
    """The first `k` items (in order) that are not near-duplicates of an earlier kept one; with
    `threshold` None the first `k` as they are."""
    if threshold is None:
        return Deduped(list(items[:k]), [], max(0, len(items) - k))
    kept: list[PacketItem] = []
    kept_terms: list[frozenset[str]] = []
    removed: list[str] = []
    examined = 0
    for it in items:
        if len(kept) == k:
            break
        examined += 1
        own = term_set(it.content)
        if any(jaccard(own, other) >= threshold for other in kept_terms):
            removed.append(it.id)
            continue
        kept.append(it)
        kept_terms.append(own)
    ranked = [it if it.rank == n else it.model_copy(update={"rank": n}) for n, it in enumerate(kept, start=1)]
    return Deduped(ranked, removed, len(items) - examined)


__all__ = ["Deduped", "dedup", "jaccard"]
