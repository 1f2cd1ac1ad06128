"""The temporal benchmark end to end at smoke size: Palimpsest must be exact, plain RAG must go stale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.temporal import run

pytestmark = pytest.mark.integration


def test_quick_temporal_benchmark(neo4j: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The benchmark builds its own Runtime from the environment: point it at the suite's Neo4j.
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    if neo4j.auth:
        monkeypatch.setenv("NEO4J_USER", neo4j.auth[0])
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j.auth[1])
    results = run(["--quick", "--results-dir", str(tmp_path)])

    pal, rag = results["metrics"]["palimpsest"], results["metrics"]["plain_rag"]
    failures = results["failures"]
    assert results["counts"]["supersession_mismatches"] == 0
    assert pal["temporal_accuracy"] == 1.0, failures["palimpsest"][:5]
    assert pal["staleness_rate"] == 0.0
    assert pal["determinism_rate"] == 1.0
    assert pal["asof_samples"] > 0 and pal["asof_accuracy"] == 1.0, failures["palimpsest_asof"][:5]
    assert rag["staleness_rate"] > 0.0  # versions are near-paraphrases: similarity alone surfaces old ones
    assert rag["asof_accuracy"] is None
    assert (tmp_path / "temporal-latest.json").is_file()
    assert results["check"] and all(c["ok"] for c in results["check"].values()), results["check"]
