"""The long run of the temporal model test: seeded random operations against a real Neo4j, every
step checked against the reference model of docs/TEMPORAL.md (benchmarks/temporal_reference.py).

Each run is a sequence of "episodes": a fresh namespace, `--episode-steps` random operations (keyed
and un-keyed writes with and without windows, backfills, corrections, retractions, inferred
supersessions), every step followed by a full comparison at every revision so far and at world
instants around every boundary, plus `graph.claims.check`. Episodes keep the comparison cheap (it grows
with the revisions of one namespace); the steps add up across them. Reports steps run and
violations found, with the first violating step of each episode that had one.

    python -m benchmarks.temporal_model --steps 20000 [--seed 1] [--namespace-prefix bench-tmodel]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.temporal_reference import Reference, StoreUnderTest, compare, describe, random_step
from palimpsest.graph.db.connection import open_driver
from palimpsest.graph.lifecycle.maintenance import drop_namespace
from palimpsest.schema.migrate import migrate, schema_meta
from palimpsest.settings import Settings

DEFAULT_RESULTS_DIR = Path(__file__).resolve().parent / "results"


def run(args_list: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.temporal_model", description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=2000, help="operations in all (default 2000)")
    p.add_argument("--episode-steps", type=int, default=40, help="operations per fresh namespace (default 40)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--namespace-prefix", default="bench-tmodel", help="prefix of the namespaces written")
    p.add_argument("--keep", action="store_true", help="keep the namespaces afterwards")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR, help="where the JSON result goes")
    args = p.parse_args(args_list)

    driver = open_driver(Settings.from_env().neo4j())
    meta = schema_meta(driver) or {}
    dimension = int(meta.get("embedding_dimension") or 384)
    migrate(driver, embedding_dimension=dimension, embedding_model=str(meta.get("embedding_model", "all-MiniLM-L6-v2")))
    rng = random.Random(args.seed)
    steps = violations = episodes = 0
    failures: list[dict[str, Any]] = []
    kinds: dict[str, int] = {}
    started = time.perf_counter()
    try:
        while steps < args.steps:
            episodes += 1
            ns = f"{args.namespace_prefix}-{args.seed}-{episodes}-{uuid.uuid4().hex[:6]}"
            store, ref = StoreUnderTest(driver, ns, dimension), Reference()
            log: list[str] = []
            try:
                for _ in range(min(args.episode_steps, args.steps - steps)):
                    what = random_step(rng, store, ref)
                    kind = what.split()[0]
                    kinds[kind] = kinds.get(kind, 0) + 1
                    log.append(what)
                    steps += 1
                    problems = compare(store, ref)
                    if problems:
                        violations += len(problems)
                        failures.append({"episode": episodes, "step": len(log), "ops": log[-10:],
                                         "problems": problems[:5], **describe(ref)})
                        break
            finally:
                if not args.keep:
                    drop_namespace(driver, ns)
            if steps % 1000 < args.episode_steps:
                print(f"{steps} steps, {violations} violations, {time.perf_counter() - started:.0f} s", flush=True)
                _write(args, _result(args, steps, episodes, kinds, violations, failures, started, done=False))
    finally:
        driver.close()
    result = _result(args, steps, episodes, kinds, violations, failures, started, done=True)
    out = _write(args, result)
    print(f"steps run: {steps} in {episodes} namespaces · violations found: {violations} · {result['seconds']} s "
          f"· operations {result['operations']} → {out}")
    return result


def _result(args: argparse.Namespace, steps: int, episodes: int, kinds: dict[str, int], violations: int,
            failures: list[dict[str, Any]], started: float, *, done: bool) -> dict[str, Any]:
    return {
        "benchmark": "temporal_model", "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()} · {platform.system()} · Python {platform.python_version()}",
        "seed": args.seed, "steps": steps, "episodes": episodes, "operations": dict(sorted(kinds.items())),
        "violations": violations, "failures": failures[:20], "seconds": round(time.perf_counter() - started, 1),
        "finished": done,
    }


def _write(args: argparse.Namespace, result: dict[str, Any]) -> Path:
    """Written every 1,000 steps too, so a long run that is stopped still leaves its count."""
    results_dir: Path = args.results_dir
    results_dir.mkdir(parents=True, exist_ok=True)
    out = results_dir / f"temporal-model-seed{args.seed}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return out


def main() -> None:
    run()


if __name__ == "__main__":
    main()
