"""Multi-hop passage retrieval: does personalized PageRank over the entity graph find the second hop?

Why it is built this way:

* **Public multi-hop sets, as HippoRAG packages them.** MuSiQue train-100 (1,890 passages) and
  HotpotQA train-100 (994 passages), read from `--data` (never copied into the repository). Each
  passage is one claim: content = passage text, metadata `subject` = its title, so the offline
  extractor's *declared subject* makes every title an entity that other passages can link to —
  the hyperlink structure multi-hop questions follow.
* **Passage Recall@2 / Recall@5** as in HippoRAG: the share of a question's gold passages among
  the top k, averaged over questions.
* **Baselines run side by side in one process on one Neo4j**: dense = the namespace's vector
  index top-k; BM25 = its fulltext index (Lucene BM25) top-k (graph.claims.index); hybrid =
  Palimpsest recall (vector + fulltext pool, linear fusion), with the default policy and with
  `sibling_penalty: 1.0` (the rule, meant for code-like names, also fires on ordinary Wikipedia
  names); hybrid + PPR = `CHOSEN` below. Extra configurations (RRF, weights, damping, seeds)
  are reported with `--tune`, including the ones that did not help.
* **The offline second round** (`+round 2` modes: `Memory.recall_rounds`, graph/recall/rounds.py) runs
  beside the one-round modes on the same namespace: round 1 as the mode, round 2 with the question
  plus the bridge entities of round 1's top items, fused. Its latency is both rounds together.
* **Tune on MuSiQue only**: `--tune` runs the grid on MuSiQue; HotpotQA is reported with the
  configuration chosen there, untouched.
* **Latency** is per recall call after the query embeddings are cached (every mode gets the same
  cached vector), so it measures retrieval, not the embedding model; p50 / p95 over questions.
* **Ingest** is timed in two parts: write (embed + store) and projections (the background
  worker's entity job + PageRank; contradiction detectors are off here).

Run `python -m benchmarks.multihop --data ../shared/data [--datasets musique hotpotqa] [--pooled]`.
Results: benchmarks/README.md, "multihop"; the tuning grid: docs/research-log.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.rerank_required import require_rerank
from palimpsest.graph.claims import index as claim_index
from palimpsest.graph.claims.index import vector_hits
from palimpsest.graph.lifecycle.maintenance import drop_namespace

DEFAULT_RESULTS_DIR = Path(__file__).resolve().parent / "results"
# The namespace's own claims only, as recall searches them (graph.claims.index); BM25 in the namespace's
# own fulltext index (`claim_index.ensure(…, minimum=0)` before the queries), so Lucene's statistics are
# the namespace's.
DENSE_CYPHER = (
    "MATCH (st:Store {namespace: $ns}) " + vector_hits("st", "$vec", "$n") + "WITH node, score "
    "RETURN node.id AS id ORDER BY score DESC, id LIMIT $k"
)
BM25_CYPHER = (
    "MATCH (st:Store {namespace: $ns}) "
    "CALL db.index.fulltext.queryNodes('claim_text_' + st.claim_indexes, $q, {limit: $n}) YIELD node, score "
    "WITH node, score RETURN node.id AS id ORDER BY score DESC, id LIMIT $k"
)


@dataclass
class Passage:
    title: str
    text: str


@dataclass
class Question:
    qid: str
    question: str
    gold: list[int]  # passage indexes


@dataclass
class Dataset:
    name: str
    passages: list[Passage]
    questions: list[Question]
    distractors: int = 0


def load_musique(root: Path) -> Dataset:
    base = root / "hipporag_musique_train100"
    corpus = json.loads((base / "musique_train_corpus.json").read_text())
    passages = [Passage(c["title"], c["text"]) for c in corpus]
    index = {(p.title, p.text): i for i, p in enumerate(passages)}
    questions = []
    for q in json.loads((base / "musique_train.json").read_text()):
        gold = sorted({index[(p["title"], p["paragraph_text"])] for p in q["paragraphs"] if p["is_supporting"]})
        questions.append(Question(q["id"], q["question"], gold))
    return Dataset("musique", passages, questions)


def load_hotpotqa(root: Path) -> Dataset:
    base = root / "hipporag_hotpotqa_train100"
    corpus = json.loads((base / "hotpotqa_train_corpus.json").read_text())
    passages = [Passage(title, "".join(sents)) for title, sents in corpus.items()]
    index = {p.title: i for i, p in enumerate(passages)}
    questions = []
    for q in json.loads((base / "hotpotqa_train.json").read_text()):
        gold = sorted({index[t] for t, _ in q["supporting_facts"]})
        questions.append(Question(q["_id"], q["question"], gold))
    return Dataset("hotpotqa", passages, questions)


def load_hotpotqa_dev(root: Path) -> Dataset:
    """The HotpotQA dev sample (its source: benchmarks/README.md, "multihop"): the head
    of the dev file, cut inside a question, so objects are read until the first incomplete one. It is the
    set no rule or knob here was looked at on; the corpus is the union of its questions' context
    paragraphs (distractors included)."""
    text = (root / "hotpotqa_dev_sample" / "hotpot_dev_distractor_v1_sample.json").read_text()
    decoder, at, rows = json.JSONDecoder(), text.index("[") + 1, []
    while True:
        while at < len(text) and text[at] in ", \n\r\t":
            at += 1
        try:
            row, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            break
        rows.append(row)
    passages: list[Passage] = []
    index: dict[str, int] = {}
    for row in rows:
        for title, sents in row["context"]:
            if title not in index:
                index[title] = len(passages)
                passages.append(Passage(title, "".join(sents)))
    questions = [Question(q["_id"], q["question"], sorted({index[t] for t, _ in q["supporting_facts"]}))
                 for q in rows]
    return Dataset("hotpotqa-dev", passages, questions)


def with_distractors(ds: Dataset, root: Path) -> Dataset:
    extra = json.loads((root / "hipporag_2wiki_corpus_only" / "2wikimultihopqa_corpus.json").read_text())
    seen = {(p.title, p.text) for p in ds.passages}
    added = [Passage(e["title"], e["text"]) for e in extra if (e["title"], e["text"]) not in seen]
    return Dataset(f"{ds.name}+2wiki", ds.passages + added, ds.questions, len(added))


@dataclass
class ModeResult:
    mode: str
    recall_at_2: float
    recall_at_5: float
    p50_ms: float
    p95_ms: float
    deterministic: bool | None = None
    note: str = ""


@dataclass
class DatasetResult:
    dataset: str
    passages: int
    questions: int
    write_seconds: float
    projections_seconds: float
    entities: int
    mentions: int
    related: int
    # With --llm-model: facts the extractor stated, and what extraction cost (litellm's price list).
    facts: int = 0
    extraction_calls: int = 0
    extraction_cost_usd: float = 0.0
    modes: list[ModeResult] = field(default_factory=list)
    # `palimpsest check` on the namespace after every mode ran: violation counts by invariant (empty: clean).
    check_violations: dict[str, int] | None = None


def _recall_at(ranked: list[int], gold: list[int], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_dataset(ds: Dataset, policies: dict[str, dict[str, Any]], *, keep: bool = False,
                single_names: bool = False, prefix: str = "bench-multihop",
                embed_subjects: bool = True, llm_model: str | None = None) -> DatasetResult:
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.api.worker import ProjectionWorker, WorkerConfig
    from palimpsest.extraction.entities import ExtractorOptions
    from palimpsest.graph.recall import lucene_query

    rt = Runtime.from_env()
    # Whoever runs the benchmark is the operator: the models on its command line are admitted.
    rt.models = rt.models.admitting("llm", llm_model).admitting(
        "rerank", *(str(knobs["rerank_model"]) for knobs in policies.values() if knobs.get("rerank_model")))
    ns = f"{prefix}-{ds.name.replace('+', '-')}-{uuid.uuid4().hex[:8]}"
    mem = Memory(rt, ns)
    try:
        started = time.perf_counter()
        ids: list[str] = []
        for i in range(0, len(ds.passages), 1000):
            chunk = ds.passages[i:i + 1000]
            res = mem.ingest_many([{"content": p.text, "source": "wiki", "metadata": {"subject": p.title}}
                                   for p in chunk], embed_subjects=embed_subjects)
            ids.extend(str(it.id) for it in res.items)
        write_s = time.perf_counter() - started
        started = time.perf_counter()
        # Exact canonical merging only: embedding every proposed name costs ~40 s per 5k names on this CPU.
        # With `llm_model` the worker extracts with that chat model (entities and facts, the facts
        # embedded as they are written), which fact retrieval needs: the offline extractor states no facts.
        extract = None
        if llm_model:
            extract = "extract-llm"
            mem.register_policy({"version": extract, "extractor": "llm", "extractor_model": llm_model})
        # Sentence vectors (graph.claims.sentence_vectors) when a mode reads sentences: what a deployment
        # whose policy reranks by sentences has, so the mode's latency is a served namespace's.
        config = WorkerConfig(batch_claims=500, extractor=ExtractorOptions(single_names=single_names),
                              entity_embeddings=False, policy_version=extract,
                              sentence_vectors=any(p.get("rerank") == "sentences" for p in policies.values()))
        worker = ProjectionWorker(rt, config, detectors=[])
        report = worker.run_once(ns)
        proj_s = time.perf_counter() - started
        counts, _, _ = rt.driver.execute_query(
            "CALL () { MATCH (e:Entity {namespace: $ns}) RETURN count(e) AS e } "
            "CALL () { MATCH (:Claim {namespace: $ns})-[m:MENTIONS]->() RETURN count(m) AS m } "
            "CALL () { MATCH (:Entity {namespace: $ns})-[r:RELATED]->() RETURN count(r) AS r } "
            "CALL () { MATCH (f:Fact {namespace: $ns}) RETURN count(f) AS f } RETURN e, m, r, f", ns=ns)
        result = DatasetResult(ds.name, len(ds.passages), len(ds.questions), round(write_s, 2), round(proj_s, 2),
                               int(counts[0]["e"]), int(counts[0]["m"]), int(counts[0]["r"]), int(counts[0]["f"]),
                               report.extraction_calls, round(report.extraction_cost_usd, 4))
        index_of = {cid: i for i, cid in enumerate(ids)}
        vectors = {q.qid: rt.embedder.embed_query(q.question) for q in ds.questions}  # cached from here on
        claim_index.ensure(rt.driver, ns, minimum=0)  # the BM25 baseline needs the namespace's own index

        def baseline(mode: str) -> ModeResult:
            r2, r5, times = [], [], []
            for q in ds.questions:
                t = time.perf_counter()
                if mode == "dense":
                    rows, _, _ = rt.driver.execute_query(DENSE_CYPHER, n=200, vec=vectors[q.qid], ns=ns, k=5,
                                                         routing_="r")
                else:
                    rows, _, _ = rt.driver.execute_query(BM25_CYPHER, n=200, q=lucene_query(q.question) or "x",
                                                         ns=ns, k=5, routing_="r")
                times.append((time.perf_counter() - t) * 1000)
                ranked = [index_of[r["id"]] for r in rows]
                r2.append(_recall_at(ranked, q.gold, 2))
                r5.append(_recall_at(ranked, q.gold, 5))
            return ModeResult(mode, _mean(r2), _mean(r5), round(_pct(times, 0.5), 1), round(_pct(times, 0.95), 1))

        result.modes += [baseline("dense"), baseline("bm25")]
        for name, knobs in policies.items():
            version = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            # `rounds` is no policy knob: modes with it recall in rounds (the offline second round).
            rounds = knobs.get("rounds")
            mem.register_policy({"version": version, "k": 5, **{k: v for k, v in knobs.items() if k != "rounds"}})
            r2, r5, times = [], [], []
            stable = True
            direct = 0  # questions a router sent down the single-hop path (no PPR, one round)
            for n, q in enumerate(ds.questions):
                t = time.perf_counter()
                if rounds:
                    multi = mem.recall_rounds(q.question, policy_version=version, k=5, rounds=int(rounds))
                    times.append((time.perf_counter() - t) * 1000)
                    if n < 10:
                        redo = mem.recall_rounds(q.question, policy_version=version, k=5, rounds=int(rounds))
                        stable = stable and [it.id for it in multi.items] == [it.id for it in redo.items] and [
                            r.packet.fingerprint for r in multi.rounds] == [r.packet.fingerprint for r in redo.rounds]
                    ranked = [index_of[it.id] for it in multi.items]
                    direct += "router:single-hop" in multi.rounds[0].packet.stages
                    require_rerank(name, (r.packet for r in multi.rounds))
                else:
                    packet = mem.recall(q.question, policy_version=version, k=5)
                    times.append((time.perf_counter() - t) * 1000)
                    if n < 10:
                        again = mem.recall(q.question, policy_version=version, k=5)
                        stable = stable and packet.fingerprint == again.fingerprint
                    ranked = [index_of[it.id] for it in packet.items]
                    direct += "router:single-hop" in packet.stages
                    require_rerank(name, [packet])
                r2.append(_recall_at(ranked, q.gold, 2))
                r5.append(_recall_at(ranked, q.gold, 5))
            note = json.dumps(knobs, sort_keys=True) + (
                f"; single-hop route: {direct}/{len(ds.questions)}" if knobs.get("router", "none") != "none" else "")
            result.modes.append(ModeResult(name, _mean(r2), _mean(r5), round(_pct(times, 0.5), 1),
                                           round(_pct(times, 0.95), 1), stable, note))
        result.check_violations = mem.check().violation_counts
        return result
    finally:
        if not keep:
            drop_namespace(rt.driver, ns)
        rt.close()


def _mean(values: list[float]) -> float:
    return round(100 * statistics.fmean(values), 1)


# Chosen on MuSiQue (2026-11-30 grid below): no sibling penalty — on Wikipedia passages the rule
# fires on ordinary multi-word names ("United States" vs "United Kingdom") and pushes gold
# passages down — and PPR below the top two hybrid hits (`ppr_protect_top`), so graph evidence
# fills ranks 3..k without displacing the direct hits. Seeds, damping and candidates stay default.
CHOSEN: dict[str, Any] = {"graph_expansion": "ppr", "sibling_penalty": 1.0, "ppr_protect_top": 2}
BASE: dict[str, dict[str, Any]] = {"hybrid": {}, "hybrid-nosib": {"sibling_penalty": 1.0}, "hybrid+ppr": CHOSEN}
# The offline second round (Memory.recall_rounds, graph/recall/rounds.py) on top of the two best one-round
# modes, with the Policy's expansion defaults (tuned on MuSiQue: bridges without the items' own
# subjects, later round weighted 2, round 1's top two kept). `rounds` is not a policy knob.
BASE |= {"hybrid-nosib +round 2": {"sibling_penalty": 1.0, "rounds": 2}, "hybrid+ppr +round 2": {**CHOSEN, "rounds": 2}}
# The sentence reranker (rerank: sentences, graph/sentences.py) over the fused top 20, alone and
# under the best two-round policy (each round's packet reranked, then the rounds fused).
SENTENCES: dict[str, Any] = {"rerank": "sentences", "rerank_top": 20}
BASE |= {"hybrid-nosib +sentences": {"sibling_penalty": 1.0, **SENTENCES},
         "hybrid-nosib +round 2 +sentences": {"sibling_penalty": 1.0, "rounds": 2, **SENTENCES}}
# Fact retrieval (graph/recall/fact_source.py), run only with --llm-model (facts come from LLM extraction):
# the triple match alone and with the beam search, as the graph list on its own and beside PPR.
FACT_MODES: dict[str, dict[str, Any]] = {
    "hybrid-nosib +facts:triples": {"sibling_penalty": 1.0, "fact_retrieval": "triples"},
    "hybrid-nosib +facts:beam": {"sibling_penalty": 1.0, "fact_retrieval": "beam"},
    "hybrid+ppr +facts:triples": {**CHOSEN, "fact_retrieval": "triples"},
    "hybrid+ppr +facts:beam": {**CHOSEN, "fact_retrieval": "beam"},
}
# The router (`--router`; graph/recall/router.py): the best policy's stages, kept or skipped per question
# by the rules on its structure. Its rules were written and checked on MuSiQue's questions only.
ROUTED: dict[str, dict[str, Any]] = {
    "router: hybrid+ppr": {**CHOSEN, "router": "rules"},
    "router: hybrid+ppr +round 2": {**CHOSEN, "router": "rules", "rounds": 2},
    # Over the best two-round policy, which runs no PPR: the router only decides the rounds.
    "router: hybrid-nosib +round 2": {"sibling_penalty": 1.0, "router": "rules", "rounds": 2},
    "router: hybrid-nosib +round 2 +sentences": {"sibling_penalty": 1.0, "router": "rules", "rounds": 2, **SENTENCES},
}
# The modes `--rerank-model` also runs with the cross-encoder over their fused top (graph/recall/rerank.py).
RERANKED = ("hybrid-nosib", "hybrid+ppr", "hybrid-nosib +round 2", "router: hybrid-nosib +round 2")
GRID: dict[str, dict[str, Any]] = {
    "ppr-default": {"graph_expansion": "ppr"},
    "ppr-rrf": {"graph_expansion": "ppr", "fusion": "rrf"},
    "ppr-w0.5": {"graph_expansion": "ppr", "graph_weight": 0.5},
    "ppr-w0.25": {"graph_expansion": "ppr", "graph_weight": 0.25},
    "ppr-seeds2": {"graph_expansion": "ppr", "ppr_seeds": 2},
    "ppr-seeds5": {"graph_expansion": "ppr", "ppr_seeds": 5},
    "ppr-d0.3": {"graph_expansion": "ppr", "ppr_damping": 0.3},
    "ppr-d0.75": {"graph_expansion": "ppr", "ppr_damping": 0.75},
    "ppr-cand0": {"graph_expansion": "ppr", "ppr_seed_candidates": 0},
    "ppr-cand2": {"graph_expansion": "ppr", "ppr_seed_candidates": 2},
    "ppr-cand10": {"graph_expansion": "ppr", "ppr_seed_candidates": 10},
    "nosib-ppr": {"graph_expansion": "ppr", "sibling_penalty": 1.0},
    "nosib-ppr-cand2": {"graph_expansion": "ppr", "sibling_penalty": 1.0, "ppr_seed_candidates": 2},
    "nosib-ppr-w0.5": {"graph_expansion": "ppr", "sibling_penalty": 1.0, "graph_weight": 0.5},
    "nosib-ppr-protect1": {"graph_expansion": "ppr", "sibling_penalty": 1.0, "ppr_protect_top": 1},
    "nosib-ppr-protect3": {"graph_expansion": "ppr", "sibling_penalty": 1.0, "ppr_protect_top": 3},
    # Offline second round over hybrid+ppr: the weight of the later round, its terms, what is protected.
    "round2-w0.5": {**CHOSEN, "rounds": 2, "expansion_weight": 0.5},
    "round2-w1": {**CHOSEN, "rounds": 2, "expansion_weight": 1.0},
    "round2-w3": {**CHOSEN, "rounds": 2, "expansion_weight": 3.0},
    "round2-w5": {**CHOSEN, "rounds": 2, "expansion_weight": 5.0},
    "round2-subjects": {**CHOSEN, "rounds": 2, "expansion_subjects": True, "expansion_weight": 1.0},
    "round2-protect0": {**CHOSEN, "rounds": 2, "expansion_protect_top": 0, "expansion_weight": 1.0},
    "round2-protect1": {**CHOSEN, "rounds": 2, "expansion_protect_top": 1, "expansion_weight": 1.0},
    "round2-items2": {**CHOSEN, "rounds": 2, "expansion_items": 2},
    "round2-items5": {**CHOSEN, "rounds": 2, "expansion_items": 5, "expansion_weight": 1.0},
    "round2-terms3": {**CHOSEN, "rounds": 2, "expansion_terms": 3, "expansion_weight": 1.0},
    # The sentence reranker under the best two-round policy: its weight and how deep it reads.
    **{f"round2-sentences-w{w:g}-top{top}": {"sibling_penalty": 1.0, "rounds": 2, "rerank": "sentences",
                                             "sentence_weight": w, "rerank_top": top}
       for w in (0.5, 1.0, 2.0) for top in (10, 20, 40)},
}


def _supported(knobs: dict[str, Any]) -> dict[str, Any]:
    """Drop knobs this checkout's Policy does not have yet (`ppr_protect_top` is proposed, not merged)."""
    from palimpsest.schema.models import Policy

    known = {*Policy.model_fields, "rounds"}  # `rounds` picks recall_rounds (run_dataset), not a knob
    missing = sorted(set(knobs) - known)
    if missing:
        print(f"note: Policy has no {', '.join(missing)}; running without", file=sys.stderr)
    return {k: v for k, v in knobs.items() if k in known}


