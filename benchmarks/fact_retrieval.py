"""Fact retrieval on a synthetic two-hop world: what triple match and beam search add, and what they cost.

Why it is built this way:

* **No key needed, and said so.** Facts come from the LLM extractor, and no key exists here, so the
  extractor's answers are scripted through litellm's `mock_response` (the whole litellm + instructor
  path runs; only the model's text is given): each claim states one fact and the script answers it
  exactly. This is extraction at its best — an upper bound on what facts can add, not a measurement
  of a real extractor. On real passages run `benchmarks.multihop --llm-model MODEL` with a key.
* **A world that needs the second hop.** Films with a director, the director's spouse and birthplace,
  an actor who starred in the film and the actor's own spouse, the city the film was shot in. The
  questions — "Who is married to the director of F?", "Where was the director of F born?" — name
  the film only; the gold claim ("D is married to S.", "D was born in C.") names the director only,
  and reads like every other marriage or birth in the world. The actor's marriage is one hop from the
  film too, through "starred in", so the beam has to choose its path by what the query says.
* **Side by side in one run, one namespace**: hybrid recall (the default policy), hybrid + PPR
  (benchmarks.multihop's chosen knobs), and each with `fact_retrieval` "triples" and "beam". Hit@2 /
  Hit@5 of the single gold claim; recall latency p50 / p95 per mode (query vectors cached), so the
  stage's cost is measured against the same recall without it. Names are drawn from a seeded RNG.

Run `python -m benchmarks.fact_retrieval [--films 100 400]`. Results: benchmarks/README.md,
"fact_retrieval".
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from palimpsest.graph.lifecycle.maintenance import drop_namespace

DEFAULT_RESULTS = Path(__file__).resolve().parent / "results" / "fact-retrieval-latest.json"
EXTRACTOR_MODEL = "gpt-4o-mini"  # the name the policy carries; the extractor's answers are scripted
_LINE = re.compile(r"^Claim (\d+)(?: \(about: [^)]*\))?: (.*)$")
FIRST = ["Ada", "Bela", "Cyra", "Dov", "Elin", "Fenn", "Gala", "Hugo", "Ines", "Joss", "Kira", "Lior", "Mara",
         "Nils", "Oona", "Pavel", "Quinn", "Rosa", "Sven", "Tova", "Ugo", "Vera", "Wim", "Xena", "Yann", "Zora"]
SYLLABLES = ["bar", "cel", "dor", "fen", "gal", "hol", "ist", "jun", "kar", "lom", "mer", "nov", "ost", "pra",
             "quil", "ros", "sel", "tar", "ulm", "vek", "wen", "yor", "zan"]
WORDS = ["Harbour", "Silent", "Amber", "Winter", "Glass", "Paper", "Iron", "Velvet", "Hollow", "Crimson", "Quiet",
         "Northern", "Broken", "Golden", "Distant", "Salt", "Copper", "Lantern", "Marble", "Falling"]
NOUNS = ["Lights", "River", "Garden", "Station", "Orchard", "Letters", "Tide", "Mirror", "Bridge", "Summer",
         "Harvest", "Voices", "Compass", "Kingdom", "Shadows", "Horizon"]
CITIES = ["Linz", "Trieste", "Ghent", "Porto", "Bergen", "Lyon", "Turin", "Cork", "Graz", "Leiden", "Bilbao",
          "Aarhus", "Brno", "Split", "Tartu", "Malmo"]
MODES: dict[str, dict[str, Any]] = {
    "hybrid": {},
    "hybrid +facts:triples": {"fact_retrieval": "triples"},
    "hybrid +facts:beam": {"fact_retrieval": "beam"},
    "hybrid+ppr": {"graph_expansion": "ppr", "sibling_penalty": 1.0, "ppr_protect_top": 2},
    "hybrid+ppr +facts:triples": {"graph_expansion": "ppr", "sibling_penalty": 1.0, "ppr_protect_top": 2,
                                  "fact_retrieval": "triples"},
    "hybrid+ppr +facts:beam": {"graph_expansion": "ppr", "sibling_penalty": 1.0, "ppr_protect_top": 2,
                               "fact_retrieval": "beam"},
}


def world(films: int, seed: int = 7) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str]]]:
    """(claim text -> the extractor's scripted answer, [(question, gold claim text)])."""
    rng = random.Random(seed)
    used: set[str] = set()

    def unique(make: Any) -> str:
        while True:
            name = make()
            if name not in used:
                used.add(name)
                return str(name)

    def person() -> str:
        return unique(lambda: f"{rng.choice(FIRST)} {rng.choice(SYLLABLES).title()}{rng.choice(SYLLABLES)}")

    def claim(text: str, subject: tuple[str, str], predicate: str, obj: tuple[str, str]) -> tuple[str, Any]:
        return text, {"entities": [{"name": subject[0], "type": subject[1]}, {"name": obj[0], "type": obj[1]}],
                      "facts": [{"subject": subject[0], "predicate": predicate, "object": obj[0],
                                 "object_is_entity": True, "confidence": 0.9, "single_valued": False}]}

    answers: dict[str, Any] = {}
    questions: list[tuple[str, str]] = []
    for _ in range(films):
        film = unique(lambda: f"{rng.choice(WORDS)} {rng.choice(NOUNS)} {rng.randint(2, 99)}")
        director, spouse, actor, partner = person(), person(), person(), person()
        born, shot = rng.choice(CITIES), rng.choice(CITIES)
        f, d, s, a, p = (film, "film"), (director, "person"), (spouse, "person"), (actor, "person"), (partner, "person")
        married = f"{director} is married to {spouse}."
        birth = f"{director} was born in {born}."
        for text, answer in (claim(f"{director} directed the film {film}.", d, "directed", f),
                             claim(married, d, "married_to", s), claim(birth, d, "born_in", (born, "city")),
                             claim(f"{actor} starred in {film}.", a, "starred_in", f),
                             claim(f"{actor} is married to {partner}.", a, "married_to", p),
                             claim(f"{film} was shot in {shot}.", f, "filmed_in", (shot, "city"))):
            answers[text] = answer
        questions += [(f"Who is married to the director of {film}?", married),
                      (f"Where was the director of {film} born?", birth)]
    return answers, questions


def scripted(answers: dict[str, Any]) -> Any:
    """A litellm.completion answering each prompt's numbered claims from `answers` (mock_response)."""
    from palimpsest.extraction.llm_client import import_litellm

    litellm = import_litellm()

    def completion(*args: Any, **kwargs: Any) -> Any:
        prompt = next(m["content"] for m in kwargs["messages"] if m["role"] == "user")
        numbered = [m.groups() for m in map(_LINE.match, prompt.splitlines()) if m]
        kwargs["mock_response"] = json.dumps({"claims": [
            {"claim": int(i), **answers.get(text, {"entities": [], "facts": []})} for i, text in numbered]})
        return litellm.completion(*args, **kwargs)

    return completion


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 1)


