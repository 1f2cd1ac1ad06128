"""Memory without keys: do agents that never name a claim_key still get only what is true now?

Three corpora, side by side, in one run, against one Neo4j:

* **the frozen set** `benchmarks/data/nokeys_eval.jsonl` (50 subjects × 3 versions in 10 domains the
  generator does not use, hand-written paraphrased updates, a restatement of one version per
  subject and two hard distractors each; see benchmarks/data/README.md), reported separately for its
  `dev` split (35 subjects, the only one the judge was developed against) and its `heldout` split
  (15 subjects, never looked at while tuning);
* **the second frozen set** `benchmarks/data/nokeys_eval_b.jsonl` (40 subjects × 3 versions in 10 more
  domains, written the same way before the judge changes it measures; every subject held out),
  reported as its own group `set_b`;
* **the generator** of `benchmarks/temporal.py` (clinical, devops, legal, finance) in its `--no-keys`
  form, so the numbers can be compared with `python -m benchmarks.temporal --no-keys`.

Each corpus is ingested without keys into one namespace per arm, round by round, with the worker
caught up after every round, as a live system would:

| arm | what it is |
|---|---|
| plain RAG | top-k cosine over the claim vector index of the inference-off namespace |
| recency control | plain RAG's candidates with near-duplicates (cosine ≥ t between claims) collapsed to the newest |
| inference off | Palimpsest recall, policy without inferred supersession |
| offline | Palimpsest recall, `inferred_supersession` with `inferred_judge: "offline"` |
| llm | the same with `inferred_judge: "llm"` and `--llm-model` (only when given) |

The recency control's t is chosen from a sweep by the set's dev split (the sweep is in the JSON).

Metrics: **temporal accuracy** (top-1 is the newest version — or, on the set, its restatement, which
says the same), **staleness** (an older version, or a restatement of one, in the top k), **false
supersessions** (on the set: a distractor hidden, a claim hidden by another subject's claim, a
restatement linked with what it restates, a link backwards; on the generator the strict false links
of `benchmarks/temporal.py`, which set aside distractors restated with another value in the same
wording), and **true adjacent version pairs linked**.

Run `python -m benchmarks.nokeys --help`; `--generator-keys 5 --quick` is a smoke-sized run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from benchmarks.temporal import (
    DEFAULT_RESULTS_DIR,
    MAX_BATCH,
    _FreshQueryEmbedder,
    _inference_report,
    _ingest,
    _pct,
    _write,
    generate_corpus,
    percentile,
)
from palimpsest.graph.claims.index import vector_hits

DATA = Path(__file__).resolve().parent / "data" / "nokeys_eval.jsonl"
DATA_B = Path(__file__).resolve().parent / "data" / "nokeys_eval_b.jsonl"
SET_B = "set_b"   # the second set's group: all of it is held out, so it is not split
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
RECENCY_CYPHER = (
    # The namespace's own claims only, as recall searches them (graph.claims.index).
    "MATCH (st:Store {namespace: $ns}) " + vector_hits("st", "$vec", "$n") +
    "WITH count(*) AS raw, collect(CASE WHEN node.namespace = $ns THEN {id: node.id, revision: node.revision, "
    "pos: coalesce(node.batch_index, 0), score: score, embedding: node.embedding} END) AS hits "
    "RETURN raw, hits"
)


# ------------------------------------------------------------------------------------------------ the set
@dataclass
class SetClaim:
    text: str
    subject: str          # the subject's id in the set
    role: str             # version | restatement | same_attribute_other_subject | same_subject_other_attribute
    version: int          # 1..3 for versions, the restated version for restatements, 0 for distractors
    round: int
    id: str | None = None
    revision: int | None = None


@dataclass
class SetSubject:
    id: str
    domain: str
    split: str
    query: str
    claims: list[SetClaim] = field(default_factory=list)

    def version_ids(self) -> list[str]:
        return [c.id or "" for c in sorted((c for c in self.claims if c.role == "version"), key=lambda c: c.version)]

    def current_ids(self) -> set[str]:
        """What states the current value: version 3, or a restatement of it."""
        return {c.id or "" for c in self.claims if c.role in {"version", "restatement"} and c.version == 3}

    def stale_ids(self) -> set[str]:
        return {c.id or "" for c in self.claims if c.role in {"version", "restatement"} and c.version < 3}


def load_set(path: Path = DATA, group: str | None = None) -> list[SetSubject]:
    """The subjects of a set file; `group` replaces every row's `split` (a set reported as a whole)."""
    out: list[SetSubject] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        s = SetSubject(row["id"], row["domain"], group or row["split"], row["query"])
        for v, version in enumerate(row["versions"], start=1):
            s.claims.append(SetClaim(version["text"], s.id, "version", v, v))
        r = row["restatement"]
        s.claims.append(SetClaim(r["text"], s.id, "restatement", int(r["restates"]), int(r["restates"])))
        for d in row["distractors"]:
            s.claims.append(SetClaim(d["text"], s.id, d["kind"], 0, int(d["round"])))
        out.append(s)
    return out