def table(results: list[DatasetResult]) -> str:
    lines = []
    for r in results:
        facts = f", {r.facts} facts ({r.extraction_calls} LLM calls, ${r.extraction_cost_usd})" if r.facts else ""
        lines.append(f"\n**{r.dataset}** — {r.passages} passages, {r.questions} questions; write {r.write_seconds}s, "
                     f"projections {r.projections_seconds}s; {r.entities} entities, {r.mentions} mentions, "
                     f"{r.related} RELATED{facts}\n")
        lines.append("| mode | R@2 | R@5 | p50 ms | p95 ms | deterministic | knobs |")
        lines.append("|---|---:|---:|---:|---:|---|---|")
        for m in r.modes:
            det = "" if m.deterministic is None else ("yes" if m.deterministic else "NO")
            lines.append(f"| {m.mode} | {m.recall_at_2} | {m.recall_at_5} | {m.p50_ms} | {m.p95_ms} | {det} | "
                         f"{m.note} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--datasets", nargs="+", default=["musique", "hotpotqa"],
                    choices=["musique", "hotpotqa", "hotpotqa-dev"],
                    help="hotpotqa-dev: the untouched HotpotQA dev sample (<data>/hotpotqa_dev_sample, source in "
                         "benchmarks/README.md), not run by default")
    ap.add_argument("--tune", action="store_true", help="run the configuration grid on MuSiQue")
    ap.add_argument("--pooled", action="store_true", help="also run with the 2Wiki corpus as distractors")
    ap.add_argument("--single-names", action="store_true", help="extractor proposes single capitalised words too")
    ap.add_argument("--policy", type=str, default=None, help="JSON knobs of the hybrid+ppr mode (the tuned choice)")
    ap.add_argument("--min-relevance", type=float, nargs="*", default=[],
                    help="also run hybrid and hybrid+ppr with each of these relevance floors (policy min_relevance)")
    ap.add_argument("--no-embed-subjects", action="store_true",
                    help="embed passages without their title (the behaviour before subjects entered the vector)")
    ap.add_argument("--subject-terms", action="store_true",
                    help="also run the hybrid modes with the policy's subject_terms (lexical match scores titles)")
    ap.add_argument("--stem-terms", action="store_true",
                    help="also run the modes with the policy's stem_terms (lexical match on word stems)")
    ap.add_argument("--llm-model", default=None,
                    help="extract entities and facts with this litellm chat model (its provider's key from the "
                         "environment) and add the fact retrieval modes; without it no facts exist to retrieve")
    ap.add_argument("--router", action="store_true",
                    help="also run the best modes under the rules router (policy router: rules)")
    ap.add_argument("--rerank-model", default=None,
                    help="also run the best modes with this CrossEncoder (a name or a local directory) reranking "
                         "their top --rerank-top (policy rerank: cross-encoder)")
    ap.add_argument("--rerank-top", type=int, default=20, help="candidates the cross-encoder rescores (default 20)")
    ap.add_argument("--out", type=Path, default=DEFAULT_RESULTS_DIR / "multihop-latest.json")
    ap.add_argument("--namespace-prefix", default="bench-multihop",
                    help="namespaces are <prefix>-<dataset>-<random>, so runs can share a server")
    args = ap.parse_args(argv)
    base = dict(BASE)
    if args.policy:
        base["hybrid+ppr"] = {"graph_expansion": "ppr", **json.loads(args.policy)}
    for floor in args.min_relevance:
        base[f"hybrid floor={floor:g}"] = {**BASE["hybrid"], "min_relevance": floor}
        base[f"hybrid+ppr floor={floor:g}"] = {**base["hybrid+ppr"], "min_relevance": floor}
    if args.router:
        base |= ROUTED
    if args.subject_terms:
        base |= {f"{name} subject-terms": {**knobs, "subject_terms": True} for name, knobs in base.items()}
    if args.stem_terms:
        base |= {f"{name} stems": {**knobs, "stem_terms": True} for name, knobs in base.items()}
    if args.llm_model:
        base |= FACT_MODES
    if args.rerank_model:
        rerank = {"rerank": "cross-encoder", "rerank_model": args.rerank_model, "rerank_top": args.rerank_top}
        base |= {f"{name} +rerank": {**base[name], **rerank} for name in RERANKED if name in base}
    base = {name: _supported(knobs) for name, knobs in base.items()}
    loaders = {"musique": load_musique, "hotpotqa": load_hotpotqa, "hotpotqa-dev": load_hotpotqa_dev}
    results = []
    for name in args.datasets:
        ds = loaders[name](args.data)
        policies = base | ({k: _supported(v) for k, v in GRID.items()} if args.tune and name == "musique" else {})
        results.append(run_dataset(ds, policies, single_names=args.single_names, prefix=args.namespace_prefix,
                                   embed_subjects=not args.no_embed_subjects, llm_model=args.llm_model))
        if args.pooled:
            results.append(run_dataset(with_distractors(ds, args.data), base, single_names=args.single_names,
                                       prefix=args.namespace_prefix, embed_subjects=not args.no_embed_subjects,
                                       llm_model=args.llm_model))
        print(table(results[-2 if args.pooled else -1:]), flush=True)
    payload = {"benchmark": "multihop", "at": datetime.now(UTC).isoformat(), "python": platform.python_version(),
               "single_names": args.single_names, "embed_subjects": not args.no_embed_subjects,
               "tuned_on": "musique", "llm_model": args.llm_model,
               "results": [r.__dict__ | {"modes": [m.__dict__ for m in r.modes]} for r in results]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