def run(films: int, prefix: str, seed: int) -> dict[str, Any]:
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.api.worker import ProjectionWorker, WorkerConfig
    from palimpsest.extraction.entities import LlmExtractorOptions

    answers, questions = world(films, seed)
    rt = Runtime.from_env()
    # The extractor's answers are scripted (no provider is called), but the policy still names a model,
    # and only the operator's allow-list admits a name: this run is the operator, and admits its own.
    rt.models = rt.models.admitting("llm", EXTRACTOR_MODEL)
    ns = f"{prefix}-{films}-{uuid.uuid4().hex[:8]}"
    mem = Memory(rt, ns)
    try:
        started = time.perf_counter()
        texts = list(answers)
        ids: dict[str, str] = {}
        for i in range(0, len(texts), 500):
            chunk = texts[i:i + 500]
            written = mem.ingest_many([{"content": t, "source": "notes"} for t in chunk])
            ids.update((t, str(it.id)) for t, it in zip(chunk, written.items, strict=True))
        write_s = time.perf_counter() - started
        mem.register_policy({"version": "extract", "extractor": "llm", "extractor_model": EXTRACTOR_MODEL})
        config = WorkerConfig(policy_version="extract", entity_embeddings=False, batch_claims=500,
                              llm_extractor=LlmExtractorOptions(completion=scripted(answers), batch_size=16,
                                                                max_calls_per_second=None, max_retries=0))
        started = time.perf_counter()
        report = ProjectionWorker(rt, config, detectors=[]).run_once(ns)
        proj_s = time.perf_counter() - started
        for q, _ in questions:
            rt.embedder.embed_query(q)  # cached from here on: latency is retrieval, not the model
        out: dict[str, Any] = {"films": films, "claims": len(texts), "questions": len(questions),
                               "facts": report.facts_created, "write_seconds": round(write_s, 2),
                               "projections_seconds": round(proj_s, 2), "modes": []}
        for name, knobs in MODES.items():
            version = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            mem.register_policy({"version": version, "k": 5, **knobs})
            hit2, hit5, times, stable = [], [], [], True
            for n, (q, gold) in enumerate(questions):
                t = time.perf_counter()
                packet = mem.recall(q, policy_version=version, k=5)
                times.append((time.perf_counter() - t) * 1000)
                if n < 10:
                    stable = stable and mem.recall(q, policy_version=version, k=5).fingerprint == packet.fingerprint
                ranked = [it.id for it in packet.items]
                hit2.append(ids[gold] in ranked[:2])
                hit5.append(ids[gold] in ranked[:5])
            out["modes"].append({"mode": name, "hit_at_2": round(100 * statistics.fmean(hit2), 1),
                                 "hit_at_5": round(100 * statistics.fmean(hit5), 1), "p50_ms": _pct(times, 0.5),
                                 "p95_ms": _pct(times, 0.95), "deterministic": stable,
                                 "knobs": json.dumps(knobs, sort_keys=True)})
        return out
    finally:
        drop_namespace(rt.driver, ns)
        rt.close()


def table(results: list[dict[str, Any]]) -> str:
    lines = []
    for r in results:
        lines.append(f"\n**{r['films']} films** — {r['claims']} claims, {r['facts']} facts, {r['questions']} "
                     f"questions; write {r['write_seconds']}s, projections {r['projections_seconds']}s\n")
        lines.append("| mode | Hit@2 | Hit@5 | p50 ms | p95 ms | deterministic |")
        lines.append("|---|---:|---:|---:|---:|---|")
        for m in r["modes"]:
            lines.append(f"| {m['mode']} | {m['hit_at_2']} | {m['hit_at_5']} | {m['p50_ms']} | {m['p95_ms']} | "
                         f"{'yes' if m['deterministic'] else 'NO'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--films", type=int, nargs="+", default=[100, 400])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--namespace-prefix", default="bench-facts")
    ap.add_argument("--out", type=Path, default=DEFAULT_RESULTS)
    args = ap.parse_args(argv)
    results = [run(n, args.namespace_prefix, args.seed) for n in args.films]
    payload = {"benchmark": "fact_retrieval", "at": datetime.now(UTC).isoformat(),
               "python": platform.python_version(), "seed": args.seed, "extraction": "scripted (mock_response)",
               "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
