"""What the HTTP/GraphQL layer adds to recall: the same queries in-process and over real HTTP.

Both paths run in one process against the same Neo4j and the same namespace of N claims: the
in-process `Memory.recall` (the floor) and a GraphQL `recall` through uvicorn on loopback with a
keep-alive client. Query embeddings are cached after the warm-up in both paths, so the
difference is the HTTP + GraphQL cost, not the model.

    python -m benchmarks.api_latency --claims 10000 --queries 200
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore
from palimpsest.api.memory import Memory
from palimpsest.api.runtime import Runtime
from palimpsest.graph.lifecycle.maintenance import drop_namespace

SUBJECTS = ["checkout-api", "payments-db", "search-index", "auth-gateway", "billing-worker", "cdn-edge",
            "orders-queue", "inventory-svc", "email-relay", "reporting-etl", "session-cache", "ml-ranker"]
ATTRS = [("p99 latency", "{} ms"), ("error rate", "{}.{} percent"), ("replica count", "{} replicas"),
         ("owner team", "team {}"), ("deploy region", "eu-west-{}"), ("cpu limit", "{} cores"),
         ("on-call engineer", "engineer #{}"), ("version", "v{}.{}")]
VERBS = ["is", "is now", "was measured at", "was set to", "stands at"]


def corpus(n: int, rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        subject = f"{rng.choice(SUBJECTS)}-{rng.randrange(60)}"
        attr, fmt = rng.choice(ATTRS)
        value = fmt.format(rng.randrange(1, 999), rng.randrange(10))
        row: dict[str, Any] = {"content": f"The {attr} of {subject} {rng.choice(VERBS)} {value}.",
                               "source": f"monitor-{rng.randrange(20)}"}
        if rng.random() < 0.2:
            row["claim_key"] = f"{subject}.{attr.replace(' ', '_')}"
        rows.append(row)
        del i
    return rows


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claims", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--namespace", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the namespace for a later run")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    ns = args.namespace or f"bench-api-{args.claims}-{args.seed}"
    rt = Runtime.from_env()
    mem = Memory(rt, ns)
    try:
        existing = mem.stats().claims_by_status
    except Exception:
        existing = {}
    t0 = time.perf_counter()
    if sum(existing.values()) < args.claims:
        rows = corpus(args.claims, rng)
        for start in range(0, len(rows), 1000):
            mem.ingest_many(rows[start:start + 1000])
    ingest_s = time.perf_counter() - t0
    queries = [f"what is the {rng.choice(ATTRS)[0]} of {rng.choice(SUBJECTS)}-{rng.randrange(60)}?"
               for _ in range(args.queries)]
    for q in queries:  # warm the embedding cache and the page cache
        mem.recall(q, k=args.k)

    inproc = []
    for q in queries:
        t = time.perf_counter()
        mem.recall(q, k=args.k)
        inproc.append((time.perf_counter() - t) * 1000)

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(rt, keys=KeyStore([])), host="127.0.0.1", port=port,
                                           log_level="error", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    gql = ("query($q: String!, $k: Int, $ns: String) { recall(query: $q, k: $k, namespace: $ns) { fingerprint "
           "storeRevision items { id content score rank freshness { decay } } hidden { superseded } } }")
    http = []
    same = 0
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        for q in queries[:10]:
            client.post("/graphql", json={"query": gql, "variables": {"q": q, "k": args.k, "ns": ns}})
        for q in queries:
            t = time.perf_counter()
            resp = client.post("/graphql", json={"query": gql, "variables": {"q": q, "k": args.k, "ns": ns}})
            http.append((time.perf_counter() - t) * 1000)
            fp = resp.json()["data"]["recall"]["fingerprint"]
            same += fp == mem.recall(q, k=args.k).fingerprint
    server.should_exit = True
    thread.join(timeout=10)
    result = {
        "claims": args.claims, "queries": args.queries, "k": args.k, "namespace": ns, "ingest_seconds": ingest_s,
        "in_process_ms": {"p50": pct(inproc, 0.5), "p95": pct(inproc, 0.95), "mean": statistics.fmean(inproc)},
        "http_ms": {"p50": pct(http, 0.5), "p95": pct(http, 0.95), "mean": statistics.fmean(http)},
        "http_same_fingerprint_rate": same / len(queries),
        "measured_at": datetime.now(UTC).isoformat(),
    }
    result["http_overhead_ms_p50"] = result["http_ms"]["p50"] - result["in_process_ms"]["p50"]
    print(f"\n| recall over {args.claims} claims (k={args.k}, {args.queries} queries) | p50 ms | p95 ms |")
    print("|---|---|---|")
    ip, hp = result["in_process_ms"], result["http_ms"]
    print(f"| in-process Memory.recall | {ip['p50']:.1f} | {ip['p95']:.1f} |")
    print(f"| GraphQL over HTTP (uvicorn, loopback) | {hp['p50']:.1f} | {hp['p95']:.1f} |")
    print(f"| ratio HTTP / in-process | {result['http_ms']['p50'] / result['in_process_ms']['p50']:.2f}x | "
          f"{result['http_ms']['p95'] / result['in_process_ms']['p95']:.2f}x |")
    print(f"\nsame fingerprint over HTTP and in-process: {result['http_same_fingerprint_rate']:.0%}")
    out = Path(__file__).parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "api-latency-latest.json").write_text(json.dumps(result, indent=2))
    if not args.keep:
        drop_namespace(rt.driver, ns)
    rt.close()
    return result


if __name__ == "__main__":
    run()
