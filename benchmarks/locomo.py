"""Agent-memory retrieval on LoCoMo: does recall find the dialogue turns a question rests on?

Why it is built this way:

* **LoCoMo** (Maharana et al., ACL 2024; the 10-conversation release `locomo10.json`, CC BY-NC
  4.0) is read from `--data` and never copied into the repository. Every dialogue turn is one
  claim: content "speaker: text" (`--variants none` drops the prefix: the issue measured that this
  costs every mode points, so a run can report both), source = the speaker, `valid_from` = the
  session's date, metadata = the turn id, session and speaker. One namespace per conversation,
  one ingest call (one revision) per session, in order.
* **Session dates are parsed strictly** ("1:56 pm on 8 May, 2023", read as UTC: the data names
  no zone). A date that does not parse stops the run with the field that held it; nothing is ever
  stored at an invented instant.
* **Questions**: categories 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop. Category 5
  (adversarial: the answer is *not* in the conversation, so it has no evidence to find) is left
  out and counted. Evidence is turn ids ("D1:3"): a field holding several ids ("D8:6; D9:17") is
  split, a zero-padded number is read as the number ("D30:05" is D30:5), ids naming no turn (or
  none for sure: "D:11:26") are dropped and counted, and a question left without evidence is out
  (counted).
* **Turn-level evidence Recall@5/10/25** (the share of a question's evidence turns among the top
  k, averaged over questions), per category and overall, k = 25 for every mode.
* **Modes side by side, one process, one Neo4j, the same turns**: BM25 (pure Python, Okapi,
  k1 1.2, b 0.75, over the text each turn is indexed by), dense (the same MiniLM vectors
  Palimpsest stored, exact cosine in Python), hybrid = reciprocal rank fusion of the two (k 60;
  the strongest simple control), and Palimpsest: the default policy, graph expansion (PPR), the
  offline second round (`Memory.recall_rounds`), Jaccard dedup (0.7), and the source rule with
  subject terms (`source_penalty` 0.7: a question naming one speaker is answered from that
  speaker's turns). By default every mode runs twice: on "speaker: text" turns and on turns that
  also carry the shared photo's caption and the previous turn as subject (`prefix+captions+context`,
  where the source rule was chosen). `--tune` adds policy variants; the rule is to tune on
  conversations 0–4 and read 5–9 as held out, so every metric is also reported per split.
* **Latency** is per recall after the question's embedding is cached (every mode gets the same
  cached vector), so it measures retrieval, not the embedding model: p50 / p95 per mode, with the
  load average before and after each. The second round embeds its expanded query inside the call.
* **`--llm-model`**: also answers each question through `Memory.ask` and reports token F1
  (SQuAD-style normalisation) against LoCoMo's answer, per category, with the reader's cost.

Run `python -m benchmarks.locomo [--data PATH] [--variants prefix none] [--conversations 0 1 2]`.
Results: benchmarks/README.md, "locomo"; how the modes were chosen: docs/research-log.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import statistics
import string
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.extraction.reader import ReaderOptions

DEFAULT_DATA = Path("../shared/data/locomo/locomo10.json")
DEFAULT_RESULTS_DIR = Path(__file__).resolve().parent / "results"
RESULT_NAME = "locomo-latest.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL = 5
KS = (5, 10, 25)
K = max(KS)
TUNE_SPLIT = range(0, 5)  # conversations a configuration may be chosen on; 5-9 are held out
SPEAKER_MODES = ("prefix", "none")
CONTEXT_WORDS = 30  # words of the previous turn a `--context previous` subject carries


class LocomoFormatError(ValueError):
    """The data file is not LoCoMo as documented; `field` names the offending field."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


# ------------------------------------------------------------------------------------------------
# Loading
# ------------------------------------------------------------------------------------------------
_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), start=1)}
_SESSION_DATE = re.compile(r"(?P<h>[0-9]{1,2}):(?P<mi>[0-9]{2})\s*(?P<ampm>[ap]m)\s+on\s+(?P<d>[0-9]{1,2})\s+"
                           r"(?P<mo>[A-Za-z]+),?\s+(?P<y>[0-9]{4})", re.IGNORECASE)
_TURN_ID = re.compile(r"D([0-9]+):([0-9]+)")
_SESSION_KEY = re.compile(r"session_([0-9]+)")


def parse_session_date(text: object, field: str = "session_date_time") -> datetime:
    """LoCoMo's session date ("1:56 pm on 8 May, 2023") as an aware UTC datetime; anything else is a
    `LocomoFormatError` naming `field` (never a default date)."""
    if not isinstance(text, str):
        raise LocomoFormatError(f"expected a date string like '1:56 pm on 8 May, 2023', got {text!r}", field)
    m = _SESSION_DATE.fullmatch(text.strip())
    month = _MONTHS.get(m.group("mo").lower()) if m else None
    if m is None or month is None:
        raise LocomoFormatError(f"not a LoCoMo session date (like '1:56 pm on 8 May, 2023'): {text!r}", field)
    hour, minute = int(m.group("h")), int(m.group("mi"))
    if not 1 <= hour <= 12 or minute > 59:
        raise LocomoFormatError(f"no such time of day: {text!r}", field)
    hour = hour % 12 + (12 if m.group("ampm").lower() == "pm" else 0)
    try:
        return datetime(int(m.group("y")), month, int(m.group("d")), hour, minute, tzinfo=UTC)
    except ValueError as exc:
        raise LocomoFormatError(f"no such date: {text!r} ({exc})", field) from None


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    when: datetime
    caption: str | None = None  # the image the speaker shared, as LoCoMo's BLIP caption describes it


