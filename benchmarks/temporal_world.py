"""World-time recall on real data: SituatedQA's answer timelines, keyed, backfilled and un-keyed.

Data: SituatedQA, temporal split (Zhang & Choi, EMNLP 2021; see SOURCE.txt next to the data), read
from `--situatedqa PATH` (default `../shared/data/situatedqa_temporal` next to the repository; the
data is never copied into it). `raw_data__temp.<split>.jsonl` gives per question an answer timeline
(`prev_answers` from `prev_start`, `cur_answers` from `cur_start`; a year, maybe a month and day);
`qa_data__temp.<split>.jsonl` asks the same questions "as of" a date, with the answer valid then.

What is written, per question with a usable timeline (rule below), into three namespaces:

* **keyed** — two claims `Q: <question> A: <answers>` (both versions worded the same way, so the
  text never says which one is current), `claim_key` = the question id, `valid_from` = each answer's
  start in the parser's forms (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`), source `situatedqa`. Written in
  world order: every prev claim in one round, every cur claim in a later ingest call (a succession).
* **backfill** — the same claims, cur first, prev in a later ingest call (a backfill: the older
  answer joins the history behind the current one).
* **windows** — the same claims without a key: prev with `valid_from` = prev_start and `valid_to` =
  cur_start, cur with `valid_from` = cur_start (every window stated by the writer). Keyed recall must
  reach ≥ 95% of this figure at past instants.

Questions: the plain question (not the edited "... as of 2019") for every qa row of those questions,
at `valid_at` = the row's date (a year is 1 January of it, "May 28, 2019" is that day; `start` rows
ask at the start instant itself, which is where the half-open windows put the newer answer); also
"now" (no `valid_at`; correct = cur) and, on the keyed namespace, at the **past revision** right after
the prev round (correct = prev). k = 5. A recall is correct when the first item of *that question's*
claims in the packet is the claim carrying the row's answer (matched by claim id: the row's answers
are normalised, SQuAD-style, and compared with both answer lists; rows matching neither or both are
left out and counted). The strict top-1 figure (the packet's first item is that claim) is reported
too; it also counts retrieval misses against another question.

Systems, all in this run, on the same namespaces and the same Neo4j indexes:

* **Palimpsest** — `Memory.recall(question, k, valid_at=…/as_of_revision=…)`, default policy.
* **plain RAG** — benchmarks.temporal's baseline: vector top-k over the namespace's
  claims (graph.claims.index). It takes no time argument, so one answer per question serves every instant.
* **newest per key** — vector top-N, keep claims recorded by the revision asked (latest, or the past
  revision), then only the most recently *written* claim per `claim_key`, top-k. It ignores world
  time and fails backfills by design (the backfilled prev is the newest write). On the windows
  namespace there are no keys, so it is plain RAG with the revision filter.
* **hybrid RRF** — BM25 (the namespace's full-text index, the query's terms) and vector top-N fused
  by reciprocal rank (k = 60), namespace filter, then the as-of filters a careful engineer would add
  from stored properties alone: recorded by the revision asked, and the *stated* window
  (`valid_from` ≤ T < `valid_to`, missing bounds open; T = the instant asked, or now), top-k. It does
  not derive windows from a key's later versions: that is exactly what the windows namespace states
  and the keyed namespaces leave to the memory.

The controls fetch N = 10·k per index from the namespace's own search (graph.claims.index, as
Palimpsest's recall does, so other namespaces in the same Neo4j do not reach them); the fused or
filtered list is cut to k afterwards. Their candidates are fetched once per question in the timed
"now" pass and re-filtered for the other instants and the past revision (the filters run after the
index call either way, so this gives the same lists as one query per instant).

Latency: the "now" pass, every system embedding the query afresh on every call (Palimpsest's query
cache bypassed, as in benchmarks.temporal), systems alternating which goes first. The valid_at and
as-of passes reuse query vectors and are not used for the latency figure.

Timeline rule (chosen from the data's format, not from any accuracy figure): per question, the
first timeline in file order with non-empty prev and cur answers, both starts, prev_start < cur_start
and no answer shared by both lists. Questions with no prev answer have no prev→cur event, and
timelines without a prev start give no `valid_from` for the older claim (a keyed write with no
window at all is a correction by docs/TEMPORAL.md, so it could not be written as a backfill); both
are left out and counted (SOURCE.txt's "580 with a timeline" counts them too). The qa labels were
written by annotators who sometimes gave other timelines (another date precision, another start), so
some rows disagree with the timeline that was written: the "timeline agrees with label" rate is the
ceiling for any system that trusts the written windows.

In-sample: nothing here is tuned. No parameter of Palimpsest or of the controls was fitted to this
data (default policy; RRF k = 60 and the fetch size are conventions fixed in advance), and the dev
split is only read, never used to choose anything. The numbers are measurements on the dev split,
not held-out estimates of a tuned system.

After the passes `graph.claims.check.check` runs on every namespace written; its `ok` and violation counts
are in the results. Results go to `benchmarks/results/temporal-world-*.json`, with the date, the
platform and the load average. Run `python -m benchmarks.temporal_world --help`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import secrets
import string
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from benchmarks.temporal import (
    BASELINE_CYPHER,
    DEFAULT_RESULTS_DIR,
    MAX_BATCH,
    _cleanup,
    _FreshQueryEmbedder,
    _pct,
    _write,
    percentile,
)
from palimpsest.graph.claims import index as claim_index
from palimpsest.graph.claims.index import vector_hits

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "situatedqa_temporal"
SOURCE = "situatedqa"
ARMS = ("keyed", "backfill", "windows")
SYSTEMS = ("palimpsest", "plain_rag", "newest_per_key", "hybrid_rrf")
RRF_K = 60
RESULT_PREFIX = "temporal-world"

# The controls' candidate queries: the same indexes as recall, each answer cut to the namespace (and
# counted before the cut, so the caller knows whether a wider fetch could give more); times as ISO
# strings so they compare without driver conversions.
_MAP = ("{id: node.id, claim_key: node.claim_key, revision: node.revision, valid_from: toString(node.valid_from), "
        "valid_to: toString(node.valid_to), score: score}")
# The namespace's own claims only (graph.claims.index); the text part needs the namespace's own fulltext
# index, which `claim_index.ensure(…, minimum=0)` creates before the queries.
_VECTOR_PART = (
    "MATCH (st:Store {namespace: $ns}) "
    "CALL (st) { " + vector_hits("st", "$vec", "$nv")
    + "RETURN count(*) AS vraw, collect(CASE WHEN node.namespace = $ns THEN " + _MAP + " END) AS vrows } "
)
_TEXT_PART = (
    "CALL (st) { CALL db.index.fulltext.queryNodes('claim_text_' + st.claim_indexes, $lucene, {limit: $nt}) "
    "YIELD node, score "
    "RETURN count(*) AS traw, collect(CASE WHEN node.namespace = $ns THEN " + _MAP + " END) AS trows } "
)
VECTOR_CYPHER = _VECTOR_PART + "RETURN vraw, vrows, 0 AS traw, [] AS trows"
HYBRID_CYPHER = _VECTOR_PART + _TEXT_PART + "RETURN vraw, vrows, traw, trows"


# ------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------
@dataclass
class Timeline:
    qid: str
    question: str
    prev_answers: list[str]
    cur_answers: list[str]
    prev_start: str  # "YYYY", "YYYY-MM" or "YYYY-MM-DD" (schema.dates forms)
    cur_start: str
    ids: dict[str, dict[str, str]] = field(default_factory=dict)  # arm -> {"prev": id, "cur": id}

    def answers(self, which: str) -> list[str]:
        return self.prev_answers if which == "prev" else self.cur_answers

    def content(self, which: str) -> str:
        return f"Q: {self.question} A: {'; '.join(self.answers(which))}"

    def start(self, which: str) -> str:
        return self.prev_start if which == "prev" else self.cur_start

    def says_at(self, instant: datetime) -> str:
        """Which answer the written timeline holds at `instant`: before, prev or cur."""
        if instant < _instant(self.prev_start):
            return "before"
        return "prev" if instant < _instant(self.cur_start) else "cur"


@dataclass
class Probe:
    qid: str
    edited_question: str
    date: str  # as in the data
    date_type: str  # start | sampled_year | sampled_date
    valid_at: str  # what recall is asked with
    expected: str  # prev | cur, by the row's answer list
    timeline: str  # what the chosen timeline says at valid_at: before | prev | cur


@dataclass
class Data:
    timelines: list[Timeline]
    probes: list[Probe]
    counts: dict[str, Any]


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalise(answer: str) -> str:
    """SQuAD-style answer normalisation: lower case, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", answer.lower().translate(_PUNCT)).split())


