"""The temporal benchmark's --no-keys mode at a tiny size: both arms run, inference only acts when on,
and every link it makes joins versions of one key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.temporal import KeySpec, classify_link, run

pytestmark = pytest.mark.integration


def test_no_keys_mode_compares_inference_off_and_on(neo4j: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    if neo4j.auth:
        monkeypatch.setenv("NEO4J_USER", neo4j.auth[0])
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j.auth[1])
    r = run(["--no-keys", "--keys", "3", "--distractors", "8", "--results-dir", str(tmp_path)])

    off, on = r["inference"]["inference_off"], r["inference"]["inference_on"]
    assert off["links"] == 0 and r["worker"]["inference_off"]["inferred_pairs"] == 0
    assert on["links"] > 0 and on["false_links_strict"] == 0 and on["same_attribute_other_subject"] == 0
    assert 0 < on["adjacent_versions_linked"] <= on["version_pairs"]
    assert r["metrics"]["inference_on"]["determinism_rate"] == 1.0
    assert set(r["metrics"]) == {"plain_rag", "inference_off", "inference_on"}
    assert (tmp_path / "temporal-nokeys-latest.json").is_file()
    assert r["check"] and all(c["ok"] for c in r["check"].values()), r["check"]
    assert not (tmp_path / "temporal-latest.json").exists()  # the keyed run's results are left alone


def test_link_classification() -> None:
    def key(index: int, subject: str, attribute: str) -> KeySpec:
        return KeySpec(index, "d", f"d/{subject}/{attribute}", subject, "", "", [], [], [])

    keys = [key(0, "acme", "notice"), key(1, "acme", "cap"), key(2, "borealis", "notice"), key(3, "cobalt", "cap")]
    assert classify_link((0, 1), (0, 0), keys) == "same_key"
    assert classify_link((0, 0), (0, 1), keys) == "same_key_backwards"
    assert classify_link((1, 1), (0, 0), keys) == "same_subject_other_attribute"
    assert classify_link((2, 1), (0, 0), keys) == "same_attribute_other_subject"
    assert classify_link((3, 1), (0, 0), keys) == "other_key"
    assert classify_link(None, (0, 0), keys) == "distractor_and_key"
    assert classify_link(None, None, keys, "Canary deployments soak for 45 minutes before promotion.",
                         "Canary deployments soak for 30 minutes before promotion.") == "distractor_restated"
    assert classify_link(None, None, keys, "Westbrook Traders is audited by Dalton Young.",
                         "Westbrook Traders is audited by Baker & Lowe.") == "distractor_restated"
    assert classify_link(None, None, keys, "The outpatient pharmacy closes at 8 pm on Tuesdays.",
                         "Canary deployments soak for 30 minutes before promotion.") == "distractor_distractor"
