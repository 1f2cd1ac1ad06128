"""The reliability suite's long runs: faults and load against a real Neo4j and a real `palimpsest serve`.

Scenarios (all by default; `--only a,b`), each reporting what it measured and whether the
guarantee held (docs/RELIABILITY.md lists the guarantees and the latest figures):

* `writers` — P processes write keyed and keyless claims on a few shared keys and retract some
  of their own, R rounds; after each round `check` (one visible version per key and instant,
  linear chains, gapless revisions …) and an audit (every acknowledged write stored once).
* `neo4j-kill` — C clients ingest with retries while Neo4j is killed with SIGKILL twice and
  restarted; a probe recalls through the Python face and over HTTP (`palimpsest serve`) during
  the outages and records how long each failed request took to answer, and with what code.
* `bolt-proxy` — C clients write through a proxy that loses every n-th COMMIT reply
  (benchmarks/bolt_proxy.py); lost/duplicated writes, `check`.
* `worker-kill` — the same claims into two namespaces; one is projected cleanly, the other by a
  `palimpsest worker` process killed with SIGKILL mid-pass K times and then finished; the two
  graphs (CONTRADICTS, SUPERSEDES, MENTIONS, entities, facts) must be identical.
* `hostile` — the hostile HTTP and GraphQL corpora (benchmarks/hostile_http.py,
  benchmarks/hostile_graphql.py) against `palimpsest serve` with an API key and its default
  timeouts: HTTP 5xx, errors without a code, answers other than expected, the slowest answer,
  and the n=30 fragment chain's refusal time.
* `import-poisoning` — a real export edited one record at a time (benchmarks/import_poisons.py): each
  poisoned file must be refused with BAD_INPUT naming its line and field and leave nothing behind; a
  forged term list is accepted with its terms recomputed; an import whose database goes away between
  staging and switch-in is retried into the still-empty namespace. Then `check` and a recall.
* `subscription-flood` — sockets × `contradictions` subscriptions by read keys, plus a client
  subscribing and completing in a loop, against `palimpsest serve`; a recall's median must stay
  within 2× its baseline (benchmarks/subscription_flood.py).
* `load` — a fixed-rate open-loop run of mixed recall/ingest against `palimpsest serve` on
  loopback: throughput, p50/p99 per operation, errors, and the server's resident memory.

The scenarios run on a Neo4j of their own that this module starts with the local launcher on
`--bolt-port` (default 7697; `neo4j-kill` kills it, so it must never be the shared one). Every
namespace starts with `--namespace-prefix`, so runs can share that server too.

    python -m benchmarks.reliability [--only writers,load] [--load-seconds 300] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import httpx

from benchmarks.ledger import Ledger, audit, claim_item, ingest_until_done, retract_until_done

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "benchmarks" / "data" / "agent_memory_pairs.jsonl"
SCENARIOS = ("writers", "neo4j-kill", "bolt-proxy", "worker-kill", "hostile", "import-poisoning", "load",
             "subscription-flood")
API_KEY = "reliability-run-key"


# ----------------------------------------------------------------------------------------- plumbing
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _rss_mib(pid: int) -> float:
    """Resident memory of a process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _runtime() -> Any:
    from palimpsest.api.runtime import Runtime

    return Runtime.from_env()


def _check(rt: Any, namespace: str) -> dict[str, Any]:
    from palimpsest.api.memory import Memory

    report = Memory(rt, namespace).check()
    return {"ok": report.ok, "violations": dict(report.violation_counts), "claims": report.claims,
            "revision": report.revision}