def _instant(text: str) -> datetime:
    from palimpsest.schema.dates import parse_instant

    value = parse_instant(text, "date")
    assert value is not None
    return value


def start_text(start: dict[str, Any] | None) -> str | None:
    """A timeline start {year, month, date} in the parser's forms; None when there is no year."""
    if not start or start.get("year") is None:
        return None
    year, month, day = int(start["year"]), start.get("month"), start.get("date")
    if month is None:
        return f"{year:04d}"
    if day is None:
        return f"{year:04d}-{int(month):02d}"
    return f"{year:04d}-{int(month):02d}-{int(day):02d}"


def probe_date(text: str) -> str:
    """A qa row's date in the parser's forms: "2019" stays, "May 28, 2019" becomes "2019-05-28"."""
    text = text.strip()
    if re.fullmatch(r"[0-9]{4}", text):
        return text
    return datetime.strptime(text, "%B %d, %Y").strftime("%Y-%m-%d")


def _distinct(answers: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for a in answers or ():
        a = " ".join(str(a).split())
        if a and normalise(a) not in {normalise(b) for b in out}:
            out.append(a)
    return out


def choose_timeline(row: dict[str, Any]) -> tuple[Timeline | None, str]:
    """The first usable timeline of a raw_data row (the module docstring's rule), or why there is none."""
    timelines = row.get("timelines") or []
    if not timelines:
        return None, "no_timeline"
    reason = "incomplete_timeline"
    for t in timelines:
        prev, cur = _distinct(t.get("prev_answers")), _distinct(t.get("cur_answers"))
        ps, cs = start_text(t.get("prev_start")), start_text(t.get("cur_start"))
        if not prev or not cur or ps is None or cs is None:
            continue
        try:
            p_at, c_at = _instant(ps), _instant(cs)
        except Exception:
            reason = "bad_date"
            continue
        if p_at >= c_at:
            reason = "not_increasing"
            continue
        if {normalise(a) for a in prev} & {normalise(a) for a in cur}:
            reason = "answers_overlap"
            continue
        return Timeline(str(row["id"]), " ".join(str(row["question"]).split()), prev, cur, ps, cs), "ok"
    return None, reason


def load_situatedqa(path: Path, split: str = "dev", limit: int | None = None) -> Data:
    """Timelines (the first `limit` usable ones in file order) and the qa rows that ask about them."""
    raw_path, qa_path = path / f"raw_data__temp.{split}.jsonl", path / f"qa_data__temp.{split}.jsonl"
    for p in (raw_path, qa_path):
        if not p.is_file():
            raise SystemExit(f"SituatedQA file not found: {p} (pass --situatedqa PATH)")
    excluded: dict[str, int] = {}
    timelines: list[Timeline] = []
    rows = usable = 0
    with raw_path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rows += 1
            timeline, reason = choose_timeline(json.loads(line))
            if timeline is None:
                excluded[reason] = excluded.get(reason, 0) + 1
                continue
            usable += 1
            if limit is None or len(timelines) < limit:
                timelines.append(timeline)
    by_id = {t.qid: t for t in timelines}
    assert len(by_id) == len(timelines), "question ids must be distinct"
    probes: list[Probe] = []
    left_out: dict[str, int] = {}
    qa_rows = 0
    with qa_path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            t = by_id.get(str(row["id"]))
            if t is None:
                continue
            qa_rows += 1
            try:
                at = probe_date(str(row["date"]))
                instant = _instant(at)
            except Exception:
                left_out["bad_date"] = left_out.get("bad_date", 0) + 1
                continue
            labels = {normalise(str(a)) for a in row.get("answer") or ()}
            in_prev = bool(labels & {normalise(a) for a in t.prev_answers})
            in_cur = bool(labels & {normalise(a) for a in t.cur_answers})
            if in_prev == in_cur:
                why = "answer_in_both" if in_prev else "answer_in_neither"
                left_out[why] = left_out.get(why, 0) + 1
                continue
            probes.append(Probe(t.qid, str(row.get("edited_question", "")), str(row["date"]),
                                str(row.get("date_type", "")), at, "prev" if in_prev else "cur", t.says_at(instant)))
    return Data(timelines, probes, {
        "raw_rows": rows, "usable_timelines": len(timelines), "usable_timelines_in_file": usable,
        "timelines_excluded": dict(sorted(excluded.items())), "qa_rows_of_those_questions": qa_rows,
        "qa_rows_left_out": dict(sorted(left_out.items())), "probes": len(probes),
    })


# ------------------------------------------------------------------------------------------------
# Measurement helpers
# ------------------------------------------------------------------------------------------------
@dataclass
class Answer:
    ids: list[str]
    ms: float | None = None


def _iso(value: Any) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(str(value).partition("[")[0].replace("Z", "+00:00"))


def _recorded_by(row: dict[str, Any], revision: int | None) -> bool:
    return revision is None or int(row["revision"]) <= revision


def _window_holds(row: dict[str, Any], instant: datetime) -> bool:
    start, end = _iso(row["valid_from"]), _iso(row["valid_to"])
    return (start is None or start <= instant) and (end is None or instant < end)


def newest_per_key(rows: Sequence[dict[str, Any]], k: int, revision: int | None) -> list[str]:
    """Vector order kept; of each claim_key only the most recently written claim recorded by `revision`."""
    visible = [r for r in rows if _recorded_by(r, revision)]
    newest: dict[str, dict[str, Any]] = {}
    for r in visible:
        key = r["claim_key"] or f"id:{r['id']}"
        best = newest.get(key)
        if best is None or (int(r["revision"]), str(r["id"])) > (int(best["revision"]), str(best["id"])):
            newest[key] = r
    keep = {r["id"] for r in newest.values()}
    return [str(r["id"]) for r in visible if r["id"] in keep][:k]


def rrf(vrows: Sequence[dict[str, Any]], trows: Sequence[dict[str, Any]], kk: int = RRF_K) -> list[dict[str, Any]]:
    """Reciprocal rank fusion of two ranked lists (rank 1 first); ties by id."""
    score: dict[str, float] = {}
    row_of: dict[str, dict[str, Any]] = {}
    for rows in (vrows, trows):
        ordered = sorted(rows, key=lambda r: (-float(r["score"]), str(r["id"])))
        for rank, r in enumerate(ordered, start=1):
            score[r["id"]] = score.get(r["id"], 0.0) + 1.0 / (kk + rank)
            row_of.setdefault(r["id"], r)
    return [row_of[i] for i in sorted(score, key=lambda i: (-score[i], i))]


def hybrid_select(fused: Sequence[dict[str, Any]], k: int, revision: int | None, instant: datetime) -> list[str]:
    return [str(r["id"]) for r in fused if _recorded_by(r, revision) and _window_holds(r, instant)][:k]


def fetch_candidates(rt: Any, ns: str, vec: list[float], lucene: str, n: int, need: int,
                     text: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """The namespace's vector (and, with `text`, BM25) answer; each list fetched `n` wide, then ×4 while it
    holds fewer than `need` rows and the search had more. Returns both lists and how many round trips
    it took."""
    from palimpsest.schema.limits import MAX_CANDIDATES

    use_text = text and bool(lucene)
    nv = nt = n
    trips = 0
    while True:
        trips += 1
        records, _, _ = rt.driver.execute_query(HYBRID_CYPHER if use_text else VECTOR_CYPHER, nv=nv, nt=nt, vec=vec,
                                                ns=ns, lucene=lucene, database_=rt.settings.database, routing_="r")
        r = records[0]
        vrows, trows = [dict(x) for x in r["vrows"]], [dict(x) for x in r["trows"]]
        grow_v = len(vrows) < need and int(r["vraw"]) >= nv and nv < MAX_CANDIDATES
        grow_t = use_text and len(trows) < need and int(r["traw"]) >= nt and nt < MAX_CANDIDATES
        if not (grow_v or grow_t):
            return vrows, trows, trips
        nv = min(nv * 4, MAX_CANDIDATES) if grow_v else nv
        nt = min(nt * 4, MAX_CANDIDATES) if grow_t else nt


# ------------------------------------------------------------------------------------------------
# Arguments
# ------------------------------------------------------------------------------------------------
def _shown(path: Path) -> str:
    """A data path as recorded in results: relative to the repository, never this machine's layout."""
    return os.path.relpath(path.resolve(), Path(__file__).resolve().parents[1])


def _parse(args_list: list[str] | None) -> argparse.Namespace:
    first_line = (__doc__ or "").strip().split("\n")[0]
    p = argparse.ArgumentParser(prog="python -m benchmarks.temporal_world", description=first_line)
    p.add_argument("--situatedqa", type=Path, default=DEFAULT_DATA,
                   help=f"directory holding the SituatedQA temporal files (default {DEFAULT_DATA})")
    p.add_argument("--split", default="dev", help="which split's files to read (default dev)")
    p.add_argument("--limit", type=int, default=None, help="use the first N usable timelines (default all; "
                   "--quick: 40)")
    p.add_argument("--k", type=int, default=5, help="items per recall (default 5)")
    p.add_argument("--seed", type=int, default=7, help="seed of the write order within a round (default 7)")
    p.add_argument("--namespace-prefix", default=None,
                   help="namespaces are PREFIX-keyed, PREFIX-backfill, PREFIX-windows (default "
                        "bench-tworld-<seed>-<hex>); they must be empty")
    p.add_argument("--keep", action="store_true", help="keep the namespaces' nodes afterwards")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch intra-op threads (0 = torch default); 1 is far faster on a contended 2-core box")
    p.add_argument("--quick", action="store_true", help="smoke size: --limit 40")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR, help="where JSON results go")
    a = p.parse_args(args_list)
    if a.limit is None and a.quick:
        a.limit = 40
    if a.limit is not None and a.limit < 1:
        p.error("--limit must be at least 1")
    if a.k < 1:
        p.error("--k must be at least 1")
    if a.namespace_prefix is None:
        a.namespace_prefix = f"bench-tworld-{a.seed}-{secrets.token_hex(4)}"
    return a


# ------------------------------------------------------------------------------------------------
# The run
# ------------------------------------------------------------------------------------------------
def run(args_list: list[str] | None = None) -> dict[str, Any]:
    """Load, write three namespaces, measure four systems, check, print the table, write JSON."""
    args = _parse(args_list)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.torch_threads > 0:
        import torch

        torch.set_num_threads(args.torch_threads)
    from palimpsest.api.runtime import Runtime
    from palimpsest.extraction.embeddings import Embedder

    started = time.perf_counter()
    load_start = list(os.getloadavg())
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    data = load_situatedqa(args.situatedqa, args.split, args.limit)
    timings["load_s"] = time.perf_counter() - t0
    if not data.timelines:
        raise SystemExit(f"no usable timeline in {args.situatedqa}")

    t0 = time.perf_counter()
    base_rt = Runtime.from_env()
    timings["runtime_s"] = time.perf_counter() - t0
    fresh_rt = Runtime(base_rt.settings, base_rt.driver, cast(Embedder, _FreshQueryEmbedder(base_rt.embedder)),
                       base_rt.schema_version, models=base_rt.models)
    namespaces = {arm: f"{args.namespace_prefix}-{arm}" for arm in ARMS}
    for ns in namespaces.values():
        existing, _, _ = base_rt.driver.execute_query("MATCH (s:Store {namespace: $ns}) RETURN count(s) AS n",
                                                      ns=ns, database_=base_rt.settings.database)
        if existing[0]["n"]:
            base_rt.close()
            raise SystemExit(f"namespace {ns!r} already holds data; choose another --namespace-prefix")
    info = base_rt.info()
    try:
        results = _measure(args, data, base_rt, fresh_rt, namespaces, timings)
    finally:
        if not args.keep:
            t0 = time.perf_counter()
            for ns in namespaces.values():
                _cleanup(base_rt, ns)
            timings["cleanup_s"] = time.perf_counter() - t0
        base_rt.close()
    timings["total_s"] = time.perf_counter() - started
    results["timings"] = {k: round(v, 3) for k, v in timings.items()}
    results["environment"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()}-core {platform.machine()} {platform.system()}",
        "platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
        "neo4j": info.neo4j_version, "edition": info.edition, "gds": info.gds_version,
        "embedding_model": base_rt.embedder.model_name, "schema_version": base_rt.schema_version,
        "torch_threads": args.torch_threads or "default",
        # Latencies are wall-clock on a possibly shared machine; the load average says how shared.
        "loadavg_start": load_start, "loadavg_end": list(os.getloadavg()),
    }
    results["namespace_kept"] = bool(args.keep)
    print(render_table(results))
    _write(results, args.results_dir, RESULT_PREFIX)
    return results