def ingest_set(subjects: Sequence[SetSubject], mem: Any, seed: int, after_round: Callable[[int], None]) -> None:
    """Round r: versions r and the distractors of round r, shuffled, in one batch; then the
    restatements of version r (a restatement always follows what it restates); then the worker."""
    rng = random.Random(seed)
    for rnd in (1, 2, 3):
        first = [c for s in subjects for c in s.claims if c.round == rnd and c.role != "restatement"]
        second = [c for s in subjects for c in s.claims if c.round == rnd and c.role == "restatement"]
        rng.shuffle(first)
        rng.shuffle(second)
        for batch in (first, second):
            for start in range(0, len(batch), MAX_BATCH):
                part = batch[start:start + MAX_BATCH]
                res = mem.ingest_many([{"content": c.text, "source": f"nokeys:{c.subject}"} for c in part])
                for c, item in zip(part, res.items, strict=True):
                    if not item.ok or item.id is None:
                        raise RuntimeError(f"ingest failed for {c.text!r}: {item.error}")
                    c.id, c.revision = item.id, item.revision
        after_round(rnd)


_LINKS = (
    "MATCH (n:Claim {namespace: $ns})-[s:SUPERSEDES {reason: 'inferred'}]->(o:Claim {namespace: $ns}) "
    "WHERE s.undone_at_revision IS NULL "
    "RETURN n.id AS newer, o.id AS older, s.confidence AS confidence, s.kind AS kind, s.detail AS detail "
    "ORDER BY s.revision, newer, older"
)


def classify_set_link(newer: SetClaim | None, older: SetClaim | None) -> str:
    """What an inferred link on the set joined. `adjacent` and `retires_restatement` are right."""
    if newer is None or older is None:
        return "unknown"
    if older.role.startswith("same_"):
        return "distractor_superseded"
    if newer.role.startswith("same_"):
        return "superseded_by_distractor"
    if newer.subject != older.subject:
        return "other_subject"
    if newer.role == "restatement" and older.role == "version" and newer.version == older.version:
        return "restatement_linked"
    if newer.role == "version" and older.role == "restatement" and newer.version == older.version:
        return "restatement_linked"
    if newer.version > older.version:
        if newer.role == "version" and older.role == "version":
            return "adjacent" if newer.version == older.version + 1 else "skips_a_version"
        return "retires_restatement" if older.role == "restatement" else "restatement_supersedes_older"
    return "backwards"


RIGHT = frozenset({"adjacent", "retires_restatement", "skips_a_version", "restatement_supersedes_older"})


