"""The worker's graph is a function of the writes: the same claims in two namespaces, projected in
batches of different sizes, give the same CONTRADICTS and SUPERSEDES edges, mentions, entities
and facts (compared by content — ids differ). Before edges were oriented by write order, a pair
written in one batch was oriented by its random ids, so the two namespaces disagreed.

The crash version (a worker killed with SIGKILL mid-pass, compared with a clean run) is
`python -m benchmarks.reliability --only worker-kill`.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.reliability import derived_graph, labelled_pairs, project_fully
from palimpsest.api.memory import Memory
from tests.conftest import wipe_namespace

pytestmark = pytest.mark.integration


def test_same_writes_same_graph_whatever_the_batch_size(runtime: Any, driver: Any, namespace: str) -> None:
    other = f"{namespace}-b"
    claims = [(pid, text) for pid, a, b in labelled_pairs(24) for text in (a, b)]
    try:
        for ns in (namespace, other):
            mem = Memory(runtime, ns)
            for start in range(0, len(claims), 8):
                mem.ingest_many([{"content": text, "source": f"pairs:{pid}"} for pid, text in claims[start:start + 8]])
        project_fully(runtime, namespace, batch=3)
        project_fully(runtime, other, batch=50)
        first, second = derived_graph(runtime, namespace), derived_graph(runtime, other)
        assert first["contradicts"], "the pairs must produce contradictions, or the test proves nothing"
        assert first == second
    finally:
        wipe_namespace(driver, other)