@contextmanager
def serve(env: dict[str, str], *, worker: bool = False, keys: str | None = None) -> Iterator[tuple[int, int]]:
    """`palimpsest serve` on a free loopback port as a child process; yields (port, pid)."""
    port = _free_port()
    child_env = {**os.environ, **env}
    if keys is not None:
        child_env["PALIMPSEST_API_KEYS"] = keys
    cmd = [sys.executable, "-m", "palimpsest.api.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
           "--worker" if worker else "--no-worker"]
    proc = subprocess.Popen(cmd, env=child_env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"palimpsest serve exited with {proc.returncode}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("palimpsest serve did not answer /health in 180 s")
            time.sleep(0.5)
        yield port, proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _gql(client: httpx.Client, port: int, query: str, variables: dict[str, Any] | None = None, *,
         key: str | None = None, timeout: float = 60.0) -> tuple[int, dict[str, Any], float]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    headers["Content-Type"] = "application/json"
    # json.dumps escapes a lone surrogate ("\\ud800"), as a client's JSON library would send it.
    body_bytes = json.dumps({"query": query, "variables": variables or {}}).encode()
    start = time.perf_counter()
    resp = client.post(f"http://127.0.0.1:{port}/graphql", content=body_bytes, headers=headers, timeout=timeout)
    elapsed = time.perf_counter() - start
    try:
        body = resp.json()
    except ValueError:
        body = {"raw": resp.text[:200]}
    return resp.status_code, body, elapsed


def _codes(body: dict[str, Any]) -> list[str | None]:
    return [(e.get("extensions") or {}).get("code") for e in body.get("errors") or []]


# ---------------------------------------------------------------------------------------- writers
_WRITER: Any = None


def _writer_init() -> None:
    global _WRITER
    _WRITER = _runtime()


def _writer_task(job: tuple[str, int, int, int, int, float]) -> dict[str, Any]:
    """One process's round: `writes` claims (70% on the shared keys), retracting some of its own."""
    from palimpsest.api.memory import Memory

    namespace, rnd, proc, writes, keys, retract_share = job
    mem = Memory(_WRITER, namespace)
    rng = random.Random(f"{namespace}-{rnd}-{proc}")
    ledger = Ledger()
    retracted = 0
    n = 0
    while n < writes:
        size = min(writes - n, rng.choice((1, 1, 2, 3)))
        items = [claim_item(f"r{rnd}-p{proc}-{n + j}", value=rng.randrange(10_000),
                            key=f"shared-{rng.randrange(keys)}" if rng.random() < 0.7 else None) for j in range(size)]
        n += size
        assert ingest_until_done(mem, items, ledger)
        mem.claims(first=1)  # reads interleaved with the writes
        if rng.random() < retract_share:
            found = mem.rt.driver.execute_query(
                "MATCH (c:Claim {namespace: $ns}) WHERE c.status <> 'retracted' AND c.content CONTAINS $mark "
                "RETURN c.id AS id ORDER BY c.revision DESC LIMIT 3",
                ns=namespace, mark=f"[w:r{rnd}-p{proc}-", database_=mem._db).records
            if found:
                retracted += retract_until_done(mem, str(rng.choice(found)["id"]), ledger)
    return {**ledger.as_dict(), "acknowledged": sorted(ledger.acknowledged), "retracted": retracted}


def scenario_writers(rt: Any, prefix: str, args: argparse.Namespace) -> dict[str, Any]:
    namespace = f"{prefix}writers-{uuid.uuid4().hex[:6]}"
    ledger = Ledger()
    rounds: list[dict[str, Any]] = []
    ctx = mp.get_context("spawn")
    started = time.perf_counter()
    with ctx.Pool(args.writers, initializer=_writer_init) as pool:
        for rnd in range(args.rounds):
            jobs = [(namespace, rnd, p, args.writes, args.keys, 0.1) for p in range(args.writers)]
            t0 = time.perf_counter()
            results = pool.map(_writer_task, jobs)
            for r in results:
                ledger.acknowledged.update(r["acknowledged"])
                ledger.retries += r["retries"]
                for code, count in r["errors"].items():
                    ledger.errors[code] += count
            check = _check(rt, namespace)
            found = audit(rt.driver, namespace, ledger)
            rounds.append({"round": rnd, "seconds": round(time.perf_counter() - t0, 1),
                           "retracted": sum(r["retracted"] for r in results), "check_ok": check["ok"],
                           "violations": check["violations"], "revision": check["revision"], **found.as_dict()})
    held = all(r["check_ok"] and r["lost"] == 0 and r["duplicated"] == 0 for r in rounds)
    return {"namespace": namespace, "processes": args.writers, "rounds": rounds, "keys": args.keys,
            "writes_per_process_round": args.writes, "client": ledger.as_dict(),
            "seconds": round(time.perf_counter() - started, 1), "held": held}


# ------------------------------------------------------------------------------------- neo4j-kill
def _probe(stop: threading.Event, port: int, namespace: str, mem: Any, deadline_s: float) -> dict[str, Any]:
    """Recall every 0.5 s through both faces; record each failure's code and how long it took.

    The Python face runs without a deadline unless the caller sets one (graph/db/deadline.py); the
    probe sets the documented `within(deadline_s)`, as a caller that must answer in time would."""
    from palimpsest.graph.db.deadline import within
    from palimpsest.schema.errors import PalimpsestError

    seen: dict[str, Any] = {"python": [], "http": []}
    query = "query($ns: String) { recall(query: \"units\", namespace: $ns, k: 3) { storeRevision } }"
    with httpx.Client() as client:
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                with within(deadline_s):
                    mem.recall("units", k=3)
                seen["python"].append(("ok", time.perf_counter() - t0))
            except PalimpsestError as exc:
                seen["python"].append((exc.code, time.perf_counter() - t0))
            try:
                status, body, elapsed = _gql(client, port, query, {"ns": namespace}, timeout=90)
                code = "ok" if not body.get("errors") else str(_codes(body)[0])
                seen["http"].append((f"{status}:{code}", elapsed))
            except httpx.HTTPError as exc:
                seen["http"].append((f"transport:{type(exc).__name__}", time.perf_counter() - t0))
            stop.wait(0.5)
    out: dict[str, Any] = {}
    for face, rows in seen.items():
        failed = [s for c, s in rows if not c.endswith("ok")]
        out[face] = {"requests": len(rows), "failed": len(failed),
                     "codes": dict(sorted({c: sum(1 for x, _ in rows if x == c) for c, _ in rows}.items())),
                     "slowest_failure_s": round(max(failed, default=0.0), 2),
                     "http_5xx": sum(1 for c, _ in rows if c[:1] == "5")}
    return out


def scenario_neo4j_kill(rt: Any, prefix: str, args: argparse.Namespace, cfg: Any) -> dict[str, Any]:
    from palimpsest.api.memory import Memory
    from palimpsest.graph.db import local_server as server

    namespace = f"{prefix}kill-{uuid.uuid4().hex[:6]}"
    mem = Memory(rt, namespace)
    ledger = Ledger()
    outages: list[dict[str, float]] = []
    done = threading.Event()

    def client(i: int) -> None:
        for b in range(args.kill_batches):
            items = [claim_item(f"k{i}-b{b}-{j}", key=f"shared-{(i + j) % 5}" if j % 2 else None,
                                value=100 * b + j) for j in range(5)]
            ingest_until_done(mem, items, ledger, attempts=2000, pause_s=0.5)

    def killer() -> None:
        start = time.monotonic()
        for at in (6.0, 30.0):
            while time.monotonic() - start < at and not done.is_set():
                time.sleep(0.1)
            if done.is_set():
                return
            pid = int(cfg.pid_file.read_text())
            t0 = time.monotonic()
            os.kill(pid, signal.SIGKILL)
            while server._pid_alive(pid):
                time.sleep(0.05)
            time.sleep(2.0)
            server.start(cfg)
            outages.append({"at_s": round(t0 - start, 1), "down_s": round(time.monotonic() - t0, 1)})

    mem.ingest("The probe's own claim: 1 unit [w:probe]", source="probe")  # the namespace exists before the outage
    with serve({}) as (port, _):
        stop = threading.Event()
        probe_result: dict[str, Any] = {}
        probe = threading.Thread(target=lambda: probe_result.update(
            _probe(stop, port, namespace, mem, args.python_deadline)))
        probe.start()
        kill_thread = threading.Thread(target=killer)
        kill_thread.start()
        started = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(client, range(args.clients)))
        done.set()
        kill_thread.join()
        elapsed = time.perf_counter() - started
        stop.set()
        probe.join()
    found = audit(rt.driver, namespace, ledger)
    check = _check(rt, namespace)
    held = (found.lost == [] and found.duplicated == [] and check["ok"] and len(outages) == 2
            and not ledger.abandoned and probe_result["http"]["http_5xx"] == 0
            and set(probe_result["python"]["codes"]) <= {"ok", "UNAVAILABLE", "TIMEOUT"}
            and probe_result["python"]["slowest_failure_s"] <= args.python_deadline + rt.settings.connect_s + 1.0
            and probe_result["http"]["slowest_failure_s"] <= 31.0
            and all(c.split(":")[1] in {"ok", "UNAVAILABLE", "TIMEOUT"} for c in probe_result["http"]["codes"]))
    return {"namespace": namespace, "clients": args.clients, "claims": args.clients * args.kill_batches * 5,
            "python_deadline_s": args.python_deadline, "connect_timeout_s": rt.settings.connect_s,
            "http_deadline_s": 30.0,
            "outages": outages, "seconds": round(elapsed, 1), "client": ledger.as_dict(), "audit": found.as_dict(),
            "check": check, "probe": probe_result, "held": held}


