"""benchmarks.multihop reads the HotpotQA dev sample as it is stored: the head of the dev file, cut inside
a question. The file here is written by the test in that shape."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.multihop import load_hotpotqa_dev


def _question(qid: str, titles: list[str], gold: list[str]) -> dict[str, object]:
    return {"_id": qid, "question": f"question {qid}?", "answer": "a", "type": "bridge", "level": "hard",
            "supporting_facts": [[t, 0] for t in gold], "context": [[t, [f"{t} is", " a thing."]] for t in titles]}


def test_the_cut_file_yields_its_whole_questions_over_one_corpus(tmp_path: Path) -> None:
    whole = [_question("q1", ["Ada", "Bay", "Cove"], ["Ada", "Cove"]),
             _question("q2", ["Cove", "Dune"], ["Dune", "Cove"])]
    text = json.dumps([*whole, _question("q3", ["Elm"], ["Elm"])])
    folder = tmp_path / "hotpotqa_dev_sample"
    folder.mkdir()
    (folder / "hotpot_dev_distractor_v1_sample.json").write_text(text[: text.index('"q3"') + 20])
    ds = load_hotpotqa_dev(tmp_path)
    assert [q.qid for q in ds.questions] == ["q1", "q2"]  # q3 is cut: not read, no error
    assert [p.title for p in ds.passages] == ["Ada", "Bay", "Cove", "Dune"]  # a shared paragraph is one passage
    assert ds.passages[2].text == "Cove is a thing."
    assert [q.gold for q in ds.questions] == [[0, 2], [2, 3]]
