"""Contradiction detection benchmark: detector quality on labelled pairs, then end to end through the worker.

Why it is built this way:

* **Two pair sets, scored the same way.** SICK (SemEval-2014, sentence pairs about photos,
  3-way labels) is a public yardstick; `data/agent_memory_pairs.jsonl` is what an agent's memory
  looks like (ops, clinical, legal, finance) with hard look-alikes that do not conflict. Only the
  contradiction class is scored (precision / recall / F1): it is the one the worker writes edges
  for. SICK has no train/test split and none is used to tune anything: the heuristic's rules were
  written before it was run on SICK, and no SICK-specific rule was added afterwards. The agent
  set was written by the same person as the heuristic, so its numbers there are optimistic; its
  `implicit` kind (contradictions that need world knowledge) shows what the heuristic cannot do.
* **Each detector that runs offline is measured**: the heuristic always; an NLI cross-encoder only
  when `--nli-model PATH` names a local checkpoint (none can be downloaded here); an LLM judge
  only with `--llm-model` (and whatever provider settings litellm needs).
* **Latency per pair** is wall time around `judge()` on batches of `--batch` pairs divided by the
  batch size (the way the worker calls detectors), mean and p95 over batches.
* **End to end** ingests a seeded stream into a fresh namespace — planted contradicting pairs,
  decoy pairs that only look alike, both sides of each pair at different times — with the
  background worker running, waits with `wait_for_projections`, then recalls with each pair's
  newer claim as the query and checks whether the packet carries the pair's contradiction.
  It reports the surfacing rate, decoys falsely surfaced, candidate coverage (did the pair even
  reach a detector?) and the lag between an ingest returning and the worker passing its revision.

Run `python -m benchmarks.contradictions --help`; `--quick` is a smoke-sized run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import secrets
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from palimpsest.graph.lifecycle.maintenance import drop_namespace

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SICK = REPO.parent / "shared" / "data" / "sick"
DEFAULT_PAIRS = Path(__file__).resolve().parent / "data" / "agent_memory_pairs.jsonl"
DEFAULT_RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Pair:
    id: str
    a: str
    b: str
    contradiction: bool
    kind: str = ""
    domain: str = ""


def load_sick(folder: Path, limit: int | None, seed: int) -> list[Pair]:
    """SICK.txt: TSV pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment."""
    path = folder / "SICK.txt"
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    pairs = [Pair(r["pair_ID"], r["sentence_A"].strip(), r["sentence_B"].strip(),
                  r["entailment_judgment"].strip().upper() == "CONTRADICTION", r["entailment_judgment"].strip().lower())
             for r in rows]
    if limit is not None and limit < len(pairs):
        pairs = random.Random(seed).sample(pairs, limit)
    return pairs


def load_agent_pairs(path: Path) -> list[Pair]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                out.append(Pair(r["id"], r["a"], r["b"], r["label"] == "contradiction", r["kind"], r["domain"]))
    return out


def prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4)}


def evaluate(detector: Any, pairs: Sequence[Pair], batch: int) -> dict[str, Any]:
    """Judge every pair (b is the newer claim, as the worker would see it) and score the contradiction class."""
    from palimpsest.extraction.contradiction import DetectorUnavailableError, TextPair

    predictions: list[bool | None] = []
    per_pair_ms: list[float] = []
    errors = 0
    for start in range(0, len(pairs), batch):
        chunk = pairs[start:start + batch]
        t0 = time.perf_counter()
        try:
            verdicts = list(detector.judge([TextPair(p.b, p.a) for p in chunk]))
        except DetectorUnavailableError as exc:
            errors += 1
            verdicts = list(exc.partial or [None] * len(chunk))
        per_pair_ms.append((time.perf_counter() - t0) * 1000 / len(chunk))
        predictions.extend(None if v is None else v.label == "contradicts" for v in verdicts)
    tp = sum(bool(pred) and p.contradiction for p, pred in zip(pairs, predictions, strict=True))
    fp = sum(bool(pred) and not p.contradiction for p, pred in zip(pairs, predictions, strict=True))
    fn = sum((not pred) and p.contradiction for p, pred in zip(pairs, predictions, strict=True))
    by_kind: dict[str, dict[str, int]] = {}
    for p, pred in zip(pairs, predictions, strict=True):
        slot = by_kind.setdefault(p.kind, {"n": 0, "flagged": 0, "contradiction": int(p.contradiction)})
        slot["n"] += 1
        slot["flagged"] += int(bool(pred))
    per_pair_ms.sort()
    return {
        "pairs": len(pairs), "positives": sum(p.contradiction for p in pairs), "tp": tp, "fp": fp, "fn": fn,
        **prf(tp, fp, fn), "no_verdict": sum(pred is None for pred in predictions), "failed_batches": errors,
        "ms_per_pair_mean": round(statistics.fmean(per_pair_ms), 4) if per_pair_ms else None,
        "ms_per_pair_p95": round(per_pair_ms[int(0.95 * (len(per_pair_ms) - 1))], 4) if per_pair_ms else None,
        "by_kind": dict(sorted(by_kind.items())),
    }


def build_detectors(args: argparse.Namespace) -> list[Any]:
    from palimpsest.extraction.contradiction import HeuristicDetector, LlmJudge, NliDetector

    detectors: list[Any] = [HeuristicDetector(args.heuristic_threshold)]
    if args.nli_model:
        detectors.append(NliDetector(args.nli_model, args.nli_threshold, batch_size=args.batch))
    if args.llm_model:
        extra = {"api_base": args.llm_api_base} if args.llm_api_base else {}
        detectors.append(LlmJudge(args.llm_model, args.llm_threshold, max_calls_per_second=args.llm_rps,
                                  completion_kwargs=extra))
    return detectors


# ------------------------------------------------------------------------------------ end to end
def end_to_end(args: argparse.Namespace, agent_pairs: Sequence[Pair]) -> dict[str, Any]:
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.api.worker import BackgroundWorker, WorkerConfig
    from palimpsest.graph import projections as proj
    from palimpsest.graph.claims.contradictions import contradictions_after

    rng = random.Random(args.seed)
    positives = [p for p in agent_pairs if p.contradiction]
    negatives = [p for p in agent_pairs if not p.contradiction]
    planted = rng.sample(positives, min(args.e2e_pairs, len(positives)))
    decoys = rng.sample(negatives, min(args.e2e_pairs, len(negatives)))
    # Every pair's first claim comes before its second; otherwise the stream is shuffled.
    events: list[tuple[float, str, Pair]] = []
    for p in planted + decoys:
        t1, t2 = sorted((rng.random(), rng.random()))
        events += [(t1, "first", p), (t2, "second", p)]
    events.sort(key=lambda e: e[0])
    namespace = args.namespace or f"bench-contra-{args.seed}-{secrets.token_hex(3)}"
    rt = Runtime.from_env()
    mem = Memory(rt, namespace)
    ids: dict[tuple[str, str], str] = {}
    revision_of: dict[tuple[str, str], int] = {}
    ingested_at: dict[int, float] = {}
    seen_at: dict[int, float] = {}
    stop = threading.Event()

    def poll() -> None:  # when did projections_seq first pass each revision?
        while not stop.is_set():
            state = proj.projections_state(rt.driver, namespace)
            now = time.perf_counter()
            if state is not None:
                for rev in list(ingested_at):
                    if rev <= state.projections_seq and rev not in seen_at:
                        seen_at[rev] = now
            time.sleep(0.01)

    poller = threading.Thread(target=poll, daemon=True)
    worker = BackgroundWorker(rt, namespaces=[namespace], interval=args.e2e_interval,
                              config=WorkerConfig(batch_claims=args.e2e_worker_batch))
    try:
        worker.start()
        poller.start()
        t_start = time.perf_counter()
        for start in range(0, len(events), args.e2e_ingest_batch):
            chunk = events[start:start + args.e2e_ingest_batch]
            items = [{"content": p.a if side == "first" else p.b, "source": f"bench/{p.id}/{side}"}
                     for _, side, p in chunk]
            result = mem.ingest_many(items)
            ingested_at[result.revision] = time.perf_counter()
            for (_, side, p), item in zip(chunk, result.items, strict=True):
                if item.id is None or item.revision is None:
                    raise RuntimeError(f"ingest failed: {item.error}")
                ids[(p.id, side)] = item.id
                revision_of[(p.id, side)] = item.revision
            worker.wake()
        ingest_seconds = time.perf_counter() - t_start
        final = max(ingested_at)
        mem.wait_for_projections(final, timeout=args.e2e_timeout)
        caught_up_seconds = time.perf_counter() - t_start
        time.sleep(0.05)
        stop.set()
        poller.join(2)
        worker.stop()

        def linked(packet: Any, x: str, y: str) -> bool:
            return any({c.item_id, c.other.id} == {x, y} for c in packet.contradictions)

        def covered(p: Pair) -> bool:
            """Did the pair reach the detectors? Recompute the newer claim's candidates as the worker did."""
            newer_id, older_id = ids[(p.id, "second")], ids[(p.id, "first")]
            rev = revision_of[(p.id, "second")]
            subject = proj.Subject(newer_id, p.b, None, rev, rev, None, None)
            policy = mem.policy()
            cands = proj.candidate_pairs(rt.driver, namespace, [subject],
                                         neighbour_similarity=policy.contradiction.neighbour_similarity,
                                         max_pairs_per_claim=policy.contradiction.max_pairs_per_claim)
            return any({c.newer_id, c.older_id} == {newer_id, older_id} for c in cands)

        edges = {frozenset({e.claim.id, e.other.id}) for e in
                 contradictions_after(rt.driver, namespace, -1, 100_000)}
        outcome: dict[str, dict[str, int]] = {}
        misses: list[dict[str, Any]] = []
        for label, group in (("planted", planted), ("decoys", decoys)):
            stats = {"pairs": len(group), "candidates": 0, "edges": 0, "surfaced": 0}
            for p in group:
                x, y = ids[(p.id, "first")], ids[(p.id, "second")]
                cand, edge, shown = covered(p), frozenset({x, y}) in edges, linked(mem.recall(p.b), x, y)
                stats["candidates"] += cand
                stats["edges"] += edge
                stats["surfaced"] += shown
                if shown != p.contradiction:
                    misses.append({"set": label, "id": p.id, "kind": p.kind, "first": p.a, "second": p.b,
                                   "candidate": cand, "edge": edge})
            outcome[label] = stats
        lags = sorted(seen_at[r] - ingested_at[r] for r in ingested_at if r in seen_at)
        pair_ids = {frozenset({ids[(p.id, "first")], ids[(p.id, "second")]}) for p in planted + decoys}
        return {
            "namespace": namespace, "claims": len(events), "ingest_calls": len(ingested_at),
            "planted": outcome["planted"], "decoys": outcome["decoys"],
            "surfacing_rate": round(outcome["planted"]["surfaced"] / max(1, len(planted)), 4),
            "decoy_false_alarm_rate": round(outcome["decoys"]["surfaced"] / max(1, len(decoys)), 4),
            "candidate_coverage": round(outcome["planted"]["candidates"] / max(1, len(planted)), 4),
            "edges_total": len(edges), "edges_between_unpaired_claims": len(edges - pair_ids),
            "lag_seconds": {"p50": round(_pct(lags, 0.5), 4), "p95": round(_pct(lags, 0.95), 4),
                            "max": round(lags[-1], 4) if lags else None, "samples": len(lags)},
            "ingest_seconds": round(ingest_seconds, 3), "caught_up_seconds": round(caught_up_seconds, 3),
            "worker_passes": worker.passes, "worker_errors": worker.errors, "misses": misses,
        }
    finally:
        stop.set()
        worker.stop()
        if not args.keep:
            drop_namespace(rt.driver, namespace)  # entities the worker derived go too
        rt.close()


