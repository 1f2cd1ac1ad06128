"""Scale benchmark: ingest throughput against the embedder alone, recall latency against a plain vector query.

Issue 7 asks two things of Palimpsest at 100k+ claims: ingest at the speed of the embedder (the
write path must not be the bottleneck) and recall in milliseconds (the part beyond the query
embedding). Both are only meaningful beside their floor measured in the same process, on the same
texts, against the same Neo4j, in the same minute — so this benchmark always runs the floor right
next to the system:

* **Ingest**: `Memory.ingest_many` at batch sizes 1, 64 and 1,000, beside `Embedder.embed` on the
  very same texts in the very same batches. The ratio (Palimpsest / embedder alone) is the number
  that matters; absolute claims/s move with the machine and with whatever else runs on it.
* **Recall**: p50/p95/p99 of `Memory.recall` for the default policy and for an as-of recall at a
  middle revision, split into query embedding (timed on its own, cache bypassed) and the rest
  (timed with the query vector cached, so it is exactly the non-model part), beside a plain
  `db.index.vector.queryNodes` top-k on the same index filtered by namespace — the floor any
  recall on this index pays. Recall with graph expansion (PPR) is measured twice in the same loop: with
  the process's in-memory entity graph (graph.knowledge.mention_graph, as a server runs) and with its
  neighbourhood read by statements, with the count of identical packets.
* **Store sizes** grow in one namespace (default 10k then 100k), so "sub-linear" is measured on one
  store as it grows, not on two stores that differ in other ways.
* **Load is recorded with every measurement** (`os.getloadavg()` before and after): the machine
  these numbers were taken on has 2 cores shared with other work, and a number without the load
  it was taken under cannot be compared with anything.
* **Seeded**: the corpus, the write order and the queries come from `random.Random(seed)`. Claim ids
  are UUIDs, so the store differs in ids between runs, not in content.

The corpus looks like agent memory: statements about services, people, customers and projects,
one to several sentences long (varied lengths change the embedder's cost per claim), from ~50
sources, with about 20% of claims re-using a `claim_key` that already has a current claim, so
every batch exercises supersession and every recall filters superseded versions.

Run `python -m benchmarks.scale --help`; `--quick` is a 2k smoke run; `--huge` adds a 1M point
(for machines with more cores and memory than the 2-core / 1 GB-heap one these numbers came from).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from palimpsest.api import heap
from palimpsest.graph.claims.index import vector_hits
from palimpsest.graph.recall import vector_fetch

DEFAULT_RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_DATA_DIR = Path.home() / ".cache" / "palimpsest" / "instances" / "bolt-7687" / "data"
MAX_BATCH = 1000  # schema.limits.MAX_BATCH_ITEMS

# The floor: the cheapest recall this vector index can give, filtered only by namespace.
FLOOR_CYPHER = (
    "MATCH (st:Store {namespace: $ns}) " + vector_hits("st", "$vec", "$k") + "RETURN node.id AS id"
)
HEAP_CYPHER = "CALL dbms.queryJmx('java.lang:type=Memory') YIELD attributes RETURN attributes"

# ------------------------------------------------------------------------------------------------
# Corpus
# ------------------------------------------------------------------------------------------------
_SERVICES = ("checkout-api", "payments-db", "search-index", "auth-gateway", "billing-worker", "cdn-edge",
             "orders-queue", "inventory-svc", "email-relay", "reporting-etl", "session-cache", "ml-ranker",
             "ledger-scheduler", "fraud-scorer", "media-transcoder", "notif-fanout")
_FIRST = ("Maria", "James", "Aisha", "Tomasz", "Priya", "Daniel", "Yuki", "Fatima", "Lucas", "Ingrid",
          "Kwame", "Sofia", "Hiroshi", "Elena", "Mateo", "Grace", "Omar", "Chloe", "Ravi", "Nadia")
_LAST = ("Okafor", "Lindqvist", "Haddad", "Kowalski", "Raman", "Whitfield", "Tanaka", "Benali", "Moreau",
         "Svensson", "Mensah", "Rossi", "Nakamura", "Petrova", "Alvarez", "Osei", "Farouk", "Dubois")
_CUSTOMERS = ("Acme Corp", "Globex", "Initech", "Umbrella Health", "Stark Logistics", "Wayne Foods",
              "Tyrell Labs", "Soylent Energy", "Hooli", "Vandelay Imports", "Pied Piper", "Cyberdyne")
_PROJECTS = ("Project Atlas", "Project Borealis", "Project Cinder", "Project Delta", "Project Ember",
             "Project Fjord", "Project Granite", "Project Helix")

# (key slug, claim templates, query template, value generator) per kind of subject.
_Value = Callable[[random.Random], str]
_SERVICE_ATTRS: tuple[tuple[str, tuple[str, ...], str, _Value], ...] = (
    ("p99", ("The p99 latency of {s} is {v}.", "{s} now answers at {v} at the 99th percentile.",
             "After the last deploy, p99 for {s} was measured at {v}."),
     "what is the p99 latency of {s}?", lambda r: f"{r.randrange(20, 900)} ms"),
    ("owner", ("{s} is owned by {v}.", "Ownership of {s} moved to {v}.", "The team responsible for {s} is {v}."),
     "who owns {s}?", lambda r: f"team {r.choice(('orion', 'vega', 'lyra', 'draco', 'cetus', 'hydra'))}"),
    ("replicas", ("{s} runs {v}.", "{s} was scaled to {v}.", "Capacity planning set {s} at {v}."),
     "how many replicas does {s} run?", lambda r: f"{r.randrange(2, 64)} replicas"),
    ("region", ("{s} is deployed in {v}.", "{s} was migrated to {v}.", "The primary region of {s} is {v}."),
     "where is {s} deployed?", lambda r: r.choice(("eu-west-1", "eu-central-2", "us-east-1", "ap-south-1"))),
    ("oncall", ("The on-call engineer for {s} this week is {v}.", "{v} carries the pager for {s}.",
                "Escalations for {s} go to {v}."),
     "who is on call for {s}?", lambda r: f"{r.choice(_FIRST)} {r.choice(_LAST)}"),
)
_PERSON_ATTRS: tuple[tuple[str, tuple[str, ...], str, _Value], ...] = (
    ("role", ("{s} works as {v}.", "{s} was promoted to {v}.", "{s}'s current role is {v}."),
     "what is {s}'s role?", lambda r: r.choice(("staff engineer", "engineering manager", "SRE lead",
                                                   "product manager", "data scientist", "security engineer"))),
    ("location", ("{s} is based in {v}.", "{s} relocated to {v}.", "{s} works from the {v} office."),
     "where is {s} based?", lambda r: r.choice(("Lisbon", "Berlin", "Nairobi", "Osaka", "Toronto", "Warsaw"))),
    ("pref", ("{s} prefers {v} for status updates.", "{s} asked to be contacted by {v}.",
              "For anything urgent, reach {s} via {v}."),
     "how does {s} want to be contacted?", lambda r: r.choice(("email", "Slack", "a phone call", "the wiki"))),
)
_CUSTOMER_ATTRS: tuple[tuple[str, tuple[str, ...], str, _Value], ...] = (
    ("plan", ("{s} is on the {v} plan.", "{s} upgraded to the {v} plan.", "The contract with {s} covers {v}."),
     "which plan is {s} on?", lambda r: r.choice(("starter", "growth", "enterprise", "enterprise plus"))),
    ("arr", ("Annual recurring revenue from {s} is {v}.", "{s} is now worth {v} a year.",
             "Finance booked {v} of ARR for {s}."),
     "how much revenue does {s} bring?", lambda r: f"${r.randrange(10, 900)}k"),
    ("renewal", ("{s} renews on {v}.", "The renewal date for {s} moved to {v}.", "{s}'s contract ends {v}."),
     "when does {s} renew?", lambda r: f"2027-{r.randrange(1, 13):02d}-{r.randrange(1, 29):02d}"),
)
_PROJECT_ATTRS: tuple[tuple[str, tuple[str, ...], str, _Value], ...] = (
    ("status", ("{s} is {v}.", "{s} was marked {v} in the weekly review.", "Status of {s}: {v}."),
     "what is the status of {s}?", lambda r: r.choice(("on track", "at risk", "blocked", "shipped", "paused"))),
    ("deadline", ("{s} is due on {v}.", "The deadline for {s} slipped to {v}.", "{s} must ship by {v}."),
     "when is {s} due?", lambda r: f"2027-{r.randrange(1, 13):02d}-{r.randrange(1, 29):02d}"),
)
# Context sentences vary claim length from one sentence to a short paragraph.
_CONTEXT = (
    "This came up in the {d} stand-up.", "It was confirmed by {p} in the incident review.",
    "The change is tracked in ticket OPS-{n}.", "Dashboards were updated accordingly on {d}.",
    "The previous value had been in place for about {n} days.", "{p} flagged it as worth double-checking.",
    "A follow-up is scheduled with {c} next {d}.", "Nobody objected when it was raised in the planning meeting.",
    "The runbook section {n} now reflects this.", "It affects the quarterly report that {p} prepares for {c}.",
    "Alerts were tuned after the change, and the noise dropped noticeably over the following week.",
    "See the architecture decision record {n} for the reasoning and the alternatives that were considered.",
)
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
SOURCES = tuple(f"{kind}-{i}" for kind in ("slack", "jira", "email", "meeting", "monitor") for i in range(10))


def _subjects(rng: random.Random) -> list[tuple[str, tuple[tuple[str, tuple[str, ...], str, _Value], ...]]]:
    del rng  # subjects are a fixed product; the RNG picks among them
    out: list[tuple[str, tuple[tuple[str, tuple[str, ...], str, _Value], ...]]] = []
    out += [(f"{svc}-{i}", _SERVICE_ATTRS) for svc in _SERVICES for i in range(1, 40)]
    out += [(f"{f} {last}", _PERSON_ATTRS) for f in _FIRST for last in _LAST]
    out += [(c, _CUSTOMER_ATTRS) for c in _CUSTOMERS]
    out += [(p, _PROJECT_ATTRS) for p in _PROJECTS]
    return out


def build_corpus(n: int, seed: int) -> list[dict[str, Any]]:
    """`n` claims in write order. ~20% re-use a claim_key that already has a current claim (supersession),
    ~15% open a new key, the rest carry no key (notes, observations) — all about the same subjects."""
    rng = random.Random(seed)
    subjects = _subjects(rng)
    open_keys: list[str] = []
    rows: list[dict[str, Any]] = []
    for _ in range(n):
        subject, attrs = rng.choice(subjects)
        slug, templates, _query, value = rng.choice(attrs)
        roll = rng.random()
        key: str | None = None
        if roll < 0.17 and open_keys:
            key = rng.choice(open_keys)
            subject, slug = key.rsplit("|", 1)
            templates, value = next((t, v) for s_, t, _q, v in _all_attrs() if s_ == slug)
        elif roll < 0.32:
            key = f"{subject}|{slug}"
            open_keys.append(key)
        content = rng.choice(templates).format(s=subject, v=value(rng))
        for _extra in range(rng.choice((0, 0, 0, 1, 1, 2, 3, 5))):
            content += " " + rng.choice(_CONTEXT).format(
                d=rng.choice(_DAYS), p=f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", n=rng.randrange(10, 9999),
                c=rng.choice(_CUSTOMERS))
        row: dict[str, Any] = {"content": content, "source": rng.choice(SOURCES)}
        if key is not None:
            row["claim_key"] = key
        rows.append(row)
    return rows


def _all_attrs() -> tuple[tuple[str, tuple[str, ...], str, _Value], ...]:
    return _SERVICE_ATTRS + _PERSON_ATTRS + _CUSTOMER_ATTRS + _PROJECT_ATTRS


def build_queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed * 7919 + 1)
    subjects = _subjects(rng)
    out = []
    for _ in range(n):
        subject, attrs = rng.choice(subjects)
        out.append(rng.choice(attrs)[2].format(s=subject))
    return out


# ------------------------------------------------------------------------------------------------
# Measurement helpers
# ------------------------------------------------------------------------------------------------
def load() -> list[float]:
    """The 1/5/15-minute load averages: how contended the machine was while a number was taken."""
    return [round(x, 2) for x in os.getloadavg()]


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"p50": round(pct(values, 0.50), 3), "p95": round(pct(values, 0.95), 3),
            "p99": round(pct(values, 0.99), 3), "mean": round(statistics.fmean(values), 3), "n": len(values)}


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:  # a log file rotated away under us
                continue
    return total


SETTINGS_CYPHER = (
    "SHOW SETTINGS YIELD name, value WHERE name IN ['server.memory.pagecache.size', 'server.memory.heap.max_size'] "
    "RETURN name, value"
)
# Lucene-backed indexes live outside Neo4j's page cache (the OS file cache holds them).
_LUCENE_INDEX_DIRS = ("vector-2.0", "fulltext-1.0")


def neo4j_memory(driver: Any, data_dir: Path) -> dict[str, Any]:
    """What the store costs in memory and on disk, split the way an operator sizes a server.

    Neo4j Community has no page-cache metrics (no JMX beans, no metrics endpoint), so "page cache in
    use" is what the page cache maps: the store files and native (range, token) indexes, capped by
    its configured size. The Lucene-backed vector and full-text indexes are counted apart (the OS
    file cache holds them), and so are transaction logs, which grow with writes, not with the store.
    Files hold what the last checkpoint flushed (every 15 minutes; Community has no procedure to force
    one), so a point measured soon after a fill under-reads.
    """
    out: dict[str, Any] = {"heap_used_bytes": None, "heap_committed_bytes": None, "pagecache_configured": None,
                           "files_as_of": "the last scheduled checkpoint (Community cannot force one)"}
    try:
        records, _, _ = driver.execute_query(HEAP_CYPHER)
        heap = records[0]["attributes"]["HeapMemoryUsage"]["value"]["properties"]
        out["heap_used_bytes"], out["heap_committed_bytes"] = int(heap["used"]), int(heap["committed"])
        records, _, _ = driver.execute_query(SETTINGS_CYPHER)
        settings = {r["name"]: r["value"] for r in records}
        out["pagecache_configured"] = settings.get("server.memory.pagecache.size")
    except Exception:  # JMX or SHOW SETTINGS can be restricted; memory is then reported as unknown
        pass
    db_dir = data_dir / "databases" / "neo4j"
    lucene = sum(dir_bytes(db_dir / "schema" / "index" / name) for name in _LUCENE_INDEX_DIRS)
    store = dir_bytes(db_dir)
    out.update({"store_bytes": store, "lucene_index_bytes": lucene, "paged_bytes": store - lucene,
                "tx_log_bytes": dir_bytes(data_dir / "transactions")})
    configured = _size_bytes(out["pagecache_configured"])
    out["pagecache_in_use_bytes"] = store - lucene if configured is None else min(store - lucene, configured)
    return out


def _size_bytes(text: str | None) -> int | None:
    """Neo4j prints sizes as "512.00MiB"."""
    units = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "B": 1}
    for unit, factor in units.items():
        if text and text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return None


def measure_ingest(mem: Any, embedder: Any, rows: list[dict[str, Any]], batch: int) -> dict[str, Any]:
    """Palimpsest and the embedder alone on the same texts in the same batches, interleaved batch by
    batch (alternating which goes first), so a load swing on a shared machine hits both sides alike
    and neither side always runs on a warmer cache."""
    batches = [rows[i:i + batch] for i in range(0, len(rows), batch)]
    before = load()
    palimpsest_s = embed_s = 0.0

    def system(b: list[dict[str, Any]]) -> float:
        t = time.perf_counter()
        result = mem.ingest_many(b)
        took = time.perf_counter() - t
        if not all(item.ok for item in result.items):
            raise RuntimeError(f"ingest failed: {[i.error for i in result.items if not i.ok][:3]}")
        return took

    def alone(b: list[dict[str, Any]]) -> float:
        t = time.perf_counter()
        embedder.embed([r["content"] for r in b])
        return time.perf_counter() - t

    for i, b in enumerate(batches):
        if i % 2 == 0:
            palimpsest_s += system(b)
            embed_s += alone(b)
        else:
            embed_s += alone(b)
            palimpsest_s += system(b)
    after = load()
    system_rate = len(rows) / palimpsest_s
    alone_rate = len(rows) / embed_s
    return {"batch": batch, "items": len(rows), "palimpsest_claims_per_s": round(system_rate, 1),
            "embedder_claims_per_s": round(alone_rate, 1), "ratio": round(system_rate / alone_rate, 3),
            "load_before": before, "load_after": after}


def statements_memory(rt: Any, namespace: str) -> Any:
    """A Memory of `namespace` on the same driver whose graph expansion reads by statements only."""
    from palimpsest.api.memory import Memory
    from palimpsest.graph.knowledge.mention_graph import MentionCache

    return Memory(dataclasses.replace(rt, mentions=MentionCache(max_edges=0)), namespace)


def measure_recall(mem: Any, embedder: Any, driver: Any, queries: list[str], as_of: int, floor_k: int,
                   fetch_k: int, graph_policy: str | None = None, statements: Any | None = None) -> dict[str, Any]:
    """Per query, in rotating order: plain vector floor (k and the fetch size recall's vector step uses),
    recall beyond embedding, as-of recall beyond embedding, and (with `graph_policy`) recall with PPR graph
    expansion beyond embedding; plus the query embedding on its own. `statements` (a Memory of the same
    namespace whose runtime holds no entity graph in memory, graph.knowledge.mention_graph) adds PPR recall read by
    statements, and how many of its packets equal the cached path's. After the warm-up the heap is frozen,
    as `palimpsest serve` freezes it once started, so no full collection of start-up's objects lands in a
    timed recall."""
    ns = mem.namespace
    vectors = {q: embedder.embed_query(q) for q in queries}  # warms the cache recall will hit
    for i, q in enumerate(queries[:20]):  # warm the code paths, the page cache and the driver's connection pool
        if i == 1 and graph_policy and mem.rt.mentions is not None:
            mem.rt.mentions.settle()  # the in-memory entity graph, read in the background since the first recall
        mem.recall(q)
        mem.recall(q, as_of_revision=as_of)
        if graph_policy:
            mem.recall(q, policy_version=graph_policy)
            if statements is not None:
                statements.recall(q, policy_version=graph_policy)
        driver.execute_query(FLOOR_CYPHER, k=floor_k, vec=vectors[q], ns=ns)
    frozen = heap.freeze_startup()  # as `palimpsest serve` does once started (api.heap)
    times: dict[str, list[float]] = {"embed": [], "recall": [], "as_of": [], "floor_k": [], "floor_fetch": []}
    hits = {"recall": 0, "floor_k": 0}
    if graph_policy:
        times["graph"] = []
        if statements is not None:
            times["graph_statements"] = []

    def floor(k: int) -> Callable[[str], int]:
        def run(q: str) -> int:
            records, _, _ = driver.execute_query(FLOOR_CYPHER, k=k, vec=vectors[q], ns=ns, routing_="r")
            return len(records)
        return run

    steps: list[tuple[str, Callable[[str], int]]] = [
        ("floor_k", floor(floor_k)), ("floor_fetch", floor(fetch_k)),
        ("recall", lambda q: len(mem.recall(q).items)),
        ("as_of", lambda q: len(mem.recall(q, as_of_revision=as_of).items)),
    ]
    if graph_policy:
        steps.append(("graph", lambda q: len(mem.recall(q, policy_version=graph_policy).items)))
        if statements is not None:
            steps.append(("graph_statements", lambda q: len(statements.recall(q, policy_version=graph_policy).items)))
    before = load()
    for i, q in enumerate(queries):
        t = time.perf_counter()
        embedder.embed([q])  # bypasses the cache: what a first-time query pays for the model
        times["embed"].append((time.perf_counter() - t) * 1000)
        for j in range(len(steps)):
            name, fn = steps[(i + j) % len(steps)]
            t = time.perf_counter()
            got = fn(q)
            times[name].append((time.perf_counter() - t) * 1000)
            if name in hits:
                hits[name] += got
    after = load()
    heap.unfreeze()
    out: dict[str, Any] = {name: summary(v) for name, v in times.items()}
    out["frozen_objects"] = frozen
    out["mean_items"] = {name: round(n / len(queries), 2) for name, n in hits.items()}
    out["queries"] = len(queries)
    if graph_policy and statements is not None:
        out["graph_packets_identical"] = sum(
            mem.recall(q, policy_version=graph_policy).fingerprint
            == statements.recall(q, policy_version=graph_policy).fingerprint for q in queries)
    out["as_of_revision"] = as_of
    out["floor_top_k"], out["floor_fetch_k"] = floor_k, fetch_k
    out["load_before"], out["load_after"] = before, after
    return out


class SyntheticVectors:
    """Fill vectors without the model: a real embedding from a pool, nudged by seeded noise, re-normalised.

    Embedding 100k claims costs 30+ minutes on a contended 2-core machine, and the fill is not what
    is measured — the measured ingest windows and every query always use the real model. What the
    fill must give recall is a vector index of the right size whose points are distributed like real
    embeddings of this corpus (clustered by subject and template), all distinct; perturbed real
    vectors give exactly that. `--fill embed` embeds everything instead.
    """

    def __init__(self, pool: list[list[float]], seed: int, noise: float = 0.15) -> None:
        import numpy as np

        self._np = np
        self._pool = np.asarray(pool, dtype=np.float64)
        self._rng = np.random.default_rng(seed)
        self._noise = noise / np.sqrt(self._pool.shape[1])  # noise norm ≈ `noise`, on unit vectors

    def take(self, n: int) -> list[list[float]]:
        np = self._np
        picks = self._pool[self._rng.integers(0, len(self._pool), size=n)]
        vecs = picks + self._rng.normal(0.0, self._noise, size=picks.shape)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        return [[float(x) for x in row] for row in vecs.astype(np.float32)]


# Graph expansion as benchmarks/multihop.py measured it best: PPR seeded from the query's entities.
GRAPH_POLICY: dict[str, Any] = {"version": "scale-ppr", "graph_expansion": "ppr"}


def project_entities(rt: Any, ns: str) -> dict[str, Any]:
    """Run the projection worker's entity job until it has caught up with the store (contradiction
    detectors off, exact-name entity merging, as benchmarks/multihop.py does): graph expansion needs the
    MENTIONS graph, and how long building it takes at each size is worth knowing too."""
    from palimpsest.api.worker import ProjectionWorker, WorkerConfig

    worker = ProjectionWorker(rt, WorkerConfig(batch_claims=MAX_BATCH, entity_embeddings=False), detectors=[])
    before = load()
    started = time.perf_counter()
    report = worker.run_once(ns, pagerank=False)  # batch after batch until caught up
    seconds = time.perf_counter() - started
    rate = round(report.subjects / seconds, 1) if seconds else None
    return {"claims": report.subjects, "seconds": round(seconds, 1), "claims_per_s": rate,
            "entities_created": report.entities_created, "mentions_created": report.mentions_created,
            "load_before": before, "load_after": load()}


def fill(mem: Any, rows: list[dict[str, Any]], synthetic: SyntheticVectors | None) -> dict[str, Any]:
    """Grow the store at the largest batch through the real write transaction (`store.write_claims`);
    timed too, though with synthetic vectors the number is the write path alone, not ingest."""
    from palimpsest.graph.claims import store
    from palimpsest.schema.models import ClaimInput

    before = load()
    t = time.perf_counter()
    for start in range(0, len(rows), MAX_BATCH):
        chunk = rows[start:start + MAX_BATCH]
        if synthetic is None:
            mem.ingest_many(chunk)
            continue
        prepared = [store.PreparedClaim(index=i, claim=ClaimInput.model_validate(r), embedding=v)
                    for i, (r, v) in enumerate(zip(chunk, synthetic.take(len(chunk)), strict=True))]
        store.write_claims(mem.rt.driver, mem.namespace, prepared, mem.rt.settings.database)
    seconds = time.perf_counter() - t
    return {"items": len(rows), "seconds": round(seconds, 2), "vectors": "synthetic" if synthetic else "model",
            "claims_per_s": round(len(rows) / seconds, 1) if seconds else None,
            "load_before": before, "load_after": load()}


def tenant_recall(mem: Any, embedder: Any, queries: list[str]) -> dict[str, Any]:
    """Recall beyond embedding for one tenant (query vectors cached), and its packets' fingerprints and
    item ids: what a neighbour's writes must not change."""
    for q in queries:
        embedder.embed_query(q)
    for q in queries[:20]:
        mem.recall(q)
    times, packets = [], []
    before = load()
    for q in queries:
        t = time.perf_counter()
        packet = mem.recall(q)
        times.append((time.perf_counter() - t) * 1000)
        packets.append([packet.fingerprint, [it.id for it in packet.items]])
    return {**summary(times), "packets": packets, "load_before": before, "load_after": load()}


