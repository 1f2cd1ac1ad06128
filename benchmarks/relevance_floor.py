"""What a relevance floor (policy `min_relevance`) buys and costs, on SituatedQA's real timelines.

The benefit is measured where nothing can be right: each question is asked at an instant one year
before its first answer started, when no claim of its key is valid. Without a floor the packet is
filled with the best of everything else (other questions' answers); with one, weakly matching
claims stay out and the packet says how many it cut. The cost is measured where the answer exists:
the question asked now (the current answer must stay in the packet) and inside the older window
(the older answer must). The multi-hop and keyed temporal costs are measured by
`benchmarks.multihop --min-relevance …` and `benchmarks.temporal --min-relevance …`.

Every floor runs on the same namespace (keyed claims written in world order, as
`benchmarks.temporal_world` writes them), in one process. Nothing here was tuned: the floors are a
fixed grid.

    python -m benchmarks.relevance_floor [--situatedqa PATH] [--floors 0 0.1 0.2 0.3] [--namespace-prefix P]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.temporal_world import DEFAULT_DATA, _ingest, _instant, load_situatedqa

DEFAULT_RESULTS_DIR = Path(__file__).resolve().parent / "results"


def run(args_list: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.relevance_floor", description=__doc__.split("\n\n")[0])
    p.add_argument("--situatedqa", type=Path, default=DEFAULT_DATA, help="SituatedQA temporal directory")
    p.add_argument("--floors", type=float, nargs="+", default=[0.0, 0.1, 0.2, 0.3])
    p.add_argument("--limit", type=int, default=None, help="first N usable timelines (default all)")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--namespace-prefix", default="bench-floor")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR)
    args = p.parse_args(args_list)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.graph.lifecycle.maintenance import drop_namespace

    data = load_situatedqa(args.situatedqa, "dev", args.limit)
    rt = Runtime.from_env()
    ns = f"{args.namespace_prefix}-{uuid.uuid4().hex[:8]}"
    mem = Memory(rt, ns)
    rows: list[dict[str, Any]] = []
    try:
        _ingest(mem, data.timelines, "keyed", 7)
        for floor in args.floors:
            version = f"floor-{floor:g}"
            mem.register_policy({"version": version, "min_relevance": floor})
            empty = foreign = now_ok = past_ok = 0
            cut = 0
            for t in data.timelines:
                own = set(t.ids["keyed"].values())
                before = _instant(t.prev_start) - timedelta(days=365)
                packet = mem.recall(t.question, k=args.k, policy_version=version, valid_at=before)
                empty += not packet.items
                foreign += any(it.id not in own for it in packet.items)
                cut += packet.hidden.below_relevance
                now = mem.recall(t.question, k=args.k, policy_version=version)
                now_ok += any(it.id == t.ids["keyed"]["cur"] for it in now.items)
                middle = _instant(t.prev_start) + (_instant(t.cur_start) - _instant(t.prev_start)) / 2
                past = mem.recall(t.question, k=args.k, policy_version=version, valid_at=middle)
                past_ok += any(it.id == t.ids["keyed"]["prev"] for it in past.items)
            n = len(data.timelines)
            rows.append({"min_relevance": floor, "questions": n,
                         "nothing_valid_empty_packet": round(empty / n, 4),
                         "nothing_valid_unrelated_items": round(foreign / n, 4),
                         "nothing_valid_cut_per_packet": round(cut / n, 2),
                         "now_answer_in_packet": round(now_ok / n, 4), "past_answer_in_packet": round(past_ok / n, 4)})
            print(rows[-1], flush=True)
        check = mem.check()
    finally:
        drop_namespace(rt.driver, ns)
        rt.close()
    result = {"benchmark": "relevance_floor", "date": datetime.now(UTC).date().isoformat(),
              "machine": f"{os.cpu_count()}-core {platform.machine()} {platform.system()}", "k": args.k,
              "rows": rows, "check_ok": check.ok}
    args.results_dir.mkdir(parents=True, exist_ok=True)
    out = args.results_dir / "relevance-floor-latest.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("| min_relevance | nothing valid: empty packet | nothing valid: unrelated items | cut per packet "
          "| now: answer kept | past: answer kept |\n|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['min_relevance']:g} | {100 * r['nothing_valid_empty_packet']:.1f}% | "
              f"{100 * r['nothing_valid_unrelated_items']:.1f}% | {r['nothing_valid_cut_per_packet']} | "
              f"{100 * r['now_answer_in_packet']:.1f}% | {100 * r['past_answer_in_packet']:.1f}% |")
    return result


if __name__ == "__main__":
    run()