# ------------------------------------------------------------------------------------- bolt-proxy
def scenario_bolt_proxy(rt: Any, prefix: str, args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.bolt_proxy import CommitDroppingProxy
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.graph.db.connection import build_driver

    namespace = f"{prefix}proxy-{uuid.uuid4().hex[:6]}"
    ledger = Ledger()
    port = int(rt.settings.uri.rsplit(":", 1)[1])
    with CommitDroppingProxy("127.0.0.1", port, drop_every=args.drop_every) as proxy:
        settings = replace(rt.settings, uri=proxy.uri)
        proxied = Runtime(settings, build_driver(settings), rt.embedder, rt.schema_version)
        mem = Memory(proxied, namespace)

        def client(i: int) -> None:
            for b in range(args.proxy_batches):
                items = [claim_item(f"p{i}-b{b}-{j}", key=f"shared-{(i + b + j) % 4}" if j == 0 else None,
                                    value=10 * b + j) for j in range(3)]
                assert ingest_until_done(mem, items, ledger)

        started = time.perf_counter()
        try:
            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(client, range(args.clients)))
        finally:
            proxied.close()
        elapsed = time.perf_counter() - started
    found = audit(rt.driver, namespace, ledger)
    check = _check(rt, namespace)
    stats = {"connections": proxy.stats.connections, "commits": proxy.stats.commits,
             "dropped_replies": proxy.stats.dropped_replies}
    held = found.lost == [] and found.duplicated == [] and check["ok"] and proxy.stats.dropped_replies > 0
    return {"namespace": namespace, "drop_every": args.drop_every, "clients": args.clients,
            "claims": args.clients * args.proxy_batches * 3, "proxy": stats, "seconds": round(elapsed, 1),
            "client": ledger.as_dict(), "audit": found.as_dict(), "check": check, "held": held}


# ------------------------------------------------------------------------------------ import-poisoning
_FORGED = "forged terms (accepted)"
_OUTAGE = "outage between staging and switch-in, then retry"


