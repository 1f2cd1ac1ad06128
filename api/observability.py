"""Metrics in Prometheus text format and JSON logs that carry a request id.

A registry per app (not the process-global one) so tests can build many apps in one process.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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
            body["error"] = self.formatException(record.exc_info).splitlines()[-1]
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
