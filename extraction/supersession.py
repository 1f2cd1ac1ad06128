"""Inferred supersession: does a newer claim restate an older claim's fact with another value?

Without a `claim_key` nobody told the store that two claims are versions of one fact, so the
worker has to infer it — and a wrong inference silently hides a true claim, while a missed one
only leaves a stale claim visible next to the new one. So this module is built for precision:
a newer claim supersedes an older one only when *every* test below passes, and each rejection
names the test that failed (the benchmark and the tests read those reasons).

1. **Same topic**: embedding cosine ≥ `min_similarity` (the caller found the pair that way).
2. **Same subject, by entities**: they share at least one MENTIONS entity, and no entity either
   claim names is missing from the other's text. Overlap alone is not enough: "the Acme–Keystone
   reseller contract" and "the Cobalt–Keystone reseller contract" share Keystone and differ in
   the subject. An entity whose name merely extends another mentioned entity ("Fatima
   Nakamura's" from a possessive, "Warfarin for Priya Osei" from a capitalised sentence start)
   counts as that entity, so extraction noise neither hides a shared subject nor blocks a true
   pair (its extra codes and names are still checked in 3). A plain hyphenated word one claim
   happens to use ("rate-limited") may be missing from the other, as long as nothing stands in
   its place there.
3. **Same subject, by identifiers and names**: every code (a token with a digit: Q1, ward 3B,
   INC-1040, p99) and every capitalised name inside a sentence must occur in both claims — the
   entity extractor misses names joined by an en dash or written as a single word, this does not.
4. **A value or state conflict**: either the heuristic contradiction detector reports a value,
   state, negation or identifier signal (it fires on near-identical wordings), or — for
   paraphrases, which it deliberately damps — both claims state typed values (amounts,
   durations, sizes, dates, versions …) of exactly the same kinds and at least one kind cannot
   hold on both sides ("5 mg daily" vs "7.5 mg daily"; "at most 6 GiB" is compatible with 2 GiB,
   so it is no conflict). Different dates together with different values are two occasions,
   not an update, as in the heuristic.
5. **No substituted word**: two claims worded alike (content words aligned by difflib, ratio ≥
   `SAME_WORDING`) must not swap one word for another in place ("reseller" → "distribution",
   "warfarin" → "metformin"): that is the mark of a sibling fact (same shape, other subject or
   attribute), which similarity alone cannot see. Allowed swaps: the value itself when the
   heuristic named it (`db-7` → `db-9`), and one reporting verb for another ("guides" →
   "revised"). Between two different wordings an aligned pair is mostly template noise, so
   there the similarity bar (via confidence) has to do the work — the known weak spot: two
   drugs of one patient in two different wordings can pass, and only `plan`'s one-for-one rule
   (the real predecessor is the closer match) keeps the sibling visible.

Confidence = cosine × conflict strength (the heuristic's signal strength, or 0.9 for a clean
typed value conflict, the heuristic's own weight for a value signal), and it must reach
`min_confidence`. Direction is the caller's business: `newer` is the later write.

Pure: no Neo4j, no model. Entities come in as their stored names, similarity as a number.

**Two offline judges.** `judge` above is the entity judge (tests 1–5). `judge_frames` reads the
two texts themselves (extraction/frames.py): the shared frame of content words, names and codes,
and the one value that differs — a date compared as a date, money, a quantity in its unit, a
version, a state, a name in the object position — with the same guards against another subject
(a name or code on one side only, a word swapped in place, another attribute of the same
subject, a restatement of the same value). It needs no extracted entity and no cosine above 0.7,
so it reaches the paraphrased updates the entity judge cannot. `judge_offline` (what the worker
runs under `inferred_judge: "offline"`) tries the frame judge first and falls back to the entity
judge, so nothing the entity judge found before is lost.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from palimpsest.extraction import frames
from palimpsest.extraction.contradiction.heuristic import HeuristicDetector, Parsed, Value, parse, side_of_pivot
from palimpsest.extraction.entities.normalize import canonical, is_value, tokens, word_list

# The heuristic's signals that describe "the same thing now has another value or state". Every
# one of them is already gated by the heuristic's own subject-overlap rules.
CONFLICT_SIGNALS = frozenset({"value", "state", "identifier", "negation"})
TYPED_VALUE_STRENGTH = 0.9
SAME_WORDING = 0.6  # difflib ratio of the content words above which two claims share one wording
# Verbs that report or update a value (as the heuristic stems them): swapping one for another
# rewords the statement, it does not change what it is about.
UPDATE_VERBS = frozenset(word_list("""
    adjust adjusted amend amended change changed confirm confirmed cut estimate estimated expect expected
    forecast guide guided keep kept lower lowered move moved plan planned project projected put raise raised
    receive received record recorded report reported revise revised say said see set state stated take took
    update updated
