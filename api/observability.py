"""Metrics in Prometheus text format and JSON logs that carry a request id.

A registry per app (not the process-global one) so tests can build many apps in one process.

A series labelled with a namespace names a tenant: `exposition(readable)` shows a caller only
the namespaces it may read (None: all of them), and `forget_namespaces` drops the series of
namespaces that no longer exist, so a dropped tenant's name does not linger in /metrics.
"""

from __future__ import annotations

import gc
import json
import logging
import sys
import time
from collections.abc import Collection, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric

LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.http = Histogram("palimpsest_http_request_seconds", "HTTP request latency",
                              ["method", "route", "status"], registry=self.registry, buckets=LATENCY_BUCKETS)
        self.recall = Histogram("palimpsest_recall_seconds", "Recall latency (resolver, end to end)",
                                registry=self.registry, buckets=LATENCY_BUCKETS)
        self.ingested = Counter("palimpsest_ingested_claims_total", "Claims written", ["namespace"],
                                registry=self.registry)
        self.ingest_failed = Counter("palimpsest_ingest_failed_items_total", "Batch items refused",
                                     ["namespace"], registry=self.registry)
        self.worker_lag = Gauge("palimpsest_worker_lag_revisions",
                                "Store revision minus projections sequence", ["namespace"], registry=self.registry)
        self.namespaced: tuple[Counter | Gauge, ...] = (self.ingested, self.ingest_failed, self.worker_lag)
        # How much of the heap the garbage collector no longer walks (api.heap: `serve` freezes start-up's
        # objects): 0 in a serving process means a full collection walks the whole heap mid-request again.
        self.frozen = Gauge("palimpsest_gc_frozen_objects", "Objects the garbage collector does not walk "
                            "(start-up's heap, frozen by serve)", registry=self.registry)
        self.frozen.set_function(gc.get_freeze_count)

    def namespaces(self) -> set[str]:
        """Every namespace that has a series now."""
        return {sample.labels["namespace"] for metric in self.namespaced for family in metric.collect()
                for sample in family.samples if "namespace" in sample.labels}

    def forget_namespaces(self, gone: Collection[str]) -> None:
        for ns in gone:
            for metric in self.namespaced:
                metric.remove(ns)

    def exposition(self, readable: Collection[str] | None) -> bytes:
        """Prometheus text; series with a `namespace` label only for `readable` (None: every namespace)."""
        if readable is None:
            return generate_latest(self.registry)
        return generate_latest(_Visible(self.registry, frozenset(readable)))


class _Visible:
    """A read-only view of a registry without the series of namespaces the caller may not see."""

    def __init__(self, registry: CollectorRegistry, readable: frozenset[str]) -> None:
        self.registry, self.readable = registry, readable

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            kept = Metric(family.name, family.documentation, family.type, family.unit)
            kept.samples = [s for s in family.samples
                            if "namespace" not in s.labels or s.labels["namespace"] in self.readable]
            yield kept


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage(),
        }
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict):
            body.update(extra)
        if record.exc_info:
            trace = self.formatException(record.exc_info)
            body["error"] = trace.splitlines()[-1]
            if record.levelno >= logging.ERROR:  # a failure of ours: keep where it happened, still one line
                body["traceback"] = trace
        return json.dumps(body, sort_keys=True)


def configure_json_logging(level: int = logging.INFO) -> logging.Logger:
    logger = logging.getLogger("palimpsest")
    if not any(isinstance(h.formatter, JsonFormatter) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger
