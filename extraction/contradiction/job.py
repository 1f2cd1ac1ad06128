"""The contradiction job: claim pairs in, verdicts out, with every detector's outcome reported.

A pure function of its inputs apart from the detectors' own state (a loaded model, a rate
limiter): it never touches Neo4j. One detector failing — a model that will not load, a provider
that errors — costs only that detector's verdicts; the report says so, and the worker logs and
counts it instead of crashing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from palimpsest.extraction.contradiction.heuristic import HeuristicDetector
from palimpsest.extraction.contradiction.llm import LlmJudge
from palimpsest.extraction.contradiction.nli import NliDetector
from palimpsest.extraction.contradiction.types import Detector, DetectorUnavailableError, TextPair, Verdict
from palimpsest.extraction.llm_client import RateLimiter
from palimpsest.schema.models import ContradictionSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DetectorReport:
    method: str
    pairs: int
    verdicts: int
    contradictions: int
    seconds: float
    error: str | None = None


@dataclass(frozen=True)
class JobResult:
    verdicts: list[tuple[int, Verdict]]
    reports: list[DetectorReport]

    @property
    def contradictions(self) -> list[tuple[int, Verdict]]:
        return [(i, v) for i, v in self.verdicts if v.label == "contradicts"]

    @property
    def failures(self) -> dict[str, str]:
        return {r.method: r.error for r in self.reports if r.error is not None}


def detect_contradictions(pairs: Sequence[TextPair], detectors: Sequence[Detector]) -> JobResult:
    """Run every detector on every pair; collect verdicts in (pair, detector) order."""
    verdicts: list[tuple[int, Verdict]] = []
    reports: list[DetectorReport] = []
    if not pairs:
        return JobResult([], [])
    for det in detectors:
        start = time.perf_counter()
        error: str | None = None
        try:
            found: list[Verdict | None] = list(det.judge(pairs))
        except DetectorUnavailableError as exc:
            error, found = str(exc), list(exc.partial or [])
        except Exception as exc:  # a detector bug must not stop the others either
            error, found = f"{type(exc).__name__}: {exc}", []
        if error is not None:
            log.warning("contradiction detector %r failed on %d pairs: %s", det.method, len(pairs), error)
        if found and len(found) != len(pairs):
            error = error or f"returned {len(found)} verdicts for {len(pairs)} pairs"
            found = []
        mine = [(i, v) for i, v in enumerate(found) if v is not None]
        verdicts.extend(mine)
        reports.append(DetectorReport(det.method, len(pairs), len(mine),
                                      sum(v.label == "contradicts" for _, v in mine),
                                      round(time.perf_counter() - start, 6), error))
    verdicts.sort(key=lambda iv: (iv[0], iv[1].method))
    return JobResult(verdicts, reports)


@dataclass
class DetectorOptions:
    """Process-level knobs the policy does not carry (devices, provider plumbing, rate limits).

    `nli_model` overrides the policy's model name (e.g. a local path on an air-gapped host).
    """

    nli_model: str | None = None
    nli_device: str = "cpu"
    nli_batch_size: int = 32
    llm_batch_size: int = 8
    llm_max_calls_per_second: float | None = 2.0
    llm_max_retries: int = 1
    llm_completion_kwargs: dict[str, Any] = field(default_factory=dict)


class DetectorFactory:
    """Builds the detectors a policy asks for, and keeps them between passes.

    Keeping them matters: the NLI model is loaded once, and the LLM rate limit has to span
    passes, not restart at every one.
    """

    def __init__(self, options: DetectorOptions | None = None) -> None:
        self.options = options or DetectorOptions()
        self._built: dict[tuple[Any, ...], Detector] = {}
        self._lock = threading.Lock()

    def for_settings(self, settings: ContradictionSettings) -> tuple[list[Detector], list[str]]:
        """The detectors to run, in policy order, plus problems that kept one from being built."""
        detectors: list[Detector] = []
        problems: list[str] = []
        with self._lock:
            for name in dict.fromkeys(settings.detectors):
                if name == "llm" and not settings.llm_model:
                    problems.append("llm detector enabled but the policy names no llm_model")
                    continue
                key = self._key(name, settings)
                if key not in self._built:
                    self._built[key] = self._build(name, settings)
                detectors.append(self._built[key])
        return detectors, problems

    def _key(self, name: str, settings: ContradictionSettings) -> tuple[Any, ...]:
        if name == "heuristic":
            return (name, settings.heuristic_threshold)
        if name == "nli":
            return (name, self.options.nli_model or settings.nli_model, settings.nli_threshold)
        return (name, settings.llm_model, settings.llm_threshold)

    def _build(self, name: str, settings: ContradictionSettings) -> Detector:
        opts = self.options
        if name == "heuristic":
            return HeuristicDetector(settings.heuristic_threshold)
        if name == "nli":
            return NliDetector(opts.nli_model or settings.nli_model, settings.nli_threshold,
                               device=opts.nli_device, batch_size=opts.nli_batch_size)
        return LlmJudge(settings.llm_model or "", settings.llm_threshold, batch_size=opts.llm_batch_size,
                        max_retries=opts.llm_max_retries, completion_kwargs=opts.llm_completion_kwargs,
                        limiter=RateLimiter(opts.llm_max_calls_per_second))