"""))

_NAME_RE = re.compile(r"[A-Z][\w'’&]*")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:;]\s+|\n\s*|[\"“(]\s*)$")
_WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})


@dataclass(frozen=True)
class ClaimView:
    """What the judge needs of a claim: its text and the names of the entities it MENTIONS.

    Names as stored on the Entity (`Entity.name`, one per entity), not canonical keys: their case
    tells a proper name ("Ravi Alvarez", "Q1") from a hyphenated common word ("rate-limited").
    """

    id: str
    content: str
    entities: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Judgement:
    """The verdict on one (newer, older) pair; `reason` says why, whichever way it went."""

    supersedes: bool
    confidence: float
    kind: str          # value | state | identifier | negation | name | code, or the failed test when rejected
    reason: str
    old_value: str = ""   # the frame judge's normalised old value (restatements of it go with it)


@dataclass(frozen=True)
class Candidate:
    """An older claim the caller found for a subject, with their cosine in [-1, 1]."""

    claim: ClaimView
    similarity: float


@dataclass(frozen=True)
class Inferred:
    """A decided supersession: `newer` supersedes `older` at the subject's `revision`."""

    newer_id: str
    older_id: str
    revision: int
    confidence: float
    kind: str
    reason: str


@dataclass
class PlanReport:
    """Counts of what the planner looked at and why pairs were rejected (for pass reports)."""

    pairs: int = 0
    inferred: int = 0
    rejected: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Text:
    parsed: Parsed
    joined: str                    # " tok tok … ": normalised tokens of the whole text, values included
    marks: frozenset[str]          # codes ("db 9", "q1") and in-sentence names, outside the values

    def names(self, phrase: str) -> bool:
        """Does the text contain this canonical phrase as a run of tokens?"""
        return f" {phrase} " in self.joined


def _reject(kind: str, reason: str) -> Judgement:
    return Judgement(False, 0.0, kind, reason[:300])


def _analyse(text: str) -> _Text:
    parsed = parse(text)
    joined = " " + " ".join(t for t in tokens(text) if t != "s") + " "   # possessive "'s" is no word
    value_words = {t for v in parsed.values for t in tokens(v.text)}
    marks: set[str] = set()
    for token in parsed.content:                     # values are already blanked out of `content`
        if any(ch.isdigit() for ch in token) and not is_value(token):
            marks.add(canonical(token))
    for m in _NAME_RE.finditer(text):
        if _SENTENCE_START_RE.search(text[: m.start()]):
            continue                                  # "Medication review: …" — capitalised by position only
        for t in tokens(m.group(0)):
            if t != "s" and t not in value_words and t not in _WEEKDAYS and not is_value(t):
                marks.add(t)
    return _Text(parsed, joined, frozenset(marks))


def _core_entities(own: frozenset[str], union: Iterable[str]) -> set[str]:
    """Each entity name reduced to the shortest other mentioned entity it contains as a token run."""
    pool = sorted(set(union), key=lambda e: (len(e.split()), e))
    out: set[str] = set()
    for name in own:
        padded = f" {name} "
        core = next((e for e in pool if e != name and f" {e} " in padded), name)
        out.add(core)
    return out


def _named_in(name: str, text: _Text, allowed: frozenset[str]) -> bool:
    bare = " ".join(t for t in name.split() if t != "s")
    return name in allowed or bare in allowed or text.names(bare)


