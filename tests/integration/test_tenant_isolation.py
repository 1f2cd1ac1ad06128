"""A namespace's packets do not depend on other namespaces' data (graph.claims.index).

A small namespace (exact search) and one past the exact-search limit (its own indexes) are recalled —
now, as of an earlier revision, and at a world time — before and after another namespace writes 20,000
claims that are near-copies of theirs, in the same words (so that a shared vector index would crowd them
out of the fetch, and shared BM25 statistics would move). Every packet must come back identical: the
fingerprint, the items in order, the completeness flags and the hidden counts.

The crowd is written through the real write path (graph.claims.store.write_claims) with vectors made from the
small namespace's own embeddings plus noise, so that the test does not spend a minute embedding text.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from neo4j import Driver

from palimpsest.api.memory import Memory
from palimpsest.graph.claims import index as claim_index
from palimpsest.graph.claims import store
from palimpsest.graph.lifecycle.maintenance import drop_namespace
from palimpsest.schema.models import ClaimInput

CROWD = 20_000
FACTS = [
    ("The payments service runs on 8 nodes in the staging cluster", "ops"),
    ("The staging cluster now runs 12 nodes after the resize", "ops"),
    ("Payroll is processed every Friday by the finance team", "hr"),
    ("The billing database was migrated to Postgres 16", "ops"),
    ("Our office in Leeds closes at 6pm on weekdays", "admin"),
    ("The on-call rotation changes every Monday at 9am", "ops"),
]
QUERIES = ["how many nodes does the staging cluster run", "when is payroll processed",
           "which Postgres version does billing use"]


def _packet_view(packet: Any) -> dict[str, Any]:
    return {
        "fingerprint": packet.fingerprint,
        "items": [(it.id, round(it.score, 9)) for it in packet.items],
        "completeness": packet.completeness.model_dump(),
    }


def _recalls(mem: Memory, as_of: int) -> list[dict[str, Any]]:
    views = []
    for q in QUERIES:
        views.append(_packet_view(mem.recall(q, k=5)))
        views.append(_packet_view(mem.recall(q, k=5, as_of_revision=as_of)))
        views.append(_packet_view(mem.recall(q, k=5, valid_at="2026-06-01T00:00:00Z")))
    return views


@pytest.fixture
def crowd_namespace(driver: Driver) -> Iterator[str]:
    ns = f"t-crowd-{uuid.uuid4().hex[:8]}"
    yield ns
    drop_namespace(driver, ns)


def _small(runtime: Any, ns: str) -> Memory:
    mem = Memory(runtime, ns)
    for content, source in FACTS[:3]:
        mem.ingest(content, source)
    mem.ingest_many([ClaimInput(content=c, source=s) for c, s in FACTS[3:]])
    return mem


def _large(runtime: Any, ns: str) -> Memory:
    """Past the exact-search limit: the FACTS among filler written in a few batches."""
    mem = Memory(runtime, ns)
    filler = [ClaimInput(content=f"Inventory note {i}: shelf {i % 17} holds {i * 3} boxes of item {i}",
                         source="inventory") for i in range(claim_index.EXACT_LIMIT + 20)]
    mem.ingest_many(filler[:150])
    mem.ingest_many([ClaimInput(content=c, source=s) for c, s in FACTS])
    mem.ingest_many(filler[150:])
    return mem


def test_packets_do_not_move_when_another_namespace_writes_20000_near_copies(
        runtime: Any, driver: Driver, namespace: str, crowd_namespace: str) -> None:
    small = _small(runtime, namespace)
    large_ns = f"{namespace}-large"
    try:
        large = _large(runtime, large_ns)
        state = driver.execute_query(
            "MATCH (s:Store) WHERE s.namespace IN $names RETURN s.namespace AS ns, s.claim_indexes AS ix",
            names=[namespace, large_ns]).records
        modes = {r["ns"]: r["ix"] for r in state}
        assert modes[namespace] is None  # searched exactly
        assert modes[large_ns] == claim_index.index_suffix(large_ns)  # its own indexes
        before = {"small": _recalls(small, 2), "large": _recalls(large, 2)}

        rng = random.Random(7)
        bases = runtime.embedder.embed([c for c, _ in FACTS])
        for start in range(0, CROWD, 1000):
            batch = []
            for i in range(start, start + 1000):
                base = bases[i % len(bases)]
                vec = [x + rng.gauss(0.0, 0.01) for x in base]
                norm = sum(x * x for x in vec) ** 0.5
                content, source = FACTS[i % len(FACTS)]
                batch.append(store.PreparedClaim(index=i - start, embedding=[x / norm for x in vec],
                                                 claim=ClaimInput(content=f"{content} (copy {i})", source=source)))
            store.write_claims(driver, crowd_namespace, batch)
        assert claim_index.ensure(driver, crowd_namespace)

        after = {"small": _recalls(small, 2), "large": _recalls(large, 2)}
        assert after == before
        # The crowd was a real threat: in one index over both namespaces, a fetch of 200 for the query
        # would hold fewer than all of the small namespace's claims (its 200 nearest copies are nearer
        # than the small namespace's farthest claim).
        vector = runtime.embedder.embed_query(QUERIES[0])
        crowd = driver.execute_query(
            "CALL db.index.vector.queryNodes($index, 200, $v) YIELD node, score RETURN min(score) AS low",
            index=claim_index.vector_index_name(claim_index.index_suffix(crowd_namespace)), v=vector).records
        own = driver.execute_query(
            "MATCH (c:Claim {namespace: $ns}) RETURN min((1 + vector.similarity.cosine(c.embedding, $v)) / 2) AS low",
            ns=namespace, v=vector).records
        assert crowd[0]["low"] > own[0]["low"]
    finally:
        drop_namespace(driver, large_ns)


def test_a_namespace_gets_its_own_indexes_at_the_limit_and_drops_them_with_itself(
        runtime: Any, driver: Driver) -> None:
    ns = f"t-ix-{uuid.uuid4().hex[:8]}"
    names = {claim_index.vector_index_name(claim_index.index_suffix(ns)),
             claim_index.text_index_name(claim_index.index_suffix(ns))}

    def existing() -> set[str]:
        return {r["name"] for r in driver.execute_query(
            "SHOW INDEXES YIELD name WHERE name IN $names RETURN name", names=sorted(names)).records}

    try:
        mem = Memory(runtime, ns)
        mem.ingest_many([ClaimInput(content=f"note {i} about the harbour crane {i % 9}", source="s")
                         for i in range(claim_index.EXACT_LIMIT - 1)])
        assert existing() == set()
        exact = mem.recall("harbour crane 4", k=5)
        mem.ingest("one more note about the harbour crane 4", "s")
        assert existing() == names
        labels = driver.execute_query(
            "MATCH (c:Claim {namespace: $ns}) RETURN count(c) AS n, "
            "count(CASE WHEN $label IN labels(c) THEN 1 END) AS labelled", ns=ns,
            label=claim_index.namespace_label(ns)).records[0]
        assert labels["n"] == labels["labelled"] == claim_index.EXACT_LIMIT
        # The index answers what exact search answered at the revision before the switch.
        again = mem.recall("harbour crane 4", k=5, as_of_revision=exact.store_revision)
        assert [it.id for it in again.items] == [it.id for it in exact.items]
        # A database upgraded from shared indexes: past the limit, no indexes. The worker's pass finds it.
        claim_index.drop(driver, ns)
        driver.execute_query("MATCH (s:Store {namespace: $ns}) SET s.claim_indexes = null", ns=ns)
        assert ns in claim_index.unindexed(driver) and existing() == set()
        # Searched exactly again until then: the packet at the first revision is the exact one it was.
        redo = mem.recall("harbour crane 4", k=5, as_of_revision=exact.store_revision)
        assert redo.fingerprint == exact.fingerprint and [it.id for it in redo.items] == [it.id for it in exact.items]
        assert claim_index.ensure(driver, ns) and existing() == names and ns not in claim_index.unindexed(driver)
        rebuilt = mem.recall("harbour crane 4", k=5, as_of_revision=exact.store_revision)
        assert [it.id for it in rebuilt.items] == [it.id for it in again.items]
    finally:
        drop_namespace(driver, ns)
    assert existing() == set()


def test_exact_search_and_the_index_score_alike(runtime: Any, driver: Driver) -> None:
    """Below the limit and above it, `vector_hits` scores are one function (the index's (1 + cos) / 2): the
    worker's neighbour thresholds (contradictions, inferred supersession) must mean the same in a namespace
    of ten claims as in one of a million."""
    ns = f"t-sc-{uuid.uuid4().hex[:8]}"
    search = ("MATCH (st:Store {namespace: $ns}) " + claim_index.vector_hits("st", "$vec", "$n")
              + "RETURN node.id AS id, score, vector.similarity.cosine(node.embedding, $vec) AS direct")
    try:
        mem = Memory(runtime, ns)
        mem.ingest_many([ClaimInput(content=f"note {i} about the harbour crane {i % 9}", source="s")
                         for i in range(claim_index.EXACT_LIMIT - 1)])
        vec = runtime.embedder.embed_query("harbour crane 4")
        exact = {r["id"]: r["score"] for r in driver.execute_query(search, ns=ns, vec=vec, n=20).records}
        assert all(r["score"] == r["direct"] for r in driver.execute_query(search, ns=ns, vec=vec, n=20).records)
        mem.ingest("one more note about the harbour crane 4", "s")
        assert claim_index.ensure(driver, ns)
        indexed = {r["id"]: r["score"] for r in driver.execute_query(search, ns=ns, vec=vec, n=20).records}
        shared = sorted(set(exact) & set(indexed))
        assert len(shared) >= 15
        assert [exact[i] for i in shared] == [indexed[i] for i in shared]
    finally:
        drop_namespace(driver, ns)
