"""The LoCoMo benchmark: its loader and date parser on a tiny made-up conversation in LoCoMo's format
(nothing copied from the data set, which lives outside the repository), and one end-to-end run of it
against the real Neo4j, the reader mocked."""

from __future__ import annotations

import argparse
import json
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks.locomo import (
    BM25,
    LocomoFormatError,
    Variant,
    claims_of,
    load_locomo,
    merge,
    parse_session_date,
    parse_variant,
    rrf,
    run,
    token_f1,
)
from benchmarks.rerank_required import RerankNotRunError
from tests.tiny_models import save_tiny_bert

pytestmark = pytest.mark.integration

_SESSION_1 = [
    ("Ada", "Hi Bram! I finally started cello lessons this week."),
    ("Bram", "That is wonderful. Which teacher did you pick?"),
    ("Ada", "Mrs Okafor, she teaches at the conservatory on Tuesdays."),
    ("Bram", "I have been busy packing boxes for the move."),
    ("Ada", "Good luck with it!"),
]
_SESSION_2 = [
    ("Bram", "Guess what, I moved to Lisbon last weekend."),
    ("Ada", "Amazing! How is the new flat?"),
    ("Bram", "Small, but it has a balcony with a view of the river."),
    ("Ada", "My cello recital is next month, wish me luck."),
]