def _counted(own: Parsed, other: Parsed) -> list[Value]:
    """`own` values, with a bare number ("replica count for X: 2") read as a count of the noun the
    other claim counts ("12 replicas") when `own` names that noun too."""
    nouns = {v.kind for v in other.values if v.kind.startswith("q:") and v.kind != "q:number"}
    words = set(own.content)
    out: list[Value] = []
    for v in own.values:
        match = sorted(k for k in nouns if k[2:] in words)
        out.append(replace(v, kind=match[0]) if v.kind == "q:number" and len(match) == 1 else v)
    return out


def _conflict(a: _Text, b: _Text, detector: HeuristicDetector) -> tuple[str, float, str, frozenset[str]] | None:
    """(kind, strength, detail, value words allowed to differ), or None when nothing conflicts."""
    signals = [s for s in detector.signals(a.parsed, b.parsed)
               if s.name in CONFLICT_SIGNALS and s.strength >= detector.threshold]
    if signals:
        best = max(signals, key=lambda s: (s.strength, s.name))
        allowed: frozenset[str] = frozenset()
        if best.name == "identifier":
            only = set(a.parsed.content) ^ set(b.parsed.content)
            allowed = frozenset(w for w in only
                                if "value" in (side_of_pivot(a.parsed, w), side_of_pivot(b.parsed, w)))
        return best.name, min(1.0, best.strength), best.detail, allowed
    # Paraphrase path: typed values of identical kinds, at least one kind incompatible.
    values_a, values_b = _counted(a.parsed, b.parsed), _counted(b.parsed, a.parsed)
    kinds_a = {v.kind for v in values_a}
    kinds_b = {v.kind for v in values_b}
    if not kinds_a or kinds_a != kinds_b:
        return None
    clashing = sorted(k for k in kinds_a
                      if not any(x.compatible(y) for x in values_a if x.kind == k for y in values_b if y.kind == k))
    if not clashing:
        return None
    dated = {"date", "time"}
    if any(k not in dated for k in clashing) and any(k in dated for k in clashing):
        return None  # another reading on another day: two occasions, not an update
    if all(k in dated for k in clashing) and any(k not in dated for k in kinds_a):
        return None  # the same reading re-dated ("on D1 … 1.09" / "on D2 … 1.09") or a dated event
    va = next(v for v in values_a if v.kind == clashing[0])
    vb = next(v for v in values_b if v.kind == clashing[0])
    return "value", TYPED_VALUE_STRENGTH, f"{clashing[0]} {va.text.strip()!r} vs {vb.text.strip()!r}", frozenset()


