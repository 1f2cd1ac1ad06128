"""The world-time benchmark (SituatedQA format) end to end on a tiny generated fixture.

The real data lives outside the repository and may be missing in CI, so the test writes ten made-up
timelines in the same JSONL format (nothing copied from the data set) and passes their directory."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from benchmarks.temporal_world import ARMS, SYSTEMS, load_situatedqa, normalise, probe_date, run

pytestmark = pytest.mark.integration

# (question, prev answer, prev start, cur answer, cur start); starts as {year, month, date}.
_TIMELINES: list[tuple[str, str, tuple[int | None, ...] | None, str, tuple[int | None, ...]]] = [
    ("who is the head coach of the harbourview rowing club", "Alma Reyes", (2004, None, None),
     "Bruno Tait", (2016, None, None)),
    ("what is the tallest building in the city of eastmere", "Corvid Tower", (1998, None, None),
     "Lumen Spire", (2019, 6, 14)),
    ("how many member states belong to the northern fisheries compact", "12", (2001, 3, 1),
     "15", (2012, 9, 30)),
    ("who is the mayor of glenrock", "Dana Whitlow", (2010, None, None), "Emeka Osu", (2018, None, None)),
    ("which club won the last valebridge cricket cup", "Oakham Rovers", (2015, None, None),
     "Pellmore Athletic", (2020, 8, None)),
    ("what is the population of the island of saint orla", "4,200", None, "5,100", (2011, None, None)),
    ("who presents the evening news on portsmere channel nine", "Farah Lind", (2007, None, None),
     "Gustav Ek", (2014, 2, 3)),
    ("where is the headquarters of the orbis seed bank", "Halden", (1995, None, None),
     "Ivrea", (2009, None, None)),
    ("who is the chief justice of the republic of maravia", "Ines Duarte", (2003, 5, 12),
     "Jonas Pirk", (2017, None, None)),
    ("who holds the lap record at kestrel park circuit", "Kai Moreno", (2012, None, None),
     "Lena Voss", (2021, None, None)),
]

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def _start(parts: tuple[int | None, ...] | None) -> dict[str, int | None] | None:
    return None if parts is None else {"year": parts[0], "month": parts[1], "date": parts[2]}


def _date_text(parts: tuple[int | None, ...]) -> str:
    year, month, day = parts
    assert year is not None
    return str(year) if month is None else f"{_MONTHS[month - 1]} {day or 1:02d}, {year}"


def write_fixture(directory: Path) -> None:
    raw, qa = [], []
    for i, (question, prev, prev_start, cur, cur_start) in enumerate(_TIMELINES):
        qid = 9_000_000_000_000_000 + i
        raw.append({"question": question, "id": qid, "nq_answers": [cur], "cur_answers": [cur],
                    "prev_answers": [prev], "is_dependent": True, "context_answer_pairs": [],
                    "timelines": [{"prev_answers": [prev], "prev_start": _start(prev_start), "cur_answers": [cur],
                                   "cur_start": _start(cur_start)}]})
        rows: list[tuple[str, str, str]] = [
            (_date_text(cur_start), "start", cur),
            (str(cur_start[0] - 1), "sampled_year", prev),  # inside the older window
            (f"March 03, {max(cur_start[0] + 1, 2022)}", "sampled_date", cur),
        ]
        if prev_start is not None:
            rows.append((_date_text(prev_start), "start", prev))
        for date, date_type, answer in rows:
            qa.append({"question": question, "id": qid, "edited_question": f"{question} as of {date}", "date": date,
                       "date_type": date_type, "answer": [answer, answer], "any_answer": [prev, cur]})
    # Two questions without a prev→cur event: left out, and counted.
    raw.append({"question": "who wrote the anthem of the free city of tellmark", "id": 9_100_000_000_000_000,
                "nq_answers": ["Otto Brann"], "cur_answers": [], "prev_answers": [], "timelines": None,
                "is_dependent": False, "context_answer_pairs": []})
    raw.append({"question": "what is the capital of the province of usk", "id": 9_100_000_000_000_001,
                "nq_answers": ["Mirel"], "cur_answers": ["Mirel"], "prev_answers": [], "is_dependent": True,
                "context_answer_pairs": [],
                "timelines": [{"prev_answers": None, "prev_start": None, "cur_answers": ["Mirel"],
                               "cur_start": {"year": 2019, "month": None, "date": None}}]})
    for name, rows_ in (("raw_data__temp.dev.jsonl", raw), ("qa_data__temp.dev.jsonl", qa)):
        (directory / name).write_text("".join(json.dumps(r) + "\n" for r in rows_), encoding="utf-8")


def test_fixture_loads_with_the_timeline_rule(tmp_path: Path) -> None:
    write_fixture(tmp_path)
    data = load_situatedqa(tmp_path)
    # No prev start (saint orla) and no prev answer (usk) leave the question out; so does no timeline.
    assert data.counts["usable_timelines"] == len(_TIMELINES) - 1
    assert data.counts["timelines_excluded"] == {"incomplete_timeline": 2, "no_timeline": 1}
    assert not [t for t in data.timelines if "saint orla" in t.question]
    assert data.timelines[1].cur_start == "2019-06-14" and data.timelines[4].cur_start == "2020-08"
    assert data.timelines[2].prev_start == "2001-03-01"
    assert all(p.expected == p.timeline for p in data.probes)  # the fixture's labels follow its timelines
    assert probe_date("May 28, 2019") == "2019-05-28" and probe_date("2019") == "2019"
    assert normalise("The  Beatles!") == "beatles"
    assert len(load_situatedqa(tmp_path, limit=3).timelines) == 3


def test_world_time_benchmark_smoke(neo4j: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    if neo4j.auth:
        monkeypatch.setenv("NEO4J_USER", neo4j.auth[0])
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j.auth[1])
    data_dir = tmp_path / "situatedqa"
    data_dir.mkdir()
    write_fixture(data_dir)
    limit = 5
    r = run(["--situatedqa", str(data_dir), "--limit", str(limit), "--results-dir", str(tmp_path),
             "--namespace-prefix", f"test-tworld-{secrets.token_hex(4)}"])

    assert r["benchmark"] == "temporal-world" and (tmp_path / "temporal-world-latest.json").is_file()
    assert r["counts"]["usable_timelines"] == limit and r["counts"]["claims_per_namespace"] == 2 * limit
    assert set(r["metrics"]) == set(ARMS)
    for arm in ARMS:
        assert set(r["metrics"][arm]) == set(SYSTEMS)
    assert set(r["latency_now"]) == set(SYSTEMS) and r["environment"]["date"] and r["environment"]["machine"]
    keyed, backfill, windows = (r["metrics"][arm]["palimpsest"] for arm in ARMS)
    assert keyed["past_instants"] > 0 and keyed["older_window_instants"] > 0
    assert keyed["past_instant_accuracy"] >= 0.95 * windows["past_instant_accuracy"], r["failures"]
    assert backfill["now_cur_absent"] == 0 and r["headline"]["backfill_now_cur_absent"] == 0
    assert keyed["now_accuracy"] == backfill["now_accuracy"] == windows["now_accuracy"] == 1.0
    assert keyed["past_revision_accuracy"] == 1.0
    assert backfill["past_instant_accuracy"] == keyed["past_instant_accuracy"]
    # The newest-write control keeps the backfilled prev and so drops the current answer.
    assert r["metrics"]["backfill"]["newest_per_key"]["now_cur_absent"] > 0
    assert r["headline"]["checks_ok"] and all(c["ok"] and not c["violation_counts"] for c in r["checks"].values())
    assert r["namespace_kept"] is False
