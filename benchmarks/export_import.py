"""Export / import throughput, fidelity at sampled revisions, and erase latency, on one store.

What it does, in order, on namespaces named from `--namespace-prefix`:

1. **Build** `<prefix>-src`: `--claims` claims from the scale benchmark's corpus (agent-memory
   statements, ~20% re-using a claim_key, so supersession chains), written in batches of `--batch`
   (one store revision each), with some versions given validity windows (successions), a few
   retractions between batches, a change of the default policy, and — unless `--no-projections` —
   the background worker's pass (contradictions, entities, facts).
2. **Export** it to a file (`Memory.export_lines`, streamed): claims/s and bytes. Recall at
   `--revisions` sampled revisions (first, last, evenly between) × `--queries` queries, with and
   without a `validAt`: the source's fingerprints.
3. **Copy round trip**: the source is dropped and the file imported under the same name (`copy`
   mode, ids kept): claims/s, and every sampled fingerprint must be identical.
4. **Import with remap** into `<prefix>-remap` (fresh ids, same database): claims/s. The copy is
   dropped (so only one store in the database holds these texts, as when the source was measured),
   and each remapped packet is translated back (ids and namespace to the source's, lists ordered by
   id re-sorted) with its fingerprint recomputed: *fingerprint matches* counts those equal to the
   source's; *content matches* counts packets whose items, scores, hidden counts, contradictions and
   beliefs are equal as content (an ordering that falls back to ids can differ with the ids).
5. **Erase latency**: `--erases` single-claim erasures of random claims of the remapped store,
   p50/p99, then `check`.

Writes benchmarks/results/export-import-<timestamp>.json and export-import-latest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.scale import build_corpus, build_queries, load, summary

DEFAULT_RESULTS_DIR = Path(__file__).resolve().parent / "results"
_ID_SPACES = {"claim": "claim", "erased": "claim", "entity": "entity", "fact": "fact"}


# ------------------------------------------------------------------------------------------------
# Comparing packets across a remap
# ------------------------------------------------------------------------------------------------
def reverse_ids(lines: Iterable[str], target: str) -> dict[str, str]:
    """new id → old id for every claim, tombstone, entity and fact of an export file remapped into
    `target` (graph.lifecycle.importer.remapped_id is deterministic, so the map is computed, not read back)."""
    from palimpsest.graph.lifecycle.importer import remapped_id

    out: dict[str, str] = {}
    for line in lines:
        record = json.loads(line)
        space = _ID_SPACES.get(record.get("kind", ""))
        if space is not None:
            old = record["props"]["id"]
            out[remapped_id(target, space, old)] = old
    return out


def translate(packet: Any, back: Mapping[str, str], namespace: str) -> Any:
    """A packet of the remapped store as the source would have written it: ids and namespace mapped
    back, then the lists recall orders by id re-sorted with the source's ids."""
    from palimpsest.schema.models import ContextPacket

    def t(value: Any) -> Any:
        return back.get(value, value) if isinstance(value, str) else value

    data = packet.model_dump(mode="json")
    data["namespace"] = namespace
    for it in data["items"]:
        for name in ("id", "supersedes", "matched_via"):
            it[name] = t(it[name])
    data["items"].sort(key=lambda it: (-it["score"], -it["revision"], it["id"]))
    for rank, it in enumerate(data["items"], start=1):
        it["rank"] = rank
    order = {it["id"]: i for i, it in enumerate(data["items"])}
    for c in data["contradictions"]:
        c["item_id"], c["other"]["id"] = t(c["item_id"]), t(c["other"]["id"])
    data["contradictions"].sort(key=lambda c: (order.get(c["item_id"], 0), -c["score"], c["other"]["id"], c["method"]))
    for e in data["edges"]:
        e["source_id"], e["target_id"] = t(e["source_id"]), t(e["target_id"])
    for b in data["beliefs"]:
        b["id"], b["subject_id"], b["object_id"] = t(b["id"]), t(b["subject_id"]), t(b["object_id"])
        b["supported_by"] = sorted(t(x) for x in b["supported_by"])
    data["beliefs"].sort(key=lambda b: (-b["confidence"], b["id"]))
    return ContextPacket.model_validate(data)


def content_view(packet: Any) -> Any:
    """What a packet says, without ids: items in order with scores, hidden counts, contradictions and
    beliefs as sets of content."""
    items = [(it.content, it.score, it.valid_until) for it in packet.items]
    contents = {it.id: it.content for it in packet.items}
    contradictions = sorted((contents.get(c.item_id, ""), c.other.content, c.score, c.method)
                            for c in packet.contradictions)
    beliefs = sorted((b.subject, b.predicate, b.object, b.confidence) for b in packet.beliefs)
    return items, packet.hidden.model_dump(), contradictions, beliefs, packet.store_revision