def _pct(values: Sequence[float], q: float) -> float:
    return values[int(q * (len(values) - 1))] if values else float("nan")


# ------------------------------------------------------------------------------------ output
def render_table(results: dict[str, Any]) -> str:
    lines = ["| dataset | detector | pairs | precision | recall | F1 | ms/pair (mean) | ms/pair (p95) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in results["quality"]:
        lines.append(f"| {row['dataset']} | {row['detector']} | {row['pairs']} | {row['precision']:.3f} | "
                     f"{row['recall']:.3f} | {row['f1']:.3f} | {row['ms_per_pair_mean']:.3f} | "
                     f"{row['ms_per_pair_p95']:.3f} |")
    e2e = results.get("end_to_end")
    if e2e:
        pl, de, lag = e2e["planted"], e2e["decoys"], e2e["lag_seconds"]
        lines += ["", "| end to end (default policy, background worker) | value |", "|---|---:|",
                  f"| planted contradictions surfaced in recall packets | {pl['surfaced']}/{pl['pairs']} "
                  f"({e2e['surfacing_rate']:.1%}) |",
                  f"| planted pairs that reached a detector (candidate coverage) | {pl['candidates']}/{pl['pairs']} |",
                  f"| planted pairs with a CONTRADICTS edge | {pl['edges']}/{pl['pairs']} |",
                  f"| decoy pairs falsely surfaced | {de['surfaced']}/{de['pairs']} |",
                  f"| detection lag after ingest, p50 / p95 / max (s) | {lag['p50']:.3f} / {lag['p95']:.3f} / "
                  f"{lag['max']:.3f} |",
                  f"| claims ingested / time to catch up (s) | {e2e['claims']} / {e2e['caught_up_seconds']:.2f} |"]
    agent = next((r for r in results["quality"] if r["dataset"] == "agent-memory" and r["detector"] == "heuristic"),
                 None)
    if agent:
        lines += ["", "| agent-memory kind (heuristic) | pairs | flagged as contradiction |", "|---|---:|---:|"]
        for kind, s in agent["by_kind"].items():
            tag = "contradiction" if s["contradiction"] else "non-contradiction"
            lines.append(f"| {kind} ({tag}) | {s['n']} | {s['flagged']} |")
    return "\n".join(lines)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.contradictions", description=__doc__.splitlines()[0])
    p.add_argument("--sick", type=Path, default=DEFAULT_SICK, help="folder with SICK.txt (default ../shared/data/sick)")
    p.add_argument("--sick-limit", type=int, default=None, help="score a seeded sample of SICK pairs (default: all)")
    p.add_argument("--pairs", type=Path, default=DEFAULT_PAIRS, help="agent-memory pairs (.jsonl)")
    p.add_argument("--nli-model", default=None, help="local NLI cross-encoder checkpoint to benchmark too")
    p.add_argument("--llm-model", default=None, help="litellm model name for the LLM judge (needs a provider)")
    p.add_argument("--llm-api-base", default=None, help="api_base for the LLM judge (e.g. a local server)")
    p.add_argument("--llm-rps", type=float, default=2.0, help="LLM judge calls per second (default 2)")
    p.add_argument("--heuristic-threshold", type=float, default=0.6)
    p.add_argument("--nli-threshold", type=float, default=0.7)
    p.add_argument("--llm-threshold", type=float, default=0.7)
    p.add_argument("--batch", type=int, default=32, help="pairs per judge() call (default 32)")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--no-e2e", action="store_true", help="skip the end-to-end run (no Neo4j needed)")
    p.add_argument("--e2e-pairs", type=int, default=80, help="planted and decoy pairs each (default 80)")
    p.add_argument("--e2e-ingest-batch", type=int, default=4, help="claims per ingest call (default 4)")
    p.add_argument("--e2e-worker-batch", type=int, default=50, help="claims per worker batch (default 50)")
    p.add_argument("--e2e-interval", type=float, default=0.05, help="worker poll interval in seconds")
    p.add_argument("--e2e-timeout", type=float, default=300.0, help="wait_for_projections timeout")
    p.add_argument("--namespace", default=None, help="namespace for the end-to-end run (default: fresh)")
    p.add_argument("--keep", action="store_true", help="keep the end-to-end namespace afterwards")
    p.add_argument("--quick", action="store_true", help="smoke size: 400 SICK pairs, 10 planted + 10 decoys")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR)
    args = p.parse_args(argv)
    if args.quick:
        args.sick_limit = args.sick_limit or 400
        args.e2e_pairs = min(args.e2e_pairs, 10)
    return args


