"""A two-hop corpus the ask and router tests share: a film, its director, her birthplace, and two
namesakes of the film (an aurora, a novel) that a one-hop reading confuses with it."""

from __future__ import annotations

from typing import Any

CORPUS = [
    ("Northern Lights is a 1997 drama film directed by Ada Brennan.", "Northern Lights (film)"),
    ("Ada Brennan grew up by the sea in Galway, where she was born in 1961.", "Ada Brennan"),
    ("Galway is a harbour city on the west coast of Ireland.", "Galway"),
    ("The northern lights are an aurora seen at high latitudes.", "Aurora"),
    ("Northern Lights is a 1995 fantasy novel; its author was born in Norwich.", "Northern Lights (novel)"),
]


def seed(memory: Any) -> dict[str, str]:
    """The corpus ingested with its subjects and the entity graph projected: subject -> claim id."""
    from palimpsest.api.worker import ProjectionWorker, WorkerConfig

    res = memory.ingest_many([{"content": c, "source": "wiki", "metadata": {"subject": s}} for c, s in CORPUS])
    ProjectionWorker(memory.rt, WorkerConfig(entity_embeddings=False), detectors=[]).run_once(memory.namespace)
    return {s: str(it.id) for (_, s), it in zip(CORPUS, res.items, strict=True)}