# ------------------------------------------------------------------------------------------------
# Building the source store
# ------------------------------------------------------------------------------------------------
def build(mem: Any, claims: int, batch: int, seed: int, projections: bool) -> dict[str, Any]:
    rng = random.Random(seed)
    rows = build_corpus(claims, seed)
    for i, row in enumerate(rows):  # a keyed version in five starts a window: successions, closed windows
        if row.get("claim_key") and rng.random() < 0.2:
            row["valid_from"] = f"20{20 + i % 7}-{1 + i % 12:02d}-01"
    mem.register_policy({"version": "bench-k5", "k": 5})
    ids: list[str] = []
    started = time.perf_counter()
    for start in range(0, len(rows), batch):
        result = mem.ingest_many(rows[start:start + batch])
        ids += [str(i) for i in result.ids if i]
        if start // batch % 10 == 3:
            mem.retract(rng.choice(ids), "benchmark retraction")
        if start // batch == len(rows) // batch // 2:
            mem.set_default_policy("bench-k5")
    info: dict[str, Any] = {"claims": len(ids), "ingest_s": round(time.perf_counter() - started, 2)}
    if projections:
        started = time.perf_counter()
        passes = 0
        while mem.run_projections().batches:
            passes += 1
        info["projections_s"] = round(time.perf_counter() - started, 2)
    info["revision"] = mem.stats().revision
    return info


def sample_revisions(top: int, n: int) -> list[int]:
    if n <= 1 or top <= 1:
        return [top]
    return sorted({1 + round(i * (top - 1) / (n - 1)) for i in range(n)})


def differing_fields(a: Any, b: Any) -> list[str]:
    """Which fields of two packets differ (served_at aside), and for items which item fields: what moved
    when a fingerprint did not replay."""
    left, right = a.model_dump(exclude={"served_at"}), b.model_dump(exclude={"served_at"})
    fields = sorted(f for f in left if left[f] != right[f])
    if "items" in fields and len(left["items"]) == len(right["items"]):
        moved = sorted({f for x, y in zip(left["items"], right["items"], strict=True) for f in x if x[f] != y[f]})
        fields = [f for f in fields if f != "items"] + [f"items.{f}" for f in moved]
    return fields


def fingerprints(mem: Any, queries: list[str], revisions: list[int], valid_at: str) -> dict[tuple[str, int, str], Any]:
    out = {}
    for q in queries:
        for rev in revisions:
            for when in ("", valid_at):
                out[(q, rev, when)] = mem.recall(q, as_of_revision=rev, valid_at=when or None)
    return out


# ------------------------------------------------------------------------------------------------
# Run
# ------------------------------------------------------------------------------------------------
def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.export_import", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--namespace-prefix", default=f"bench-export-{datetime.now(UTC):%Y%m%dT%H%M%S}",
                   help="namespaces <prefix>-src and <prefix>-remap are created (and dropped unless --keep)")
    p.add_argument("--claims", type=int, default=5000)
    p.add_argument("--batch", type=int, default=100, help="claims per ingest call (one revision each)")
    p.add_argument("--revisions", type=int, default=8, help="sampled revisions to compare")
    p.add_argument("--queries", type=int, default=4)
    p.add_argument("--valid-at", default="2024-06-01", help="the validAt of the world-time recalls")
    p.add_argument("--erases", type=int, default=100)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--no-projections", action="store_true", help="skip the worker (no contradictions/entities)")
    p.add_argument("--keep", action="store_true", help="keep the namespaces afterwards")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR)
    return p.parse_args(argv)


