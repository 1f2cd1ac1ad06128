"""Contradiction detection between claims: heuristic, NLI cross-encoder and LLM judge, combinable.

Each detector lives in its own module and shares the `Verdict` type; `job.detect_contradictions`
runs the ones a policy selects over a batch of pairs. Nothing here knows about Neo4j.
"""

from palimpsest.extraction.contradiction.heuristic import HeuristicDetector
from palimpsest.extraction.contradiction.job import (
    DetectorFactory,
    DetectorOptions,
    DetectorReport,
    JobResult,
    detect_contradictions,
)
from palimpsest.extraction.contradiction.llm import LlmJudge
from palimpsest.extraction.contradiction.nli import NliDetector
from palimpsest.extraction.contradiction.types import Detector, DetectorUnavailableError, Label, TextPair, Verdict
from palimpsest.extraction.llm_client import RateLimiter

__all__ = [
    "Detector", "DetectorFactory", "DetectorOptions", "DetectorReport", "DetectorUnavailableError",
    "HeuristicDetector", "JobResult", "Label", "LlmJudge", "NliDetector", "RateLimiter", "TextPair", "Verdict",
    "detect_contradictions",
]