def set_link_report(subjects: Sequence[SetSubject], rt: Any, ns: str, split: str) -> dict[str, Any]:
    chosen = [s for s in subjects if s.split == split]
    by_id = {c.id: c for s in chosen for c in s.claims if c.id}
    records, _, _ = rt.driver.execute_query(_LINKS, ns=ns, database_=rt.settings.database)
    kinds: dict[str, int] = {}
    examples: list[dict[str, Any]] = []
    for r in records:
        newer, older = by_id.get(str(r["newer"])), by_id.get(str(r["older"]))
        if newer is None and older is None:
            continue   # a link of the other split
        kind = classify_set_link(newer, older)
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind not in RIGHT and len(examples) < 50:
            examples.append({"kind": kind, "newer": newer.text if newer else None,
                             "older": older.text if older else None, "detail": r["detail"],
                             "confidence": r["confidence"]})
    false = sum(n for k, n in kinds.items() if k not in RIGHT)
    negatives = sum(1 for s in chosen for c in s.claims if c.role != "version")
    return {"links": sum(kinds.values()), "links_by_kind": dict(sorted(kinds.items())),
            "adjacent_versions_linked": kinds.get("adjacent", 0), "version_pairs": 2 * len(chosen),
            "false_supersessions": false, "hard_negatives": negatives,
            "false_supersession_rate": false / negatives if negatives else None,
            "false_examples": examples}


# ------------------------------------------------------------------------------------------------ recall
@dataclass
class Arm:
    name: str
    ns: str
    policy: Any
    mem: Any
    passes: list[dict[str, Any]] = field(default_factory=list)
    foreign_rounds: list[int] = field(default_factory=list)


def _catch_up(arm: Arm, config: Any) -> Callable[[int], None]:
    def run(_round: int) -> None:
        batches = 0
        for _ in range(200):
            report = arm.mem.run_projections(config)
            arm.passes.append(report.as_dict())
            batches += report.batches
            if report.caught_up:
                if not batches:
                    arm.foreign_rounds.append(_round)   # another process's worker projected this round
                return
        raise RuntimeError(f"the worker did not catch up on {arm.ns!r}")
    return run


def _index_hits(rt: Any, ns: str, vec: list[float], want: int) -> list[dict[str, Any]]:
    """The namespace's nearest claims by the shared vector index, growing the fetch past other
    namespaces' claims (the index holds every namespace of the database)."""
    n = max(want * 10, 50)
    while True:
        records, _, _ = rt.driver.execute_query(RECENCY_CYPHER, n=n, vec=vec, ns=ns, database_=rt.settings.database,
                                                routing_="r")
        raw, hits = int(records[0]["raw"]), [h for h in records[0]["hits"] if h is not None]
        if len(hits) >= want or raw < n or n >= 10_000:
            hits.sort(key=lambda h: (-float(h["score"]), str(h["id"])))
            return hits
        n = min(n * 4, 10_000)


def recency_collapse(hits: Sequence[dict[str, Any]], threshold: float, k: int) -> list[str]:
    """Walk the hits best first; a hit within cosine `threshold` of an earlier kept one joins its
    group; each group is shown at its best rank by its newest member (revision, then batch place)."""
    import numpy as np

    groups: list[list[dict[str, Any]]] = []
    heads: list[Any] = []
    for h in hits:
        vec = np.asarray(h["embedding"], dtype=float)
        vec = vec / (np.linalg.norm(vec) or 1.0)
        for g, head in zip(groups, heads, strict=True):
            if float(head @ vec) >= threshold:
                g.append(h)
                break
        else:
            groups.append([h])
            heads.append(vec)
    out = [str(max(g, key=lambda x: (int(x["revision"]), int(x["pos"]), str(x["id"])))["id"]) for g in groups]
    return out[:k]


@dataclass
class Queries:
    texts: list[str]
    correct: list[set[str]]
    stale: list[set[str]]
    groups: list[str]           # dev | heldout | set_b | generator, per query


