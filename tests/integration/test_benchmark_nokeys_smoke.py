"""benchmarks/nokeys.py at a tiny size: both corpora, every arm, the link classification, the
namespaces checked and dropped. The data is a three-subject file written here, not the frozen set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.nokeys import SetClaim, classify_set_link, load_set, recency_collapse, run

pytestmark = pytest.mark.integration

SUBJECTS = [
    {"id": "t-01", "domain": "travel", "split": "dev", "subject": "ferry F-9", "attribute": "departure",
     "value_kind": "time", "query": "When does the F-9 ferry leave?",
     "versions": [{"text": "Ferry F-9 departs at 08:10.", "value": "08:10"},
                  {"text": "The F-9 ferry was rescheduled and now departs at 08:40.", "value": "08:40"},
                  {"text": "Ferry F-9 now leaves at 09:05 on weekdays.", "value": "09:05"}],
     "restatement": {"text": "F-9 still departs at 08:40.", "restates": 2},
     "distractors": [{"kind": "same_attribute_other_subject", "text": "Ferry F-12 departs at 08:25.", "round": 1},
                     {"kind": "same_subject_other_attribute", "text": "Ferry F-9 carries 300 passengers.",
                      "round": 2}]},
    {"id": "t-02", "domain": "pricing", "split": "heldout", "subject": "Lite tier", "attribute": "price",
     "value_kind": "money", "query": "What does the Lite tier cost a month?",
     "versions": [{"text": "The Lite tier costs $4 per month.", "value": "$4"},
                  {"text": "From May, the Lite tier is billed at $5 a month.", "value": "$5"},
                  {"text": "The Lite tier price rose to $6 per month.", "value": "$6"}],
     "restatement": {"text": "Lite tier: $4 a month.", "restates": 1},
     "distractors": [{"kind": "same_attribute_other_subject", "text": "The Max tier costs $40 per month.",
                      "round": 2},
                     {"kind": "same_subject_other_attribute", "text": "The Lite tier includes 2 projects.",
                      "round": 1}]},
]


def test_nokeys_benchmark_runs_every_arm_on_both_corpora(neo4j: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    if neo4j.auth:
        monkeypatch.setenv("NEO4J_USER", neo4j.auth[0])
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j.auth[1])
    data = tmp_path / "set.jsonl"
    data.write_text("".join(json.dumps(s) + "\n" for s in SUBJECTS), encoding="utf-8")
    second = tmp_path / "set_b.jsonl"  # the second set is reported as one group, whatever its rows' split
    second.write_text("".join(json.dumps({**s, "id": f"b-{s['id']}"}) + "\n" for s in SUBJECTS[:1]), encoding="utf-8")
    r = run(["--data", str(data), "--data-b", str(second), "--generator-keys", "2", "--generator-distractors", "4",
             "--namespace-prefix", f"t-nokeys-{tmp_path.name[-8:]}", "--results-dir", str(tmp_path)])
    m = r["metrics"]
    assert set(m) == {"plain_rag", "recency_control", "inference_off", "offline"}
    assert set(m["offline"]) == {"dev", "heldout", "set_b", "generator"}
    off, offline = r["links"]["inference_off"], r["links"]["offline"]
    assert off["dev"]["links"] == 0 and off["generator"]["links"] == 0
    assert offline["dev"]["false_supersessions"] == 0 and offline["heldout"]["false_supersessions"] == 0
    assert offline["generator"]["false_links_strict"] == 0
    assert offline["dev"]["adjacent_versions_linked"] + offline["heldout"]["adjacent_versions_linked"] > 0
    assert all(c["ok"] for c in r["check"].values()), r["check"]
    assert (tmp_path / "nokeys-latest.json").is_file()


def test_link_classification_and_the_recency_control() -> None:
    def claim(subject: str, role: str, version: int) -> SetClaim:
        return SetClaim("", subject, role, version, version)

    v1, v2, v3 = claim("a", "version", 1), claim("a", "version", 2), claim("a", "version", 3)
    r2 = claim("a", "restatement", 2)
    assert classify_set_link(v2, v1) == "adjacent" and classify_set_link(v3, r2) == "retires_restatement"
    assert classify_set_link(r2, v2) == "restatement_linked" and classify_set_link(v1, v2) == "backwards"
    assert classify_set_link(claim("b", "version", 2), v1) == "other_subject"
    assert classify_set_link(v2, claim("a", "same_subject_other_attribute", 0)) == "distractor_superseded"

    e = [1.0, 0.0]
    hits = [{"id": "old", "revision": 1, "pos": 0, "score": 0.9, "embedding": e},
            {"id": "other", "revision": 1, "pos": 1, "score": 0.8, "embedding": [0.0, 1.0]},
            {"id": "new", "revision": 2, "pos": 0, "score": 0.7, "embedding": e}]
    assert recency_collapse(hits, 0.9, 5) == ["new", "other"]


def test_the_frozen_set_is_what_its_readme_says() -> None:
    subjects = load_set()
    assert len(subjects) == 50 and len({s.domain for s in subjects}) == 10
    assert sum(s.split == "heldout" for s in subjects) == 15
    assert {s.domain for s in subjects}.isdisjoint({"clinical", "devops", "legal", "finance"})
    for s in subjects:
        assert [c.version for c in s.claims if c.role == "version"] == [1, 2, 3]
        assert sum(c.role == "restatement" for c in s.claims) == 1
        assert {c.role for c in s.claims if c.role.startswith("same_")} == {
            "same_attribute_other_subject", "same_subject_other_attribute"}
