"""A claim's declared subject enters its vector (schema.subjects), never its stored content.

A passage that names its subject only in its title must be found by a question naming only that
subject; what is stored and shown is still exactly what the caller wrote; export/import carry the
subject that went into the vector, and erasure leaves no trace of it.
"""

from __future__ import annotations

import uuid
from typing import Any

from neo4j import Driver

from palimpsest.api.memory import Memory
from tests.conftest import wipe_namespace

TARGET = "He was born in 1879 and developed the theory of relativity while working at a patent office."
SUBJECT = "Albert Zimmerwald"  # an invented name: the model has no prior for it
OTHERS = [
    ("She discovered two elements and won the prize twice in different sciences.", "Marie Halvorsen"),
    ("The bridge spans the river in three arches and opened to traffic in 1932.", "Old Mill Bridge"),
    ("It is a small village known for its cheese market and windmills.", "Lindeholm"),
    ("He composed nine symphonies and lost his hearing in later life.", "Ludwig Brandauer"),
]


def _ingest(memory: Memory, **kw: Any) -> str:
    items = [{"content": TARGET, "source": "wiki", "metadata": {"subject": SUBJECT}}]
    items += [{"content": c, "source": "wiki", "metadata": {"title": t}} for c, t in OTHERS]
    res = memory.ingest_many(items, **kw)
    assert all(it.ok for it in res.items)
    return str(res.items[0].id)


def _stored(driver: Driver, claim_id: str) -> dict[str, Any]:
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {id: $id}) RETURN c.content AS content, c.search_subject AS subject, "
        "c.embedding AS embedding", id=claim_id)
    return dict(records[0])


def _text_anywhere(driver: Driver, ns: str, needle: str) -> list[tuple[str, str]]:
    """Every text property (or text in a list) of the namespace's nodes and their relationships that
    contains `needle`, case-insensitively (as tests/integration/test_erase.py checks erasure)."""
    nodes, _, _ = driver.execute_query(
        "MATCH (n) WHERE n.namespace = $ns RETURN labels(n) AS l, properties(n) AS p", ns=ns)
    rels, _, _ = driver.execute_query(
        "MATCH (n)-[r]-() WHERE n.namespace = $ns RETURN DISTINCT type(r) AS l, properties(r) AS p", ns=ns)

    def texts(value: Any) -> list[str]:
        return [value] if isinstance(value, str) else [t for v in value for t in texts(v)] \
            if isinstance(value, list) else []

    return [(str(r["l"]), k) for r in [*nodes, *rels] for k, v in dict(r["p"]).items()
            if any(needle.lower() in t.lower() for t in texts(v))]


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_subject_finds_the_claim_and_content_is_unchanged(memory: Memory, driver: Driver, embedder: Any) -> None:
    claim_id = _ingest(memory)
    stored = _stored(driver, claim_id)
    assert stored["content"] == TARGET and stored["subject"] == SUBJECT
    expected = embedder.embed([f"{SUBJECT}: {TARGET}"])[0]
    assert _cosine([float(x) for x in stored["embedding"]], list(expected)) > 0.9999

    packet = memory.recall(SUBJECT, k=3)
    assert packet.items[0].id == claim_id
    assert packet.items[0].content == TARGET  # the packet shows what was written, not the embedded text
    assert memory.claim(claim_id).content == TARGET


def test_without_subjects_the_vector_is_the_content_alone(memory: Memory, driver: Driver, embedder: Any) -> None:
    claim_id = _ingest(memory, embed_subjects=False)
    stored = _stored(driver, claim_id)
    assert stored["content"] == TARGET and stored["subject"] is None
    query = list(embedder.embed_query(SUBJECT))
    with_subject = _cosine(query, list(embedder.embed([f"{SUBJECT}: {TARGET}"])[0]))
    assert _cosine(query, [float(x) for x in stored["embedding"]]) < with_subject


def test_content_that_opens_with_its_subject_is_not_prefixed(memory: Memory, driver: Driver) -> None:
    res = memory.ingest_many([{"content": f"{SUBJECT} was born in 1879.", "source": "wiki",
                               "metadata": {"subject": f" {SUBJECT.lower()} "}}])
    assert _stored(driver, str(res.items[0].id))["subject"] is None


def test_export_import_carries_and_erase_removes_the_subject(memory: Memory, driver: Driver, runtime: Any) -> None:
    claim_id = _ingest(memory)
    lines = list(memory.export_lines())
    copy_ns = f"t-{uuid.uuid4().hex[:12]}"
    try:
        copy = Memory(runtime, copy_ns)
        copy.import_lines(lines, remap=True)  # ids are unique per database: the copy gets fresh ones
        records, _, _ = driver.execute_query(
            "MATCH (c:Claim {namespace: $ns, content: $content}) RETURN c.id AS id, c.search_subject AS subject",
            ns=copy_ns, content=TARGET)
        assert [r["subject"] for r in records] == [SUBJECT]
        assert copy.recall(SUBJECT, k=3).items[0].id == records[0]["id"]
    finally:
        wipe_namespace(driver, copy_ns)

    memory.erase([claim_id], reason="personal data")
    assert _text_anywhere(driver, memory.namespace, SUBJECT) == []
    assert _text_anywhere(driver, memory.namespace, "patent office") == []


def test_subject_terms_score_the_declared_subject_lexically(memory: Memory) -> None:
    # Vectors without subjects, and the same content twice: only the declared subject can tell them apart.
    content = "He was born in 1879 in a small town by the river."
    res = memory.ingest_many([{"content": content, "source": "wiki", "metadata": {"subject": s}}
                              for s in (SUBJECT, "Marie Halvorsen")], embed_subjects=False)
    ids = {s: str(it.id) for s, it in zip((SUBJECT, "Marie Halvorsen"), res.items, strict=True)}
    memory.register_policy({"version": "subjects", "subject_terms": True})
    for name in (SUBJECT, "Marie Halvorsen"):
        packet = memory.recall(f"where was {name} born", policy_version="subjects", k=2)
        assert packet.items[0].id == ids[name]
        assert packet.items[0].content == content
        assert packet.items[0].relevance > packet.items[1].relevance
    plain = memory.recall(f"where was {SUBJECT} born", k=2)
    assert plain.items[0].relevance == plain.items[1].relevance  # off by default: content alone
