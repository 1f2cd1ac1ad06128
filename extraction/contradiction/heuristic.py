"""A deterministic, model-free contradiction detector for short factual claims.

Agent memories are mostly "<subject> <is/runs/costs> <value or state>". Most contradictions
between them are therefore one of three surface shapes, which this module looks for:

* **polarity** — one side negates what the other asserts ("is not", "never", "no longer", "isn't");
* **state flips** — an antonym or exclusive-state pair ("approved"/"rejected", "healthy"/"down");
* **value conflicts** — the same attribute with different numbers, dates, amounts, versions or
  identifiers ("latency of checkout-api is 800 ms" / "… is 120 ms"; "writes to db-7" / "db-9").

Each signal only counts when the *rest* of the two sentences is about the same thing, measured
as overlap of the remaining content words. The hard cases are look-alikes, so the overlap is
deliberately strict: a word substituted on both sides (checkout-api → payments-api,
penicillin → latex, clause 12.3 → 14.1) means another subject and damps every signal; values
are compared after unit normalisation (1.5 s = 1500 ms, $2 million = $2,000,000) and with
bounds ("at least 3" is compatible with 5); and when both sides carry different dates as well as
a different state or value, they describe different occasions, not a conflict.

It knows no world facts, so "discharged home" vs "remains in the ICU" is invisible to it; that
is what the NLI and LLM detectors are for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from palimpsest.extraction.contradiction.types import TextPair, Verdict, label_for

METHOD = "heuristic"

# ----------------------------------------------------------------------------- vocabulary
NEGATORS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "nor", "cannot"})
_NEG_PHRASES = (
    (re.compile(r"\bno longer\b"), " not "), (re.compile(r"\bnot any(?:more| longer)\b"), " not "),
    (re.compile(r"\b(?:can't|cannot|can not)\b"), " can not "), (re.compile(r"\bwon't\b"), " will not "),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not "), (re.compile(r"\bnot only\b"), " "),
    (re.compile(r"\bno one\b"), " nobody "),
)

# Exclusive states: either side may hold either word. Kept to pairs that really exclude each
# other for one subject at one time; "up"/"down" also covers prices ("up 5%"), which is fine
# because a value of the same attribute moving both ways at once is itself a conflict.
ANTONYMS: tuple[tuple[str, str], ...] = (
    ("approved", "rejected"), ("approved", "denied"), ("accepted", "rejected"), ("granted", "denied"),
    ("healthy", "down"), ("healthy", "degraded"), ("healthy", "unhealthy"), ("healthy", "failing"), ("up", "down"),
    ("online", "offline"), ("available", "unavailable"), ("reachable", "unreachable"), ("operational", "down"),
    ("active", "inactive"), ("active", "discontinued"), ("active", "suspended"), ("active", "expired"),
    ("enabled", "disabled"), ("on", "off"), ("open", "closed"), ("opened", "closed"), ("locked", "unlocked"),
    ("passed", "failed"), ("passing", "failing"), ("succeeded", "failed"), ("success", "failure"),
    ("allowed", "prohibited"), ("allowed", "forbidden"), ("permitted", "prohibited"), ("permits", "prohibits"),
    ("permit", "prohibit"), ("allows", "prohibits"), ("allows", "forbids"), ("permitted", "forbidden"),
    ("required", "optional"), ("mandatory", "optional"),
    ("increased", "decreased"), ("increase", "decrease"), ("increases", "decreases"), ("rose", "fell"),
    ("raised", "lowered"), ("higher", "lower"), ("more", "fewer"), ("above", "below"), ("gain", "loss"),
    ("profit", "loss"), ("profitable", "unprofitable"), ("surplus", "deficit"),
    ("paid", "unpaid"), ("paid", "outstanding"), ("settled", "outstanding"), ("signed", "unsigned"),
    ("valid", "invalid"), ("compliant", "noncompliant"), ("compliant", "non-compliant"),
    ("exclusive", "non-exclusive"), ("exclusive", "nonexclusive"), ("binding", "non-binding"),
    ("positive", "negative"), ("present", "absent"), ("normal", "abnormal"), ("stable", "unstable"),
    ("started", "stopped"), ("started", "discontinued"), ("continued", "discontinued"), ("resumed", "paused"),
    ("admitted", "discharged"), ("alive", "dead"), ("alive", "deceased"), ("benign", "malignant"),
    ("confirmed", "ruled"), ("confirmed", "unconfirmed"), ("resolved", "unresolved"), ("resolved", "ongoing"),
    ("fixed", "broken"), ("complete", "incomplete"), ("completed", "pending"), ("finished", "pending"),
    ("true", "false"), ("yes", "no"), ("included", "excluded"), ("public", "private"), ("internal", "external"),
    ("encrypted", "unencrypted"), ("encrypted", "plaintext"), ("supported", "unsupported"),
    ("deprecated", "supported"), ("full", "empty"), ("empty", "full"), ("near", "far"), ("inside", "outside"),
    ("before", "after"), ("early", "late"), ("win", "lose"), ("won", "lost"), ("with", "without"),
    ("primary", "secondary"), ("primary", "replica"), ("leader", "follower"), ("licensor", "licensee"),
    ("buyer", "seller"), ("debit", "credit"), ("long", "short"), ("bullish", "bearish"), ("buy", "sell"),
    ("male", "female"), ("asleep", "awake"), ("sitting", "standing"), ("wet", "dry"),
)
_ANTONYM_OF: dict[str, frozenset[str]] = {}
for _a, _b in ANTONYMS:
    _ANTONYM_OF[_a] = _ANTONYM_OF.get(_a, frozenset()) | {_b}
    _ANTONYM_OF[_b] = _ANTONYM_OF.get(_b, frozenset()) | {_a}



def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _words(
    "a an the this that these those it its of for to in on at by from as and or but is are was were be been being "
    "has have had do does did will would shall should can could may might must there here which who whom whose "
    "what when where while also currently current now still again yet already just only all any each every some "
    "our their his her my your we they he she i you me us them than then so such very about into onto over "
    "per via after since until within s"
)

# Verbs that split a claim into "subject" (left) and "value" (right). The first one found is the pivot.
PIVOTS = _words(
    "is are was were has have had runs run uses use writes reads points listens equals costs takes take requires "
    "require remains became becomes sits reported reports returns shows stands weighs grants caps expires renews "
    "survive survives set sets pinned moved scheduled due governed owned signed booked served serving lives"
)

# A number right after one of these names a thing ("build 512", "clause 12.3"), it is no value.
ID_NOUNS = _words(
    "build builds ticket tickets incident incidents case cases order orders invoice invoices pr issue issues job "
    "jobs step steps item items room rooms bed beds ward floor clause clauses section sections article articles "
    "rule rules patient patients account accounts report reports batch run sprint episode chapter page table "
    "figure fig appendix schedule exhibit paragraph line lines node nodes shard shards partition partitions "
    "cluster pod pods server servers host hosts release releases change request version"
)

# ----------------------------------------------------------------------------- values
_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}
_MONTHS.update({k[:3]: v for k, v in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
        r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")

_UNITS: dict[str, tuple[str, float]] = {}
for _dim, _table in {
    "duration": {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
                 "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0,
                 "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0,
                 "hours": 3600.0, "day": 86400.0, "days": 86400.0, "week": 604800.0, "weeks": 604800.0,
                 "month": 2629800.0, "months": 2629800.0, "year": 31557600.0, "years": 31557600.0},
    "bytes": {"b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 1024.0, "mib": 1024.0**2,
              "gib": 1024.0**3, "tib": 1024.0**4},
    "mass": {"mcg": 1e-3, "µg": 1e-3, "ug": 1e-3, "mg": 1.0, "g": 1e3, "gram": 1e3, "grams": 1e3, "kg": 1e6,
             "kilogram": 1e6, "kilograms": 1e6, "lb": 453592.0, "lbs": 453592.0},
    "volume": {"ml": 1.0, "l": 1e3, "litre": 1e3, "liter": 1e3, "litres": 1e3, "liters": 1e3},
    "percent": {"%": 1.0, "percent": 1.0, "pct": 1.0, "bps": 0.01},
    "temperature": {"°c": 1.0, "celsius": 1.0},
}.items():
    for _unit, _factor in _table.items():
        _UNITS[_unit] = (_dim, _factor)
_OTHER_UNITS = ("mmol/l", "mg/dl", "g/dl", "mmhg", "bpm", "iu", "units", "rps", "qps", "rpm", "req/s", "cores",
                "vcpus", "vcpu", "replicas", "instances", "nodes", "pods", "users", "seats", "licenses",
                "licences", "employees", "customers", "connections", "errors", "retries", "shards", "partitions",
                "tickets", "items", "orders", "transactions", "hz", "mhz", "ghz", "ghz", "x")
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mm": 1e6, "million": 1e6, "mn": 1e6, "bn": 1e9, "b": 1e9,
          "billion": 1e9}
_CURRENCY = {"$": "usd", "usd": "usd", "dollars": "usd", "€": "eur", "eur": "eur", "euros": "eur", "£": "gbp",
             "gbp": "gbp", "pounds": "gbp", "¥": "jpy", "jpy": "jpy", "chf": "chf", "cad": "cad", "aud": "aud"}
_LOWER = (r"(?:at least|no less than|not less than|more than|greater than|over|above|exceeds?|minimum of|"
          r"min\.?|>=|>|≥)")
_UPPER = (r"(?:at most|no more than|not more than|less than|fewer than|under|below|up to|maximum of|max\.?|"
          r"<=|<|≤|within)")
_APPROX = r"(?:about|around|approximately|approx\.?|roughly|nearly|almost|~|circa|c\.)"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("datetime", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[t ](\d{2}):(\d{2}))?\b")),
    ("mdy", re.compile(rf"\b({_MON})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")),
    ("dmy", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MON})\s+(\d{{4}})\b")),
    ("my", re.compile(rf"\b({_MON})\s+(\d{{4}})\b")),
    ("quarter", re.compile(r"\bq([1-4])\s*(?:fy)?\s*(\d{4})\b")),
    ("fy", re.compile(r"\bfy\s?(\d{4}|\d{2})\b")),
    ("time", re.compile(r"\b(\d{1,2}):(\d{2})\s*(am|pm)?(?:\s*(utc|gmt|z))?\b")),
    ("version", re.compile(r"(?<![\w.-])v(\d+(?:\.\d+)*)\b|(?<![\w.-])(\d+\.\d+\.\d+(?:\.\d+)*)(?![\w.-])"
                           r"|\b(?:version|release|postgres|postgresql|python|java|node|neo4j|kubernetes|k8s|"
                           r"mysql|redis|kafka|ubuntu|debian|go|rust|php|ruby)\s+(\d+(?:\.\d+)+|\d+)\b")),
    ("ratio", re.compile(r"(?<![\w/.])(\d{2,3})/(\d{2,3})(?![\w/])")),
    ("money", re.compile(rf"([$€£¥])\s?({_NUM})\s?(k|m|mm|mn|bn|b|thousand|million|billion)?\b"
                         rf"|\b({_NUM})\s?(k|m|mm|mn|bn|thousand|million|billion)?\s?(usd|eur|gbp|chf|cad|aud|jpy|"
                         r"dollars|euros|pounds)\b")),
    ("quantity", re.compile(rf"(?<![\w.-])({_NUM})\s?(%|°c|[a-zµ/]+)?(?![\w-])")),
)


@dataclass(frozen=True)
class Value:
    """A typed value found in a claim: `kind` says what may be compared with what."""

    kind: str
    low: float
    high: float
    text: str

    def compatible(self, other: Value) -> bool:
        """Overlapping intervals: exact values must match (to rounding), bounds must admit the other."""
        # Measured quantities go through float unit conversion (1.2 s → 1200.0000000000002 ms), so
        # they compare with a relative tolerance; dates and versions are exact encodings.
        measured = self.kind.startswith(("q:", "money"))
        eps = 1e-9 * max(1.0, abs(self.low), abs(other.low)) if measured else 1e-6
        return self.low <= other.high + eps and other.low <= self.high + eps


@dataclass
class Parsed:
    text: str
    tokens: list[str]
    content: list[str]
    negated: bool
    values: list[Value] = field(default_factory=list)
    pivot: int | None = None  # index into `tokens`


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _year(text: str) -> int:
    y = int(text)
    return 2000 + y if y < 100 else y


def _day_ordinal(y: int, m: int, d: int) -> float | None:
    try:
        return float(date(y, m, d).toordinal())
    except ValueError:
        return None


def _month_span(y: int, m: int) -> tuple[float, float]:
    start = date(y, m, 1).toordinal()
    end = date(y + (m == 12), m % 12 + 1, 1).toordinal() - 1
    return float(start), float(end)


def _bound(prefix: str, lo: float, hi: float) -> tuple[float, float]:
    """Apply a comparator written just before the value ("at least 3" → [3, ∞))."""
    tail = " " + prefix[-24:]
    # The comparator must be a word of its own: "metformin 500 mg" is no "min. 500 mg".
    if re.search(r"(?<![a-z])" + _LOWER + r"\s*$", tail):
        return lo, float("inf")
    if re.search(r"(?<![a-z])" + _UPPER + r"\s*$", tail):
        return float("-inf"), hi
    if re.search(r"(?<![a-z])" + _APPROX + r"\s*$", tail):
        slack = 0.1 * max(abs(lo), abs(hi))
        return lo - slack, hi + slack
    return lo, hi


def _extract_values(text: str) -> tuple[str, list[Value]]:
    """Find values, most specific pattern first, and blank them out of the text."""
    values: list[Value] = []
    chars = list(text)

    def taken(start: int, end: int) -> bool:
        return any(c == "\0" for c in chars[start:end])

    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if taken(m.start(), m.end()):
                continue
            found = _value(kind, m, text)
            if found is None:
                continue
            values.append(found)
            chars[m.start():m.end()] = ["\0"] * (m.end() - m.start())
    return "".join(" " if c == "\0" else c for c in chars), values


def _value(kind: str, m: re.Match[str], text: str) -> Value | None:
    prefix = text[: m.start()]
    raw = m.group(0)
    if kind == "datetime":
        day = _day_ordinal(int(m[1]), int(m[2]), int(m[3]))
        if day is None:
            return None
        if m[4] is not None:
            moment = day + (int(m[4]) * 60 + int(m[5])) / 1440
            return Value("date", moment, moment, raw)
        return Value("date", day, day + 0.9999, raw)
    if kind in {"mdy", "dmy"}:
        mon, d = (m[1], m[2]) if kind == "mdy" else (m[2], m[1])
        day = _day_ordinal(int(m[3]), _MONTHS[mon.rstrip(".")[:3]], int(d))
        return None if day is None else Value("date", day, day + 0.9999, raw)
    if kind == "my":
        lo, hi = _month_span(int(m[2]), _MONTHS[m[1].rstrip(".")[:3]])
        return Value("date", lo, hi + 0.9999, raw)
    if kind == "quarter":
        q, y = int(m[1]), int(m[2])
        lo, _ = _month_span(y, 3 * q - 2)
        _, hi = _month_span(y, 3 * q)
        return Value("date", lo, hi + 0.9999, raw)
    if kind == "fy":
        y = _year(m[1])
        return Value("date", float(date(y, 1, 1).toordinal()), float(date(y, 12, 31).toordinal()) + 0.9999, raw)
    if kind == "time":
        h, mi = int(m[1]), int(m[2])
        if m[3] == "pm" and h < 12:
            h += 12
        if h > 23 or mi > 59:
            return None
        return Value("time", h * 60 + mi, h * 60 + mi, raw)
    if kind == "version":
        ver = next(g for g in m.groups() if g is not None)
        parts = [int(p) for p in ver.split(".")]
        # Encode so that 16.2 == 16.2.0 and 2.14 sorts below 2.15; a missing part is a range.
        key = sum(p * 1000.0 ** (3 - i) for i, p in enumerate(parts[:4]))
        span = 1000.0 ** (4 - min(len(parts), 4)) - 1
        return Value("version", key, key + span, raw)
    if kind == "ratio":
        a, b = int(m[1]), int(m[2])
        return Value("ratio", a * 1000 + b, a * 1000 + b, raw)
    if kind == "money":
        sym, amount, scale = (m[1], m[2], m[3]) if m[1] else (m[6], m[4], m[5])
        v = _num(amount) * _SCALE.get((scale or "").lower(), 1.0)
        lo, hi = _bound(prefix, v, v)
        return Value(f"money:{_CURRENCY.get(sym.lower(), sym)}", lo, hi, raw)
    # plain quantity, possibly with a unit
    number, unit = m[1], (m[2] or "").lower()
    before = re.findall(r"[a-z#]+", prefix[-16:])
    if unit not in _UNITS and unit not in _OTHER_UNITS:
        unit = ""
    if not unit and (prefix.rstrip().endswith("#") or (before and before[-1] in ID_NOUNS)):
        return None  # "build 512": an identifier, stays in the text as a subject word
    if not unit and re.fullmatch(r"(19|20)\d\d", number):
        y = int(number)
        return Value("date", float(date(y, 1, 1).toordinal()), float(date(y, 12, 31).toordinal()) + 0.9999, raw)
    v = _num(number)
    if unit in _UNITS:
        dim, factor = _UNITS[unit]
        v *= factor
        kind_name = f"q:{dim}"
    else:
        # A unit-less number counts what follows it ("6 replicas"); key on that noun.
        after = re.match(r"\s*([a-z][a-z-]*)", text[m.end():])
        noun = unit or (after[1] if after else "")
        kind_name = f"q:{_stem(noun)}" if noun else "q:number"
    lo, hi = _bound(prefix, v, v)
    return Value(kind_name, lo, hi, raw)


_TOKEN_RE = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?(?:[-_./:][a-z0-9]+)*")


def _stem(token: str) -> str:
    """A light, predictable fold: possessives and plural -s only (no dictionary, no surprises)."""
    token = re.sub(r"['’]s$", "", token)
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")) and token[-2] != "'":
        token = token[:-1]
    return token


def parse(text: str) -> Parsed:
    low = " " + text.lower().replace("’", "'") + " "
    for pattern, repl in _NEG_PHRASES:
        low = pattern.sub(repl, low)
    blanked, values = _extract_values(low)
    raw = _TOKEN_RE.findall(blanked)
    # Stopwords are dropped before stemming, or "does" would fold into "doe".
    tokens = [t if t in STOPWORDS else _stem(t) for t in raw]
    negations = sum(t in NEGATORS for t in tokens)
    # The pivot is matched on the word as written: "writes" is a verb, "report" (stem of "reports") is not.
    pivot = next((i for i, t in enumerate(raw) if t in PIVOTS), None)
    content = [t for t in tokens if t not in STOPWORDS and t not in NEGATORS]
    return Parsed(text, tokens, content, negations % 2 == 1, values, pivot)


def side_of_pivot(p: Parsed, word: str) -> str:
    """'subject' if the word comes before the pivot verb, 'value' after it, '?' without a pivot."""
    if p.pivot is None:
        return "?"
    idx = next((i for i, t in enumerate(p.tokens) if t == word), None)
    if idx is None:
        return "?"
    return "subject" if idx < p.pivot else "value"


@dataclass(frozen=True)
class _Overlap:
    score: float
    substituted: bool
    subject_substituted: bool


def _overlap(a: Parsed, b: Parsed, ignore: frozenset[str] = frozenset()) -> _Overlap:
    """How much the two claims talk about the same thing, once the signal words are set aside.

    Blend of Jaccard (penalises extra material) and coverage of the shorter side (so a refinement
    that adds detail still counts as "same subject"). A substitution — words only in A *and*
    words only in B — is reported separately: it is the mark of a different subject.
    """
    sa, sb = set(a.content) - ignore, set(b.content) - ignore
    if not sa or not sb:
        return _Overlap(0.0, False, False)
    common = sa & sb
    jac = len(common) / len(sa | sb)
    cov = len(common) / min(len(sa), len(sb))
    only_a, only_b = sa - sb, sb - sa
    substituted = bool(only_a) and bool(only_b)
    subject_sub = substituted and (
        any(side_of_pivot(a, w) == "subject" for w in only_a) or any(side_of_pivot(b, w) == "subject" for w in only_b)
    )
    return _Overlap(0.5 * (jac + cov), substituted, subject_sub)


def _identifierish(word: str) -> bool:
    return any(ch.isdigit() for ch in word) and any(ch.isalpha() for ch in word)


def _proper_names(text: str) -> set[str]:
    """Capitalised words not at the start of the sentence: names of people, places, firms."""
    words = re.findall(r"[A-Za-z][\w&.'-]*", text)
    return {_stem(w.lower()) for w in words[1:] if w[0].isupper()}


def _kind_name(kind: str) -> str:
    """A readable name for a value kind, for the verdict's reason."""
    if kind.startswith("money"):
        return "amount"
    if kind.startswith("q:"):
        dim = kind[2:]
        return dim if dim in {"duration", "bytes", "mass", "volume", "percent", "temperature"} else "quantity"
    return kind


