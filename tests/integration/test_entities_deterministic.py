"""Deterministic projections: the entity graph is a function of the claims (in ingest order), not of
how they were batched on ingest, how the worker cut its batches, or when the worker ran.

One corpus goes into several namespaces — one claim per ingest call or several, worker batches of
1, 7 or 200 claims, a synchronous pass or a background worker racing the writer — and every
namespace must end with the same entities (canonical, name, type, aliases, pagerank), the same
MENTIONS (claim text → entity, with the revision the link exists from) and the same RELATED edges
with weights. Entity ids hash (namespace, canonical name), so namespaces are compared by canonical
name; revisions are compared through the claims: a link that exists from "the revision of claim
#5" in one namespace must exist from the revision of claim #5 in the others.

The corpus is built to hit what used to depend on batch boundaries: a name nested in an earlier,
longer name ("Harbor Bank" inside "Harbor Bank Tower"); an older claim naming it in lower case with
a possessive ("the harbor bank's vault", which Lucene tokenises as "bank's"); a near-duplicate
introduced as an alias after an older claim used it ("kestrel labs"); near-duplicates and a
declared subject proposed by claims that share one ingest revision (tie broken by random claim
ids, or by trust across claims); possessives and sentence-initial capitals.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from palimpsest.api.worker import BackgroundWorker, WorkerConfig, run_once

pytestmark = pytest.mark.integration

CORPUS: list[dict[str, Any]] = [
    {"content": "Orion Freight opened a depot in Harbor Bank Tower."},
    {"content": "An audit of the harbor bank's vault was led by Lena Vogt."},
    {"content": "Harbor Bank hired James Petrova as outside counsel."},
    {"content": "James Petrova's report on Orion Freight Co was late."},
    {"content": "Meanwhile Lena Vogts reviewed the db-7 clusters for Harbor Bank."},
    {"content": "Petrova said the db-7 cluster in Harbor Bank Tower was overloaded."},
    {"content": "The kestrel labs badge readers failed twice in March 2024."},
    {"content": "Kestrel Laboratories signed a lease with Orion Freight."},
    {"content": "Kestrel Labs moved its servers to the db-7 cluster."},
    {"content": "Blue Harbour ferries ran late for Orion Freight Co."},
    {"content": "Ferries docked at Blue Harbour all night.", "metadata": {"subject": "Blue Harbour", "type": "place"}},
    {"content": "Anna Lindqvist of Harbor Bank met James Petrova."},
    {"content": "Anna Lindqvist approved the Kestrel Labs budget."},
    {"content": "Nadia Okafor runs search-api on db-3 for Kestrel Laboratories."},
    {"content": "search-api latency doubled after Nadia Okafor moved it."},
    {"content": "The search_api dashboards belong to Lena Vogt."},
    {"content": "Acme Rockets Ltd bought freight slots from Orion Freight."},
    {"content": "Acme Rockets launched from Blue Harbor."},
    {"content": "Blue Harbor and Blue Harbour are the same port, says James Petrova."},
    {"content": "James Petrova's firm now advises Acme Rockets."},
    {"content": "Yesterday James Petrova met Nadia Okafor at Harbor Bank Tower."},
    {"content": "Harbor Bank Ltd reported record deposits.", "metadata": {"subject": "Harbor Bank Ltd"}},
    {"content": "Lena Vogt and Anna Lindqvist audit Harbor Bank Ltd every May."},
    {"content": "Northwind Traders Inc shipped parts to Acme Rockets."},
    {"content": "Northwind Traders owes Orion Freight Co for freight."},
    {"content": "Q1 review of Northwind Traders: db-3 was slow."},
    {"content": "Q2 review of Northwind Traders: db-3 was fine."},
    {"content": "the northwind traders inc invoice names james petrova."},
    {"content": "Kestrel Labs and Acme Rockets Ltd share the db-7 cluster."},
    {"content": "Nadia Okafor left Kestrel Laboratories for Harbor Bank."},
    {"content": "Orion Freight's CEO is Lena Vogt.", "metadata": {"title": "Orion Freight"}},
    {"content": "Sean O'Brien of Orion Freight visited Blue Harbour."},
    {"content": "O'Brien Consulting billed Harbor Bank Tower."},
    {"content": "sean o'brien's invoice went to Acme Rockets."},
]
SOURCE = "det"
# A lower threshold than the default so that this small corpus has near-duplicates to merge
# ("Orion Freight Co", "Lena Vogts", "db-7 clusters", "Kestrel Labs", "Harbor Bank Ltd" ...).
THRESHOLD = 0.9


def _ingest(memory: Any, chunk: int) -> None:
    for i in range(0, len(CORPUS), chunk):
        memory.ingest_many([{"source": SOURCE, **item} for item in CORPUS[i:i + chunk]])


def _snapshot(driver: Any, ns: str) -> dict[str, Any]:
    """The entity graph of one namespace, in namespace-independent terms."""
    claims, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns}) RETURN c.content AS content, c.revision AS rev", ns=ns)
    position = {item["content"]: i for i, item in enumerate(CORPUS)}
    rev_of = {position[r["content"]]: int(r["rev"]) for r in claims}
    assert len(rev_of) == len(CORPUS)

    def at(revision: int) -> tuple[int, int]:
        """A revision as the span of corpus positions written in it (comparable across namespaces)."""
        held = [p for p, r in rev_of.items() if r == revision]
        return (min(held), max(held))

    ents, _, _ = driver.execute_query(
        "MATCH (e:Entity {namespace: $ns}) RETURN e.canonical AS k, e.name AS name, e.type AS type, "
        "e.aliases AS aliases, e.revision AS rev, e.pagerank AS pr", ns=ns)
    mentions, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns})-[m:MENTIONS]->(e:Entity {namespace: $ns}) "
        "RETURN c.content AS c, e.canonical AS e, m.revision AS rev", ns=ns)
    related, _, _ = driver.execute_query(
        "MATCH (a:Entity {namespace: $ns})-[r:RELATED]->(b:Entity {namespace: $ns}) "
        "RETURN a.canonical AS a, b.canonical AS b, r.weight AS w, r.facts AS f, r.revision AS rev", ns=ns)
    return {
        "rev_of": rev_of,
        "entities": {r["k"]: (r["name"], r["type"], tuple(r["aliases"] or ()), r["pr"]) for r in ents},
        "entity_revisions": {r["k"]: int(r["rev"]) for r in ents},
        "mentions": {(position[r["c"]], r["e"]): int(r["rev"]) for r in mentions},
        "related": {tuple(sorted((r["a"], r["b"]))): (float(r["w"]), int(r["f"] or 0)) for r in related},
        "related_revisions": {tuple(sorted((r["a"], r["b"]))): int(r["rev"]) for r in related},
        "at": at,
    }


def _assert_same(reference: dict[str, Any], other: dict[str, Any], label: str) -> None:
    assert other["entities"].keys() == reference["entities"].keys(), (
        f"{label}: entity sets differ: only here {sorted(other['entities'].keys() - reference['entities'].keys())}, "
        f"only in the reference {sorted(reference['entities'].keys() - other['entities'].keys())}")
    for key, value in reference["entities"].items():
        assert other["entities"][key] == value, f"{label}: entity {key!r}: {other['entities'][key]} != {value}"
    assert other["mentions"].keys() == reference["mentions"].keys(), (
        f"{label}: MENTIONS differ: only here {sorted(other['mentions'].keys() - reference['mentions'].keys())}, "
        f"only in the reference {sorted(reference['mentions'].keys() - other['mentions'].keys())}")
    assert other["related"] == reference["related"], f"{label}: RELATED edges or weights differ"
    # Revisions, through the claims: "from the revision that wrote claim #p" means the same in both.
    for field in ("mentions", "entity_revisions", "related_revisions"):
        ref, got = reference[field], other[field]
        for key, revision in ref.items():
            lo, hi = reference["at"](revision)
            assert other["rev_of"][lo] <= got[key] <= other["rev_of"][hi], (
                f"{label}: {field} {key}: revision {got[key]} is not the revision of claims #{lo}..#{hi}")


@pytest.fixture
def namespaces(driver: Any) -> Iterator[list[str]]:
    from tests.conftest import wipe_namespace

    made: list[str] = []

    def make() -> str:
        made.append(f"t-det-{uuid.uuid4().hex[:10]}")
        return made[-1]

    yield [make() for _ in range(4)]
    for ns in made:
        wipe_namespace(driver, ns)


def test_entity_graph_does_not_depend_on_batches_or_timing(runtime: Any, driver: Any, namespaces: list[str]) -> None:
    from palimpsest.api.memory import Memory

    runs = [  # (ingest items per call, worker batch_claims)
        (1, 1),     # the reference: one claim per revision, one revision per worker batch
        (7, 200),   # seven claims share each revision, one worker batch for everything
        (3, 7),     # worker batches of two revisions, cut across the ingest calls
    ]
    snaps = []
    for ns, (chunk, batch) in zip(namespaces, runs, strict=False):
        _ingest(Memory(runtime, ns), chunk)
        report = run_once(runtime, ns, WorkerConfig(batch_claims=batch, entity_merge_threshold=THRESHOLD),
                          detectors=[])
        assert report.caught_up and report.batches >= 1
        snaps.append(_snapshot(driver, ns))

    reference = snaps[0]
    ents = reference["entities"]
    # The corpus does what it is meant to: nested names, possessives, aliases, near-duplicates.
    assert {"harbor bank", "harbor bank tower", "james petrova", "orion freight", "kestrel laboratories"} <= set(ents)
    assert "james petrova s" not in ents  # a possessive is the name, not a new entity
    assert "Orion Freight Co" in ents["orion freight"][2]
    assert (1, "harbor bank") in reference["mentions"]  # "the harbor bank's vault" (older, lower case, possessive)
    assert (0, "harbor bank") in reference["mentions"]  # nested in the older "Harbor Bank Tower"
    assert all(value[3] is not None for value in ents.values())  # PageRank was refreshed on the final graph
    for snap, (chunk, batch) in zip(snaps[1:], runs[1:], strict=True):
        _assert_same(reference, snap, f"ingest {chunk}/worker {batch}")

    # A background worker racing the writer: batches land wherever the timing puts them.
    ns = namespaces[3]
    memory = Memory(runtime, ns)
    worker = BackgroundWorker(runtime, namespaces=[ns], interval=0.01, detectors=[],
                              config=WorkerConfig(batch_claims=4, entity_merge_threshold=THRESHOLD))
    with worker:
        for i in range(0, len(CORPUS), 5):
            result = memory.ingest_many([{"source": SOURCE, **item} for item in CORPUS[i:i + 5]])
            time.sleep(0.02 * (i % 3))
        memory.wait_for_projections(max(int(it.revision or 0) for it in result.items), timeout=120)
        deadline = time.monotonic() + 60  # PageRank is refreshed once the namespace is idle
        while time.monotonic() < deadline:
            snap = _snapshot(driver, ns)
            if snap["entities"] == reference["entities"]:
                break
            time.sleep(0.2)
    _assert_same(reference, _snapshot(driver, ns), "background worker")
