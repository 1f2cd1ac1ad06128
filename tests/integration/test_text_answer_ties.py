"""The text answer of a namespace with its own fulltext index never depends on Lucene's document order.

Lucene orders tied BM25 scores by its internal document ids, which depend on how the index was written
(batches, segment merges, an import). When the fetch limit falls inside a run of tied scores, which claims
of that run made the limit is an accident of the index's build, so recall leaves the run out whole (and
fetches wider when too few are left): the answer is every claim scoring above the run.
"""

from __future__ import annotations

from typing import Any

from neo4j import Driver

from palimpsest.api.memory import Memory
from palimpsest.graph.claims import index as claim_index
from palimpsest.graph.recall.candidates import index_answers
from palimpsest.graph.recall.request import RecallRequest
from palimpsest.schema.limits import MAX_CANDIDATES
from palimpsest.schema.models import ClaimInput, Policy


def _answer(driver: Driver, runtime: Any, ns: str, lucene: str, tfetch: int) -> Any:
    """The text answer alone (no vector fetch), of `tfetch` rows at most."""
    req = RecallRequest(ns, lucene, runtime.embedder.embed_query(lucene), Policy(version="default-v1"), k=5)
    with driver.session(default_access_mode="READ") as session:
        return session.execute_read(lambda tx: index_answers(tx, req, 0, tfetch, lucene, adapt=False))


def test_a_tied_run_cut_by_the_fetch_is_left_out_whole(runtime: Any, driver: Driver, namespace: str) -> None:
    mem = Memory(runtime, namespace)
    # Short claims score higher for "ledger" than long ones; the long ones are all the same length, so
    # their scores tie. 120 short + 300 long: a fetch of 200 ends inside the tied run.
    short = [ClaimInput(content=f"ledger {i}", source="s") for i in range(120)]
    long = [ClaimInput(content=f"ledger entry {i} checked by the night shift team", source="s") for i in range(300)]
    mem.ingest_many(long[:150])
    mem.ingest_many(short)
    mem.ingest_many(long[150:])
    assert claim_index.ensure(driver, namespace)
    contents = {r["id"]: r["content"] for r in driver.execute_query(
        "MATCH (c:Claim {namespace: $ns}) RETURN c.id AS id, c.content AS content", ns=namespace).records}
    short_ids = {cid for cid, text in contents.items() if len(text.split()) == 2}

    got = _answer(driver, runtime, namespace, "ledger", 200)
    assert got.traw == 200  # the index filled the fetch ...
    assert {r.id for r in got.trows} == short_ids  # ... and only what scored above the cut run is kept

    wide = _answer(driver, runtime, namespace, "ledger", 500)  # a fetch the whole answer fits in
    assert wide.traw == 420 and len(wide.trows) == 420

    # The fetch ends inside the first run (the 120 short claims tie among themselves): nothing is left, so
    # recall fetches wider; at the cap the answer is taken as it is.
    tied = _answer(driver, runtime, namespace, "ledger", 100)
    assert tied.traw == 100 and tied.trows == []
    assert len(_answer(driver, runtime, namespace, "ledger", MAX_CANDIDATES).trows) == 420


def test_recall_finds_the_tied_run_by_fetching_wider(runtime: Any, namespace: str) -> None:
    """With every text match tied and more of them than the first fetch, recall's text side is not empty:
    the fetch grows until the run is whole."""
    mem = Memory(runtime, namespace)
    mem.ingest_many([ClaimInput(content=f"ledger entry {i} checked by the night shift team", source="s")
                     for i in range(claim_index.EXACT_LIMIT + 44)])
    assert claim_index.ensure(runtime.driver, namespace)
    mem.register_policy(Policy(version="text-only", vector_weight=0.0, text_weight=1.0))
    packet = mem.recall("ledger", k=5, policy_version="text-only")
    assert len(packet.items) == 5 and not packet.completeness.candidates_exhausted
