"""A claim's declared subject, and the text its vector is computed from.

A passage often names its subject only in its title: "He was born in 1879 …" under "Albert
Einstein". Embedded alone, its vector knows nothing of Einstein, and a question naming him misses it.
So when the caller declares a subject (metadata `subject`, else `title`: the same keys the offline
second round reads, graph.recall.rounds), the vector is computed from "subject: content" — the form the
LoCoMo run measured for speakers ("speaker: text"). Measured on held-out MuSiQue
(docs/research-log.md), embedding the title with the text is what separates 36.2 from 41.5 R@2 for
the same model. The stored `content` stays exactly what the caller wrote; the subject that went
into the vector is stored beside it (`Claim.search_subject`), so the choice is visible and replayable.

The rule is deterministic and needs nothing but the claim itself: the first non-blank string of the
two keys, stripped; no prefix when the content already opens with it (a passage that names its own
subject first gains nothing from naming it twice).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SUBJECT_KEYS = ("subject", "title")


def declared_subject(metadata: Mapping[str, Any]) -> str | None:
    """The subject the caller declared in `metadata` (`subject`, else `title`), stripped; None if none."""
    for key in SUBJECT_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def embedded_subject(content: str, metadata: Mapping[str, Any]) -> str | None:
    """The subject that enters the claim's vector: the declared one, unless the content opens with it."""
    subject = declared_subject(metadata)
    if subject is None or content.lstrip().casefold().startswith(subject.casefold()):
        return None
    return subject


def embedding_text(content: str, subject: str | None) -> str:
    """What the embedder is given for a claim: "subject: content", or the content alone."""
    return f"{subject}: {content}" if subject else content


def text_for_vector(content: str, metadata: Mapping[str, Any]) -> str:
    """The text a claim with this content and metadata is embedded from, for whatever must read the claim
    as the embedder did (a reranker, a benchmark's baseline)."""
    return embedding_text(content, embedded_subject(content, metadata))


__all__ = ["SUBJECT_KEYS", "declared_subject", "embedded_subject", "embedding_text", "text_for_vector"]