def neighbours(result: dict[str, Any], rt: Any, mem: Any, small: Any, second: Any, embedder: Any, queries: list[str],
               rows: list[dict[str, Any]], synthetic: SyntheticVectors | None, data_dir: Path,
               start_memory: dict[str, Any]) -> dict[str, Any]:
    """Tenancy at scale (graph.claims.index): the small tenant after the main one grew (same packets? how
    much slower?), then the main tenant before and after a second tenant of the same size is written."""
    alone = result["small_tenant_alone"]
    beside = tenant_recall(small, embedder, queries)
    main_before = tenant_recall(mem, embedder, queries)
    filled = fill(second, rows, synthetic)
    main_after = tenant_recall(mem, embedder, queries)
    memory = neo4j_memory(rt.driver, data_dir)
    claims = sum(sum(m.stats().claims_by_status.values()) for m in (mem, second, small))
    per_100k = {part.replace("_bytes", "_mb_per_100k_claims"):
                round((memory[part] - start_memory[part]) / 2**20 / claims * 100_000, 1)
                for part in ("store_bytes", "paged_bytes", "lucene_index_bytes", "tx_log_bytes")}

    def same(a: dict[str, Any], b: dict[str, Any]) -> int:
        return sum(1 for x, y in zip(a["packets"], b["packets"], strict=True) if x == y)

    out = {
        "small_tenant_claims": sum(small.stats().claims_by_status.values()),
        "small_beside_large": {k: v for k, v in beside.items() if k != "packets"},
        "small_p50_ratio_beside_vs_alone": round(beside["p50"] / alone["p50"], 2),
        "small_identical_packets": f"{same(alone, beside)}/{len(queries)}",
        "main_before_second_tenant": {k: v for k, v in main_before.items() if k != "packets"},
        "main_after_second_tenant": {k: v for k, v in main_after.items() if k != "packets"},
        "main_p50_ratio_after_vs_before": round(main_after["p50"] / main_before["p50"], 2),
        "main_identical_packets": f"{same(main_before, main_after)}/{len(queries)}",
        "second_tenant_fill": filled, "memory": memory, "all_tenants_claims": claims, "per_100k": per_100k,
    }
    result["small_tenant_alone"] = {k: v for k, v in alone.items() if k != "packets"}
    print(f"tenants: small beside large p50 ×{out['small_p50_ratio_beside_vs_alone']} "
          f"({out['small_identical_packets']} identical packets); main after a second tenant "
          f"×{out['main_p50_ratio_after_vs_before']} ({out['main_identical_packets']} identical)", flush=True)
    return out


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------
def markdown(result: dict[str, Any], memory: bool = True) -> str:
    lines = [f"torch threads: {result['torch_threads']}; load averages are 1/5/15 min, "
             f"taken before/after each measurement on a {result['machine']['cpus']}-CPU machine", ""]
    if any(point["ingest"] for point in result["points"]):
        lines += ["| store size | batch | items | Palimpsest claims/s | embedder alone claims/s | ratio "
                  "| load before→after |", "|---|---|---|---|---|---|---|"]
    for point in result["points"]:
        for m in point["ingest"]:
            lines.append(f"| {point['store_claims']:,} | {m['batch']} | {m['items']} | {m['palimpsest_claims_per_s']} "
                         f"| {m['embedder_claims_per_s']} | {m['ratio']:.2f} | {m['load_before'][0]}→"
                         f"{m['load_after'][0]} |")
    lines += ["", "| store size | path | p50 ms | p95 ms | p99 ms | load before→after |", "|---|---|---|---|---|---|"]
    labels = {"embed": "query embedding alone (uncached)", "recall": "recall beyond embedding (default policy)",
              "as_of": "as-of recall beyond embedding", "graph": "recall with graph expansion (PPR) beyond embedding",
              "graph_statements": "same, neighbourhood read by statements (no in-memory entity graph)",
              "floor_k": "plain vector top-k (floor)",
              "floor_fetch": "plain vector top-fetch (recall's fetch size)"}
    for point in result["points"]:
        r = point["recall"]
        for key, label in labels.items():
            if key not in r:
                continue
            s = r[key]
            lines.append(f"| {point['recall_store_claims']:,} | {label} | {s['p50']:.2f} | {s['p95']:.2f} | "
                         f"{s['p99']:.2f} | {r['load_before'][0]}→{r['load_after'][0]} |")
    if not memory:
        return "\n".join(lines)
    lines += ["", "| store size | heap used MB | page cache in use MB (configured) | store MB (Lucene indexes) "
              "| growth MB per 100k claims: paged / Lucene / tx logs |", "|---|---|---|---|---|"]
    for point in result["points"]:
        mem = point["memory"]
        heap = "n/a" if mem["heap_used_bytes"] is None else f"{mem['heap_used_bytes'] / 2**20:.0f}"
        lines.append(f"| {point['recall_store_claims']:,} | {heap} | {mem['pagecache_in_use_bytes'] / 2**20:.0f} "
                     f"({mem['pagecache_configured']}) | {mem['store_bytes'] / 2**20:.0f} "
                     f"({mem['lucene_index_bytes'] / 2**20:.0f}) | {mem['paged_mb_per_100k_claims']} / "
                     f"{mem['lucene_index_mb_per_100k_claims']} / {mem['tx_log_mb_per_100k_claims']} |")
    if "ratios" in result:
        lines += ["", "scaling " + ", ".join(f"{k}: {v}" for k, v in result["ratios"].items())]
    if "tenants" in result:
        t, alone = result["tenants"], result["small_tenant_alone"]
        lines += ["", "| tenants | recall p50 ms | p99 ms | ratio | identical packets |", "|---|---|---|---|---|",
                  f"| {t['small_tenant_claims']:,}-claim tenant alone | {alone['p50']:.2f} "
                  f"| {alone['p99']:.2f} | — | — |",
                  f"| same, beside the {result['points'][-1]['recall_store_claims']:,}-claim tenant "
                  f"| {t['small_beside_large']['p50']:.2f} | {t['small_beside_large']['p99']:.2f} "
                  f"| {t['small_p50_ratio_beside_vs_alone']} | {t['small_identical_packets']} |",
                  f"| large tenant, before a second tenant | {t['main_before_second_tenant']['p50']:.2f} "
                  f"| {t['main_before_second_tenant']['p99']:.2f} | — | — |",
                  f"| same, after a second {t['second_tenant_fill']['items']:,}-claim tenant "
                  f"| {t['main_after_second_tenant']['p50']:.2f} | {t['main_after_second_tenant']['p99']:.2f} "
                  f"| {t['main_p50_ratio_after_vs_before']} | {t['main_identical_packets']} |",
                  "", f"all tenants {t['all_tenants_claims']:,} claims; MB per 100k claims: "
                  + ", ".join(f"{k}: {v}" for k, v in t["per_100k"].items())]
    return "\n".join(lines)