def run(argv: list[str] | None = None) -> dict[str, Any]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = _parse(argv)
    datasets: list[tuple[str, list[Pair]]] = []
    if (args.sick / "SICK.txt").exists():
        datasets.append(("SICK", load_sick(args.sick, args.sick_limit, args.seed)))
    else:
        print(f"SICK not found at {args.sick}; skipping it", file=sys.stderr)
    agent_pairs = load_agent_pairs(args.pairs)
    datasets.append(("agent-memory", agent_pairs))
    quality = []
    for detector in build_detectors(args):
        for name, pairs in datasets:
            row = evaluate(detector, pairs, args.batch)
            quality.append({"dataset": name, "detector": detector.method, **row})
    results: dict[str, Any] = {
        "benchmark": "contradictions", "at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "quality": quality,
        "environment": {"python": platform.python_version(), "machine": platform.machine(),
                        "cpus": os.cpu_count()},
    }
    if not args.no_e2e:
        results["end_to_end"] = end_to_end(args, agent_pairs)
    print(render_table(results))
    args.results_dir.mkdir(parents=True, exist_ok=True)
    stamp = results["at"].replace("-", "").replace(":", "")
    for path in (args.results_dir / "contradictions-latest.json", args.results_dir / f"contradictions-{stamp}.json"):
        path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    run()