@dataclass(frozen=True)
class Signal:
    name: str
    strength: float
    detail: str


class HeuristicDetector:
    """Negation, exclusive states and value conflicts, each gated by subject overlap (module doc)."""

    method = METHOD

    def __init__(self, threshold: float = 0.6) -> None:
        self.threshold = threshold

    def judge(self, pairs: Sequence[TextPair]) -> list[Verdict | None]:
        return [self.verdict(p.newer, p.older) for p in pairs]

    def verdict(self, a_text: str, b_text: str) -> Verdict:
        a, b = parse(a_text), parse(b_text)
        signals = self.signals(a, b)
        base = _overlap(a, b)
        if not signals:
            return Verdict(label_for(0.0, self.threshold, base.score >= 0.5), 0.0, METHOD,
                           f"no conflict cue; subject overlap {base.score:.2f}")
        best = max(signals, key=lambda s: (s.strength, s.name))
        score = round(min(1.0, max(0.0, best.strength)), 4)
        others = "; ".join(s.detail for s in signals if s is not best)
        reason = best.detail + (f" (also: {others})" if others else "")
        return Verdict(label_for(score, self.threshold, True), score, METHOD, reason[:300])

    def signals(self, a: Parsed, b: Parsed) -> list[Signal]:
        out: list[Signal] = []
        flips = self._antonym_flips(a, b)
        flip_words = frozenset(w for pair in flips for w in pair)
        occasions_differ = self._dates_differ(a, b)

        # Polarity: negation parity combined with antonym flips ("is not down" agrees with "is up").
        polarity_flip = a.negated != b.negated
        if len(flips) % 2 == 1:
            polarity_flip = not polarity_flip
        if polarity_flip:
            ov = _overlap(a, b, flip_words)
            strength = 0.95 * ov.score * (0.55 if ov.substituted else 1.0)
            if occasions_differ:
                strength *= 0.3
            if flips and a.negated == b.negated:
                name, detail = "state", f"exclusive states {flips[0][0]!r}/{flips[0][1]!r}"
            else:
                name, detail = "negation", "one side negates the other"
            out.append(Signal(name, strength, f"{detail}; subject overlap {ov.score:.2f}"))

        # Values of the same kind that cannot both hold.
        conflicts = self._value_conflicts(a, b)
        if conflicts:
            ov = _overlap(a, b)
            strength = 0.9 * ov.score * (0.3 if ov.substituted else 1.0)
            only_dates = all(k in {"date", "time"} for k, _, _ in conflicts)
            if occasions_differ and not only_dates:
                strength *= 0.3  # different days, different readings
            elif only_dates and self._shares_other_values(a, b):
                strength *= 0.3  # same reading on two dates ("rate on D1 was 1.09" / "on D2 was 1.09")
            kind, va, vb = conflicts[0]
            out.append(Signal("value", strength, f"{kind} differs: {va!r} vs {vb!r}; subject overlap {ov.score:.2f}"))

        # Identifier or name substituted in value position ("writes to db-7" / "db-9").
        sub = self._value_substitution(a, b)
        if sub is not None:
            wa, wb, strength = sub
            if occasions_differ:
                strength *= 0.3
            out.append(Signal("identifier", strength, f"value {wa!r} vs {wb!r} for the same subject"))
        return out

    @staticmethod
    def _antonym_flips(a: Parsed, b: Parsed) -> list[tuple[str, str]]:
        ta, tb = set(a.tokens), set(b.tokens)
        flips = []
        for w in sorted(ta - tb):
            for opposite in sorted(_ANTONYM_OF.get(w, frozenset())):
                if opposite in tb and opposite not in ta:
                    flips.append((w, opposite))
        return flips

    @staticmethod
    def _dates_differ(a: Parsed, b: Parsed) -> bool:
        da = [v for v in a.values if v.kind in {"date", "time"}]
        db = [v for v in b.values if v.kind in {"date", "time"}]
        if not da or not db:
            return False
        return not any(x.kind == y.kind and x.compatible(y) for x in da for y in db)

    @staticmethod
    def _shares_other_values(a: Parsed, b: Parsed) -> bool:
        """Both sides carry an equal non-date value: then a differing date marks the occasion, not the fact."""
        return any(x.kind == y.kind and x.kind not in {"date", "time"} and x.compatible(y)
                   for x in a.values for y in b.values)

    @staticmethod
    def _value_conflicts(a: Parsed, b: Parsed) -> list[tuple[str, str, str]]:
        out = []
        for kind in sorted({v.kind for v in a.values} & {v.kind for v in b.values}):
            va = [v for v in a.values if v.kind == kind]
            vb = [v for v in b.values if v.kind == kind]
            if not any(x.compatible(y) for x in va for y in vb):
                out.append((_kind_name(kind), va[0].text.strip(), vb[0].text.strip()))
        return out

    @staticmethod
    def _value_substitution(a: Parsed, b: Parsed) -> tuple[str, str, float] | None:
        """Exactly one word differs on each side, after the verb, and it names an id or a proper noun."""
        sa, sb = set(a.content), set(b.content)
        only_a, only_b = sa - sb, sb - sa
        if not only_a or not only_b or a.negated != b.negated:
            return None
        if any(side_of_pivot(a, w) != "value" for w in only_a) or any(side_of_pivot(b, w) != "value" for w in only_b):
            return None
        names_a, names_b = _proper_names(a.text), _proper_names(b.text)
        kinds_a = {"id" if _identifierish(w) else "name" if w in names_a else "word" for w in only_a}
        kinds_b = {"id" if _identifierish(w) else "name" if w in names_b else "word" for w in only_b}
        if "word" in kinds_a | kinds_b or kinds_a != kinds_b:
            return None
        common = sa & sb
        if len(common) < 2:
            return None
        share = len(common) / len(sa | sb)
        strength = (0.8 if kinds_a == {"id"} else 0.7) * min(1.0, 0.4 + share)
        return sorted(only_a)[0], sorted(only_b)[0], strength