def plot(result: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    points = result["points"]
    sizes = [p["recall_store_claims"] for p in points]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for key, label in (("recall", "recall − embedding"), ("as_of", "as-of recall − embedding"),
                       ("graph", "recall with PPR − embedding"),
                       ("floor_k", "plain vector top-k"), ("embed", "query embedding")):
        if any(key not in p["recall"] for p in points):
            continue
        left.plot(sizes, [p["recall"][key]["p50"] for p in points], marker="o", label=f"{label} p50")
        left.plot(sizes, [p["recall"][key]["p99"] for p in points], marker="x", linestyle="--",
                  label=f"{label} p99")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("claims in store")
    left.set_ylabel("latency ms")
    left.set_title("recall latency")
    left.legend(fontsize=7)
    batches = sorted({m["batch"] for p in points for m in p["ingest"]})
    for batch in batches:
        xs = [p["store_claims"] for p in points for m in p["ingest"] if m["batch"] == batch]
        right.plot(xs, [m["palimpsest_claims_per_s"] for p in points for m in p["ingest"] if m["batch"] == batch],
                   marker="o", label=f"ingest_many batch {batch}")
        right.plot(xs, [m["embedder_claims_per_s"] for p in points for m in p["ingest"] if m["batch"] == batch],
                   marker="x", linestyle="--", label=f"embedder alone batch {batch}")
    right.set_xscale("log")
    right.set_xlabel("claims in store")
    right.set_ylabel("claims / s")
    right.set_title(f"ingest throughput (torch threads {result['torch_threads']})")
    right.legend(fontsize=7)
    last_load = result["points"][-1]["recall"]["load_after"]
    fig.suptitle(f"Palimpsest scale — {result['measured_at'][:19]}Z, load {last_load}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------
def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="store sizes to measure at")
    ap.add_argument("--huge", action="store_true", help="also measure at 1,000,000 claims (bigger machines)")
    ap.add_argument("--quick", action="store_true", help="smoke run: one 2,000-claim point, few items/queries")
    ap.add_argument("--batch1-items", type=int, default=200, help="items ingested one by one per point")
    ap.add_argument("--batch64-items", type=int, default=640)
    ap.add_argument("--batch1000-items", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="torch intra-op threads (0 = torch default); 1 is far faster on a contended 2-core box")
    ap.add_argument("--fill", choices=("embed", "synthetic"), default="embed",
                    help="how the store is grown between measured points: real model vectors, or real vectors "
                         "from a 2,000-claim pool nudged by seeded noise (see SyntheticVectors)")
    ap.add_argument("--namespace", default=None)
    ap.add_argument("--namespace-prefix", default="bench-scale", help="prefix of every namespace this run writes")
    ap.add_argument("--tenants", action="store_true",
                    help="also measure neighbours: a 1,000-claim tenant before and after the main one grows, "
                         "and the main tenant before and after a second tenant of the largest size is written")
    ap.add_argument("--small-tenant-claims", type=int, default=1000)
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="Neo4j data dir, for its size")
    ap.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR)
    ap.add_argument("--no-graph", action="store_true",
                    help="skip the entity projection and the graph-expansion (PPR) recall measurement")
    ap.add_argument("--keep", action="store_true", help="keep the namespace (for profiling or a later run)")
    ap.add_argument("--recall-only", action="store_true",
                    help="measure recall (default, as-of, PPR, floors) on the existing --namespace, kept by an "
                         "earlier --keep run: no fill, no ingest; writes scale-recall-latest.json")
    ap.add_argument("--profile", choices=("none", "ingest", "recall"), default="none",
                    help="run pyinstrument around the last point's ingest or recall and save the HTML report")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.batch1_items, args.batch64_items, args.batch1000_items = [2_000], 20, 128, 1000
        args.queries = 30
    if args.huge and 1_000_000 not in args.sizes:
        args.sizes = [*args.sizes, 1_000_000]
    args.sizes = sorted(set(args.sizes))
    return args