def fixture(*, bad_date: bool = False) -> list[dict[str, Any]]:
    def session(n: int, turns: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return [{"speaker": s, "dia_id": f"D{n}:{i}", "text": t} for i, (s, t) in enumerate(turns, start=1)]

    s1 = session(1, _SESSION_1)
    s1[3]["blip_caption"] = "a photo of cardboard boxes in a hallway"
    return [{
        "sample_id": "fixture-1",
        "conversation": {"speaker_a": "Ada", "speaker_b": "Bram",
                         "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": s1,
                         "session_2_date_time": "May 2023" if bad_date else "12:04 am on 2 June, 2023",
                         "session_2": session(2, _SESSION_2)},
        "qa": [
            {"question": "Which instrument is Ada learning?", "answer": "cello", "evidence": ["D1:1"], "category": 4},
            {"question": "When did Bram move to Lisbon?", "answer": "the weekend before 2 June 2023",
             "evidence": ["D2:1"], "category": 2},
            {"question": "Who teaches Ada the cello and when is her recital?", "answer": "Mrs Okafor; next month",
             "evidence": ["D1:3; D2:4", "D9:9"], "category": 1},
            {"question": "What does Bram's flat look out on?", "answer": "the river", "evidence": ["D2:03"],
             "category": 3},
            {"question": "What colour is Ada's cello?", "adversarial_answer": "red", "evidence": [], "category": 5},
            {"question": "Why was Bram packing?", "answer": "the move", "evidence": ["D"], "category": 4},
        ],
    }]


def write(tmp_path: Path, data: list[dict[str, Any]]) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_session_dates_parse_strictly() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:04 am on 2 June, 2023") == datetime(2023, 6, 2, 0, 4, tzinfo=UTC)
    assert parse_session_date("12:30 pm on 19 December, 2023") == datetime(2023, 12, 19, 12, 30, tzinfo=UTC)
    assert parse_session_date("9:00 AM on 1 january 2024") == datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    for bad in ("8 May, 2023", "13:05 pm on 8 May, 2023", "1:56 pm on 31 February, 2023",
                "1:56 pm on 8 Mayo, 2023", "1:61 pm on 8 May, 2023", "", "1700000000"):
        with pytest.raises(LocomoFormatError) as err:
            parse_session_date(bad, "session_3_date_time")
        assert err.value.field == "session_3_date_time"
    with pytest.raises(LocomoFormatError):
        parse_session_date(None)


def test_loader_turns_questions_and_evidence(tmp_path: Path) -> None:
    loaded = load_locomo(write(tmp_path, fixture()))
    (conv,) = loaded.conversations
    assert [t.dia_id for t in conv.turns][:2] == ["D1:1", "D1:2"] and len(conv.turns) == 9
    assert conv.turns[5].when == datetime(2023, 6, 2, 0, 4, tzinfo=UTC) and conv.turns[5].session == 2
    assert conv.turns[3].caption == "a photo of cardboard boxes in a hallway"
    # Category 5 and a question whose only evidence is malformed are out; "D1:3; D2:4" is split.
    assert [q.category for q in conv.questions] == [4, 2, 1, 3]
    assert conv.questions[2].evidence == ("D1:3", "D2:4") and conv.questions[3].evidence == ("D2:3",)
    c = loaded.counts
    assert c["adversarial_excluded"] == 1 and c["no_evidence_excluded"] == 1 and c["evidence_ids_unknown"] == 1
    assert c["evidence_fields_malformed"] == 3 and c["questions"] == 4 and c["turns"] == 9
    assert c["questions_by_category"] == {"multi-hop": 1, "temporal": 1, "open-domain": 1, "single-hop": 1}
    with pytest.raises(LocomoFormatError) as err:
        load_locomo(write(tmp_path, fixture(bad_date=True)))
    assert err.value.field == "[0].conversation.session_2_date_time"
    with pytest.raises(LocomoFormatError):
        load_locomo(write(tmp_path, fixture()), [3])


def test_claims_of_each_variant(tmp_path: Path) -> None:
    (conv,) = load_locomo(write(tmp_path, fixture())).conversations
    plain = claims_of(conv, Variant())
    assert plain[0]["content"] == "Ada: Hi Bram! I finally started cello lessons this week."
    assert plain[0]["source"] == "Ada" and plain[0]["valid_from"] == "2023-05-08T13:56:00+00:00"
    assert plain[0]["metadata"] == {"dia_id": "D1:1", "session": 1, "speaker": "Ada"}
    bare = claims_of(conv, Variant(speaker="none"))[0]
    assert bare["content"] == "Hi Bram! I finally started cello lessons this week."
    assert claims_of(conv, Variant(captions=True))[3]["content"].endswith(
        "[shares a photo: a photo of cardboard boxes in a hallway]")
    assert parse_variant("none+context+captions") == Variant("none", True, "previous")
    assert parse_variant("prefix+context").name == "prefix+context"
    for bad in ("speaker", "prefix+context+context", "none+date"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_variant(bad)
    ctx = claims_of(conv, Variant(context="previous"))
    assert "subject" not in ctx[0]["metadata"] and "subject" not in ctx[5]["metadata"]  # first of its session
    assert ctx[1]["metadata"]["subject"].startswith("Ada said: Hi Bram!")


def test_baselines_rank_totally() -> None:
    bm25 = BM25(["the cello lesson", "moving boxes", "cello cello recital", "nothing here"])
    assert bm25.rank("cello recital")[:2] == [2, 0] and bm25.rank("zzz") == [0, 1, 2, 3]
    assert rrf([[0, 1, 2], [2, 1, 0]]) == [0, 2, 1]  # 0 and 2 tie; the lower index first
    assert token_f1("The river", "river") == 1.0 and token_f1("", "x") == 0.0
    assert round(token_f1("Mrs Okafor", "Mrs Okafor; next month"), 3) == 0.667


def test_rerank_modes_run_the_cross_encoder_or_stop_the_run(neo4j: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`--rerank-model` adds a "+ rerank" row per mode; a model that cannot score stops the run instead of
    reporting the fused ranking under the reranker's name."""
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    if neo4j.auth:
        monkeypatch.setenv("NEO4J_USER", neo4j.auth[0])
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j.auth[1])
    words = {w.strip(".,!?:").lower() for s, t in _SESSION_1 + _SESSION_2 for w in f"{s}: {t}".split()} - {""}
    tiny = save_tiny_bert(tmp_path / "ranker", sorted(words), {0: "relevance"}, max_positions=512, seed=3)
    # The benchmark runs as the operator: its rerankers are on the operator's allow-list.
    monkeypatch.setenv("PALIMPSEST_ALLOWED_RERANK_MODELS", f"{tiny},{tmp_path / 'no-such-model'}")
    data = write(tmp_path, fixture())
    common = ["--data", str(data), "--variants", "prefix", "--modes", "palimpsest (default policy)",
              "--results-dir", str(tmp_path), "--rerank-top", "9"]
    r = run([*common, "--namespace-prefix", f"test-locomo-rr-{secrets.token_hex(4)}", "--rerank-model", str(tiny)])
    modes = r["variants"]["prefix"]["modes"]
    plain, reranked = modes["palimpsest (default policy)"], modes["palimpsest (default policy) + rerank"]
    assert reranked["knobs"] == {"rerank": "cross-encoder", "rerank_model": str(tiny), "rerank_top": 9}
    assert reranked["deterministic"] is True and reranked["metrics"]["all"]["r@25"] == 100.0
    assert plain["knobs"] == {}
    with pytest.raises(RerankNotRunError, match="could not score"):
        run([*common, "--namespace-prefix", f"test-locomo-rr-{secrets.token_hex(4)}",
             "--rerank-model", str(tmp_path / "no-such-model")])


def test_sentence_control_runs_the_stage_before_and_after_the_worker_stores_sentences(
        neo4j: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--sentence-control`: the same mode before the sentence vectors are stored (embedding at recall)
    and after (reading them); the recalls agree question by question, only the cost differs."""
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    if neo4j.auth:
        monkeypatch.setenv("NEO4J_USER", neo4j.auth[0])
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j.auth[1])
    mode = "palimpsest subject terms + source penalty 0.7 + stems + sentences"
    r = run(["--data", str(write(tmp_path, fixture())), "--variants", "prefix", "--modes", mode,
             "--sentence-control", "--results-dir", str(tmp_path),
             "--namespace-prefix", f"test-locomo-sc-{secrets.token_hex(4)}"])
    block = r["variants"]["prefix"]
    stored, embedded = block["modes"][mode], block["modes"][mode + " [sentences embedded at recall]"]
    assert embedded["knobs"] == {**stored["knobs"], "sentences_at_recall": True}
    assert [row[:6] for row in embedded["per_question"]] == [row[:6] for row in stored["per_question"]]
    assert stored["deterministic"] is embedded["deterministic"] is True
    assert all(c["sentence_vectors_s"] >= 0 for c in block["conversations"])


def test_locomo_benchmark_end_to_end(neo4j: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    from palimpsest.extraction.reader import ReaderOptions

    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    if neo4j.auth:
        monkeypatch.setenv("NEO4J_USER", neo4j.auth[0])
        monkeypatch.setenv("NEO4J_PASSWORD", neo4j.auth[1])

    def completion(**kwargs: Any) -> Any:  # the reader cites the first claim shown and answers "cello"
        prompt = kwargs["messages"][-1]["content"]
        first = prompt.split("id=", 1)[1].split()[0]
        verdict = {"thought": "", "answer": "cello", "cited_ids": [first], "not_in_memory": False}
        return litellm.completion(**kwargs, mock_response=json.dumps(verdict))

    data = write(tmp_path, fixture())
    r = run(["--data", str(data), "--variants", "prefix", "none", "--results-dir", str(tmp_path),
             "--namespace-prefix", f"test-locomo-{secrets.token_hex(4)}", "--llm-model", "gpt-4o-mini"],
            reader=ReaderOptions(max_calls_per_second=None, completion=completion))

    assert (tmp_path / "locomo-latest.json").is_file() and r["benchmark"] == "locomo"
    assert r["counts"]["questions"] == 4 and r["environment"]["machine"] and r["environment"]["date"]
    assert not Path(r["data"]).is_absolute()
    assert set(r["variants"]) == {"prefix", "none"}
    modes = r["variants"]["prefix"]["modes"]
    assert {"bm25", "dense", "hybrid rrf (bm25 + dense)", "palimpsest (default policy)", "palimpsest + PPR",
            "palimpsest + round 2", "palimpsest + dedup 0.7"} <= set(modes)
    for name, m in modes.items():
        assert m["metrics"]["all"]["questions"] == 4, name
        # Nine turns and k = 25: every mode returns every turn, so R@25 is complete.
        assert m["metrics"]["all"]["r@25"] == 100.0, name
        assert m["p50_ms"] >= 0 and m["load_before"] >= 0
        assert m["deterministic"] in (None, True), name
    assert modes["palimpsest (default policy)"]["metrics"]["single-hop"]["r@5"] == 100.0
    answers = r["variants"]["prefix"]["answers"]
    assert answers["questions"] == 4 and answers["f1_single-hop"] == 100.0 and answers["reader_calls"] >= 4
    assert all(c["check_violations"] == {} for c in r["variants"]["none"]["conversations"])
    assert r["namespace_kept"] is False

    # Runs over disjoint conversations merge into one result, every aggregate recomputed from their rows.
    other = json.loads((tmp_path / "locomo-latest.json").read_text())
    other["conversations"] = [1]
    for block in other["variants"].values():
        for m in block["modes"].values():
            m["per_question"] = [[1, *row[1:]] for row in m["per_question"]]
    (tmp_path / "other.json").write_text(json.dumps(other))
    merged = merge([tmp_path / "locomo-latest.json", tmp_path / "other.json"], tmp_path / "merged.json")
    assert merged["conversations"] == [0, 1] and merged["counts"]["questions"] == 8
    m = merged["variants"]["prefix"]["modes"]["palimpsest (default policy)"]
    single = modes["palimpsest (default policy)"]["metrics"]
    assert m["metrics"] == {k: v | {"questions": 2 * v["questions"]} for k, v in single.items()}
    with pytest.raises(SystemExit):
        merge([tmp_path / "locomo-latest.json", tmp_path / "locomo-latest.json"], tmp_path / "merged.json")