def judge(newer: ClaimView, older: ClaimView, similarity: float, *, min_similarity: float,
          min_confidence: float, heuristic_threshold: float = 0.6) -> Judgement:
    """Does `newer` supersede `older`? Every test of the module docstring must pass."""
    if similarity < min_similarity:
        return _reject("similarity", f"cosine {similarity:.3f} < {min_similarity:.3f}")
    keys = {name: canonical(name) for name in newer.entities | older.entities}
    strong = {keys[n] for n in keys if any(ch.isupper() or ch.isdigit() for ch in n)}
    union = set(keys.values())
    core_a = _core_entities(frozenset(keys[n] for n in newer.entities), union)
    core_b = _core_entities(frozenset(keys[n] for n in older.entities), union)
    shared = core_a & core_b
    if not shared:
        return _reject("entities", "no shared entity")
    a, b = _analyse(newer.content), _analyse(older.content)
    conflict = _conflict(a, b, HeuristicDetector(heuristic_threshold))
    # The values the heuristic saw swapped ("db-7" → "db-9") may differ; nothing else may.
    allowed = frozenset(canonical(w) for w in conflict[3]) if conflict else frozenset()
    missing_a = sorted(n for n in core_a - core_b if not _named_in(n, b, allowed))
    missing_b = sorted(n for n in core_b - core_a if not _named_in(n, a, allowed))
    for name in missing_a + missing_b:
        # An entity one claim names and the other does not is a different subject, unless it is a
        # plain hyphenated word the other claim just did not use ("rate-limited", "auto-renews")
        # and nothing stands in its place on the other side.
        if name in strong or (missing_a and missing_b):
            return _reject("entities", f"entity {name!r} is named by one claim only")
    for mark in sorted(a.marks ^ b.marks):
        if mark in allowed:
            continue
        if not (b if mark in a.marks else a).names(mark):
            return _reject("identifiers", f"{mark!r} appears in one claim only")

    if conflict is None:
        return _reject("conflict", "no value or state conflict")
    kind, strength, detail, swapped = conflict

    matcher = difflib.SequenceMatcher(None, a.parsed.content, b.parsed.content, autojunk=False)
    # Only near-identical wordings can swap a word "in place"; between two templates an aligned
    # pair is usually two verbs of the templates ("receives" / "should now take").
    opcodes = matcher.get_opcodes() if matcher.ratio() >= SAME_WORDING else []
    for op, i1, i2, j1, j2 in opcodes:
        if op != "replace" or i2 - i1 != 1 or j2 - j1 != 1:
            continue
        wa, wb = a.parsed.content[i1], b.parsed.content[j1]
        if (wa in swapped and wb in swapped) or wa in b.parsed.content or wb in a.parsed.content:
            continue  # the value itself, or an alignment artefact (the word is on both sides, elsewhere)
        if wa in UPDATE_VERBS and wb in UPDATE_VERBS:
            continue
        return _reject("substitution", f"{wb!r} → {wa!r} in place: a sibling fact, not a new value")

    confidence = round(max(0.0, similarity) * strength, 4)
    if confidence < min_confidence:
        return _reject("confidence", f"confidence {confidence:.3f} < {min_confidence:.3f} ({kind}: {detail})")
    shared_text = ", ".join(sorted(shared)[:3])
    return Judgement(True, confidence, kind, f"{kind} changed: {detail}; same subject ({shared_text})"[:300])


_FRAMES: dict[str, frames.Frame] = {}


def forget_frames() -> None:
    """Forget every analysed text (an erasure: a frame holds the erased claim's words)."""
    _FRAMES.clear()


def frame_of(text: str) -> frames.Frame:
    """The analysed frame of a text, cached (a worker judges one claim against many)."""
    found = _FRAMES.get(text)
    if found is None:
        if len(_FRAMES) > 20_000:
            _FRAMES.clear()
        found = _FRAMES[text] = frames.analyse(text)
    return found


def judge_frames(newer: ClaimView, older: ClaimView, similarity: float, *, min_similarity: float,
                 min_confidence: float) -> Judgement:
    """The frame judge: same frame, one value changed, no other subject (extraction/frames.py)."""
    if similarity < min_similarity:
        return _reject("similarity", f"cosine {similarity:.3f} < {min_similarity:.3f}")
    c = frames.compare(frame_of(newer.content), frame_of(older.content))
    if not c.supersedes:
        return _reject(c.slot, c.detail)
    if c.confidence < min_confidence:
        return _reject("confidence", f"confidence {c.confidence:.3f} < {min_confidence:.3f} ({c.detail})")
    return Judgement(True, c.confidence, c.slot, f"{c.slot} changed: {c.detail}"[:300], c.old_value)


def judge_offline(newer: ClaimView, older: ClaimView, similarity: float, *, min_similarity: float,
                  min_confidence: float, frame_min_similarity: float, heuristic_threshold: float = 0.6) -> Judgement:
    """The frame judge, then the entity judge: the first that finds a supersession decides; when
    neither does, the frame judge's rejection is the reason reported."""
    by_frames = judge_frames(newer, older, similarity, min_similarity=frame_min_similarity,
                             min_confidence=min_confidence)
    if by_frames.supersedes:
        return by_frames
    if by_frames.kind in VETO:
        return by_frames   # another subject, the same value again, another occasion: the entity judge may not overrule
    by_entities = judge(newer, older, similarity, min_similarity=min_similarity, min_confidence=min_confidence,
                        heuristic_threshold=heuristic_threshold)
    return by_entities if by_entities.supersedes else by_frames