@dataclass(frozen=True)
class Question:
    conversation: int
    number: int  # its place in the conversation's qa list
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Conversation:
    index: int
    sample_id: str
    turns: list[Turn]
    questions: list[Question]


@dataclass
class Loaded:
    conversations: list[Conversation]
    counts: dict[str, Any] = field(default_factory=dict)


def _turns(index: int, conv: dict[str, Any]) -> list[Turn]:
    sessions = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.fullmatch(key)))
    turns: list[Turn] = []
    for s in sessions:
        where = f"[{index}].conversation.session_{s}"
        when = parse_session_date(conv.get(f"session_{s}_date_time"), f"{where}_date_time")
        rows = conv[f"session_{s}"]
        if not isinstance(rows, list):
            raise LocomoFormatError("expected a list of turns", where)
        for n, row in enumerate(rows):
            if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in ("speaker", "dia_id", "text")):
                raise LocomoFormatError("a turn needs string speaker, dia_id and text", f"{where}[{n}]")
            caption = row.get("blip_caption")
            turns.append(Turn(row["dia_id"], s, row["speaker"].strip(), row["text"].strip(), when,
                              caption.strip() if isinstance(caption, str) and caption.strip() else None))
    return turns


def load_locomo(path: Path, conversations: Sequence[int] | None = None) -> Loaded:
    """The conversations (all, or those indexes) with their category 1-4 questions; `counts` says what
    was left out and why."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(raw, list):
        raise LocomoFormatError("expected a list of conversations", "[]")
    wanted = range(len(raw)) if conversations is None else conversations
    out: list[Conversation] = []
    counts: Counter[str] = Counter()
    by_category: Counter[int] = Counter()
    for index in wanted:
        if not 0 <= index < len(raw):
            raise LocomoFormatError(f"no conversation {index} (the file has {len(raw)})", "conversations")
        sample = raw[index]
        turns = _turns(index, sample["conversation"])
        known = {t.dia_id for t in turns}
        if len(known) != len(turns):
            raise LocomoFormatError("two turns share a dia_id", f"[{index}].conversation")
        questions: list[Question] = []
        for n, qa in enumerate(sample["qa"]):
            category = int(qa["category"])
            counts["questions_in_file"] += 1
            if category == ADVERSARIAL:
                counts["adversarial_excluded"] += 1
                continue
            if category not in CATEGORIES:
                raise LocomoFormatError(f"unknown category {category}", f"[{index}].qa[{n}].category")
            evidence: list[str] = []
            for entry in qa.get("evidence", []):
                # "D30:05" is turn D30:5; "D8:6; D9:17" is two ids; "D:11:26" names none it can be sure of.
                found = [f"D{int(s)}:{int(t)}" for s, t in _TURN_ID.findall(str(entry))]
                if found != [str(entry)]:
                    counts["evidence_fields_malformed"] += 1
                for dia_id in found:
                    if dia_id not in known:
                        counts["evidence_ids_unknown"] += 1
                    elif dia_id not in evidence:
                        evidence.append(dia_id)
            if not evidence:
                counts["no_evidence_excluded"] += 1
                continue
            questions.append(Question(index, n, str(qa["question"]).strip(), str(qa.get("answer", "")), category,
                                      tuple(evidence)))
            by_category[category] += 1
        counts["turns"] += len(turns)
        out.append(Conversation(index, str(sample.get("sample_id", index)), turns, questions))
    result = dict(counts) | {"conversations": len(out), "questions": sum(by_category.values()),
                             "questions_by_category": {CATEGORIES[c]: by_category[c] for c in sorted(by_category)}}
    return Loaded(out, result)


# ------------------------------------------------------------------------------------------------
# What a turn becomes
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    """How turns are written: the speaker prefix, the shared image's caption, and a subject that
    carries the previous turn of the session (a reply is elliptical: "Yes, last Friday!" means
    something only beside what it answers). The subject enters the claim's vector (schema.subjects)."""

    speaker: str = "prefix"
    captions: bool = False
    context: str = "none"  # "previous": subject = the previous turn of the session

    @property
    def name(self) -> str:
        parts = [self.speaker]
        if self.captions:
            parts.append("captions")
        if self.context != "none":
            parts.append("context")
        return "+".join(parts)


def parse_variant(text: str) -> Variant:
    """'prefix', 'none', with '+captions' and/or '+context' (argparse type; a bad one names the flag)."""
    head, *rest = text.split("+")
    if head not in SPEAKER_MODES or not set(rest) <= {"captions", "context"} or len(set(rest)) != len(rest):
        raise argparse.ArgumentTypeError(f"--variants: {text!r} is not prefix|none[+captions][+context]")
    return Variant(head, "captions" in rest, "previous" if "context" in rest else "none")


def claim_of(turn: Turn, previous: Turn | None, variant: Variant) -> dict[str, Any]:
    """The ingest item of one turn under `variant`."""
    text = turn.text
    if variant.captions and turn.caption:
        text = f"{text} [shares a photo: {turn.caption}]"
    content = f"{turn.speaker}: {text}" if variant.speaker == "prefix" else text
    metadata: dict[str, Any] = {"dia_id": turn.dia_id, "session": turn.session, "speaker": turn.speaker}
    if variant.context == "previous" and previous is not None:
        words = previous.text.split()
        said = " ".join(words[:CONTEXT_WORDS]) + (" …" if len(words) > CONTEXT_WORDS else "")
        metadata["subject"] = f"{previous.speaker} said: {said}"
    return {"content": content, "source": turn.speaker, "valid_from": turn.when.isoformat(), "metadata": metadata}


