"""Lost commit replies and concurrent writers: nothing is lost, nothing is stored twice, invariants hold.

CI-sized versions of `python -m benchmarks.reliability`'s `bolt-proxy` and `writers` scenarios
(docs/RELIABILITY.md). The clients do what the errors say: on UNAVAILABLE, retry with the same
idempotency keys.
"""

from __future__ import annotations

import random
import threading
from typing import Any
from urllib.parse import urlsplit

import pytest

from benchmarks.bolt_proxy import CommitDroppingProxy
from benchmarks.ledger import Ledger, audit, claim_item, ingest_until_done, retract_until_done
from palimpsest.api.memory import Memory
from palimpsest.api.runtime import Runtime
from palimpsest.graph.db.connection import Neo4jSettings, build_driver

pytestmark = pytest.mark.integration


def _run_clients(count: int, work: Any) -> list[BaseException]:
    failures: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            work(i)
        except BaseException as exc:  # a client's failure must fail the test, not vanish in a thread
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return failures


def test_lost_commit_replies_lose_and_duplicate_nothing(neo4j: Any, embedder: Any, driver: Any,
                                                        namespace: str) -> None:
    target = urlsplit(neo4j.uri)
    with CommitDroppingProxy(target.hostname or "127.0.0.1", target.port or 7687, drop_every=4) as proxy:
        settings = Neo4jSettings(uri=proxy.uri, user=neo4j.auth[0] if neo4j.auth else "neo4j",
                                 password=neo4j.auth[1] if neo4j.auth else None, retry_s=1.0)
        rt = Runtime(settings, build_driver(settings), embedder, 0)
        ledger = Ledger()
        try:
            mem = Memory(rt, namespace)

            def client(i: int) -> None:
                for b in range(6):
                    items = [claim_item(f"c{i}-b{b}-{j}", key=f"key-{(i + j) % 3}" if j % 2 else None,
                                        value=10 * b + j) for j in range(3)]
                    assert ingest_until_done(mem, items, ledger)

            assert _run_clients(3, client) == []
        finally:
            rt.close()
    assert proxy.stats.dropped_replies >= 3, proxy.stats
    assert ledger.errors and set(ledger.errors) == {"UNAVAILABLE"}, ledger.errors
    found = audit(driver, namespace, ledger)
    assert (found.lost, found.duplicated) == ([], []) and found.stored == 54
    assert _check(driver, embedder, neo4j, namespace) == []


def _check(driver: Any, embedder: Any, neo4j: Any, namespace: str) -> list[Any]:
    rt = Runtime(Neo4jSettings(uri=neo4j.uri), driver, embedder, 0)
    report = Memory(rt, namespace).check()
    return [v for v in report.violations]


def test_concurrent_writers_on_overlapping_keys(memory: Memory, driver: Any, embedder: Any, neo4j: Any,
                                                namespace: str) -> None:
    """4 writers, 3 shared keys, keyed and keyless writes with retractions interleaved: after each
    round `check` finds every invariant (one visible version per key and instant, linear chains,
    gapless revisions) intact and every acknowledged write is stored once."""
    ledger = Ledger()
    for rnd in range(2):
        def writer(i: int, rnd: int = rnd) -> None:
            rng = random.Random(f"{rnd}-{i}")
            written: list[str] = []
            for n in range(6):
                key = f"shared-{rng.randrange(3)}" if rng.random() < 0.7 else None
                item = claim_item(f"r{rnd}-w{i}-{n}", key=key, value=rng.randrange(1000))
                result = memory.ingest_many([item])
                assert result.items[0].ok, result.items[0].error
                with ledger.lock:
                    ledger.acknowledged.add(f"r{rnd}-w{i}-{n}")
                written.append(str(result.items[0].id))
                if rng.random() < 0.25:
                    assert retract_until_done(memory, written.pop(rng.randrange(len(written))), ledger)

        assert _run_clients(4, writer) == []
        assert _check(driver, embedder, neo4j, namespace) == [], f"round {rnd}"
    found = audit(driver, namespace, ledger)
    assert (found.lost, found.duplicated, found.stored) == ([], [], 48)