def _payload(t: Timeline, which: str, arm: str) -> dict[str, Any]:
    item: dict[str, Any] = {"content": t.content(which), "source": SOURCE, "valid_from": t.start(which)}
    if arm == "windows":
        if which == "prev":
            item["valid_to"] = t.cur_start
    else:
        item["claim_key"] = t.qid
    return item


def _ingest(mem: Any, timelines: Sequence[Timeline], arm: str, seed: int) -> dict[str, Any]:
    """Two rounds, each its own ingest calls (≤1000 items): world order, or cur first for the backfill."""
    rounds = ("cur", "prev") if arm == "backfill" else ("prev", "cur")
    rng = random.Random(f"{seed}-{arm}")
    round_revisions: list[int] = []
    links = {"supersedes": 0, "closes": 0, "closes_own_prev": 0}
    for which in rounds:
        order = list(timelines)
        rng.shuffle(order)
        for start in range(0, len(order), MAX_BATCH):
            batch = order[start:start + MAX_BATCH]
            res = mem.ingest_many([_payload(t, which, arm) for t in batch])
            for t, item in zip(batch, res.items, strict=True):
                if not item.ok or item.id is None:
                    raise RuntimeError(f"ingest failed for {t.qid} ({which}): {item.error}")
                t.ids.setdefault(arm, {})[which] = item.id
                links["supersedes"] += item.supersedes is not None
                links["closes"] += item.closes is not None
                links["closes_own_prev"] += bool(item.closes) and item.closes == t.ids[arm].get("prev")
        round_revisions.append(int(res.revision))  # the revision after the round's last ingest call
    return {"rounds": list(rounds), "round_revisions": round_revisions,
            "first_round_revision": round_revisions[0], "final_revision": round_revisions[-1],
            "batches_per_round": math.ceil(len(timelines) / MAX_BATCH), "links": links}


