"""Where exact search stops paying: recall on a namespace searched exactly against the same namespace in
its own indexes (graph.claims.index), at several sizes, in one run.

For each size N a namespace of N claims is written (the scale corpus, vectors as `benchmarks.scale
--fill synthetic` makes them: real embeddings of a pool plus seeded noise) and given its own indexes
(`claim_index.ensure(…, minimum=0)`); the same queries are recalled through them, then again with the
Store's index marker removed, which is exactly how a namespace below the limit is searched.
Reported per size: recall p50/p99 beyond the query embedding in both modes, their ratio, and how
many packets came out identical (exact search and an un-quantised HNSW index agree unless the index
misses a neighbour). `EXACT_LIMIT` is chosen from
this table: the size up to which the exact scan costs about what the index costs.

    python -m benchmarks.tenancy [--sizes 64 128 256 512 1024] [--queries 100] [--namespace-prefix P]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.scale import DEFAULT_RESULTS_DIR, SyntheticVectors, build_corpus, build_queries, fill, tenant_recall


def run(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").strip().split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--namespace-prefix", default="bench-tenancy")
    ap.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR)
    args = ap.parse_args(argv)

    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.graph.claims import index as claim_index
    from palimpsest.graph.lifecycle.maintenance import drop_namespace

    rt = Runtime.from_env()
    queries = build_queries(args.queries, args.seed)
    synthetic = SyntheticVectors(rt.embedder.embed([r["content"] for r in build_corpus(2000, args.seed + 1)]),
                                 args.seed)
    stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%S}"
    rows: list[dict[str, Any]] = []
    try:
        for size in args.sizes:
            ns = f"{args.namespace_prefix}-{size}-{stamp}"
            mem = Memory(rt, ns)
            fill(mem, build_corpus(size, args.seed), synthetic)
            assert claim_index.ensure(rt.driver, ns, rt.settings.database, minimum=0)
            indexed = tenant_recall(mem, rt.embedder, queries)
            # The mode is the Store's marker alone: without it the same namespace is searched exactly.
            rt.driver.execute_query("MATCH (s:Store {namespace: $ns}) SET s.claim_indexes = null", ns=ns)
            exact = tenant_recall(mem, rt.embedder, queries)
            same = sum(1 for a, b in zip(exact["packets"], indexed["packets"], strict=True) if a == b)
            row = {"claims": size, "exact_p50": exact["p50"], "exact_p99": exact["p99"], "index_p50": indexed["p50"],
                   "index_p99": indexed["p99"], "p50_ratio_exact_vs_index": round(exact["p50"] / indexed["p50"], 2),
                   "identical_packets": f"{same}/{len(queries)}", "load": indexed["load_after"]}
            rows.append(row)
            print(row, flush=True)
            drop_namespace(rt.driver, ns)
        result = {"benchmark": "tenancy", "exact_limit": claim_index.EXACT_LIMIT, "queries": args.queries,
                  "seed": args.seed, "rows": rows, "measured_at": datetime.now(UTC).isoformat(),
                  "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                              "platform": platform.platform()}}
        args.results_dir.mkdir(parents=True, exist_ok=True)
        (args.results_dir / "tenancy-latest.json").write_text(json.dumps(result, indent=2) + "\n")
        print("\n| claims | exact p50 ms | exact p99 | own index p50 ms | own index p99 | exact / index p50 "
              "| identical packets |\n|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['claims']:,} | {r['exact_p50']:.2f} | {r['exact_p99']:.2f} | {r['index_p50']:.2f} "
                  f"| {r['index_p99']:.2f} | {r['p50_ratio_exact_vs_index']} | {r['identical_packets']} |")
        return result
    finally:
        rt.close()


if __name__ == "__main__":
    run()