def claims_of(conv: Conversation, variant: Variant) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, turn in enumerate(conv.turns):
        before = conv.turns[i - 1] if i and conv.turns[i - 1].session == turn.session else None
        out.append(claim_of(turn, before, variant))
    return out


def indexed_text(item: dict[str, Any]) -> str:
    """The text a turn is represented by for the baselines: what Palimpsest embeds for it."""
    from palimpsest.schema.subjects import text_for_vector

    return text_for_vector(item["content"], item["metadata"])


# ------------------------------------------------------------------------------------------------
# Baselines
# ------------------------------------------------------------------------------------------------
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 over a fixed list of documents, pure Python; Lucene's IDF (never negative)."""

    def __init__(self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = [Counter(words(d)) for d in docs]
        self.lengths = [sum(tf.values()) for tf in self.tf]
        self.avg = statistics.fmean(self.lengths) if self.lengths else 0.0
        df: Counter[str] = Counter()
        for tf in self.tf:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def scores(self, query: str) -> list[float]:
        q = [w for w in dict.fromkeys(words(query)) if w in self.idf]
        out = []
        for tf, length in zip(self.tf, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self.avg) if self.avg else self.k1
            out.append(sum(self.idf[w] * tf[w] * (self.k1 + 1) / (tf[w] + norm) for w in q if w in tf))
        return out

    def rank(self, query: str) -> list[int]:
        s = self.scores(query)
        return sorted(range(len(s)), key=lambda i: (-s[i], i))


def dense_rank(matrix: Any, vector: Sequence[float]) -> list[int]:
    """Document indexes by exact cosine (vectors are unit length), ties by index."""
    import numpy as np

    scores = matrix @ np.asarray(vector, dtype=np.float64)
    order = np.lexsort((np.arange(len(scores)), -np.round(scores, 9)))
    return [int(i) for i in order]


def rrf(rankings: Sequence[Sequence[int]], k: int = 60) -> list[int]:
    score: dict[int, float] = {}
    for ranking in rankings:
        for r, doc in enumerate(ranking, start=1):
            score[doc] = score.get(doc, 0.0) + 1.0 / (k + r)
    return sorted(score, key=lambda d: (-round(score[d], 12), d))


# ------------------------------------------------------------------------------------------------
# Answer F1 (the reader, with --llm-model)
# ------------------------------------------------------------------------------------------------
def _normalise(text: str) -> list[str]:
    text = "".join(" " if ch in string.punctuation else ch for ch in text.lower())
    return [w for w in text.split() if w not in {"a", "an", "the", "and"}]


def token_f1(prediction: str, gold: str) -> float:
    p, g = _normalise(prediction), _normalise(gold)
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


# ------------------------------------------------------------------------------------------------
# Modes
# ------------------------------------------------------------------------------------------------
# Palimpsest modes: policy knobs ({} = the namespace default, default-v1); "rounds" picks recall_rounds.
PALIMPSEST_MODES: dict[str, dict[str, Any]] = {
    "palimpsest (default policy)": {},
    "palimpsest + PPR": {"graph_expansion": "ppr"},
    "palimpsest + round 2": {"rounds": 2},
    "palimpsest + dedup 0.7": {"dedup_jaccard": 0.7},
    # The best so far (docs/research-log.md, "Who said it"): with the `prefix+captions+context` turns.
    "palimpsest subject terms + source penalty 0.7": {"subject_terms": True, "source_penalty": 0.7},
    # The same on word stems ("Where has she camped?" / "we went camping"; policy stem_terms).
    "palimpsest subject terms + source penalty 0.7 + stems": {"subject_terms": True, "source_penalty": 0.7,
                                                              "stem_terms": True},
    # The same with its head read sentence by sentence (rerank: sentences; weight 1 and the whole packet, 25,
    # chosen on conversations 0-4 offline, docs/research-log.md "Sentence match").
    "palimpsest subject terms + source penalty 0.7 + stems + sentences": {
        "subject_terms": True, "source_penalty": 0.7, "stem_terms": True, "rerank": "sentences", "rerank_top": 25},
}
# `--sentence-control`: a mode that reads sentences run again before the worker stores their vectors, so
# each of its recalls embeds the sentences it reads (the text cache emptied before it): what the stage
# costs without stored vectors, in the same run.
AT_RECALL = "sentences_at_recall"
AT_RECALL_SUFFIX = " [sentences embedded at recall]"
# Turns as the issue first measured them, and as the best configuration writes them.
DEFAULT_VARIANTS = ("prefix", "prefix+captions+context")
# The router's ceiling (every stage it may switch off) and the router over it (graph.recall.router):
# `--modes` picks them; they are not in the default run.
_BEST = PALIMPSEST_MODES["palimpsest subject terms + source penalty 0.7"]
_BEST_STEMS = PALIMPSEST_MODES["palimpsest subject terms + source penalty 0.7 + stems"]
_BEST_SENTENCES = PALIMPSEST_MODES["palimpsest subject terms + source penalty 0.7 + stems + sentences"]
ROUTER_MODES: dict[str, dict[str, Any]] = {
    "palimpsest + PPR + round 2": {"graph_expansion": "ppr", "rounds": 2},
    "router: PPR + round 2": {"graph_expansion": "ppr", "router": "rules", "rounds": 2},
    # The same over the best single policy: its stages, then the router switching them off per question.
    "palimpsest subject terms + source penalty 0.7 + PPR + round 2": {**_BEST, "graph_expansion": "ppr", "rounds": 2},
    "router: subject terms + source penalty 0.7 + PPR + round 2": {**_BEST, "graph_expansion": "ppr",
                                                                   "router": "rules", "rounds": 2},
    "palimpsest subject terms + source penalty 0.7 + stems + PPR + round 2": {
        **_BEST_STEMS, "graph_expansion": "ppr", "rounds": 2},
    "router: subject terms + source penalty 0.7 + stems + PPR + round 2": {
        **_BEST_STEMS, "graph_expansion": "ppr", "router": "rules", "rounds": 2},
    # Without PPR (it costs recall on conversations): the router only decides the rounds.
    "palimpsest subject terms + source penalty 0.7 + stems + round 2": {**_BEST_STEMS, "rounds": 2},
    "router: subject terms + source penalty 0.7 + stems + round 2": {**_BEST_STEMS, "router": "rules", "rounds": 2},
    # The same over the best single policy with the sentence reranker.
    "palimpsest subject terms + source penalty 0.7 + stems + sentences + round 2": {**_BEST_SENTENCES, "rounds": 2},
    "router: subject terms + source penalty 0.7 + stems + sentences + round 2": {**_BEST_SENTENCES, "router": "rules",
                                                                                 "rounds": 2},
}
TUNE_MODES: dict[str, dict[str, Any]] = {
    "palimpsest rrf": {"fusion": "rrf"},
    "palimpsest no sibling penalty": {"sibling_penalty": 1.0},
    "palimpsest source penalty 0.5": {"source_penalty": 0.5},
    "palimpsest source penalty 0.7": {"source_penalty": 0.7},
    "palimpsest source penalty 0.85": {"source_penalty": 0.85},
    "palimpsest subject terms + source penalty 0.7, oversampling 8": {"subject_terms": True, "source_penalty": 0.7,
                                                                      "oversampling": 8},
    "palimpsest subject terms + source penalty 0.5": {"subject_terms": True, "source_penalty": 0.5},
    "palimpsest subject terms + source penalty 0.7 + PPR": {"subject_terms": True, "source_penalty": 0.7,
                                                            "graph_expansion": "ppr"},
    "palimpsest subject terms + source penalty 0.7 + round 2": {"subject_terms": True, "source_penalty": 0.7,
                                                                "rounds": 2},
    "palimpsest subject terms": {"subject_terms": True},
    "palimpsest text weight 2": {"text_weight": 2.0},
    "palimpsest vector weight 2": {"vector_weight": 2.0},
    "palimpsest oversampling 8": {"oversampling": 8},
    "palimpsest + PPR protect 10": {"graph_expansion": "ppr", "ppr_protect_top": 10},
    "palimpsest + PPR weight 0.25": {"graph_expansion": "ppr", "graph_weight": 0.25},
    "palimpsest + round 2 weight 1": {"rounds": 2, "expansion_weight": 1.0},
    "palimpsest + round 2 protect 10": {"rounds": 2, "expansion_protect_top": 10},
}
BASELINES = ("bm25", "dense", "hybrid rrf (bm25 + dense)")


@dataclass
class Ranked:
    """One mode's ranking of one question, as turn ids."""

    question: Question
    ranked: list[str]
    ms: float


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold)


