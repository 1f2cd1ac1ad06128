"""Issue 45: subscriptions are capped and cannot starve requests. Before, one read key held 30 sockets ×
100 `contradictions` subscriptions, each polling from the requests' thread pool, and a concurrent recall
took 27.5 s (baseline 0.1 s). Now one more subscription than PALIMPSEST_MAX_SUBSCRIPTIONS_PER_KEY (or
PALIMPSEST_MAX_SUBSCRIPTIONS on the server) answers LIMIT_EXCEEDED, idle subscribers of a namespace share
one check per tick, and polls run in threads of their own. The full-size measurement is
`python -m benchmarks.reliability --only subscription-flood`; this is its CI-sized version.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.memory import Memory
from palimpsest.settings import Settings
from tests.northern_lights import seed
from tests.reliability.conftest import serving

pytestmark = pytest.mark.integration

SUBSCRIBE = "subscription($ns: String) { contradictions(namespace: $ns) { revision } }"
RECALL = 'query($ns: String) { recall(query: "Where was the director of Northern Lights born?", k: 5, ' \
         "namespace: $ns) { items { id } } }"


def _keys(namespace: str, names: list[str]) -> KeyStore:
    return KeyStore.from_json(json.dumps([{"name": n, "sha256": hash_key(f"key-{n}"),
                                           "namespaces": {namespace: ["read"]}} for n in names]))


@contextmanager
def _socket(port: int, name: str) -> Iterator[ClientConnection]:
    with connect(f"ws://127.0.0.1:{port}/graphql", subprotocols=["graphql-transport-ws"],
                 additional_headers={"Authorization": f"Bearer key-{name}"}, open_timeout=20) as ws:
        ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(ws.recv(timeout=20))["type"] == "connection_ack"
        yield ws


def _subscribe(ws: ClientConnection, sid: str, namespace: str) -> None:
    ws.send(json.dumps({"id": sid, "type": "subscribe", "payload": {"query": SUBSCRIBE,
                                                                     "variables": {"ns": namespace}}}))


def _refusal(ws: ClientConnection, sid: str, wait_s: float = 3.0) -> dict[str, Any] | None:
    """The error extensions the server answered subscription `sid` with, or None when it stayed open."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            message = json.loads(ws.recv(timeout=max(0.05, end - time.monotonic())))
        except TimeoutError:
            return None
        if message.get("id") != sid:
            continue
        errors = message["payload"] if message["type"] == "error" else message.get("payload", {}).get("errors")
        if errors:
            return dict(errors[0]["extensions"])
    return None


def test_subscriptions_are_capped_per_key_and_per_server(runtime: Any, namespace: str) -> None:
    seed(Memory(runtime, namespace))
    settings = Settings(max_subscriptions=5, max_subscriptions_per_key=3, subscription_poll_s=0.2)
    with serving(create_app(runtime, keys=_keys(namespace, ["a", "b"]), settings=settings)) as port, \
            _socket(port, "a") as a, _socket(port, "b") as b:
        for i in range(3):
            _subscribe(a, f"a{i}", namespace)
        _subscribe(a, "a3", namespace)
        assert _refusal(a, "a3") == {"code": "LIMIT_EXCEEDED", "field": "subscriptions", "limit": 3}
        for i in range(2):
            _subscribe(b, f"b{i}", namespace)
        _subscribe(b, "b2", namespace)
        assert _refusal(b, "b2") == {"code": "LIMIT_EXCEEDED", "field": "subscriptions", "limit": 5}
        a.send(json.dumps({"id": "a0", "type": "complete"}))  # a slot given back is free again
        time.sleep(0.5)
        _subscribe(b, "b3", namespace)
        assert _refusal(b, "b3") is None


def _recall_s(http: httpx.Client, namespace: str, times: int = 7) -> float:
    took = []
    for _ in range(times):
        start = time.perf_counter()
        body = http.post("/graphql", json={"query": RECALL, "variables": {"ns": namespace}}).json()
        took.append(time.perf_counter() - start)
        assert "errors" not in body, body
    return statistics.median(took)


def test_a_subscription_flood_with_churn_does_not_starve_a_recall(runtime: Any, namespace: str) -> None:
    """4 keys × 16 subscriptions (the per-key cap) polling every 0.1 s on 8 sockets, one more key
    subscribing and completing in a loop, and 40 refused subscriptions: a recall stays within 2× its
    baseline (plus 0.25 s for a shared machine)."""
    seed(Memory(runtime, namespace))
    names = ["f0", "f1", "f2", "f3", "churn", "reader"]
    settings = Settings(subscription_poll_s=0.1)
    stop = threading.Event()
    with serving(create_app(runtime, keys=_keys(namespace, names), settings=settings)) as port, \
            httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                         headers={"authorization": "Bearer key-reader"}) as http:
        _recall_s(http, namespace, 3)  # warm
        baseline = _recall_s(http, namespace)
        with ExitStack() as stack:
            for n, name in enumerate(names[:4]):
                for half in range(2):
                    ws = stack.enter_context(_socket(port, name))
                    for i in range(8 + (5 if half else 0)):  # 16 open, 10 over the cap, per key
                        _subscribe(ws, f"{n}-{half}-{i}", namespace)

            def churn() -> None:
                with _socket(port, "churn") as ws:
                    i = 0
                    while not stop.is_set():
                        _subscribe(ws, f"c{i}", namespace)
                        time.sleep(0.01)
                        ws.send(json.dumps({"id": f"c{i}", "type": "complete"}))
                        i += 1

            churner = threading.Thread(target=churn, daemon=True)
            churner.start()
            time.sleep(1.0)
            flooded = _recall_s(http, namespace)
            stop.set()
            churner.join(timeout=10)
    print(f"recall median: baseline {baseline * 1000:.0f} ms, under the flood {flooded * 1000:.0f} ms")
    assert flooded <= 2 * baseline + 0.25, (baseline, flooded)