def _poison_source(mem: Any) -> None:
    """What the poisons edit: keyed versions, a registered default policy, a retraction, an erasure."""
    mem.ingest("The payments API keeps its data on db-7.", "runbook", claim_key="payments.db")
    mem.ingest("The payments API moved its data to db-9.", "incident", claim_key="payments.db")
    mem.ingest_many([{"content": f"Service {i} runs {i + 2} replicas.", "source": "capacity"} for i in range(20)])
    mem.register_policy({"version": "poison-k2", "k": 2})
    mem.set_default_policy("poison-k2")
    leak = mem.ingest("The deploy token is tok-991.", "chat")
    mem.run_projections()
    mem.erase([leak.id or ""], reason="a token was pasted")
    mem.ingest("The checkout service runs 3 replicas.", "dashboard")


def scenario_import_poisoning(rt: Any, prefix: str, args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.import_poisons import FORGED_TERMS, POISONS, Outage
    from palimpsest.api.memory import Memory
    from palimpsest.graph.lifecycle import importer
    from palimpsest.graph.lifecycle.maintenance import drop_namespace
    from palimpsest.schema.errors import PalimpsestError

    source = Memory(rt, f"{prefix}poison-src-{uuid.uuid4().hex[:6]}")
    _poison_source(source)
    lines = list(source.export_lines())
    question = "where does the payments service keep its data?"
    cases: dict[str, Any] = {}
    started = time.perf_counter()
    for name, (edit, field) in sorted(POISONS.items()):
        bad, line = edit(lines)
        target = f"{prefix}poison-{uuid.uuid4().hex[:8]}"
        t0 = time.perf_counter()
        answer: dict[str, Any]
        try:
            Memory(rt, target).import_lines(bad, remap=True)
            answer = {"code": "ACCEPTED"}
        except PalimpsestError as exc:
            answer = exc.to_dict()
        except Exception as exc:  # an untyped error is what this scenario exists to catch
            answer = {"code": f"untyped {type(exc).__name__}", "message": str(exc)[:200]}
        left, _, _ = rt.driver.execute_query(
            "MATCH (n) WHERE n.namespace = $ns OR n.namespace STARTS WITH $staging RETURN count(n) AS n",
            ns=target, staging=importer.staging_prefix(target))
        held = (answer.get("code"), answer.get("field"), answer.get("limit")) == ("BAD_INPUT", field, line) \
            and int(left[0]["n"]) == 0
        cases[name] = {"answer": answer, "expected_field": field, "line": line, "nodes_left": int(left[0]["n"]),
                       "seconds": round(time.perf_counter() - t0, 2), "held": held}
        drop_namespace(rt.driver, target)

    forged_ns = f"{prefix}poison-terms-{uuid.uuid4().hex[:6]}"
    forged = Memory(rt, forged_ns)
    forged.import_lines(FORGED_TERMS(lines)[0], remap=True)
    packet = forged.recall("zebra quantum saxophone")
    cases[_FORGED] = {
        "check_ok": forged.check().ok, "lexical_hits": sum(1 for item in packet.items if item.lexical_score),
        "held": forged.check().ok and not any(item.lexical_score for item in packet.items)}
    drop_namespace(rt.driver, forged_ns)

    outage_ns = f"{prefix}poison-outage-{uuid.uuid4().hex[:6]}"
    outage = Outage(rt.driver)
    finish = importer._Importer.finish

    def finish_then_outage(self: Any, last_line: int) -> None:
        finish(self, last_line)
        outage.down = True

    importer._Importer.finish = finish_then_outage  # type: ignore[method-assign]
    first: dict[str, Any]
    try:
        importer.import_records(cast(Any, outage), outage_ns, lines, remap=True, embedding_model=rt.embedder.model_name,
                                embedding_dimension=rt.embedder.dimension)
        first = {"code": "ACCEPTED"}
    except PalimpsestError as exc:
        first = exc.to_dict()
    finally:
        importer._Importer.finish = finish  # type: ignore[method-assign]
    retry = Memory(rt, outage_ns).import_lines(lines, remap=True)
    top = Memory(rt, outage_ns).recall(question, k=1).items
    check = _check(rt, outage_ns)
    cases[_OUTAGE] = {
        "first": first, "cleared_staging": retry.cleared_staging, "check": check,
        "recall": top[0].content if top else None,
        "held": first.get("code") == "UNAVAILABLE" and retry.cleared_staging > 0 and check["ok"]
        and bool(top) and top[0].content == "The payments API moved its data to db-9."}
    drop_namespace(rt.driver, outage_ns)
    drop_namespace(rt.driver, source.namespace)
    return {"cases": cases, "poisons": len(POISONS), "seconds": round(time.perf_counter() - started, 1),
            "held": all(c["held"] for c in cases.values())}


# ------------------------------------------------------------------------------------ worker-kill
def labelled_pairs(limit: int) -> list[tuple[str, str, str]]:
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(13)
    rng.shuffle(rows)
    return [(r["id"], r["a"], r["b"]) for r in rows[:limit]]


def _store_seq(rt: Any, namespace: str) -> tuple[int, int]:
    rec = rt.driver.execute_query(
        "MATCH (s:Store {namespace: $ns}) RETURN s.revision AS rev, coalesce(s.projections_seq, 0) AS seq",
        ns=namespace, database_=rt.settings.database).records
    return (int(rec[0]["rev"]), int(rec[0]["seq"])) if rec else (0, 0)


def derived_graph(rt: Any, namespace: str) -> dict[str, list[Any]]:
    """Everything the worker derives, keyed by content (ids differ between namespaces)."""
    queries = {
        "contradicts": "MATCH (a:Claim {namespace: $ns})-[r:CONTRADICTS]->(b:Claim) "
                       "RETURN [a.content, b.content, r.method, round(r.score, 6)] AS row",
        "supersedes": "MATCH (a:Claim {namespace: $ns})-[r:SUPERSEDES]->(b:Claim) "
                      "RETURN [a.content, b.content, coalesce(r.kind, ''), r.confidence] AS row",
        "mentions": "MATCH (c:Claim {namespace: $ns})-[:MENTIONS]->(e) RETURN [c.content, e.name] AS row",
        "entities": "MATCH (e:Entity {namespace: $ns}) RETURN [e.name, coalesce(e.type, ''), e.revision] AS row",
        "facts": "MATCH (f:Fact {namespace: $ns}) "
                 "RETURN [f.subject, f.predicate, toString(f.object), f.confidence, f.supports, f.status] AS row",
    }
    out: dict[str, list[Any]] = {}
    for name, cypher in queries.items():
        records = rt.driver.execute_query(cypher, ns=namespace, database_=rt.settings.database).records
        out[name] = sorted(json.dumps(r["row"]) for r in records)
    return out


def project_fully(rt: Any, namespace: str, batch: int) -> int:
    from palimpsest.api.worker import WorkerConfig, run_once

    passes = 0
    while True:
        rev, seq = _store_seq(rt, namespace)
        if seq >= rev:
            return passes
        run_once(rt, namespace, WorkerConfig(batch_claims=batch))
        passes += 1


def scenario_worker_kill(rt: Any, prefix: str, args: argparse.Namespace) -> dict[str, Any]:
    from palimpsest.api.memory import Memory

    tag = uuid.uuid4().hex[:6]
    clean, crash = f"{prefix}wk-clean-{tag}", f"{prefix}wk-crash-{tag}"
    claims = [(pid, text) for pid, a, b in labelled_pairs(args.pairs) for text in (a, b)]
    for ns in (clean, crash):
        mem = Memory(rt, ns)
        for start in range(0, len(claims), 10):
            mem.ingest_many([{"content": text, "source": f"pairs:{pid}"} for pid, text in claims[start:start + 10]])
    t0 = time.perf_counter()
    project_fully(rt, clean, args.worker_batch)
    clean_s = time.perf_counter() - t0
    rng = random.Random(7)
    kills: list[int] = []
    cmd = [sys.executable, "-m", "palimpsest.api.cli", "worker", "-n", crash, "--interval", "0.05",
           "--batch", str(args.worker_batch)]
    t0 = time.perf_counter()
    for _ in range(args.kills):
        rev, seq0 = _store_seq(rt, crash)
        if seq0 >= rev:
            break
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while _store_seq(rt, crash)[1] == seq0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.0))  # somewhere inside a later batch
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills.append(_store_seq(rt, crash)[1])
    passes = project_fully(rt, crash, args.worker_batch)
    crash_s = time.perf_counter() - t0
    a, b = derived_graph(rt, clean), derived_graph(rt, crash)
    diff = {k: {"clean": len(a[k]), "crashed": len(b[k]), "only_clean": len(set(a[k]) - set(b[k])),
                "only_crashed": len(set(b[k]) - set(a[k]))} for k in a}
    check = _check(rt, crash)
    held = all(v["only_clean"] == 0 and v["only_crashed"] == 0 for v in diff.values()) and check["ok"]
    return {"namespaces": [clean, crash], "claims": len(claims), "batch": args.worker_batch, "kills": len(kills),
            "seq_at_kills": kills, "finishing_passes": passes, "clean_s": round(clean_s, 1),
            "crashed_s": round(crash_s, 1), "derived": diff, "check": check, "held": held}