def scored(r: Ranked) -> list[float]:
    """A question's row as results keep it: [conversation, number, category, R@5, R@10, R@25, ms] — enough
    to recompute every aggregate (and merge runs over disjoint conversations) exactly."""
    q = r.question
    return [q.conversation, q.number, q.category, *(recall_at(r.ranked, q.evidence, k) for k in KS), round(r.ms, 3)]


def metrics(rows: Sequence[Sequence[float]]) -> dict[str, Any]:
    """R@5/10/25 (percent) overall and per category, over scored rows."""

    def block(sub: Sequence[Sequence[float]]) -> dict[str, Any]:
        if not sub:
            return {"questions": 0}
        return {"questions": len(sub)} | {
            f"r@{k}": round(100 * statistics.fmean(r[3 + i] for r in sub), 1) for i, k in enumerate(KS)}

    out = {"all": block(rows)}
    for c, name in CATEGORIES.items():
        out[name] = block([r for r in rows if r[2] == c])
    return out


def summarise(rows: Sequence[Sequence[float]]) -> dict[str, Any]:
    tune = [r for r in rows if r[0] in TUNE_SPLIT]
    held = [r for r in rows if r[0] not in TUNE_SPLIT]
    times = [r[6] for r in rows]
    return {"metrics": metrics(rows), "metrics_conversations_0_4": metrics(tune),
            "metrics_conversations_5_9": metrics(held),
            "p50_ms": round(_pct(times, 0.5), 2), "p95_ms": round(_pct(times, 0.95), 2)}


# ------------------------------------------------------------------------------------------------
# One conversation
# ------------------------------------------------------------------------------------------------
@dataclass
class ConversationRun:
    namespace: str
    rows: dict[str, list[Ranked]]
    deterministic: dict[str, bool]
    load: dict[str, list[float]]
    timings: dict[str, float]
    answers: list[dict[str, Any]] = field(default_factory=list)
    check_violations: dict[str, int] = field(default_factory=dict)  # `palimpsest check` after every mode