def recall_only(args: argparse.Namespace) -> dict[str, Any]:
    """Recall latencies on a store an earlier run kept: measuring a change to recall does not need the
    45-minute fill, ingest and entity projection again, and the store under test is the very same one."""
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.schema.models import DEFAULT_POLICY

    if not args.namespace:
        raise SystemExit("--recall-only needs --namespace (a namespace an earlier --keep run left)")
    rt = Runtime.from_env()
    try:
        mem = Memory(rt, args.namespace)
        stats = mem.stats()
        claims = sum(stats.claims_by_status.values())
        if claims == 0:
            raise SystemExit(f"namespace {args.namespace!r} holds no claims")
        if not args.no_graph:
            mem.register_policy(GRAPH_POLICY)  # idempotent: the same content is accepted again
        queries = build_queries(args.queries, args.seed)
        rt.embedder.embed([q for q in queries[:8]])  # load and warm the model before any timing
        fetch_k = vector_fetch(DEFAULT_POLICY.k * DEFAULT_POLICY.oversampling)
        recall = measure_recall(mem, rt.embedder, rt.driver, queries, max(1, stats.revision // 2), DEFAULT_POLICY.k,
                                fetch_k, None if args.no_graph else str(GRAPH_POLICY["version"]),
                                statements_memory(rt, args.namespace))
        result: dict[str, Any] = {
            "benchmark": "scale-recall", "namespace": args.namespace, "store_claims": claims,
            "store_revision": stats.revision, "seed": args.seed, "policy": DEFAULT_POLICY.version,
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
            "recall": recall, "measured_at": datetime.now(UTC).isoformat(),
        }
        floor = recall["floor_k"]["p50"]
        result["ratios"] = {key: round(recall[key]["p50"] / floor, 2)
                            for key in ("recall", "as_of", "graph", "graph_statements") if key in recall}
        result["ratios"]["as_of_to_now"] = round(recall["as_of"]["p50"] / recall["recall"]["p50"], 2)
        args.results_dir.mkdir(parents=True, exist_ok=True)
        (args.results_dir / "scale-recall-latest.json").write_text(json.dumps(result, indent=2) + "\n")
        print(markdown({"torch_threads": args.torch_threads or "default", "machine": result["machine"],
                        "points": [{"recall_store_claims": claims, "recall": recall, "ingest": []}]},
                       memory=False))
        print("p50 ratios to the floor (top-k): " + ", ".join(f"{k} {v}" for k, v in result["ratios"].items()))
        if "graph_packets_identical" in recall:
            print(f"PPR packets identical with and without the in-memory entity graph: "
                  f"{recall['graph_packets_identical']} / {recall['queries']}")
        return result
    finally:
        rt.close()


def run(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    if args.recall_only:
        return recall_only(args)
    if args.torch_threads > 0:
        import torch

        torch.set_num_threads(args.torch_threads)
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.graph.lifecycle.maintenance import drop_namespace
    from palimpsest.schema.models import DEFAULT_POLICY

    window = args.batch1_items + args.batch64_items + args.batch1000_items
    top = max(args.sizes)
    corpus = build_corpus(top + window * len(args.sizes), args.seed)
    queries = build_queries(args.queries, args.seed)
    ns = args.namespace or f"{args.namespace_prefix}-{args.seed}-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    small_ns, second_ns = f"{ns}-small", f"{ns}-second"
    rt = Runtime.from_env()
    mem = Memory(rt, ns)
    embedder = rt.embedder
    embedder.embed([r["content"] for r in corpus[:64]])  # load and warm the model before any timing
    fetch_k = vector_fetch(DEFAULT_POLICY.k * DEFAULT_POLICY.oversampling)
    synthetic: SyntheticVectors | None = None
    if args.fill == "synthetic":
        pool_rows = build_corpus(2000, args.seed + 1)
        synthetic = SyntheticVectors(embedder.embed([r["content"] for r in pool_rows]), args.seed)
    start_memory = neo4j_memory(rt.driver, args.data_dir)
    result: dict[str, Any] = {
        "benchmark": "scale", "namespace": ns, "seed": args.seed, "sizes": args.sizes,
        "torch_threads": args.torch_threads or "default", "fill": args.fill, "policy": DEFAULT_POLICY.version,
        "k": DEFAULT_POLICY.k,
        "graph_expansion": "not measured (--no-graph)" if args.no_graph else {"policy": GRAPH_POLICY},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "memory_at_start": start_memory, "fills": [], "points": [],
    }
    written = 0
    profiler: Any = None
    small: Any = None
    try:
        if args.tenants:
            small = Memory(rt, small_ns)
            fill(small, build_corpus(args.small_tenant_claims, args.seed + 2), synthetic)
            result["small_tenant_alone"] = tenant_recall(small, embedder, queries)
            print(f"small tenant alone: p50 {result['small_tenant_alone']['p50']:.1f} ms", flush=True)
        for size in args.sizes:
            need = size - written
            if need > 0:
                info = fill(mem, corpus[written:written + need], synthetic)
                written += need
                info["store_claims_after"] = written
                result["fills"].append(info)
                print(f"filled to {written:,}: {info['claims_per_s']} claims/s, load {info['load_after']}", flush=True)
            profile_here = args.profile != "none" and size == top
            if profile_here:
                from pyinstrument import Profiler

                profiler = Profiler(interval=0.001)
            point: dict[str, Any] = {"store_claims": written, "ingest": []}
            if profile_here and args.profile == "ingest":
                profiler.start()
            for batch, items in ((1, args.batch1_items), (64, args.batch64_items), (MAX_BATCH, args.batch1000_items)):
                rows = corpus[written:written + items]
                written += len(rows)
                m = measure_ingest(mem, embedder, rows, batch)
                point["ingest"].append(m)
                print(f"  ingest @ {point['store_claims']:,} batch {batch}: {m['palimpsest_claims_per_s']} vs "
                      f"embedder {m['embedder_claims_per_s']} claims/s (ratio {m['ratio']}), load {m['load_after']}",
                      flush=True)
            if profile_here and args.profile == "ingest":
                profiler.stop()
            if not args.no_graph:
                point["projection"] = project_entities(rt, ns)
                mem.register_policy(GRAPH_POLICY)
                print(f"  entity projection caught up: {point['projection']}", flush=True)
            revision = mem.stats().revision
            point["recall_store_claims"] = written
            point["store_revision"] = revision
            if profile_here and args.profile == "recall":
                profiler.start()
            point["recall"] = measure_recall(mem, embedder, rt.driver, queries, max(1, revision // 2),
                                             DEFAULT_POLICY.k, fetch_k,
                                             None if args.no_graph else str(GRAPH_POLICY["version"]),
                                             statements_memory(rt, ns))
            if profile_here and args.profile == "recall":
                profiler.stop()
            r = point["recall"]
            print(f"  recall @ {written:,}: p50 {r['recall']['p50']:.1f} ms (floor {r['floor_k']['p50']:.1f} ms, "
                  f"embedding {r['embed']['p50']:.1f} ms), load {r['load_after']}", flush=True)
            memory = neo4j_memory(rt.driver, args.data_dir)
            # Growth since the run started: files only grow once space freed by dropped namespaces is reused,
            # so this is a lower bound on a fresh store's cost per claim.
            for part in ("store_bytes", "paged_bytes", "lucene_index_bytes", "tx_log_bytes"):
                grown = memory[part] - start_memory[part]
                memory[part.replace("_bytes", "_mb_per_100k_claims")] = round(grown / 2**20 / written * 100_000, 1)
            point["memory"] = memory
            result["points"].append(point)
        if args.tenants:
            result["tenants"] = neighbours(result, rt, mem, small, Memory(rt, second_ns), embedder, queries,
                                           corpus[:top], synthetic, args.data_dir, start_memory)
        if len(result["points"]) >= 2:
            lo, hi = result["points"][0], result["points"][-1]
            growth = hi["recall_store_claims"] / lo["recall_store_claims"]
            result["ratios"] = {
                "store_growth": round(growth, 2),
                "recall_p50_growth": round(hi["recall"]["recall"]["p50"] / lo["recall"]["recall"]["p50"], 2),
                "recall_p99_growth": round(hi["recall"]["recall"]["p99"] / lo["recall"]["recall"]["p99"], 2),
                "floor_p50_growth": round(hi["recall"]["floor_k"]["p50"] / lo["recall"]["floor_k"]["p50"], 2),
            }
        result["measured_at"] = datetime.now(UTC).isoformat()
        args.results_dir.mkdir(parents=True, exist_ok=True)
        name = "scale-quick" if args.quick else "scale-latest"
        (args.results_dir / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        if plot(result, args.results_dir / f"{name}.png"):
            print(f"plot: {args.results_dir / f'{name}.png'}")
        if profiler is not None:
            html = Path(tempfile.gettempdir()) / f"scale-profile-{args.profile}.html"  # tens of MB: not a result
            html.write_text(profiler.output_html())
            print(profiler.output_text(unicode=False, color=False, show_all=False)[:6000])
        print()
        print(markdown(result))
    finally:
        if not args.keep:
            for name in (ns, small_ns, second_ns):
                drop_namespace(rt.driver, name)
        rt.close()
    return result


if __name__ == "__main__":
    run()
