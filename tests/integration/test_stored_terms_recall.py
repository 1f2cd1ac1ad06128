"""Recall with claims' stored term analysis gives the packets it gives without it (graph.claims.terms).

The text answer is cut inside the candidate statement on the stored terms, shipping only the best rows;
without a current stored analysis every row is shipped and analysed in Python — the order both cut on
is the same. Each namespace is recalled (now, as of an earlier revision, at a world time) with stored
terms, then again after they are removed: every packet must be identical. Most keys have three
superseded versions worded like the current one, so the shipped best hold too few visible claims and the
statement must ship them all (the fallback the cut relies on); the test checks that this path ran.
"""

from __future__ import annotations

from typing import Any

import pytest

import palimpsest.graph.recall as recall_module
from palimpsest.api.memory import Memory
from palimpsest.graph.claims import index as claim_index
from palimpsest.graph.claims.terms import backfill_pass
from palimpsest.graph.text import TERMS_VERSION, stored_terms
from palimpsest.schema.limits import MAX_CANDIDATES

QUERIES = ["what does the blue widget of line 7 cost", "price of widgets in line 3", "how much is a widget",
           "line 12 red widget price in euros", "how much to pay monthly for the amber widget of line 4"]
COLOURS = ["blue", "red", "green", "amber"]


def _write(mem: Memory, lines: int) -> None:
    """`lines` × 4 keyed widgets, each in 4 versions (one batch per version round)."""
    for version in range(4):
        mem.ingest_many([{"content": f"The {colour} widget of line {line} now costs {10 + version * 3 + line} euros"
                                     + (", payable monthly." if line % 3 == 0 else "."),
                          "source": "catalogue", "claim_key": f"widget-{line}-{colour}",
                          "valid_from": f"202{version}-01-01T00:00:00Z"}
                         for line in range(lines) for colour in COLOURS])


def _views(mem: Memory, version: str | None) -> list[Any]:
    views = []
    for q in QUERIES:
        for kwargs in ({}, {"as_of_revision": 2}, {"valid_at": "2021-06-01T00:00:00Z"}):
            p = mem.recall(q, k=6, policy_version=version, **kwargs)
            views.append((p.fingerprint, [(it.id, round(it.score, 9)) for it in p.items],
                          p.completeness.model_dump()))
    return views


@pytest.mark.parametrize("stems", [False, True], ids=["words", "stems"])
@pytest.mark.parametrize("lines", [10, 20], ids=["exact-search", "own-indexes"])
def test_packets_are_the_same_with_and_without_stored_terms(runtime: Any, namespace: str, lines: int, stems: bool,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Under stem_terms the cut also counts stems as prefixes of the stored terms ("pay" begins
    "payable", "month" begins "monthly"), in the statement and in Python alike."""
    mem = Memory(runtime, namespace)
    _write(mem, lines)
    version = None
    if stems:
        version = mem.register_policy({"version": "stems", "stem_terms": True}).version
    marker, _, _ = runtime.driver.execute_query("MATCH (s:Store {namespace: $ns}) RETURN s.claim_indexes AS i",
                                                ns=namespace)
    assert (marker[0]["i"] is not None) == (lines * 16 >= claim_index.EXACT_LIMIT)
    stored, _, _ = runtime.driver.execute_query(
        "MATCH (c:Claim {namespace: $ns}) RETURN c.content AS content, c.terms AS terms, c.names AS names, "
        "c.terms_v AS v", ns=namespace)
    assert stored and all({"terms": r["terms"], "names": r["names"], "terms_v": r["v"]} == stored_terms(r["content"])
                          for r in stored)

    cuts: list[int] = []
    real = recall_module._fetch

    def counted(*args: Any) -> Any:
        cuts.append(args[7])
        return real(*args)

    monkeypatch.setattr(recall_module, "_fetch", counted)
    with_terms = _views(mem, version)
    assert MAX_CANDIDATES in cuts, "no recall needed the whole text answer: the fallback went untested"
    assert any(c < MAX_CANDIDATES for c in cuts)

    runtime.driver.execute_query("MATCH (c:Claim {namespace: $ns}) REMOVE c.terms, c.names, c.terms_v",
                                 ns=namespace)
    assert _views(mem, version) == with_terms
    # An analysis of another version is not used either.
    runtime.driver.execute_query("MATCH (c:Claim {namespace: $ns}) SET c.terms = ['bogus'], c.names = [], "
                                 "c.terms_v = $v", ns=namespace, v=TERMS_VERSION + 1)
    assert _views(mem, version) == with_terms


def test_the_backfill_stores_the_analysis_and_then_marks_the_store(runtime: Any, namespace: str) -> None:
    mem = Memory(runtime, namespace)
    mem.ingest_many([{"content": f"Server db-{i} runs Postgres {12 + i % 4} in Leeds.", "source": "cmdb"}
                     for i in range(7)])
    driver = runtime.driver
    driver.execute_query("MATCH (c:Claim {namespace: $ns}) REMOVE c.terms, c.names, c.terms_v", ns=namespace)
    assert backfill_pass(driver, namespace, batch=5) == 5  # one bounded batch, not yet done
    assert backfill_pass(driver, namespace, batch=5) == 2  # the rest: the store is marked
    assert backfill_pass(driver, namespace, batch=5) == 0
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns}) RETURN c.content AS content, c.terms AS terms, c.names AS names, "
        "c.terms_v AS v", ns=namespace)
    assert len(records) == 7
    assert all({"terms": r["terms"], "names": r["names"], "terms_v": r["v"]} == stored_terms(r["content"])
               for r in records)
    marker, _, _ = driver.execute_query("MATCH (s:Store {namespace: $ns}) RETURN s.terms_v AS v", ns=namespace)
    assert marker[0]["v"] == TERMS_VERSION