def _ingest(mem: Memory, conv: Conversation, items: list[dict[str, Any]]) -> list[str]:
    """One ingest call per session, in order; the claim ids in turn order."""
    ids: list[str] = []
    start = 0
    while start < len(items):
        end = start
        while end < len(items) and conv.turns[end].session == conv.turns[start].session:
            end += 1
        res = mem.ingest_many(items[start:end])
        for it in res.items:
            if not it.ok or it.id is None:
                raise RuntimeError(f"turn {conv.turns[start + it.index].dia_id} was refused: {it.error}")
            ids.append(str(it.id))
        start = end
    return ids


def run_conversation(rt: Runtime, conv: Conversation, variant: Variant, modes: dict[str, dict[str, Any]], *,
                     prefix: str, keep: bool = False, llm_model: str | None = None, ask_k: int = 10,
                     reader: ReaderOptions | None = None) -> ConversationRun:
    import numpy as np

    from benchmarks.rerank_required import require_rerank
    from palimpsest.api.memory import Memory
    from palimpsest.api.worker import ProjectionWorker, WorkerConfig
    from palimpsest.graph.lifecycle.maintenance import drop_namespace
    from palimpsest.schema.ask import ReaderCost
    from palimpsest.schema.errors import UnavailableError

    ns = f"{prefix}-c{conv.index}"
    existing, _, _ = rt.driver.execute_query("MATCH (s:Store {namespace: $ns}) RETURN count(s) AS n", ns=ns,
                                             database_=rt.settings.database)
    if existing[0]["n"]:
        raise SystemExit(f"namespace {ns!r} already holds data; choose another --namespace-prefix or --seed")
    mem = Memory(rt, ns)
    timings: dict[str, float] = {}
    try:
        items = claims_of(conv, variant)
        t = time.perf_counter()
        ids = _ingest(mem, conv, items)
        timings["write_s"] = time.perf_counter() - t
        t = time.perf_counter()
        # The entity graph PPR and the second round read; exact-name merging only, no detectors. Sentence
        # vectors come after, timed apart, so the modes run before them embed sentences at recall.
        ProjectionWorker(rt, WorkerConfig(batch_claims=500, entity_embeddings=False, sentence_vectors=False),
                         detectors=[]).run_once(ns)
        timings["projections_s"] = time.perf_counter() - t
        turn_of = {cid: conv.turns[i].dia_id for i, cid in enumerate(ids)}
        stored, _, _ = rt.driver.execute_query(
            "MATCH (c:Claim {namespace: $ns}) WHERE c.id IN $ids RETURN c.id AS id, c.embedding AS v",
            ns=ns, ids=ids, database_=rt.settings.database, routing_="r")
        vec_of = {r["id"]: r["v"] for r in stored}
        matrix = np.asarray([vec_of[cid] for cid in ids], dtype=np.float64)
        bm25 = BM25([indexed_text(it) for it in items])
        questions = conv.questions
        for q in questions:  # cached from here on: latencies measure retrieval, not the model
            rt.embedder.embed_query(q.question)
        rows: dict[str, list[Ranked]] = {}
        load: dict[str, list[float]] = {}
        deterministic: dict[str, bool] = {}

        def measure(name: str, rank: Callable[[Question], list[str]]) -> None:
            before = list(os.getloadavg())
            out = []
            for q in questions:
                t0 = time.perf_counter()
                ranked = rank(q)
                out.append(Ranked(q, ranked, (time.perf_counter() - t0) * 1000))
            rows[name] = out
            load[name] = before + list(os.getloadavg())

        measure("bm25", lambda q: [conv.turns[i].dia_id for i in bm25.rank(q.question)[:K]])
        measure("dense", lambda q: [conv.turns[i].dia_id
                                    for i in dense_rank(matrix, rt.embedder.embed_query(q.question))[:K]])
        measure("hybrid rrf (bm25 + dense)", lambda q: [
            conv.turns[i].dia_id
            for i in rrf([bm25.rank(q.question), dense_rank(matrix, rt.embedder.embed_query(q.question))])[:K]])
        # Modes that read sentences before the worker stored them first, each from an empty text cache.
        order = sorted(modes, key=lambda n: not modes[n].get(AT_RECALL))
        for name in order:
            knobs = modes[name]
            if not knobs.get(AT_RECALL) and knobs.get("rerank") == "sentences" and "sentence_vectors_s" not in timings:
                t = time.perf_counter()
                keeper = ProjectionWorker(rt, WorkerConfig(batch_claims=500, entity_embeddings=False,
                                                           sentence_vectors=True), detectors=[])
                while keeper.run_once(ns, pagerank=False).sentence_vectors:
                    pass
                timings["sentence_vectors_s"] = time.perf_counter() - t
            if knobs.get(AT_RECALL):
                rt.embedder.clear_text_cache()
            rounds = knobs.get("rounds")
            policy_knobs = {k: v for k, v in knobs.items() if k not in ("rounds", AT_RECALL)}
            version: str | None = None
            if policy_knobs:
                version = re.sub(r"[^A-Za-z0-9_.-]", "_", name.removesuffix(AT_RECALL_SUFFIX))[:64]
                mem.register_policy({"version": version, **policy_knobs})
            fingerprints: list[Any] = []

            def palimpsest(q: Question, version: str | None = version, rounds: Any = rounds,
                           fingerprints: list[Any] = fingerprints, name: str = name) -> list[str]:
                if rounds:
                    multi = mem.recall_rounds(q.question, policy_version=version, k=K, rounds=int(rounds))
                    fingerprints.append(tuple(r.packet.fingerprint for r in multi.rounds))
                    require_rerank(name, (r.packet for r in multi.rounds))
                    return [turn_of[it.id] for it in multi.items]
                packet = mem.recall(q.question, policy_version=version, k=K)
                fingerprints.append(packet.fingerprint)
                require_rerank(name, [packet])
                return [turn_of[it.id] for it in packet.items]

            measure(name, palimpsest)
            again: list[Any] = []
            for q in questions[:5]:  # the same question again must give the same packet
                palimpsest(q, fingerprints=again)
            deterministic[name] = again == fingerprints[:len(again)]
        answers: list[dict[str, Any]] = []
        if llm_model:
            if reader is not None:
                rt.reader = reader
            for q in questions:
                row: dict[str, Any] = {"conversation": conv.index, "number": q.number, "category": q.category}
                try:
                    res = mem.ask(q.question, llm_model=llm_model, k=ask_k)
                except UnavailableError as exc:  # one provider failure scores 0 and is counted, not fatal
                    answers.append(row | {"f1": 0.0, "not_in_memory": True, "failed": str(exc)[:200],
                                          "cited_turns": [], "cost": ReaderCost(calls=1, failed_calls=1).model_dump()})
                    continue
                answers.append(row | {"f1": token_f1(res.answer, q.answer), "not_in_memory": res.not_in_memory,
                                      "cited_turns": [turn_of.get(c, c) for c in res.cited_ids],
                                      "cost": res.cost.model_dump()})
        return ConversationRun(ns, rows, deterministic, load, {k: round(v, 2) for k, v in timings.items()}, answers,
                               mem.check().violation_counts)
    finally:
        if not keep:
            drop_namespace(rt.driver, ns, database=rt.settings.database)