@dataclass
class Outcome:
    """One recall judged: `ok` = the question's first claim in the packet is the expected one."""

    ok: bool
    top1: bool
    none: bool  # no claim of the question in the packet
    cur_absent: bool
    got: str | None  # prev | cur | None (first claim of the question)


def judge(ids: Sequence[str], own: dict[str, str], expected: str) -> Outcome:
    mine = {own["prev"]: "prev", own["cur"]: "cur"}
    first = next((mine[i] for i in ids if i in mine), None)
    return Outcome(first == expected, bool(ids) and ids[0] == own[expected], first is None,
                   own["cur"] not in ids, first)


def _rate(outcomes: Sequence[Outcome], attr: str = "ok") -> float | None:
    return sum(bool(getattr(o, attr)) for o in outcomes) / len(outcomes) if outcomes else None


def _measure(args: argparse.Namespace, data: Data, rt: Any, fresh_rt: Any, namespaces: dict[str, str],
             timings: dict[str, float]) -> dict[str, Any]:
    from palimpsest.api.memory import Memory
    from palimpsest.graph.claims.check import check
    from palimpsest.graph.recall import lucene_query

    k, db = args.k, rt.settings.database
    timelines, probes = data.timelines, data.probes
    by_qid = {t.qid: t for t in timelines}
    mems = {arm: Memory(rt, namespace=ns) for arm, ns in namespaces.items()}  # cached query vectors
    fresh = {arm: Memory(fresh_rt, namespace=ns) for arm, ns in namespaces.items()}  # embeds every call

    writes: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    for arm in ARMS:
        writes[arm] = _ingest(mems[arm], timelines, arm, args.seed)
    timings["ingest_s"] = time.perf_counter() - t0
    for ns in namespaces.values():
        claim_index.ensure(rt.driver, ns, rt.settings.database, minimum=0)  # the BM25 control's own index
    fetch = {arm: (10 * k, 1.0) for arm in namespaces}

    trips: dict[str, list[int]] = {name: [] for name in SYSTEMS if name != "palimpsest"}

    def plain_rag(arm: str, question: str) -> Answer:
        from palimpsest.schema.limits import MAX_CANDIDATES

        t = time.perf_counter()
        vec = fresh_rt.embedder.embed_query(question)
        n, rounds = fetch[arm][0], 0
        while True:  # widened like the other controls' lists, until k rows of the namespace came back
            rounds += 1
            records, _, _ = rt.driver.execute_query(BASELINE_CYPHER, n=n, vec=vec, ns=namespaces[arm], k=k,
                                                    database_=db, routing_="r")
            if len(records) >= k or n >= MAX_CANDIDATES:
                break
            n = min(n * 4, MAX_CANDIDATES)
        ms = (time.perf_counter() - t) * 1000
        trips["plain_rag"].append(rounds)
        return Answer([str(r["id"]) for r in records], ms)

    vector_rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    fused_rows: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def newest(arm: str, question: str) -> Answer:
        t = time.perf_counter()
        vec = fresh_rt.embedder.embed_query(question)
        rows, _, rounds = fetch_candidates(rt, namespaces[arm], vec, "", fetch[arm][0], 10 * k, text=False)
        ids = newest_per_key(rows, k, None)
        ms = (time.perf_counter() - t) * 1000
        vector_rows[(arm, question)] = rows
        trips["newest_per_key"].append(rounds)
        return Answer(ids, ms)

    def hybrid(arm: str, question: str) -> Answer:
        t = time.perf_counter()
        vec = fresh_rt.embedder.embed_query(question)
        vrows, trows, rounds = fetch_candidates(rt, namespaces[arm], vec, lucene_query(question), fetch[arm][0],
                                                10 * k, text=True)
        fused = rrf(vrows, trows)
        ids = hybrid_select(fused, k, None, datetime.now(UTC))
        ms = (time.perf_counter() - t) * 1000
        fused_rows[(arm, question)] = fused
        trips["hybrid_rrf"].append(rounds)
        return Answer(ids, ms)

    def palimpsest(arm: str, question: str) -> Answer:
        t = time.perf_counter()
        packet = fresh[arm].recall(question, k=k)
        return Answer([it.id for it in packet.items], (time.perf_counter() - t) * 1000)

    systems: dict[str, Callable[[str, str], Answer]] = {
        "palimpsest": palimpsest, "plain_rag": plain_rag, "newest_per_key": newest, "hybrid_rrf": hybrid}

    # Warm-up (untimed): the model's single-text path, connections, query plans.
    t0 = time.perf_counter()
    for words in range(1, 6):
        rt.embedder.embed([" ".join(["warm-up"] * words)])
    for arm in ARMS:
        for fn in systems.values():
            fn(arm, "warm-up: who won the cup last time")
    timings["warmup_s"] = time.perf_counter() - t0

    # 1. Now: timed, every call embeds afresh.
    t0 = time.perf_counter()
    now: dict[str, dict[str, dict[str, Answer]]] = {arm: {s: {} for s in SYSTEMS} for arm in ARMS}
    for i, t in enumerate(timelines):
        for arm in ARMS:
            order = list(SYSTEMS) if (i + ARMS.index(arm)) % 2 == 0 else list(reversed(SYSTEMS))
            for name in order:
                now[arm][name][t.qid] = systems[name](arm, t.question)
    timings["recall_now_s"] = time.perf_counter() - t0

    # 2. Past world instants: Palimpsest asked at valid_at; the controls re-filter their candidates.
    t0 = time.perf_counter()
    at: dict[str, dict[str, list[Answer]]] = {arm: {s: [] for s in SYSTEMS} for arm in ARMS}
    for p in probes:
        t = by_qid[p.qid]
        instant = _instant(p.valid_at)
        for arm in ARMS:
            t1 = time.perf_counter()
            packet = mems[arm].recall(t.question, k=k, valid_at=p.valid_at)
            at[arm]["palimpsest"].append(Answer([it.id for it in packet.items], (time.perf_counter() - t1) * 1000))
            at[arm]["plain_rag"].append(now[arm]["plain_rag"][t.qid])
            at[arm]["newest_per_key"].append(now[arm]["newest_per_key"][t.qid])
            at[arm]["hybrid_rrf"].append(Answer(hybrid_select(fused_rows[(arm, t.question)], k, None, instant)))
    timings["recall_valid_at_s"] = time.perf_counter() - t0

    # 3. Past revision (keyed): right after the prev round, nothing of the cur round recorded yet.
    t0 = time.perf_counter()
    past_rev = writes["keyed"]["first_round_revision"]
    rev_answers: dict[str, list[Answer]] = {s: [] for s in SYSTEMS}
    now_instant = datetime.now(UTC)
    for t in timelines:
        t1 = time.perf_counter()
        packet = mems["keyed"].recall(t.question, k=k, as_of_revision=past_rev)
        if packet.store_revision != past_rev:
            raise RuntimeError(f"as-of packet reports revision {packet.store_revision}, asked for {past_rev}")
        rev_answers["palimpsest"].append(Answer([it.id for it in packet.items], (time.perf_counter() - t1) * 1000))
        rev_answers["plain_rag"].append(now["keyed"]["plain_rag"][t.qid])
        rev_answers["newest_per_key"].append(Answer(newest_per_key(vector_rows[("keyed", t.question)], k, past_rev)))
        rev_answers["hybrid_rrf"].append(Answer(hybrid_select(fused_rows[("keyed", t.question)], k, past_rev,
                                                              now_instant)))
    timings["recall_as_of_s"] = time.perf_counter() - t0

    # Judge.
    metrics: dict[str, dict[str, dict[str, Any]]] = {arm: {} for arm in ARMS}
    failures: dict[str, list[dict[str, Any]]] = {}
    content = {t.ids[arm][w]: t.content(w) for t in timelines for arm in ARMS for w in ("prev", "cur")}
    for arm in ARMS:
        for name in SYSTEMS:
            now_out = [judge(now[arm][name][t.qid].ids, t.ids[arm], "cur") for t in timelines]
            at_out = [judge(a.ids, by_qid[p.qid].ids[arm], p.expected) for p, a in zip(probes, at[arm][name],
                                                                                     strict=True)]
            older = [o for o, p in zip(at_out, probes, strict=True) if p.timeline == "prev"]
            agree = [o for o, p in zip(at_out, probes, strict=True) if p.timeline == p.expected]
            lat = [a.ms for a in now[arm][name].values() if a.ms is not None]
            m: dict[str, Any] = {
                "now_accuracy": _rate(now_out), "now_top1": _rate(now_out, "top1"),
                "now_cur_absent": sum(o.cur_absent for o in now_out),
                "now_cur_absent_prev_present": sum(o.cur_absent and o.got == "prev" for o in now_out),
                "now_question_absent": sum(o.none for o in now_out),
                "past_instant_accuracy": _rate(at_out), "past_instant_top1": _rate(at_out, "top1"),
                "past_instant_older_window_accuracy": _rate(older),
                "past_instant_label_agrees_accuracy": _rate(agree),
                "past_instant_question_absent": sum(o.none for o in at_out),
                "past_instant_by_date_type": {
                    dt: _rate([o for o, p in zip(at_out, probes, strict=True) if p.date_type == dt])
                    for dt in sorted({p.date_type for p in probes})},
                "past_instants": len(at_out), "older_window_instants": len(older),
                "latency_ms_p50": percentile(lat, 50) if lat else None,
                "latency_ms_p95": percentile(lat, 95) if lat else None, "timed_calls": len(lat),
                "past_revision_accuracy": None,
            }
            if name == "palimpsest":
                vlat = [a.ms for a in at[arm][name] if a.ms is not None]
                m["valid_at_latency_ms_p50_cached_vector"] = percentile(vlat, 50) if vlat else None
            fails = []
            for p, o, a in zip(probes, at_out, at[arm][name], strict=True):
                if o.ok:
                    continue
                t = by_qid[p.qid]
                kind = ("label_disagrees_with_timeline" if p.timeline != p.expected
                        else "question_not_in_packet" if o.none else "other_version")
                fails.append({"question": t.question, "edited_question": p.edited_question, "date": p.date,
                              "date_type": p.date_type, "valid_at": p.valid_at, "expected": p.expected,
                              "expected_content": t.content(p.expected), "timeline_says": p.timeline,
                              "got": o.got, "top_item": content.get(a.ids[0], "another namespace's claim")
                              if a.ids else None, "prev_start": t.prev_start, "cur_start": t.cur_start,
                              "kind": kind})
            # Kinds: the row's label disagrees with the written timeline (any system that trusts the
            # windows is "wrong" there); no claim of the question in the packet; the other version first.
            m["past_instant_failure_kinds"] = _count(f["kind"] for f in fails)
            failures[f"{arm}/{name}"] = fails
            metrics[arm][name] = m
    for name in SYSTEMS:
        rev_out = [judge(a.ids, t.ids["keyed"], "prev") for t, a in zip(timelines, rev_answers[name], strict=True)]
        metrics["keyed"][name]["past_revision_accuracy"] = _rate(rev_out)
        metrics["keyed"][name]["past_revision_top1"] = _rate(rev_out, "top1")
        metrics["keyed"][name]["past_revisions"] = len(rev_out)
    rlat = [a.ms for a in rev_answers["palimpsest"] if a.ms is not None]
    metrics["keyed"]["palimpsest"]["as_of_latency_ms_p50_cached_vector"] = percentile(rlat, 50) if rlat else None

    latency = {}
    for name in SYSTEMS:
        lat = [a.ms for arm in ARMS for a in now[arm][name].values() if a.ms is not None]
        latency[name] = {"p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95), "calls": len(lat)}

    t0 = time.perf_counter()
    checks = {}
    for arm, ns in namespaces.items():
        report = check(rt.driver, ns, db)
        checks[arm] = {"namespace": ns, "ok": report.ok, "violation_counts": report.violation_counts,
                       "violations": [v.model_dump() for v in report.violations[:10]],
                       "claims": report.claims, "revision": report.revision}
    timings["check_s"] = time.perf_counter() - t0

    keyed_at = metrics["keyed"]["palimpsest"]["past_instant_accuracy"]
    windows_at = metrics["windows"]["palimpsest"]["past_instant_accuracy"]
    agree_all = sum(p.timeline == p.expected for p in probes)
    return {
        "benchmark": RESULT_PREFIX,
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "in_sample": "nothing tuned: default policy, RRF k=60 and fetch sizes fixed in advance; dev split only read",
        "parameters": {
            "data": _shown(args.situatedqa), "split": args.split, "limit": args.limit, "k": k, "seed": args.seed,
            "namespaces": namespaces, "rrf_k": RRF_K, "source": SOURCE,
            "control_fetch": {arm: {"n": n} for arm, (n, _) in fetch.items()},
            "control_min_rows_per_list": 10 * k,
            "control_round_trips": {name: {"calls": len(v), "widened": sum(1 for x in v if x > 1), "max": max(v)}
                                    for name, v in trips.items() if v},
            "claim_wording": "Q: <question> A: <answers joined by '; '>",
        },
        "counts": {
            **data.counts,
            "claims_per_namespace": 2 * len(timelines),
            "probes_by_date_type": _count(p.date_type for p in probes),
            "probes_by_timeline": _count(p.timeline for p in probes),
            "probes_by_label": _count(p.expected for p in probes),
            "timeline_agrees_with_label": agree_all,
            "timeline_agrees_with_label_rate": agree_all / len(probes) if probes else None,
            "writes": writes,
        },
        "metrics": metrics,
        "latency_now": latency,
        "headline": {
            "keyed_past_instant_accuracy": keyed_at, "windows_past_instant_accuracy": windows_at,
            "keyed_over_windows": keyed_at / windows_at if keyed_at is not None and windows_at else None,
            "keyed_reaches_95pct_of_windows": bool(keyed_at is not None and windows_at is not None
                                                   and keyed_at >= 0.95 * windows_at),
            "backfill_now_cur_absent": metrics["backfill"]["palimpsest"]["now_cur_absent"],
            "checks_ok": all(c["ok"] for c in checks.values()),
        },
        "checks": checks,
        "failures": {key: items[:60 if key.endswith("/palimpsest") else 20] for key, items in failures.items()},
        "failure_counts": {key: len(items) for key, items in failures.items()},
    }


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items()))


