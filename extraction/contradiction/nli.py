"""NLI cross-encoder detector: P(contradiction) in both directions, from a sentence-transformers CrossEncoder.

NLI is directional ("A entails B" is not "B entails A"), and a claim pair has no premise, so
both directions are scored in one batch and the larger contradiction probability wins. The
label order differs between checkpoints, so it is read from `config.id2label`, never assumed.

Loading costs seconds and memory, so it happens on first use and is shared per (model, device)
across the process; a model that fails to load raises `DetectorUnavailableError`, which the job
runner reports while the other detectors carry on. A failed load is retried only after
`retry_after` seconds, so a missing model does not cost a load attempt on every pass.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from palimpsest.extraction.contradiction.types import DetectorUnavailableError, TextPair, Verdict, label_for
from palimpsest.extraction.hub import local_files_only
from palimpsest.extraction.load_once import LoadOnce

METHOD = "nli"
DEFAULT_NLI_MODEL = "cross-encoder/nli-MiniLM2-L6-H768"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LabelIndex:
    contradiction: int
    entailment: int | None
    neutral: int | None


def label_index(id2label: dict[Any, str]) -> LabelIndex:
    """Find the contradiction/entailment/neutral columns by name, whatever order the checkpoint uses."""
    found: dict[str, int] = {}
    for raw_id, name in id2label.items():
        low = str(name).lower()
        for key in ("contradiction", "entailment", "neutral"):
            if low.startswith(key[:7]):
                found[key] = int(raw_id)
    if "contradiction" not in found:
        raise DetectorUnavailableError(f"model labels {dict(id2label)!r} have no contradiction class")
    return LabelIndex(found["contradiction"], found.get("entailment"), found.get("neutral"))


class _Loaded:
    def __init__(self, model: Any, labels: LabelIndex) -> None:
        self.model = model
        self.labels = labels
        self.lock = threading.Lock()  # CrossEncoder inference is not documented as thread-safe


_loaded: LoadOnce[_Loaded] = LoadOnce(DetectorUnavailableError)


def load_cross_encoder(name: str, device: str = "cpu", max_length: int = 256, retry_after: float = 300.0) -> _Loaded:
    def build() -> _Loaded:
        from sentence_transformers import CrossEncoder

        # A local directory loads without asking the Hub (extraction.hub).
        model = CrossEncoder(name, device=device, max_length=max_length, local_files_only=local_files_only(name))
        config = getattr(model, "config", None) or model.model.config
        return _Loaded(model, label_index(dict(config.id2label)))

    return _loaded.get((name, device), f"NLI model {name!r}", build, retry_after)


class NliDetector:
    """Scores pairs with a 3-way NLI cross-encoder; `score` = max over directions of P(contradiction)."""

    method = METHOD

    def __init__(self, model: str = DEFAULT_NLI_MODEL, threshold: float = 0.7, *, device: str = "cpu",
                 batch_size: int = 32, max_length: int = 256) -> None:
        self.model_name = model
        self.threshold = threshold
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length

    def judge(self, pairs: Sequence[TextPair]) -> list[Verdict | None]:
        if not pairs:
            return []
        loaded = load_cross_encoder(self.model_name, self.device, self.max_length)
        inputs = [(p.newer, p.older) for p in pairs] + [(p.older, p.newer) for p in pairs]
        with loaded.lock:
            probs = loaded.model.predict(inputs, apply_softmax=True, batch_size=self.batch_size,
                                         show_progress_bar=False, convert_to_numpy=True)
        n, idx = len(pairs), loaded.labels
        if getattr(probs, "shape", None) is None or len(probs.shape) != 2 or probs.shape[0] != 2 * n:
            raise DetectorUnavailableError(f"NLI model {self.model_name!r} returned scores of shape "
                                           f"{getattr(probs, 'shape', None)}, expected ({2 * n}, labels)")
        out: list[Verdict | None] = []
        for i in range(n):
            fwd, back = probs[i], probs[n + i]
            contra = float(max(fwd[idx.contradiction], back[idx.contradiction]))
            entail = 0.0 if idx.entailment is None else float(max(fwd[idx.entailment], back[idx.entailment]))
            neutral = 0.0 if idx.neutral is None else float(min(fwd[idx.neutral], back[idx.neutral]))
            score = round(min(1.0, max(0.0, contra)), 4)
            related = entail >= neutral
            out.append(Verdict(label_for(score, self.threshold, related), score, METHOD,
                               f"P(contradiction)={contra:.3f}, P(entailment)={entail:.3f}"))
        return out