# ------------------------------------------------------------------------------------------------
# The run
# ------------------------------------------------------------------------------------------------
def _shown(path: Path) -> str:
    """A data path as recorded in results: relative to the repository, never this machine's layout."""
    return os.path.relpath(Path(path).resolve(), Path(__file__).resolve().parents[1])


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.locomo", description=(__doc__ or "").split("\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"locomo10.json (default {DEFAULT_DATA})")
    p.add_argument("--conversations", type=int, nargs="+", default=None,
                   help="conversation indexes to run (default all; tune on 0-4, 5-9 are held out)")
    p.add_argument("--variants", nargs="+", default=None, type=parse_variant, metavar="VARIANT",
                   help="how turns are written, several side by side: 'prefix' (content 'speaker: text') or "
                        "'none' (the text alone), optionally '+captions' (the shared image's caption appended) "
                        "and '+context' (the previous turn of the session as subject, so in the vector); "
                        f"default: {' '.join(DEFAULT_VARIANTS)}")
    p.add_argument("--modes", nargs="+", default=None,
                   help=f"Palimpsest modes to run (default all of: {', '.join(PALIMPSEST_MODES)})")
    p.add_argument("--tune", action="store_true", help="also run the policy variants (choose on conversations 0-4)")
    p.add_argument("--seed", type=int, default=17,
                   help="names the namespaces (default 17). The benchmark draws nothing at random; claim ids "
                        "are fresh per run, and recall breaks score ties by a claim's content before its id "
                        "(graph/claims/order.py), so a rerun ranks alike; within a run every packet is checked "
                        "to repeat")
    p.add_argument("--namespace-prefix", default=None,
                   help="namespaces are <prefix>-<variant>-c<conversation> (default bench-locomo-<seed>); "
                        "they must be empty")
    p.add_argument("--keep", action="store_true", help="keep the namespaces afterwards")
    p.add_argument("--llm-model", default=None, help="also answer every question through ask with this litellm model")
    p.add_argument("--ask-k", type=int, default=10, help="items per round the reader sees (default 10)")
    p.add_argument("--llm-rps", type=float, default=2.0, help="reader calls per second at most (default 2)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch intra-op threads (0 = torch default); 1 is faster on a contended 2-core box")
    p.add_argument("--rerank-model", default=None,
                   help="also run the chosen modes with this CrossEncoder (a name or a local directory) reranking "
                        "their top --rerank-top (policy rerank: cross-encoder)")
    p.add_argument("--rerank-top", type=int, default=50, help="candidates the cross-encoder rescores (default 50)")
    p.add_argument("--sentence-control", action="store_true",
                   help="also run each mode that reranks by sentences before the worker stores sentence vectors "
                        "(every recall embeds the sentences it reads): what stored vectors save, in the same run")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR)
    p.add_argument("--out", default=RESULT_NAME, help=f"file name under --results-dir (default {RESULT_NAME})")
    p.add_argument("--merge", type=Path, nargs="+", default=None, metavar="RESULT",
                   help="run nothing: merge result files of disjoint conversations into --out")
    a = p.parse_args(argv)
    if a.modes is not None:
        unknown = sorted(set(a.modes) - set(PALIMPSEST_MODES) - set(ROUTER_MODES) - set(TUNE_MODES))
        if unknown:
            p.error(f"--modes: unknown {unknown}; known: "
                    f"{sorted(PALIMPSEST_MODES) + sorted(ROUTER_MODES) + sorted(TUNE_MODES)}")
    if a.namespace_prefix is None:
        a.namespace_prefix = f"bench-locomo-{a.seed}"
    if a.ask_k < 1 or a.ask_k > 50:
        p.error("--ask-k must be 1..50")
    return a


def _variant_prefix(prefix: str, variant: Variant) -> str:
    short = {"prefix": "sp", "none": "sn", "captions": "cap", "context": "ctx"}
    return f"{prefix}-{'-'.join(short[p] for p in variant.name.split('+'))}"