# ---------------------------------------------------------------------------------------- hostile
def scenario_hostile(rt: Any, prefix: str, args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks import hostile_graphql, hostile_http
    from palimpsest.api.auth import hash_key

    namespace = f"{prefix}hostile-{uuid.uuid4().hex[:6]}"
    keys = json.dumps([{"name": "bench", "sha256": hash_key(API_KEY), "namespaces": {namespace: ["read", "write"]}}])
    rows: list[dict[str, Any]] = []
    with serve({}, keys=keys) as (port, pid), httpx.Client() as client:
        rss0 = _rss_mib(pid)
        auth = {"Authorization": f"Bearer {API_KEY}"}
        for case in hostile_http.CASES:
            answer = hostile_http.send_raw(case, "127.0.0.1", port, extra=auth, timeout=120)
            rows.append({"corpus": "http", "case": case.name, "status": answer.status, "code": answer.code(),
                         "expected": (answer.status, answer.code()) == (case.status, case.code),
                         "seconds": round(answer.seconds, 3)})
        for gcase in hostile_graphql.cases(namespace):
            status, body, elapsed = _gql(client, port, gcase.query, gcase.variables, key=API_KEY)
            found = _codes(body)
            rows.append({"corpus": "graphql", "case": gcase.name, "status": status,
                         "code": found[0] if found else None,
                         "expected": status < 500 and bool(found) and None not in found and "INTERNAL" not in found
                         and gcase.code in found, "seconds": round(elapsed, 3)})
        chain: list[float] = []
        health: list[float] = []
        for _ in range(5):
            status, body, elapsed = _gql(client, port, hostile_graphql.fragment_chain(30, namespace), key=API_KEY)
            assert _codes(body) == ["LIMIT_EXCEEDED"], body
            chain.append(elapsed)
            t0 = time.perf_counter()
            client.get(f"http://127.0.0.1:{port}/health", timeout=10)
            health.append(time.perf_counter() - t0)
        alive = client.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200
        rss1 = _rss_mib(pid)
    server_errors = sum(1 for r in rows if r["status"] >= 500)
    uncoded = sum(1 for r in rows if r["status"] >= 400 and r["code"] is None and r["corpus"] == "http")
    uncoded += sum(1 for r in rows if r["corpus"] == "graphql" and r["code"] is None)
    unexpected = [r["case"] for r in rows if not r["expected"]]
    slowest = max(rows, key=lambda r: r["seconds"])
    return {"cases": len(rows), "http_5xx": server_errors, "uncoded": uncoded, "unexpected": unexpected,
            "slowest_case": {"case": slowest["case"], "seconds": slowest["seconds"]},
            "fragment_chain_30_ms": {"best": round(min(chain) * 1000, 1), "worst": round(max(chain) * 1000, 1)},
            "health_after_chain_ms": round(max(health) * 1000, 1), "alive_after": alive,
            "server_rss_mib": [round(rss0), round(rss1)], "rows": rows,
            "held": server_errors == 0 and uncoded == 0 and not unexpected and alive and min(chain) < 0.1}


# ----------------------------------------------------------------------------- subscription flood
def scenario_subscription_flood(rt: Any, prefix: str, args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks import subscription_flood as sf
    from palimpsest.api.memory import Memory
    from palimpsest.api.worker import run_once

    namespace = f"{prefix}flood-{uuid.uuid4().hex[:6]}"
    Memory(rt, namespace).ingest_many([{"content": t, "source": f"s{i}"} for i, t in enumerate(sf.SEED)])
    run_once(rt, namespace)
    names = [f"k{i}" for i in range(args.flood_keys)] + ["churn", "reader"]
    with serve({}, keys=sf.keys_json(namespace, names)) as (port, _pid):
        return sf.flood(port, namespace, sockets=args.flood_sockets, per_socket=args.flood_per_socket,
                        keys=args.flood_keys, churn=True)


# ------------------------------------------------------------------------------------------- load
def scenario_load(rt: Any, prefix: str, args: argparse.Namespace) -> dict[str, Any]:
    from palimpsest.api.auth import hash_key
    from palimpsest.api.memory import Memory

    namespace = f"{prefix}load-{uuid.uuid4().hex[:6]}"
    seed = labelled_pairs(args.load_seed_claims // 2)
    mem = Memory(rt, namespace)
    texts = [t for _, a, b in seed for t in (a, b)]
    for first in range(0, len(texts), 100):
        mem.ingest_many([{"content": t, "source": "load-seed"} for t in texts[first:first + 100]])
    queries = [a for _, a, _ in seed]
    keys = json.dumps([{"name": "load", "sha256": hash_key(API_KEY), "namespaces": {namespace: ["read", "write"]}}])
    recall_q = ("query($q: String!, $ns: String) { recall(query: $q, namespace: $ns, k: 8) "
                "{ fingerprint items { id } } }")
    ingest_q = ("mutation($i: ClaimInput!, $ns: String) { ingest(input: $i, namespace: $ns) "
                "{ revision items { ok } } }")
    latencies: dict[str, list[float]] = {"recall": [], "ingest": []}
    errors: list[str] = []
    lock = threading.Lock()
    rng = random.Random(42)
    rss: list[tuple[float, float]] = []
    # A pooled connection must be dropped by the client before the server's keep-alive timeout
    # (uvicorn: 5 s) closes it, or a request sent as it closes fails (httpx ReadError): the
    # HTTP/1.1 keep-alive race, which a client avoids with a shorter expiry.
    with serve({}, worker=True, keys=keys) as (port, pid), httpx.Client(limits=httpx.Limits(
            max_connections=64, max_keepalive_connections=64, keepalive_expiry=2.0)) as client:

        def one(op: str, n: int) -> None:
            variables: dict[str, Any]
            if op == "recall":
                query, variables = recall_q, {"q": queries[n % len(queries)], "ns": namespace}
            else:
                query, variables = ingest_q, {"ns": namespace, "i": {
                    "content": f"Load run note {n}: the queue depth of worker-{n % 17} is {n % 97} jobs",
                    "source": "load", "idempotencyKey": f"load-{n}"}}
            try:
                status, body, elapsed = _gql(client, port, query, variables, key=API_KEY, timeout=30)
                problem = f"{status}:{_codes(body)}" if status != 200 or body.get("errors") else None
            except httpx.HTTPError as exc:
                problem, elapsed = f"transport:{type(exc).__name__}", 30.0
            with lock:
                latencies[op].append(elapsed)
                if problem:
                    errors.append(problem)

        # Warm-up (model load, caches) before the clock starts.
        for n in range(10):
            one("recall", n)
        for kept in latencies.values():
            kept.clear()
        errors.clear()
        interval = 1.0 / args.load_rate
        clock = time.perf_counter()
        sent = 0
        next_rss = clock
        with ThreadPoolExecutor(64) as pool:
            while (now := time.perf_counter()) - clock < args.load_seconds:
                due = clock + sent * interval
                if now < due:
                    time.sleep(min(due - now, 0.05))
                    continue
                op = "ingest" if rng.random() < args.load_ingest_share else "recall"
                pool.submit(one, op, sent)
                sent += 1
                if now >= next_rss:
                    rss.append((round(now - clock, 1), round(_rss_mib(pid), 1)))
                    next_rss = now + 10
        run_s = time.perf_counter() - clock
        rss.append((round(run_s, 1), round(_rss_mib(pid), 1)))
    done = sum(len(v) for v in latencies.values())
    ops = {op: {"count": len(v), "p50_ms": round(_pct(v, 0.5) * 1000, 1), "p99_ms": round(_pct(v, 0.99) * 1000, 1),
                "mean_ms": round(statistics.fmean(v) * 1000, 1) if v else 0.0} for op, v in latencies.items()}
    growth = rss[-1][1] - rss[min(1, len(rss) - 1)][1]
    return {"namespace": namespace, "seed_claims": len(texts), "rate_per_s": args.load_rate,
            "ingest_share": args.load_ingest_share, "seconds": round(run_s, 1), "sent": sent, "completed": done,
            "throughput_per_s": round(done / run_s, 2), "ops": ops, "errors": len(errors),
            "error_examples": sorted(set(errors))[:5], "server_rss_mib": rss,
            "rss_growth_after_first_10s_mib": round(growth, 1), "held": not errors and done == sent}


# ------------------------------------------------------------------------------------------- main
def _relative(path: Path) -> str:
    """`path` as recorded in results: relative to the repository when inside it (no machine paths)."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else path.name


def _table(results: dict[str, Any]) -> str:
    lines = ["| scenario | what was measured | held |", "|---|---|---|"]
    summaries: dict[str, Callable[[dict[str, Any]], str]] = {
        "writers": lambda r: (f"{r['processes']} processes × {len(r['rounds'])} rounds × "
                              f"{r['writes_per_process_round']} writes on {r['keys']} keys: violations "
                              f"{sum(sum(x['violations'].values()) for x in r['rounds'])}, lost "
                              f"{sum(x['lost'] for x in r['rounds'])}, duplicated "
                              f"{sum(x['duplicated'] for x in r['rounds'])}, final revision "
                              f"{r['rounds'][-1]['revision']}"),
        "neo4j-kill": lambda r: (f"{r['clients']} clients, {r['claims']} claims, {len(r['outages'])} kills "
                                 f"(down {', '.join(str(o['down_s']) for o in r['outages'])} s): lost "
                                 f"{r['audit']['lost']}, duplicated {r['audit']['duplicated']}, retries "
                                 f"{r['client']['retries']}; slowest failed request python "
                                 f"{r['probe']['python']['slowest_failure_s']} s / http "
                                 f"{r['probe']['http']['slowest_failure_s']} s, http 5xx "
                                 f"{r['probe']['http']['http_5xx']}"),
        "bolt-proxy": lambda r: (f"{r['clients']} clients, {r['claims']} claims, {r['proxy']['dropped_replies']} of "
                                 f"{r['proxy']['commits']} commit replies lost: lost {r['audit']['lost']}, "
                                 f"duplicated {r['audit']['duplicated']}, duplicate answers "
                                 f"{r['client']['duplicate_answers']}"),
        "worker-kill": lambda r: (f"{r['claims']} claims, {r['kills']} kill -9s mid-pass: "
                                  + ", ".join(f"{k} {v['crashed']}/{v['clean']}" for k, v in r["derived"].items())
                                  + " (crashed/clean), differences "
                                  + str(sum(v["only_clean"] + v["only_crashed"] for v in r["derived"].values()))),
        "hostile": lambda r: (f"{r['cases']} cases: 5xx {r['http_5xx']}, uncoded {r['uncoded']}, not as expected "
                              f"{len(r['unexpected'])}; n=30 chain refused in {r['fragment_chain_30_ms']['best']} ms "
                              f"(worst {r['fragment_chain_30_ms']['worst']}); slowest {r['slowest_case']['case']} "
                              f"{r['slowest_case']['seconds']} s"),
        "import-poisoning": lambda r: (f"{sum(c['held'] for n, c in r['cases'].items() if n not in (_FORGED, _OUTAGE))}"
                                       f" of {r['poisons']} poisoned files refused naming line and field, nothing "
                                       "left; forged terms "
                                       f"{'neutralised' if r['cases'][_FORGED]['held'] else 'KEPT'}; "
                                       "outage then retry "
                                       f"{'imported' if r['cases'][_OUTAGE]['held'] else 'FAILED'}"),
        "load": lambda r: (f"{r['seconds']} s at {r['rate_per_s']}/s: {r['completed']} requests, "
                           f"{r['throughput_per_s']}/s, recall p50/p99 {r['ops']['recall']['p50_ms']}/"
                           f"{r['ops']['recall']['p99_ms']} ms, ingest p50/p99 {r['ops']['ingest']['p50_ms']}/"
                           f"{r['ops']['ingest']['p99_ms']} ms, errors {r['errors']}, RSS "
                           f"{r['server_rss_mib'][0][1]}→{r['server_rss_mib'][-1][1]} MiB"),
        "subscription-flood": lambda r: (f"{r['sockets']} sockets × {r['per_socket']} subscriptions over {r['keys']} "
                                         f"read keys, {r['churned']} churned: refused {r['refused']}; recall median "
                                         f"{r['recall_baseline_ms']} → {r['recall_under_flood_ms']} ms "
                                         f"(×{r['ratio']})"),
    }
    for name, r in results.items():
        if name in summaries:
            lines.append(f"| {name} | {summaries[name](r)} | {'yes' if r['held'] else 'NO'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(SCENARIOS), help=f"comma-separated subset of {SCENARIOS}")
    parser.add_argument("--bolt-port", type=int, default=7697, help="this run's own Neo4j (it gets killed)")
    parser.add_argument("--http-port", type=int, default=7484)
    parser.add_argument("--namespace-prefix", default="rel-")
    parser.add_argument("--writers", type=int, default=8, help="writer processes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writes", type=int, default=50, help="claims per process and round")
    parser.add_argument("--keys", type=int, default=10, help="shared claim keys")
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--kill-batches", type=int, default=40, help="batches of 5 per client in neo4j-kill")
    parser.add_argument("--python-deadline", type=float, default=10.0,
                        help="deadline (s) the neo4j-kill probe sets around each Python-face recall")
    parser.add_argument("--proxy-batches", type=int, default=30, help="batches of 3 per client in bolt-proxy")
    parser.add_argument("--drop-every", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=150, help="labelled pairs (2 claims each) in worker-kill")
    parser.add_argument("--worker-batch", type=int, default=10)
    parser.add_argument("--kills", type=int, default=8)
    parser.add_argument("--load-seconds", type=float, default=300.0)
    parser.add_argument("--load-rate", type=float, default=10.0, help="requests per second")
    parser.add_argument("--load-ingest-share", type=float, default=0.2)
    parser.add_argument("--load-seed-claims", type=int, default=400)
    parser.add_argument("--flood-sockets", type=int, default=30)
    parser.add_argument("--flood-per-socket", type=int, default=100, help="subscriptions per socket")
    parser.add_argument("--flood-keys", type=int, default=15, help="read keys the flood's sockets are spread over")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "reliability.json")
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenarios {unknown}; choose from {SCENARIOS}")

    from palimpsest.graph.db import local_server as server
    from palimpsest.settings import Settings

    cfg = replace(Settings.from_env().local_server(), bolt_port=args.bolt_port, http_port=args.http_port)
    if args.bolt_port == 7687:
        parser.error("--bolt-port 7687 is the shared server; this run kills its own")
    server.start(cfg)
    os.environ["NEO4J_URI"] = cfg.bolt_uri
    rt = _runtime()
    results: dict[str, Any] = {}
    try:
        for name in chosen:
            print(f"running {name} …", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            if name == "writers":
                results[name] = scenario_writers(rt, args.namespace_prefix, args)
            elif name == "neo4j-kill":
                results[name] = scenario_neo4j_kill(rt, args.namespace_prefix, args, cfg)
            elif name == "bolt-proxy":
                results[name] = scenario_bolt_proxy(rt, args.namespace_prefix, args)
            elif name == "worker-kill":
                results[name] = scenario_worker_kill(rt, args.namespace_prefix, args)
            elif name == "hostile":
                results[name] = scenario_hostile(rt, args.namespace_prefix, args)
            elif name == "import-poisoning":
                results[name] = scenario_import_poisoning(rt, args.namespace_prefix, args)
            elif name == "load":
                results[name] = scenario_load(rt, args.namespace_prefix, args)
            elif name == "subscription-flood":
                results[name] = scenario_subscription_flood(rt, args.namespace_prefix, args)
            print(f"  {name}: {'held' if results[name]['held'] else 'DID NOT HOLD'} "
                  f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.with_suffix(".partial.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    finally:
        rt.close()
    from palimpsest.graph.db.connection import server_info

    info_rt = _runtime()
    info = server_info(info_rt.driver)
    info_rt.close()
    meta = {"date": datetime.now(UTC).date().isoformat(), "machine": f"{platform.machine()} {platform.system()}, "
            f"{os.cpu_count()} cores", "python": platform.python_version(),
            "neo4j": f"{info.neo4j_version} {info.edition}", "gds": info.gds_version,
            "load_average_at_end": [round(x, 1) for x in os.getloadavg()]}
    table = _table(results)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    shown = {k: str(v) for k, v in vars(args).items()} | {"out": _relative(args.out)}
    args.out.write_text(json.dumps({"meta": meta, "args": shown,
                                    "results": results, "table": table}, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r["held"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
