"""Subscriptions against a recall: does a flood of `contradictions` subscriptions starve requests?

The attack of issue 45: sockets × subscriptions each, read keys only, plus a client that subscribes and
completes in a loop (churn), while a recall is timed. `flood` measures a recall's median before and
during; the guarantee is that it stays within 2× its baseline. With the caps (PALIMPSEST_MAX_SUBSCRIPTIONS
and _PER_KEY) most of a one-key flood is refused; spreading it over `keys` keys fills the server's cap.

Run on its own against an in-process server (no worker) on the configured Neo4j:

    python -m benchmarks.subscription_flood [--sockets 30] [--per-socket 100] [--keys 15]

`benchmarks.reliability --only subscription-flood` runs the same against `palimpsest serve`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect

SUBSCRIBE = "subscription($ns: String) { contradictions(namespace: $ns) { revision } }"
RECALL = ('query($ns: String) { recall(query: "Which service is down?", k: 8, namespace: $ns) '
          "{ items { id } } }")
SEED = ["The checkout-api service is healthy", "The checkout-api service is down",
        "Backups of the ledger go to bucket b-7", "The search cluster runs on three nodes"]


def keys_json(namespace: str, names: list[str]) -> str:
    from palimpsest.api.auth import hash_key

    return json.dumps([{"name": n, "sha256": hash_key(f"flood-{n}"), "namespaces": {namespace: ["read"]}}
                       for n in names])


def _socket(stack: ExitStack, port: int, name: str) -> ClientConnection:
    ws = stack.enter_context(connect(f"ws://127.0.0.1:{port}/graphql", subprotocols=["graphql-transport-ws"],
                                     additional_headers={"Authorization": f"Bearer flood-{name}"},
                                     open_timeout=60, max_queue=None))
    ws.send(json.dumps({"type": "connection_init"}))
    json.loads(ws.recv(timeout=60))
    return ws


def _drain(ws: ClientConnection, counts: dict[str, int], stop: threading.Event) -> None:
    """Count what the server answers on a socket (refusals), so its buffers never fill."""
    while not stop.is_set():
        try:
            message = json.loads(ws.recv(timeout=0.2))
        except TimeoutError:
            continue
        except Exception:
            return
        payload = message.get("payload")
        errors = payload if message.get("type") == "error" else (payload or {}).get("errors")
        if errors:
            code = errors[0].get("extensions", {}).get("code", "?")
            counts[code] = counts.get(code, 0) + 1


def _recalls(port: int, namespace: str, key: str, times: int) -> list[float]:
    took = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120,
                      headers={"authorization": f"Bearer flood-{key}"}) as http:
        for _ in range(times):
            start = time.perf_counter()
            body = http.post("/graphql", json={"query": RECALL, "variables": {"ns": namespace}}).json()
            took.append(time.perf_counter() - start)
            if "errors" in body:
                raise RuntimeError(f"recall failed: {body['errors']}")
    return took


def flood(port: int, namespace: str, *, sockets: int, per_socket: int, keys: int, churn: bool,
          recalls: int = 9) -> dict[str, Any]:
    """The recall's median before and under the flood, and how the subscriptions were answered."""
    _recalls(port, namespace, "reader", 3)  # warm
    baseline = _recalls(port, namespace, "reader", recalls)
    stop = threading.Event()
    counts: dict[str, int] = {}
    churned = [0]
    with ExitStack() as stack:
        started = time.perf_counter()
        for s in range(sockets):
            ws = _socket(stack, port, f"k{s % keys}")
            for i in range(per_socket):
                ws.send(json.dumps({"id": f"{s}-{i}", "type": "subscribe",
                                    "payload": {"query": SUBSCRIBE, "variables": {"ns": namespace}}}))
            threading.Thread(target=_drain, args=(ws, counts, stop), daemon=True).start()
        opened_s = time.perf_counter() - started

        def churner() -> None:
            with ExitStack() as own:
                ws = _socket(own, port, "churn")
                threading.Thread(target=_drain, args=(ws, counts, stop), daemon=True).start()
                while not stop.is_set():
                    sid = f"c{churned[0]}"
                    ws.send(json.dumps({"id": sid, "type": "subscribe",
                                        "payload": {"query": SUBSCRIBE, "variables": {"ns": namespace}}}))
                    time.sleep(0.005)
                    ws.send(json.dumps({"id": sid, "type": "complete"}))
                    churned[0] += 1

        thread = threading.Thread(target=churner, daemon=True) if churn else None
        if thread is not None:
            thread.start()
        time.sleep(2.0)
        flooded = _recalls(port, namespace, "reader", recalls)
        stop.set()
        if thread is not None:
            thread.join(timeout=30)
    base_ms, flood_ms = statistics.median(baseline) * 1000, statistics.median(flooded) * 1000
    return {"sockets": sockets, "per_socket": per_socket, "keys": keys, "subscribed": sockets * per_socket,
            "refused": counts, "churned": churned[0], "open_s": round(opened_s, 2),
            "recall_baseline_ms": round(base_ms, 1), "recall_under_flood_ms": round(flood_ms, 1),
            "recall_worst_under_flood_ms": round(max(flooded) * 1000, 1), "ratio": round(flood_ms / base_ms, 2),
            "load_average": os.getloadavg(), "held": flood_ms <= 2 * base_ms}


@contextmanager
def _serving(app: Any) -> Iterator[int]:
    """`app` under uvicorn with `palimpsest serve`'s settings, in a thread, on a free loopback port."""
    import uvicorn

    from palimpsest.api.app import server_config

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sockets", type=int, default=30)
    parser.add_argument("--per-socket", type=int, default=100)
    parser.add_argument("--keys", type=int, default=15, help="read keys the sockets are spread over")
    parser.add_argument("--no-churn", action="store_true")
    parser.add_argument("--recalls", type=int, default=9, help="timed recalls before and during the flood")
    args = parser.parse_args(argv)

    from palimpsest.api.app import create_app
    from palimpsest.api.auth import KeyStore
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.api.worker import run_once
    from palimpsest.graph.lifecycle.maintenance import drop_namespace
    rt = Runtime.from_env()
    namespace = f"bench-flood-{uuid.uuid4().hex[:6]}"
    try:
        Memory(rt, namespace).ingest_many([{"content": t, "source": f"s{i}"} for i, t in enumerate(SEED)])
        run_once(rt, namespace)
        names = [f"k{i}" for i in range(args.keys)] + ["churn", "reader"]
        keys = KeyStore.from_json(keys_json(namespace, names))
        with _serving(create_app(rt, keys=keys)) as port:
            out = flood(port, namespace, sockets=args.sockets, per_socket=args.per_socket, keys=args.keys,
                        churn=not args.no_churn, recalls=args.recalls)
        print(json.dumps(out, indent=2))
        return 0 if out["held"] else 1
    finally:
        drop_namespace(rt.driver, namespace)
        rt.close()


if __name__ == "__main__":
    raise SystemExit(main())