def run(argv: Sequence[str] | None = None, *, reader: ReaderOptions | None = None) -> dict[str, Any]:
    """Load, write every conversation under every speaker variant, rank with every mode, write JSON."""
    args = _parse(argv)
    if args.merge:
        return merge(args.merge, args.results_dir / args.out)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.torch_threads > 0:
        import torch

        torch.set_num_threads(args.torch_threads)
    from palimpsest.api.runtime import Runtime
    from palimpsest.extraction.reader import ReaderOptions

    if reader is None and args.llm_model:
        reader = ReaderOptions(max_calls_per_second=args.llm_rps)
    started = time.perf_counter()
    load_start = list(os.getloadavg())
    loaded = load_locomo(args.data, args.conversations)
    known = PALIMPSEST_MODES | ROUTER_MODES | TUNE_MODES
    modes = {n: known[n] for n in args.modes} if args.modes else dict(PALIMPSEST_MODES)
    if args.tune:
        modes |= TUNE_MODES
    if args.rerank_model:
        rerank = {"rerank": "cross-encoder", "rerank_model": args.rerank_model, "rerank_top": args.rerank_top}
        modes |= {f"{name} + rerank": {**knobs, **rerank} for name, knobs in list(modes.items())}
    if args.sentence_control:
        modes |= {f"{name}{AT_RECALL_SUFFIX}": {**knobs, AT_RECALL: True} for name, knobs in list(modes.items())
                  if knobs.get("rerank") == "sentences"}
    rt = Runtime.from_env()
    # Whoever runs the benchmark is the operator: the models on its command line are admitted.
    rt.models = rt.models.admitting("llm", args.llm_model).admitting("rerank", args.rerank_model)
    info = rt.info()
    variants = list(dict.fromkeys(args.variants or [parse_variant(v) for v in DEFAULT_VARIANTS]))
    out_variants: dict[str, Any] = {}
    try:
        for variant in variants:
            rows: dict[str, list[Ranked]] = {}
            per_conv: list[dict[str, Any]] = []
            deterministic: dict[str, bool] = {}
            loads: dict[str, list[list[float]]] = {}
            answers: list[dict[str, Any]] = []
            for conv in loaded.conversations:
                r = run_conversation(rt, conv, variant, modes, prefix=_variant_prefix(args.namespace_prefix, variant),
                                     keep=args.keep, llm_model=args.llm_model, ask_k=args.ask_k, reader=reader)
                for name, ranked in r.rows.items():
                    rows.setdefault(name, []).extend(ranked)
                    loads.setdefault(name, []).append(r.load[name])
                for name, ok in r.deterministic.items():
                    deterministic[name] = deterministic.get(name, True) and ok
                answers.extend(r.answers)
                per_conv.append({"conversation": conv.index, "sample_id": conv.sample_id, "turns": len(conv.turns),
                                 "questions": len(conv.questions), **r.timings,
                                 "check_violations": r.check_violations})
                print(f"[{variant.name}] conversation {conv.index}: {len(conv.turns)} turns, "
                      f"{len(conv.questions)} questions, {r.timings}", file=sys.stderr, flush=True)
            mode_results = {}
            for name, ranked in rows.items():
                ls = loads[name]
                mode_results[name] = _mode_result([scored(r) for r in ranked], modes.get(name, {}),
                                                  deterministic.get(name), ls)
            block: dict[str, Any] = {"variant": variant.__dict__, "conversations": per_conv, "modes": mode_results,
                                     "ratios_r10": _ratios(mode_results)}
            if args.llm_model:
                block["answers"] = _answer_summary(answers)
            out_variants[variant.name] = block
    finally:
        rt.close()
    results: dict[str, Any] = {
        "benchmark": "locomo", "data": _shown(args.data), "k": K, "ks": list(KS),
        "conversations": [c.index for c in loaded.conversations], "counts": loaded.counts,
        "tune_split": "conversations 0-4 (in-sample for any tuned choice); 5-9 held out",
        "category_5": "adversarial (no evidence in the conversation): excluded",
        "seed": args.seed, "llm_model": args.llm_model, "variants": out_variants,
        "environment": {
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "machine": f"{os.cpu_count()}-core {platform.machine()} {platform.system()}",
            "python": platform.python_version(), "neo4j": info.neo4j_version, "gds": info.gds_version,
            "embedding_model": rt.embedder.model_name, "torch_threads": args.torch_threads or "default",
            # Latencies are wall-clock on a possibly shared machine; the load average says how shared.
            "loadavg_start": [round(x, 2) for x in load_start],
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        },
        "total_s": round(time.perf_counter() - started, 1), "namespace_kept": bool(args.keep),
    }
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / args.out).write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(table(results))
    return results


def _mode_result(rows: list[list[float]], knobs: dict[str, Any], deterministic: bool | None,
                 loads: list[list[float]]) -> dict[str, Any]:
    """A mode's aggregates, the 1-minute load before and after (mean over its conversations), and its
    per-question rows (`scored`)."""
    return summarise(rows) | {
        "knobs": knobs, "deterministic": deterministic,
        "load_before": round(statistics.fmean(x[0] for x in loads), 2),
        "load_after": round(statistics.fmean(x[3] for x in loads), 2), "loads": loads, "per_question": rows}