def run(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.graph.lifecycle.maintenance import drop_namespace

    rt = Runtime.from_env()
    src_ns, remap_ns = f"{args.namespace_prefix}-src", f"{args.namespace_prefix}-remap"
    src, remapped = Memory(rt, src_ns), Memory(rt, remap_ns)
    result: dict[str, Any] = {
        "benchmark": "export_import", "namespaces": [src_ns, remap_ns], "seed": args.seed,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "load_before": load(),
    }
    try:
        result["source"] = build(src, args.claims, args.batch, args.seed, not args.no_projections)
        print(f"built {src_ns}: {result['source']}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "export.jsonl"
            started = time.perf_counter()
            with path.open("w", encoding="utf-8") as out:
                for line in src.export_lines():
                    out.write(line + "\n")
            seconds = time.perf_counter() - started
            claims = result["source"]["claims"]
            result["export"] = {"seconds": round(seconds, 2), "claims_per_s": round(claims / seconds, 1),
                                "bytes": path.stat().st_size, "load_after": load()}
            print(f"export: {result['export']}", flush=True)

            def timed_import(mem: Any, remap: bool) -> dict[str, Any]:
                begun = time.perf_counter()
                with path.open(encoding="utf-8") as src_lines:
                    imported = mem.import_lines(src_lines, remap=remap)
                took = time.perf_counter() - begun
                return {"mode": imported.mode, "seconds": round(took, 2), "claims_per_s": round(claims / took, 1),
                        "written": imported.written, "load_after": load()}

            revisions = sample_revisions(result["source"]["revision"], args.revisions)
            queries = build_queries(args.queries, args.seed)
            before = fingerprints(src, queries, revisions, args.valid_at)
            # The same recalls again, nothing changed: how stable the packets are on their own.
            baseline = fingerprints(src, queries, revisions, args.valid_at)
            drift = sum(baseline[k].fingerprint != before[k].fingerprint for k in before)

            # Copy: the source goes, the file comes back under the same name, ids kept.
            drop_namespace(rt.driver, src_ns)
            result["import_copy"] = timed_import(src, False)
            print(f"import (copy): {result['import_copy']}", flush=True)
            with path.open(encoding="utf-8") as src_lines:
                exported = [line.rstrip("\n") for line in src_lines][1:]
            identical = list(src.export_lines())[1:] == exported  # the same store, record for record
            again = fingerprints(src, queries, revisions, args.valid_at)
            result["copy_fidelity"] = {"revisions": revisions, "recalls": len(before), "fingerprint_matches": sum(
                again[k].fingerprint == before[k].fingerprint for k in before), "items_match": sum(
                [it.id for it in again[k].items] == [it.id for it in before[k].items] for k in before),
                "store_reexports_identical": identical, "baseline_drift": drift,
                "differences": [{"query": k[0], "revision": k[1], "mode": k[2], "fields": differing_fields(
                    before[k], again[k])} for k in sorted(before) if again[k].fingerprint != before[k].fingerprint]}
            print(f"copy fidelity: {result['copy_fidelity']}", flush=True)

            # Remap: a second copy under fresh ids; compared once it is the only store with these texts
            # (two namespaces with the same texts share the indexes' top-N, as any two tenants would).
            result["import_remap"] = timed_import(remapped, True)
            print(f"import (remap): {result['import_remap']}", flush=True)
            drop_namespace(rt.driver, src_ns)
            with path.open(encoding="utf-8") as src_lines:
                back = reverse_ids(src_lines, remap_ns)
            after = fingerprints(remapped, queries, revisions, args.valid_at)
            exact = sum(translate(after[k], back, src_ns).compute_fingerprint() == before[k].fingerprint
                        for k in before)
            same = sum(content_view(after[k]) == content_view(before[k]) for k in before)
            items = sum([it.content for it in after[k].items] == [it.content for it in before[k].items]
                        for k in before)
            result["remap_fidelity"] = {"revisions": revisions, "recalls": len(before), "fingerprint_matches": exact,
                                        "content_matches": same, "items_match": items}
            print(f"remap fidelity: {result['remap_fidelity']}", flush=True)

        rng = random.Random(args.seed + 1)
        records, _, _ = rt.driver.execute_query(
            "MATCH (c:Claim {namespace: $ns}) RETURN c.id AS id ORDER BY c.revision, c.id", ns=remap_ns)
        victims = rng.sample([str(r["id"]) for r in records], min(args.erases, len(records)))
        latencies = []
        for cid in victims:
            begun = time.perf_counter()
            remapped.erase([cid], reason="benchmark erasure")
            latencies.append((time.perf_counter() - begun) * 1000.0)
        report = remapped.check()
        result["erase_ms"] = summary(latencies) | {"check_ok": report.ok, "load_after": load()}
        print(f"erase latency (ms): {result['erase_ms']}", flush=True)
    finally:
        if not args.keep:
            drop_namespace(rt.driver, src_ns)
            drop_namespace(rt.driver, remap_ns)
        rt.close()
    args.results_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(result, indent=2, sort_keys=True)
    for name in (f"export-import-{stamp}.json", "export-import-latest.json"):
        (args.results_dir / name).write_text(text + "\n", encoding="utf-8")
    print(markdown(result))
    return result


def markdown(result: dict[str, Any]) -> str:
    src, exp, rem, cop = result["source"], result["export"], result["import_remap"], result["import_copy"]
    fid, cfid, er = result["remap_fidelity"], result["copy_fidelity"], result["erase_ms"]
    return "\n".join([
        "| step | claims | seconds | claims/s | notes |",
        "|---|---|---|---|---|",
        f"| export | {src['claims']:,} | {exp['seconds']} | {exp['claims_per_s']:,} | {exp['bytes'] / 1e6:.1f} MB, "
        f"{src['revision']} revisions |",
        f"| import --remap (same database) | {src['claims']:,} | {rem['seconds']} | {rem['claims_per_s']:,} | "
        f"fingerprints {fid['fingerprint_matches']}/{fid['recalls']}, "
        f"content {fid['content_matches']}/{fid['recalls']}, item lists {fid['items_match']}/{fid['recalls']} |",
        f"| import (copy, after dropping the source) | {src['claims']:,} | {cop['seconds']} | "
        f"{cop['claims_per_s']:,} | re-export identical: {cfid['store_reexports_identical']}; fingerprints "
        f"{cfid['fingerprint_matches']}/{cfid['recalls']}, item lists {cfid['items_match']}/{cfid['recalls']} "
        f"(unchanged store, recalled twice: {cfid['baseline_drift']} differ), at revisions {cfid['revisions']} |",
        f"| erase one claim | {er['n']} erasures | | | p50 {er['p50']:.0f} ms, p99 {er['p99']:.0f} ms, "
        f"check ok: {er['check_ok']} |",
    ])


if __name__ == "__main__":
    run()
