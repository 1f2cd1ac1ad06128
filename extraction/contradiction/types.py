"""The vocabulary every contradiction detector shares: pairs of claim texts in, verdicts out.

Detectors never see ids, namespaces or the graph: the worker in `api` maps verdicts back to
claims. That keeps each detector a testable function of two strings and lets the worker combine
any of them (the policy lists which) without knowing how each one decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

Label = Literal["contradicts", "compatible", "unrelated"]
LABELS: tuple[Label, ...] = ("contradicts", "compatible", "unrelated")


@dataclass(frozen=True)
class TextPair:
    """Two claim texts. `newer` is the claim being processed, `older` a candidate it may conflict with.

    Order matters to no detector's label (contradiction is symmetric), but NLI is directional,
    so the detectors that care check both directions.
    """

    newer: str
    older: str


@dataclass(frozen=True)
class Verdict:
    """One detector's opinion on one pair.

    `score` is always "how strongly these two contradict" in [0, 1], whatever the label, so a
    threshold means the same thing for every method; `label` is `contradicts` exactly when the
    detector's own threshold was met.
    """

    label: Label
    score: float
    method: str
    reason: str

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"unknown verdict label {self.label!r}")
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"verdict score must be within [0, 1], got {self.score}")


class DetectorUnavailableError(RuntimeError):
    """A detector could not run (model missing, provider down); the others still can.

    `partial` carries the verdicts it did reach when only some of its work failed (one LLM call
    of several), so those are not thrown away with the error.
    """

    def __init__(self, message: str, *, partial: Sequence[Verdict | None] | None = None) -> None:
        super().__init__(message)
        self.partial = list(partial) if partial is not None else None


@runtime_checkable
class Detector(Protocol):
    """Judges a batch of pairs. Returns one entry per pair, in order; None means "no opinion"."""

    method: str
    threshold: float

    def judge(self, pairs: Sequence[TextPair]) -> list[Verdict | None]: ...


def label_for(score: float, threshold: float, related: bool) -> Label:
    """Shared mapping from a contradiction score to a label, so detectors agree on the cut."""
    if score >= threshold:
        return "contradicts"
    return "compatible" if related else "unrelated"
