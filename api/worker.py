"""The background worker ("projections"): reads new claims from `graph`, runs the contradiction
job from `extraction`, writes the edges back — the only code that touches both.

One pass over a namespace repeats `read_batch → candidate_pairs → detect → commit_batch` until
`projections_seq` reaches the store revision. Each batch commits its edges and the new
`projections_seq` together, so a crash anywhere loses at most the batch in flight, and the next
pass redoes it; MERGE on (newer, older, method) makes the redo write nothing twice.

Three ways to run it:

* `run_once(runtime, namespace)` — one synchronous pass, for tests and scripts;
* `BackgroundWorker(runtime).start()` — a daemon thread polling the namespaces with pending work
  (what `Memory.start_worker` and the API use);
* `palimpsest worker` — the same loop as its own process, so workers scale out by namespace.

A detector failing (NLI model missing, LLM provider down) is logged and counted in the pass
report and the batch still commits with the other detectors' verdicts: projections never stall
behind a flaky model. Only infrastructure errors (Neo4j unavailable) end a pass; the background
loop then backs off and retries.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from api.runtime import Runtime
from extraction.contradiction import (
    Detector,
    DetectorFactory,
    DetectorOptions,
    TextPair,
    detect_contradictions,
)
from graph import policies
from graph import projections as proj
from schema.errors import NotFoundError
from schema.models import DEFAULT_POLICY, Policy

log = logging.getLogger(__name__)


@dataclass
class WorkerConfig:
    """Process-level worker settings. Detection knobs come from the namespace's policy
    (`policy_version`, default `default-v1`); `detector_options` adds what a policy cannot say
    (local model paths, provider credentials, the LLM rate limit)."""

    policy_version: str | None = None
    batch_claims: int = 200
    max_batches_per_pass: int | None = None
    detector_options: DetectorOptions = field(default_factory=DetectorOptions)


@dataclass
class PassReport:
    """What one pass over one namespace did; `detector_failures` counts failed detector runs by method."""

    namespace: str
    policy_version: str
    from_seq: int
    to_seq: int
    store_revision: int = 0
    batches: int = 0
    subjects: int = 0
    pairs: int = 0
    verdicts: int = 0
    contradictions: int = 0
    edges_created: int = 0
    detector_failures: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def caught_up(self) -> bool:
        return self.to_seq >= self.store_revision

    def as_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "policy_version": self.policy_version, "from_seq": self.from_seq,
                "to_seq": self.to_seq, "store_revision": self.store_revision, "batches": self.batches,
                "subjects": self.subjects, "pairs": self.pairs, "verdicts": self.verdicts,
                "contradictions": self.contradictions, "edges_created": self.edges_created,
                "detector_failures": dict(sorted(self.detector_failures.items())), "problems": self.problems,
                "seconds": round(self.seconds, 4)}


class ProjectionWorker:
    """Runs passes. Holds the detectors between passes (a loaded NLI model, the LLM rate limit).

    `detectors` replaces the policy's choice outright — for tests and benchmarks that need a
    specific detector (or a deliberately failing one).
    """

    def __init__(self, runtime: Runtime, config: WorkerConfig | None = None, *,
                 detectors: Sequence[Detector] | None = None) -> None:
        self.rt = runtime
        self.config = config or WorkerConfig()
        self.factory = DetectorFactory(self.config.detector_options)
        self.fixed_detectors = list(detectors) if detectors is not None else None
        self.failures: Counter[str] = Counter()

    @property
    def _db(self) -> str | None:
        return self.rt.settings.database

    def policy_for(self, namespace: str) -> tuple[Policy, list[str]]:
        try:
            return policies.get_policy(self.rt.driver, namespace, self.config.policy_version, self._db), []
        except NotFoundError:
            note = (f"policy {self.config.policy_version!r} is not registered in {namespace!r}; "
                    f"using {DEFAULT_POLICY.version!r}")
            log.warning(note)
            return policies.get_policy(self.rt.driver, namespace, None, self._db), [note]

    def run_once(self, namespace: str) -> PassReport:
        """Process batches until the namespace is caught up (or `max_batches_per_pass` is reached)."""
        started = time.perf_counter()
        policy, problems = self.policy_for(namespace)
        state = proj.projections_state(self.rt.driver, namespace, self._db)
        seq = state.projections_seq if state else 0
        report = PassReport(namespace, policy.version, seq, seq, state.revision if state else 0, problems=problems)
        if self.fixed_detectors is not None:
            detectors = self.fixed_detectors
        else:
            detectors, build_problems = self.factory.for_settings(policy.contradiction)
            report.problems.extend(build_problems)
        limit = self.config.max_batches_per_pass
        while limit is None or report.batches < limit:
            batch = proj.read_batch(self.rt.driver, namespace, self.config.batch_claims, self._db)
            if batch is None:
                break
            self._process(batch, policy, detectors, report)
            report.store_revision = max(report.store_revision, batch.store_revision)
        report.seconds = time.perf_counter() - started
        if report.batches:
            log.info("projections %s: %s", namespace, report.as_dict())
        return report

    def _process(self, batch: proj.Batch, policy: Policy, detectors: Sequence[Detector], report: PassReport) -> None:
        settings = policy.contradiction
        pairs = proj.candidate_pairs(
            self.rt.driver, batch.namespace, batch.subjects, neighbour_similarity=settings.neighbour_similarity,
            max_pairs_per_claim=settings.max_pairs_per_claim, database=self._db,
        )
        result = detect_contradictions([TextPair(p.newer_content, p.older_content) for p in pairs], detectors)
        for method in result.failures:
            self.failures[method] += 1
            report.detector_failures[method] = report.detector_failures.get(method, 0) + 1
        edges = [proj.EdgeWrite(pairs[i].newer_id, pairs[i].older_id, v.method, v.score, pairs[i].revision, v.reason)
                 for i, v in result.contradictions]
        committed = proj.commit_batch(self.rt.driver, batch.namespace, batch.from_seq, batch.to_seq, edges, self._db)
        report.batches += 1
        report.to_seq = committed.to_seq
        report.subjects += len(batch.subjects)
        report.pairs += len(pairs)
        report.verdicts += len(result.verdicts)
        report.contradictions += len(result.contradictions)
        report.edges_created += committed.edges_created

    def run_pending(self, namespaces: Sequence[str] | None = None) -> list[PassReport]:
        """One pass over every namespace with pending work (or over the given ones)."""
        names = list(namespaces) if namespaces else proj.pending_namespaces(self.rt.driver, self._db)
        return [self.run_once(ns) for ns in names]


_default_workers: dict[int, ProjectionWorker] = {}
_default_lock = threading.Lock()


def run_once(runtime: Runtime, namespace: str, config: WorkerConfig | None = None, *,
             detectors: Sequence[Detector] | None = None) -> PassReport:
    """One synchronous pass over `namespace`. Without config or detectors, reuses one worker per
    runtime so repeated calls keep their loaded models and rate limits."""
    if config is None and detectors is None:
        with _default_lock:
            worker = _default_workers.get(id(runtime))
            if worker is None or worker.rt is not runtime:  # ids are reused after a runtime is collected
                worker = _default_workers[id(runtime)] = ProjectionWorker(runtime)
    else:
        worker = ProjectionWorker(runtime, config, detectors=detectors)
    return worker.run_once(namespace)


class BackgroundWorker:
    """The worker loop on a daemon thread: every `interval` seconds (or on `wake()`), one pass over
    the namespaces with pending work — or only `namespaces`, if given.

    Errors never kill the thread: they are logged and counted, and the loop backs off (doubling
    up to `max_backoff`) until a pass succeeds again.
    """

    def __init__(self, runtime: Runtime, *, namespaces: Sequence[str] | None = None, interval: float = 1.0,
                 config: WorkerConfig | None = None, detectors: Sequence[Detector] | None = None,
                 max_backoff: float = 30.0, keep_reports: int = 100) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.worker = ProjectionWorker(runtime, config, detectors=detectors)
        self.namespaces = list(namespaces) if namespaces else None
        self.interval = interval
        self.max_backoff = max_backoff
        self.reports: deque[PassReport] = deque(maxlen=keep_reports)
        self.errors = 0
        self.last_error: str | None = None
        self.passes = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> BackgroundWorker:
        if self.running:
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="palimpsest-projections", daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        """Run the next pass now instead of at the end of the interval (e.g. right after an ingest)."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None

    def _loop(self) -> None:
        delay = self.interval
        while not self._stop.is_set():
            try:
                for report in self.worker.run_pending(self.namespaces):
                    if report.batches:
                        self.reports.append(report)
                self.passes += 1
                delay = self.interval
            except Exception as exc:  # keep the thread alive; the next pass retries from projections_seq
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("projections pass failed; retrying in %.1fs", delay)
                delay = min(max(delay * 2, self.interval), self.max_backoff)
            self._wake.wait(delay)
            self._wake.clear()

    def __enter__(self) -> BackgroundWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