LABELS = {"palimpsest": "Palimpsest", "plain_rag": "plain RAG (vector, namespace only)",
          "newest_per_key": "newest write per key (vector)", "hybrid_rrf": "hybrid BM25+vector RRF + stated windows"}


def render_table(r: dict[str, Any]) -> str:
    c, p, h = r["counts"], r["parameters"], r["headline"]
    lines = [
        f"World-time recall on SituatedQA ({p['split']}): {c['usable_timelines']} questions with a prev→cur timeline, "
        f"{c['claims_per_namespace']} claims per namespace, {c['probes']} 'as of' rows "
        f"({c['probes_by_timeline'].get('prev', 0)} inside the older window), k={p['k']}",
        "",
        "| system | namespace | now | past instants (all) | past instants (older window) | past revision | "
        "now: cur claim missing | p50 ms (now) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for arm in ARMS:
        for name in SYSTEMS:
            m = r["metrics"][arm][name]
            rev = _pct(m["past_revision_accuracy"]) if arm == "keyed" else "—"
            lines.append(f"| {LABELS[name]} | {arm} | {_pct(m['now_accuracy'])} | {_pct(m['past_instant_accuracy'])} | "
                         f"{_pct(m['past_instant_older_window_accuracy'])} | {rev} | {m['now_cur_absent']} | "
                         f"{m['latency_ms_p50']:.1f} |")
    checks = ", ".join(f"{arm}: {'ok' if ck['ok'] else ck['violation_counts']}" for arm, ck in r["checks"].items())
    lines += [
        "",
        f"Timeline agrees with the row's label (ceiling for trusting the written windows): "
        f"{_pct(c['timeline_agrees_with_label_rate'])} of rows. Keyed / windows at past instants: "
        f"{h['keyed_over_windows']:.3f} (≥ 0.95: {h['keyed_reaches_95pct_of_windows']}). Backfill: recalls now "
        f"without the cur claim: {h['backfill_now_cur_absent']}. check: {checks}.",
    ]
    return "\n".join(lines)


def main() -> None:
    run()


if __name__ == "__main__":
    main()