def merge(paths: Sequence[Path], out: Path) -> dict[str, Any]:
    """One result from runs over disjoint conversations (the same variants, modes and code): every
    aggregate recomputed from the runs' per-question rows; each run's environment is kept."""
    runs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]
    seen: set[int] = set()
    for r in runs:
        if seen & set(r["conversations"]):
            raise SystemExit(f"--merge: conversations {sorted(seen & set(r['conversations']))} are in two runs")
        seen |= set(r["conversations"])
    first = runs[0]
    merged = {k: v for k, v in first.items() if k not in {"variants", "environment", "conversations", "counts"}}
    merged["conversations"] = sorted(seen)
    counts: Counter[str] = Counter()
    by_category: Counter[str] = Counter()
    for r in runs:
        counts.update({k: v for k, v in r["counts"].items() if isinstance(v, int)})
        by_category.update(r["counts"]["questions_by_category"])
    merged["counts"] = dict(counts) | {"questions_by_category": {n: by_category[n] for n in CATEGORIES.values()}}
    merged["environment"] = first["environment"] | {
        "loadavg_start": first["environment"]["loadavg_start"],
        "loadavg_end": runs[-1]["environment"]["loadavg_end"]}
    merged["merged_from"] = [{"conversations": r["conversations"], "environment": r["environment"],
                              "total_s": r.get("total_s")} for r in runs]
    variants: dict[str, Any] = {}
    for vname in first["variants"]:
        if any(vname not in r["variants"] for r in runs):
            raise SystemExit(f"--merge: variant {vname!r} is not in every run")
        blocks = [r["variants"][vname] for r in runs]
        modes: dict[str, Any] = {}
        for mname, m0 in blocks[0]["modes"].items():
            if any(mname not in b["modes"] for b in blocks):
                raise SystemExit(f"--merge: mode {mname!r} of {vname!r} is not in every run")
            parts = [b["modes"][mname] for b in blocks]
            dets = [p["deterministic"] for p in parts]
            modes[mname] = _mode_result([row for p in parts for row in p["per_question"]], m0["knobs"],
                                        None if dets[0] is None else all(dets),
                                        [x for p in parts for x in p["loads"]])
        variants[vname] = {"variant": blocks[0]["variant"],
                           "conversations": [c for b in blocks for c in b["conversations"]],
                           "modes": modes, "ratios_r10": _ratios(modes)}
    merged["variants"] = variants
    out.parent.mkdir(parents=True, exist_ok=True)  # the results folder is ignored and may not exist yet
    out.write_text(json.dumps(merged, indent=2), encoding="utf-8")
    print(table(merged))
    return merged


def _ratios(modes: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Each mode's R@10 over BM25's and over the hybrid control's (all questions)."""
    def r10(name: str) -> float:
        return float(modes[name]["metrics"]["all"].get("r@10", 0.0))

    out: dict[str, dict[str, float | None]] = {}
    for name in modes:
        out[name] = {f"vs_{base.split()[0]}": (round(r10(name) / r10(base), 3) if r10(base) else None)
                     for base in ("bm25", "hybrid rrf (bm25 + dense)")}
    return out


def _answer_summary(answers: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(answers)}
    if not answers:
        return out
    out["f1_all"] = round(100 * statistics.fmean(a["f1"] for a in answers), 1)
    for c, name in CATEGORIES.items():
        sub = [a["f1"] for a in answers if a["category"] == c]
        out[f"f1_{name}"] = round(100 * statistics.fmean(sub), 1) if sub else None
    out["not_in_memory"] = sum(1 for a in answers if a["not_in_memory"])
    out["failed"] = sum(1 for a in answers if a.get("failed"))
    out["reader_calls"] = sum(int(a["cost"]["calls"]) for a in answers)
    out["cost_usd"] = round(sum(float(a["cost"]["cost_usd"]) for a in answers), 6)
    out["unpriced_calls"] = sum(int(a["cost"]["unpriced_calls"]) for a in answers)
    return out


def table(results: dict[str, Any]) -> str:
    env = results["environment"]
    lines = [f"LoCoMo, conversations {results['conversations']}, {results['counts']['questions']} questions "
             f"(categories 1-4; {results['counts'].get('adversarial_excluded', 0)} adversarial excluded), "
             f"k = {results['k']}; {env['date']}, {env['machine']}, load {env['loadavg_start'][0]}"]
    for vname, block in results["variants"].items():
        lines += ["", f"**{vname}**", "",
                  "| mode | R@5 | R@10 | R@25 | " + " | ".join(f"{n} R@10" for n in CATEGORIES.values())
                  + " | R@10 conv 0-4 | R@10 conv 5-9 | p50 ms | p95 ms | load | deterministic |",
                  "|---|---:|---:|---:|" + "---:|" * len(CATEGORIES) + "---:|---:|---:|---:|---:|---|"]
        for name, m in block["modes"].items():
            a = m["metrics"]["all"]
            cats = " | ".join(str(m["metrics"][n].get("r@10", "—")) for n in CATEGORIES.values())
            det = "" if m["deterministic"] is None else ("yes" if m["deterministic"] else "NO")
            lines.append(f"| {name} | {a['r@5']} | {a['r@10']} | {a['r@25']} | {cats} | "
                         f"{m['metrics_conversations_0_4']['all'].get('r@10', '—')} | "
                         f"{m['metrics_conversations_5_9']['all'].get('r@10', '—')} | {m['p50_ms']} | {m['p95_ms']} | "
                         f"{m['load_before']}→{m['load_after']} | {det} |")
        if "answers" in block:
            lines += ["", f"answers through ask: {json.dumps(block['answers'])}"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