Judge = Callable[[ClaimView, ClaimView, float], Judgement]
# Frame-judge rejections that are evidence against the pair, not just a failure to see the update.
VETO = frozenset({"subject", "restatement", "occasion", "substitution"})


def plan(subjects: Sequence[tuple[ClaimView, int]], candidates: Mapping[str, Sequence[Candidate]], *,
         min_similarity: float, min_confidence: float, heuristic_threshold: float = 0.6,
         report: PlanReport | None = None, judge_fn: Judge | None = None) -> list[Inferred]:
    """Decide the supersessions of one worker batch.

    `subjects` are (claim, revision) in write order; `candidates[subject id]` are the older claims
    current at that revision, best cosine first.

    One statement replaces one statement: of the candidates that pass, a subject supersedes only
    the most confident (then the most similar, then the smallest id). When a sibling fact (same
    patient, another drug) slips through the judge next to the real predecessor, the
    predecessor is the closer match and wins, so the sibling stays visible; the price is that
    two stale duplicates of one fact lose only one of them to a new value.

    A claim superseded earlier in the same plan is no longer a candidate, so a chain v1 ← v2 ← v3
    written in one batch becomes two links, not v3 → v1 as well — the same outcome as a worker
    that kept up and saw the versions one by one.

    The exception to one-for-one is a restatement: when another candidate that passes states the
    same old value as the chosen one ("PO-7781 is expected on March 15" / "PO-7781 is still due on
    15 March"), or one that failed only for want of seeing the update (not for evidence against
    it) is read by the frame judge as the chosen one said again, the new value replaces both, or
    the restatement would stay visible as a stale duplicate.

    `judge_fn(newer, older, cosine)` replaces the entity judge (the worker passes `judge_offline`).
    """
    rep = report if report is not None else PlanReport()
    gone: set[str] = set()
    out: list[Inferred] = []
    for subject, revision in subjects:
        passed: list[tuple[Candidate, Judgement]] = []
        failed: list[tuple[Candidate, Judgement]] = []
        for cand in candidates.get(subject.id, ()):
            if cand.claim.id in gone or cand.claim.id == subject.id:
                continue
            rep.pairs += 1
            verdict = (judge_fn(subject, cand.claim, cand.similarity) if judge_fn is not None else
                       judge(subject, cand.claim, cand.similarity, min_similarity=min_similarity,
                             min_confidence=min_confidence, heuristic_threshold=heuristic_threshold))
            if verdict.supersedes:
                passed.append((cand, verdict))
            else:
                failed.append((cand, verdict))
                rep.rejected[verdict.kind] = rep.rejected.get(verdict.kind, 0) + 1
        if not passed:
            continue
        passed.sort(key=lambda cv: (-cv[1].confidence, -cv[0].similarity, cv[0].claim.id))
        (best, verdict), *others = passed
        twins = [(c, v) for c, v in others if verdict.old_value and v.old_value == verdict.old_value]
        if len(others) > len(twins):
            rep.rejected["not_best"] = rep.rejected.get("not_best", 0) + len(others) - len(twins)
        if verdict.old_value:
            # A restatement of the replaced claim goes with it even when its own wording kept the judge
            # from seeing the update — unless the judge found evidence against the pair.
            twins += [(c, replace(verdict, reason=f"restates the claim superseded with it; {verdict.reason}"[:300]))
                      for c, v in failed if v.kind not in VETO and c.claim.id not in gone
                      and frames.compare(frame_of(c.claim.content), frame_of(best.claim.content)).slot
                      == "restatement"]
        for cand, v in [(best, verdict), *twins]:
            gone.add(cand.claim.id)
            rep.inferred += 1
            out.append(Inferred(subject.id, cand.claim.id, revision, v.confidence, v.kind, v.reason))
    return out


__all__ = ["Candidate", "ClaimView", "Inferred", "Judge", "Judgement", "PlanReport", "frame_of", "judge",
           "judge_frames", "judge_offline", "plan"]