def _score(ids_per_query: Sequence[list[str]], q: Queries, groups: Sequence[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for group in groups:
        idx = [i for i, g in enumerate(q.groups) if g == group]
        if not idx:
            continue
        acc = sum(1 for i in idx if ids_per_query[i][:1] and ids_per_query[i][0] in q.correct[i])
        stale = sum(1 for i in idx if any(cid in q.stale[i] for cid in ids_per_query[i]))
        out[group] = {"queries": len(idx), "temporal_accuracy": acc / len(idx), "staleness_rate": stale / len(idx),
                      "correct": acc, "stale": stale}
    return out


# ------------------------------------------------------------------------------------------------ the run
def _parse(args_list: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.nokeys", description=(__doc__ or "").split("\n")[0])
    p.add_argument("--k", type=int, default=5, help="items per recall (default 5)")
    p.add_argument("--seed", type=int, default=7, help="shuffle seed and generator seed (default 7)")
    p.add_argument("--generator-keys", type=int, default=80, help="generator keys per domain (default 80, as "
                   "benchmarks.temporal; 0: skip the generator)")
    p.add_argument("--generator-distractors", type=int, default=None, help="generator distractors (default "
                   "5 × keys per domain, 400 at 80)")
    p.add_argument("--versions", type=int, default=4, help="generator versions per key (default 4)")
    p.add_argument("--llm-model", default=None, help="also run inferred_judge 'llm' with this litellm model")
    p.add_argument("--llm-api-base", default=None, help="api_base for the LLM (a local OpenAI-compatible server)")
    p.add_argument("--namespace-prefix", default=None, help="namespaces are PREFIX-<corpus>-<arm> (default "
                   "bench-nokeys-<hex>); they must be empty")
    p.add_argument("--keep", action="store_true", help="keep the namespaces afterwards")
    p.add_argument("--data", type=Path, default=DATA, help="the evaluation set (default: the frozen one)")
    p.add_argument("--data-b", default=str(DATA_B), help="the second evaluation set, reported as its own group "
                   "(default: the frozen one; '' skips it)")
    p.add_argument("--quick", action="store_true", help="only the first set's dev split, no second set, no "
                   "generator unless asked")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR, help="where JSON results go")
    a = p.parse_args(args_list)
    if a.generator_distractors is None:
        a.generator_distractors = 5 * a.generator_keys
    if a.namespace_prefix is None:
        a.namespace_prefix = f"bench-nokeys-{secrets.token_hex(4)}"
    return a


def run(args_list: list[str] | None = None) -> dict[str, Any]:
    args = _parse(args_list)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.api.worker import WorkerConfig
    from palimpsest.extraction.embeddings import Embedder
    from palimpsest.extraction.supersession_llm import LlmInferenceOptions
    from palimpsest.graph.claims.check import check
    from palimpsest.graph.lifecycle.maintenance import drop_namespace
    from palimpsest.schema.models import Policy

    started = time.perf_counter()
    load_start = list(os.getloadavg())
    timings: dict[str, float] = {}
    base_rt = Runtime.from_env()
    rt = Runtime(base_rt.settings, base_rt.driver, cast(Embedder, _FreshQueryEmbedder(base_rt.embedder)),
                 base_rt.schema_version, models=base_rt.models)
    def set_data(corpus: str) -> list[SetSubject]:
        if corpus == "setb":
            return load_set(Path(args.data_b), SET_B)
        data = load_set(args.data)
        return [s for s in data if s.split == "dev"] if args.quick else data

    use_b = bool(args.data_b) and not args.quick
    subjects = set_data("set") + (set_data("setb") if use_b else [])
    corpus = (generate_corpus(args.generator_keys, args.versions, args.generator_distractors, args.seed)
              if args.generator_keys > 0 else None)
    policies = {"off": Policy(version="bench-nokeys-off"),
                "offline": Policy(version="bench-nokeys-offline", inferred_supersession=True)}
    if args.llm_model:
        policies["llm"] = Policy(version="bench-nokeys-llm", inferred_supersession=True, inferred_judge="llm",
                                 inferred_llm_model=args.llm_model)
    llm_options = LlmInferenceOptions(completion_kwargs={"api_base": args.llm_api_base} if args.llm_api_base else {})
    corpora = ["set"] + (["setb"] if use_b else []) + (["generator"] if corpus is not None else [])
    namespaces = {(c, a): f"{args.namespace_prefix}-{c}-{a}" for c in corpora for a in policies}
    for ns in namespaces.values():
        existing, _, _ = rt.driver.execute_query("MATCH (s:Store {namespace: $ns}) RETURN count(s) AS n", ns=ns,
                                                 database_=rt.settings.database)
        if existing[0]["n"]:
            base_rt.close()
            raise SystemExit(f"namespace {ns!r} already holds data; choose another --namespace-prefix")
    results: dict[str, Any] = {"benchmark": "nokeys", "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    try:
        arms: dict[tuple[str, str], Arm] = {}
        set_by_arm: dict[str, list[SetSubject]] = {}
        gen_by_arm: dict[str, Any] = {}
        for (c, a), ns in namespaces.items():
            mem = Memory(rt, namespace=ns)
            arm = Arm(a, ns, mem.register_policy(policies[a]), mem)
            # The arm's policy is also the namespace's default, so a worker of another process that
            # happens to serve every pending namespace (`palimpsest serve` on the same database, a test
            # app) projects these claims exactly as ours would, instead of with inference off.
            mem.set_default_policy(arm.policy.version)
            arms[(c, a)] = arm
            config = WorkerConfig(policy_version=arm.policy.version, pagerank=False, llm_inference=llm_options)
            t0 = time.perf_counter()
            if c in {"set", "setb"}:
                data = set_data(c)
                ingest_set(data, mem, args.seed, _catch_up(arm, config))
                set_by_arm.setdefault(a, []).extend(data)
            else:
                gen = generate_corpus(args.generator_keys, args.versions, args.generator_distractors, args.seed)
                _ingest(gen, mem, args.versions, args.seed, keys=False, after_round=_catch_up(arm, config))
                gen_by_arm[a] = gen
            timings[f"{c}_{a}_ingest_and_worker_s"] = round(time.perf_counter() - t0, 3)

        # queries per corpus, with the ids of each arm's own namespace
        def queries(arm: str) -> Queries:
            q = Queries([], [], [], [])
            for s in set_by_arm.get(arm, []):
                q.texts.append(s.query)
                q.correct.append(s.current_ids())
                q.stale.append(s.stale_ids())
                q.groups.append(s.split)
            gen = gen_by_arm.get(arm)
            if gen is not None:
                last = args.versions - 1
                for key in gen.keys:
                    q.texts.append(key.query)
                    q.correct.append({key.ids[last]})
                    q.stale.append(set(key.ids[:last]))
                    q.groups.append("generator")
            return q

        groups = ["dev", "heldout", SET_B, "generator"]
        metrics: dict[str, dict[str, Any]] = {}
        failures: dict[str, list[dict[str, Any]]] = {}
        latency: dict[str, list[float]] = {}
        t0 = time.perf_counter()
        off = queries("off")
        ns_of = {"dev": "set", "heldout": "set", SET_B: "setb", "generator": "generator"}
        # plain RAG and the recency control: over the inference-off namespaces
        rag_ids: list[list[str]] = []
        sweeps: dict[float, list[list[str]]] = {t: [] for t in THRESHOLDS}
        for i, text in enumerate(off.texts):
            tq = time.perf_counter()
            vec = rt.embedder.embed_query(text)
            hits = _index_hits(rt, namespaces[(ns_of[off.groups[i]], "off")], vec, args.k * 10)
            rag_ids.append([str(h["id"]) for h in hits[:args.k]])
            latency.setdefault("plain_rag", []).append((time.perf_counter() - tq) * 1000)
            for t in THRESHOLDS:
                sweeps[t].append(recency_collapse(hits, t, args.k))
        metrics["plain_rag"] = _score(rag_ids, off, groups)
        sweep = {t: _score(ids, off, groups) for t, ids in sweeps.items()}
        best_t = max(THRESHOLDS, key=lambda t: (sweep[t].get("dev", {}).get("temporal_accuracy", 0.0), -t))
        metrics["recency_control"] = sweep[best_t]
        # Collateral: each distractor of the set asked for in its own words must still come back first —
        # what a recency control that collapses "similar" claims gives up.
        own = [(d, s.split) for s in set_by_arm.get("off", []) for d in s.claims if d.role.startswith("same_")]
        found = {"plain_rag": {}, "recency_control": {}}  # type: dict[str, dict[str, list[int]]]
        for d, split in own:
            vec = rt.embedder.embed_query(d.text)
            hits = _index_hits(rt, namespaces[(ns_of[split], "off")], vec, args.k * 10)
            for name, top in (("plain_rag", [str(h["id"]) for h in hits[:1]]),
                              ("recency_control", recency_collapse(hits, best_t, 1))):
                found[name].setdefault(split, [0, 0])
                found[name][split][0] += 1
                found[name][split][1] += top[:1] == [d.id]
        for a in policies:
            q = queries(a)
            ids: list[list[str]] = []
            for i, text in enumerate(q.texts):
                arm = arms[(ns_of[q.groups[i]], a)]
                tq = time.perf_counter()
                packet = arm.mem.recall(text, k=args.k, policy_version=arm.policy.version)
                latency.setdefault(f"inference_{a}" if a == "off" else a, []).append((time.perf_counter() - tq) * 1000)
                ids.append([it.id for it in packet.items])
            metrics["inference_off" if a == "off" else a] = _score(ids, q, groups)
            if a in set_by_arm:
                tally: dict[str, list[int]] = {}
                for s in set_by_arm[a]:
                    for d in s.claims:
                        if d.role.startswith("same_"):
                            arm = arms[(ns_of[s.split], a)]
                            got = arm.mem.recall(d.text, k=1, policy_version=arm.policy.version).items
                            tally.setdefault(s.split, [0, 0])
                            tally[s.split][0] += 1
                            tally[s.split][1] += bool(got) and got[0].id == d.id
                found["inference_off" if a == "off" else a] = tally
            text_of = {c.id: c.text for s in set_by_arm.get(a, []) for c in s.claims if c.id}
            failures["inference_off" if a == "off" else a] = [
                {"query": q.texts[i], "split": q.groups[i], "top": [text_of.get(cid, cid) for cid in got[:3]],
                 "stale_in_top_k": any(cid in q.stale[i] for cid in got)}
                for i, got in enumerate(ids) if q.groups[i] != "generator" and not (got[:1] and got[0] in q.correct[i])]
        timings["recall_s"] = round(time.perf_counter() - t0, 3)
        for name, tally in found.items():
            for split, (n, hit) in tally.items():
                metrics.setdefault(name, {}).setdefault(split, {})["other_facts_found"] = hit / n if n else None

        links: dict[str, dict[str, Any]] = {}
        for a in policies:
            entry: dict[str, Any] = {}
            if a in set_by_arm:
                for split in ("dev", "heldout", SET_B):
                    if any(s.split == split for s in set_by_arm[a]):
                        entry[split] = set_link_report(set_by_arm[a], rt, namespaces[(ns_of[split], a)], split)
            if a in gen_by_arm:
                rep = _inference_report(gen_by_arm[a], rt, namespaces[("generator", a)], args.versions)
                entry["generator"] = {k: v for k, v in rep.items() if k not in {"link_examples"}}
            links["inference_off" if a == "off" else a] = entry
        workers = {f"{c}-{a}": _sum(arm.passes) | {"rounds_projected_elsewhere": arm.foreign_rounds}
                   for (c, a), arm in arms.items()}
        results["check"] = {ns: (lambda r: {"ok": r.ok, "claims": r.claims, "violations": r.violation_counts})(
            check(rt.driver, ns, rt.settings.database)) for ns in namespaces.values()}
        results.update({
            "parameters": {"k": args.k, "seed": args.seed, "generator_keys_per_domain": args.generator_keys,
                           "generator_distractors": args.generator_distractors, "versions": args.versions,
                           "llm_model": args.llm_model, "quick": args.quick,
                           "data": _relative(Path(args.data)),
                           "data_b": _relative(Path(args.data_b)) if use_b else None,
                           "namespaces": {f"{c}-{a}": ns for (c, a), ns in namespaces.items()},
                           "policies": {a: p.model_dump(mode="json") for a, p in policies.items()},
                           "recency_threshold": best_t},
            "counts": {"set_subjects": {sp: sum(1 for s in subjects if s.split == sp)
                                        for sp in ("dev", "heldout", SET_B)},
                       "set_claims": sum(len(s.claims) for s in subjects),
                       "generator_keys": len(corpus.keys) if corpus else 0,
                       "generator_claims": (len(corpus.keys) * args.versions + len(corpus.distractors)
                                            if corpus else 0)},
            "metrics": metrics, "recency_sweep": {str(t): v for t, v in sweep.items()}, "links": links,
            "failures": failures,
            "worker": workers,
            "latency_ms_p50": {name: percentile(v, 50) for name, v in latency.items()},
        })
    finally:
        if not args.keep:
            for ns in namespaces.values():
                drop_namespace(rt.driver, ns, database=rt.settings.database)
        base_rt.close()
    timings["total_s"] = round(time.perf_counter() - started, 3)
    results["timings"] = timings
    results["environment"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                              "loadavg_start": load_start, "loadavg_end": list(os.getloadavg())}
    print(render(results))
    _write(results, args.results_dir, "nokeys")
    return results


def _relative(path: Path) -> str:
    """A data path as results record it: relative to the repository when it lies inside it."""
    root = Path(__file__).resolve().parent.parent
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return path.name


def _sum(passes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    keys = ("batches", "subjects", "inferred_pairs", "inferred_supersessions", "inference_llm_calls",
            "inference_llm_failed_pairs")
    out: dict[str, Any] = {k: sum(int(p.get(k, 0)) for p in passes) for k in keys}
    out["inference_llm_cost_usd"] = round(sum(float(p.get("inference_llm_cost_usd", 0.0)) for p in passes), 6)
    rejected: dict[str, int] = {}
    for p in passes:
        for reason, n in p.get("inferred_rejected", {}).items():
            rejected[reason] = rejected.get(reason, 0) + int(n)
    out["inferred_rejected"] = dict(sorted(rejected.items()))
    out["seconds"] = round(sum(float(p.get("seconds", 0.0)) for p in passes), 3)
    return out


def render(r: dict[str, Any]) -> str:
    m, links, p = r["metrics"], r["links"], r["parameters"]
    arms = [a for a in ("plain_rag", "recency_control", "inference_off", "offline", "llm") if a in m]
    groups = [g for g in ("dev", "heldout", SET_B, "generator") if any(g in m[a] for a in arms)]
    label = {"dev": "set, dev split (tuned on)", "heldout": "set, HELD-OUT split (never tuned on)",
             SET_B: "second set, all held out (never tuned on)",
             "generator": "generator (benchmarks.temporal --no-keys)"}
    names = {"plain_rag": "plain RAG", "recency_control": f"recency control (cos ≥ {p['recency_threshold']})",
             "inference_off": "inference off", "offline": "offline inference", "llm": f"LLM judge ({p['llm_model']})"}
    lines = [f"Memory without keys — k={p['k']}, seed={p['seed']}; worker caught up after every round", ""]
    for g in groups:
        lines += [f"### {label[g]}", "", "| arm | temporal accuracy | staleness | false supersessions | "
                  "adjacent version pairs linked | distractors still found by their own words |",
                  "|---|---|---|---|---|---|"]
        for a in arms:
            row = m[a].get(g)
            if row is None:
                continue
            link = links.get(a, {}).get(g)
            if link is None:
                false = adjacent = "—"
            elif g == "generator":
                false = (f"{link['false_links_strict']} strict ({link['false_links']} incl. restated distractors) "
                         f"of {link['links']} links")
                adjacent = f"{link['adjacent_versions_linked']} / {link['version_pairs']}"
            else:
                false = (f"{link['false_supersessions']} / {link['hard_negatives']} "
                         f"({_pct(link['false_supersession_rate'])})")
                adjacent = f"{link['adjacent_versions_linked']} / {link['version_pairs']}"
            lines.append(f"| {names[a]} | {_pct(row['temporal_accuracy'])} ({row['correct']}/{row['queries']}) | "
                         f"{_pct(row['staleness_rate'])} | {false} | {adjacent} | "
                         f"{_pct(row.get('other_facts_found')) if g != 'generator' else '—'} |")
        lines.append("")
    bad = {a: [ok for ok in (c["ok"] for c in r.get("check", {}).values())] for a in ("all",)}
    lines.append(f"palimpsest check on every namespace: {'ok' if all(bad['all']) else 'VIOLATIONS'}")
    return "\n".join(lines)


def main() -> None:
    run()


if __name__ == "__main__":
    main()
