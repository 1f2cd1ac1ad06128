"""The two scales of vector similarity: cosine in [-1, 1], and the (1 + cos) / 2 that Neo4j's
vector index and `vector.similarity.cosine` return. One conversion each way, so every module that
compares an index score with a cosine threshold converts the same way."""

from __future__ import annotations


def index_score(cosine: float) -> float:
    """Cosine in [-1, 1] → the (1 + cos) / 2 scale of Neo4j's vector index and similarity function."""
    return (1.0 + cosine) / 2.0


def cosine_from_index(score: float) -> float:
    """The index's (1 + cos) / 2 back to cosine."""
    return 2.0 * score - 1.0
