"""benchmarks/fact_retrieval.py at a tiny size: the world it builds, every mode, the namespace dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.fact_retrieval import MODES, main, world

pytestmark = pytest.mark.integration


def test_the_world_asks_two_hops_and_is_seeded() -> None:
    answers, questions = world(3, seed=1)
    assert len(answers) == 18 and len(questions) == 6
    assert world(3, seed=1) == (answers, questions)
    for question, gold in questions:
        film = question.rsplit(" of ", 1)[1].rstrip("?").removesuffix(" born")
        assert film not in gold            # the gold claim never names the film the question names
        assert len(answers[gold]["facts"]) == 1


def test_fact_retrieval_benchmark_runs_every_mode(neo4j: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  driver: Any) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    if neo4j.auth:
        monkeypatch.setenv("NEO4J_USER", neo4j.auth[0])
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j.auth[1])
    out = tmp_path / "fr.json"
    prefix = f"t-facts-{tmp_path.name[-8:]}"
    assert main(["--films", "4", "--namespace-prefix", prefix, "--out", str(out)]) == 0
    result = json.loads(out.read_text())["results"][0]
    assert result["facts"] == result["claims"] == 24
    assert [m["mode"] for m in result["modes"]] == list(MODES)
    assert all(m["deterministic"] for m in result["modes"])
    records, _, _ = driver.execute_query("MATCH (s:Store) WHERE s.namespace STARTS WITH $p RETURN count(s) AS n",
                                         p=prefix)
    assert records[0]["n"] == 0
