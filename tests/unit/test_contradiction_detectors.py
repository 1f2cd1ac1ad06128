"""Contradiction detectors without Neo4j: the heuristic's rules, the NLI plumbing on a tiny
home-made cross-encoder, the LLM judge through litellm's mock_response, and the job runner's
degradation when a detector fails."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from palimpsest.extraction.contradiction import (
    DetectorFactory,
    DetectorOptions,
    DetectorUnavailableError,
    HeuristicDetector,
    LlmJudge,
    NliDetector,
    RateLimiter,
    TextPair,
    Verdict,
    detect_contradictions,
)
from palimpsest.extraction.contradiction.heuristic import parse
from palimpsest.extraction.contradiction.nli import label_index, load_cross_encoder
from palimpsest.schema.models import ContradictionSettings
from tests.tiny_models import save_tiny_bert

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

H = HeuristicDetector(0.6)

CONTRADICTIONS = [
    ("latency of checkout-api is 800ms", "latency of checkout-api is 120ms"),
    ("The payments API is healthy", "The payments API is down"),
    ("Feature flag dual-writes is enabled in production", "Feature flag dual-writes is disabled in production"),
    ("orders-worker depends on redis-3", "orders-worker does not depend on redis-3"),
    ("orders-worker is still deployed on the legacy fleet", "orders-worker is no longer deployed on the legacy fleet"),
    ("TLS for auth-gateway is terminated at the LB", "TLS for auth-gateway isn't terminated at the LB"),
    ("Change request CR-1234 was approved", "Change request CR-1234 was rejected"),
    ("The maintenance window for ledger-api is 2026-03-04", "The maintenance window for ledger-api is 2026-03-11"),
    ("Production runs search-service v2.14.1", "Production runs search-service v2.15.0"),
    ("Liability under the MSA is capped at $2 million", "Liability under the MSA is capped at $5 million"),
    ("Patient 4471 takes metformin 500 mg twice daily", "Patient 4471 takes metformin 1000 mg twice daily"),
    ("ledger-api writes to db-7", "ledger-api writes to db-9"),
    ("Clause 12.3 permits assignment to affiliates", "Clause 12.3 prohibits assignment to affiliates"),
    ("The Marketing budget for FY2027 increased by 12%", "The Marketing budget for FY2027 decreased by 12%"),
]

NON_CONTRADICTIONS = [
    # the same attribute of another subject
    ("latency of checkout-api is 800ms", "latency of payments-api is 120ms"),
    ("Server web-3 is down", "Server web-4 is healthy"),
    ("Build 512 of checkout-api passed", "Build 513 of checkout-api failed"),
    ("Clause 12.3 permits assignment", "Clause 14.1 prohibits assignment"),
    ("Patient 4471 is allergic to penicillin", "Patient 4471 is allergic to latex"),
    ("Patient 4471 takes metformin 500 mg daily", "Patient 4471 takes lisinopril 10 mg daily"),
    # same value in other units or words
    ("p99 latency of checkout-api is 1.5 s", "checkout-api p99 latency is 1500 ms"),
    ("Liability is capped at $2 million", "The agreement caps liability at $2,000,000"),
    ("Patient 4471 takes metformin 1000 mg daily", "Patient 4471's daily metformin dose is 1 g"),
    # bounds and approximations
    ("checkout-api must run at least 3 replicas", "checkout-api runs 5 replicas"),
    ("revenue was about $4.2 million", "revenue was $4.19 million"),
    # refinements and different occasions
    ("checkout-api is down", "checkout-api is down in eu-west-1 since 09:40 UTC"),
    ("On 2026-03-02 checkout-api was down for 25 minutes", "On 2026-03-05 checkout-api was up all day"),
    ("Contoso reported Q1 2026 revenue of $4.2 million", "Contoso reported Q2 2026 revenue of $4.6 million"),
    # the same reading on two dates, and an id after a noun that looks like a verb
    ("The EUR/USD rate booked on 2026-06-05 was 1.0921", "The EUR/USD rate booked on 2026-05-14 was 1.0921"),
    ("Wingtip reported Q2 2026 revenue of $5.1 million", "Wingtip reported Q3 2026 revenue of $5.1 million"),
    ("Expense report ER-3071 has not been reimbursed", "Expense report ER-3967 has not been reimbursed"),
    # double negatives agree
    ("The payments API is not down", "The payments API is up"),
    # unrelated
    ("checkout-api is owned by the payments team", "The cafeteria opens at 8"),
]


@pytest.mark.parametrize(("a", "b"), CONTRADICTIONS)
def test_heuristic_flags_contradictions_in_both_directions(a: str, b: str) -> None:
    for x, y in ((a, b), (b, a)):
        v = H.verdict(x, y)
        assert v.label == "contradicts", (x, y, v)
        assert 0.6 <= v.score <= 1.0 and v.method == "heuristic" and v.reason


@pytest.mark.parametrize(("a", "b"), NON_CONTRADICTIONS)
def test_heuristic_leaves_look_alikes_alone(a: str, b: str) -> None:
    for x, y in ((a, b), (b, a)):
        v = H.verdict(x, y)
        assert v.label != "contradicts", (x, y, v)
        assert v.score < 0.6


def test_heuristic_is_deterministic_and_honours_its_threshold() -> None:
    a, b = CONTRADICTIONS[0]
    assert H.verdict(a, b) == H.verdict(a, b)
    strict = HeuristicDetector(threshold=0.99)
    v = strict.verdict(a, b)
    assert v.score == H.verdict(a, b).score and v.label != "contradicts"
    assert [x.label for x in H.judge([TextPair(a, b), TextPair(a, a)])] == ["contradicts", "compatible"]


def test_value_extraction_normalises_units_and_keeps_identifiers() -> None:
    p = parse("checkout-api latency is 1.5 s on 2026-03-02, build 512, cost $2.5m")
    kinds = sorted(v.kind for v in p.values)
    assert kinds == ["date", "money:usd", "q:duration"]
    duration = next(v for v in p.values if v.kind == "q:duration")
    assert duration.low == pytest.approx(1.5)
    assert "512" in p.tokens and "checkout-api" in p.tokens  # identifiers stay subject words
    assert parse("The NDA does not renew").negated and not parse("The NDA renews").negated
    assert parse("It isn't open").negated and parse("It is no longer open").negated


def test_verdict_validates_its_fields() -> None:
    with pytest.raises(ValueError):
        Verdict("contradicts", 1.5, "x", "")
    with pytest.raises(ValueError):
        Verdict("maybe", 0.5, "x", "")  # type: ignore[arg-type]


# ------------------------------------------------------------------ NLI on a tiny cross-encoder
WORDS = ["the", "service", "is", "up", "down", "not", "latency", "high", "low", "api", "checkout"]


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer BERT NLI head saved like a hub checkpoint, labels in a non-default order."""
    id2label = {0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"}  # not the common order on purpose
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-nli"), WORDS, id2label)


def test_nli_detector_scores_both_directions_with_labels_from_the_config(tiny_nli: Path) -> None:
    pairs = [TextPair("the service is up", "the service is down"), TextPair("latency is high", "latency is low"),
             TextPair("checkout api is not up", "checkout api is up")]
    det = NliDetector(str(tiny_nli), threshold=0.0, max_length=32)
    verdicts = det.judge(pairs)
    assert len(verdicts) == 3 and all(v is not None for v in verdicts)
    loaded = load_cross_encoder(str(tiny_nli), "cpu", 32)
    assert loaded.labels.contradiction == 2 and loaded.labels.entailment == 0 and loaded.labels.neutral == 1
    for pair, v in zip(pairs, verdicts, strict=True):
        assert v is not None and v.method == "nli" and v.label == "contradicts"  # threshold 0 accepts all
        probs = loaded.model.predict([(pair.newer, pair.older), (pair.older, pair.newer)], apply_softmax=True)
        assert probs.shape == (2, 3)
        assert v.score == pytest.approx(max(float(probs[0][2]), float(probs[1][2])), abs=1e-4)
        assert 0.0 <= v.score <= 1.0
    nothing = NliDetector(str(tiny_nli), threshold=1.0, max_length=32).judge(pairs)
    assert all(v is not None and v.label != "contradicts" for v in nothing)
    assert det.judge([]) == []


def test_nli_label_index_needs_a_contradiction_class() -> None:
    assert label_index({"0": "contradiction", "1": "entailment", "2": "neutral"}).contradiction == 0
    assert label_index({0: "LABEL_E", 1: "contradiction"}).entailment is None
    with pytest.raises(DetectorUnavailableError):
        label_index({0: "LABEL_0", 1: "LABEL_1"})


def test_missing_nli_model_degrades_to_the_other_detectors(tmp_path: Path) -> None:
    missing = NliDetector(str(tmp_path / "no-such-model"), threshold=0.5)
    with pytest.raises(DetectorUnavailableError):
        missing.judge([TextPair("a", "b")])
    a, b = CONTRADICTIONS[1]
    result = detect_contradictions([TextPair(a, b)], [missing, H])
    assert set(result.failures) == {"nli"} and "failed to load" in result.failures["nli"]
    assert [(i, v.method) for i, v in result.contradictions] == [(0, "heuristic")]
    nli_report = next(r for r in result.reports if r.method == "nli")
    assert nli_report.verdicts == 0 and nli_report.pairs == 1


# ------------------------------------------------------------------ LLM judge via mock_response
def _mock(*items: dict[str, Any]) -> dict[str, Any]:
    return {"mock_response": json.dumps({"verdicts": list(items)})}


def test_llm_judge_maps_typed_answers_to_verdicts() -> None:
    judge = LlmJudge("openai/gpt-4o-mini", threshold=0.7, max_calls_per_second=None, completion_kwargs=_mock(
        {"pair": 0, "label": "contradicts", "confidence": 0.92, "reason": "800 vs 120 ms"},
        {"pair": 1, "label": "compatible", "confidence": 0.8, "reason": "other service"},
        {"pair": 2, "label": "contradicts", "confidence": 0.5, "reason": "unsure"},
    ))
    pairs = [TextPair("a", "b"), TextPair("c", "d"), TextPair("e", "f"), TextPair("g", "h")]
    out = judge.judge(pairs)
    assert out[0] == Verdict("contradicts", 0.92, "llm", "800 vs 120 ms")
    assert out[1] is not None and out[1].label == "compatible" and out[1].score == 0.0
    assert out[2] is not None and out[2].label == "compatible" and out[2].score == 0.5  # below llm_threshold
    assert out[3] is None  # the model skipped it: no opinion, not a guess
    assert judge.calls == 1


def test_llm_judge_batches_pairs_per_call() -> None:
    judge = LlmJudge("openai/gpt-4o-mini", batch_size=2, max_calls_per_second=None,
                     completion_kwargs=_mock({"pair": 0, "label": "contradicts", "confidence": 0.9, "reason": ""},
                                             {"pair": 1, "label": "unrelated", "confidence": 0.9, "reason": ""}))
    out = judge.judge([TextPair(str(i), str(i + 1)) for i in range(5)])
    assert judge.calls == 3
    assert [v.label if v else None for v in out] == ["contradicts", "unrelated", "contradicts", "unrelated",
                                                     "contradicts"]


def test_failing_provider_is_reported_and_the_others_still_decide() -> None:
    judge = LlmJudge("openai/gpt-4o-mini", max_calls_per_second=None, max_retries=0,
                     completion_kwargs={"mock_response": Exception("provider down")})
    with pytest.raises(DetectorUnavailableError) as exc:
        judge.judge([TextPair("a", "b")])
    assert "provider down" in str(exc.value) and exc.value.partial == [None]
    a, b = CONTRADICTIONS[0]
    result = detect_contradictions([TextPair(a, b)], [judge, H])
    assert "llm" in result.failures and [v.method for _, v in result.contradictions] == ["heuristic"]


def test_rate_limiter_spaces_calls() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    limiter = RateLimiter(2.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        limiter.acquire()
    assert slept == [pytest.approx(0.5), pytest.approx(0.5)]
    now[0] += 10
    limiter.acquire()
    assert len(slept) == 2  # idle long enough: no wait
    RateLimiter(None, sleep=lambda s: pytest.fail("unlimited must not sleep")).acquire()


# ------------------------------------------------------------------ the job runner and factory
class _Broken:
    method = "broken"
    threshold = 0.5

    def judge(self, pairs: Sequence[TextPair]) -> list[Verdict | None]:
        raise RuntimeError("bug in a detector")


def test_job_runner_contains_detector_bugs_and_orders_verdicts() -> None:
    pairs = [TextPair(*CONTRADICTIONS[0]), TextPair(*NON_CONTRADICTIONS[0])]
    result = detect_contradictions(pairs, [_Broken(), H])
    assert result.failures == {"broken": "RuntimeError: bug in a detector"}
    assert [(i, v.method, v.label) for i, v in result.verdicts] == [
        (0, "heuristic", "contradicts"), (1, "heuristic", "compatible")]
    assert detect_contradictions([], [H]).verdicts == []


def test_factory_builds_what_the_policy_asks_and_keeps_instances() -> None:
    factory = DetectorFactory(DetectorOptions(nli_model="/models/nli"))
    settings = ContradictionSettings(detectors=("heuristic", "nli", "llm"))
    detectors, problems = factory.for_settings(settings)
    assert [d.method for d in detectors] == ["heuristic", "nli"]
    assert problems == ["llm detector enabled but the policy names no llm_model"]
    assert isinstance(detectors[1], NliDetector) and detectors[1].model_name == "/models/nli"
    again, _ = factory.for_settings(settings)
    assert again[1] is detectors[1]  # the loaded model is kept between passes
    with_llm, problems = factory.for_settings(ContradictionSettings(detectors=("llm",), llm_model="openai/x"))
    assert problems == [] and isinstance(with_llm[0], LlmJudge) and with_llm[0].model == "openai/x"
