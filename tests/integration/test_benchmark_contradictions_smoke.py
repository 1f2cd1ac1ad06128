"""The contradiction benchmark runs end to end at smoke size and reports sane numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.contradictions import load_agent_pairs, load_sick, prf, run

pytestmark = pytest.mark.integration


def test_loaders_and_scoring(tmp_path: Path) -> None:
    (tmp_path / "SICK.txt").write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        "1\tA man is playing\tNobody is playing\t3.6\tCONTRADICTION\n"
        "2\tA dog runs\tA dog is running\t4.9\tENTAILMENT\n", encoding="utf-8")
    pairs = load_sick(tmp_path, None, 1)
    assert [(p.id, p.contradiction) for p in pairs] == [("1", True), ("2", False)]
    agent = load_agent_pairs(Path("benchmarks/data/agent_memory_pairs.jsonl"))
    assert len(agent) >= 300 and {p.domain for p in agent} == {"ops", "clinical", "legal", "finance"}
    assert 0.3 < sum(p.contradiction for p in agent) / len(agent) < 0.7
    assert prf(tp=8, fp=2, fn=8) == {"precision": 0.8, "recall": 0.5, "f1": 0.6154}
    assert prf(0, 0, 0) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_quick_run_writes_results(tmp_path: Path, neo4j: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    results = run(["--quick", "--sick-limit", "60", "--e2e-pairs", "4", "--results-dir", str(tmp_path)])
    written = json.loads((tmp_path / "contradictions-latest.json").read_text())
    assert written["quality"] == results["quality"]
    agent = next(r for r in results["quality"] if r["dataset"] == "agent-memory")
    assert agent["detector"] == "heuristic" and agent["pairs"] >= 300 and agent["f1"] > 0.5
    e2e = results["end_to_end"]
    assert e2e["planted"]["pairs"] == 4 and e2e["decoys"]["pairs"] == 4
    assert 0.0 <= e2e["surfacing_rate"] <= 1.0 and e2e["planted"]["surfaced"] <= e2e["planted"]["edges"]
    assert e2e["worker_errors"] == 0 and e2e["lag_seconds"]["samples"] >= 1
