"""Claim frames: what a short claim says about what, read from its own words (no model, no entities).

Inferred supersession (extraction/supersession.py) asks of two claims "do they state the same
attribute of the same subject with a different value?". This module reads one claim into the
parts that question needs, so the comparison of two claims can be a comparison of parts:

* **Values** — typed spans compared by what they mean, not by their digits: dates (`March 15`,
  `15 March`, `Friday 6 March 2026`, `2026-03-15`, a month alone; a missing year matches any year),
  times (`07:40`, `8:50 am`, `7 pm`), money (currency and amount, `$2 million`), percentages,
  versions (`7.2.3`, `v2`, `firmware 14.5`), quantities with their unit (`16 GB`, `45 minutes` =
  `0.75 hours`, `30 spare monitors`, `four days`), and states from a small lexicon of exclusive
  states (open / on hold / closed, in transit / held / delivered, for sale / under contract / sold …).
  A bound ("at most 30 kg", "capped at 18") keeps its number and also marks the claim as stating
  a limit.
* **Marks** — names and codes, grouped ("Priya Raman", "Harbour FC", "PO-7781", "14 Elm Street",
  "CHEM 201"). A capitalised first word counts only when the name goes on ("Jess Moreno …") or the
  other claim writes it as a name too (`resolve`), so "Shipment …" or "Groundstaff …" are words.
  Titles (Dr., Professor …) are dropped. Each group knows whether it is possessive ("Priya
  Raman's") and whether it stands before the claim's first verb (the subject region).
* **Frame words** — the remaining content words, lightly stemmed and folded through a small
  lexicon of general synonyms (cost/price/billed/fee, vacation/leave, flight/flying …). Reporting
  and update vocabulary ("now", "changed", "moved", "raised", "confirmed"), light verbs and time
  qualifiers ("next semester", "this week") are not part of any frame.
* **Context** — words, marks and values in a causal or temporal side clause ("after the reorg, …",
  "… because the venue double-booked", "Dr. Reyes is on sabbatical, so …", "With Duarte injured,
  …") and the agent of an update verb at the start ("The landlord raised …", "TAP rescheduled …").
  They may match the other claim (so a shared subject is still seen) but an unmatched one is no
  difference: an update often says why it happened.

Everything is deterministic: the same text gives the same frame, in any process.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from palimpsest.extraction.entities.normalize import word_list

# ----------------------------------------------------------------------------- vocabulary
STOP = frozenset(word_list("""
a an the this that these those it its it's of for to in on at by from as and or but nor is are was were be
been being am do does did doing will would shall should can could may might must there here which who whom
whose what when where while also than then so such very about into onto over via each every some any all both
either neither our their his her my your we they he she i you me us them him one's s per just only with
without through until till after before because since off out up down within during against among between
behind beyond near across around toward towards upon if though although whether whom yes no not over doesn't
don't isn't aren't won't can't didn't wasn't weren't shouldn't mustn't cannot hasn't haven't under
"""))

# Updating or reporting an update says nothing about what the fact is.
UPDATE_WORDS = frozenset(word_list("""
now new newly latest current currently still again once more further anymore no longer yet already change
changed changes changing update updated updates updating revise revised revision amend amended adjust adjusted
set reset move moved moving moves shift shifted switch switched swap swapped replace replaced replaces raise
raised raising lower lowered lowering cut cuts reduce reduced increase increased decrease decreased bump
bumped extend extended extension push pushed pull pulled bring brought bringing relocate relocated relocating
reassign reassigned reschedule rescheduled rebook rebooked reopen correct corrected correction confirm
confirmed confirms announce announced decide decided agree agreed approve approved tighten tightened relax
relaxed trim trimmed upgrade upgraded patch patched slip slipped go goes going went gone come comes came
become becomes became turn turned take takes taking took taken give gives given get gets got make makes made
put keep kept hand handed back away instead heads fyi effective from onward onwards anymore following per rise
rises rose risen fall falls fell fallen drop drops dropped climb climbs climbed grow grows grew grown jump
jumps jumped lifted takeover mind named appoint appointed elected chosen picked remain remains
remained remaining left
"""))

# Verbs that carry no attribute of their own ("X has 12 …", "X runs with 24 GB").
LIGHT_VERBS = frozenset(word_list("""
is are was were be been being has have had having get gets got run runs running ran stand stands sit sits
sitting stays stay make makes do does let lets see seen count counts go need needs
"""))

# Time qualifiers: when a statement holds or was made, not what it is about.
TIME_WORDS = frozenset(word_list("""
today tomorrow yesterday tonight week weeks weekly month months monthly year years yearly annually annual
quarter quarterly term semester season weekday weekdays weekend next last
this coming upcoming following previous past future soon later earlier early late date time day days recently
immediately onward academic fiscal far
"""))
# … but a time word that is a value's unit ("18 days", "3 nights") is part of that value, and
# "annual leave", "monthly price" keep their meaning through the lexicon below.

SUBORDINATORS = frozenset(word_list("""
after because since following due once while although though whereas when with thanks as until unless starting
"""))
DETERMINERS = frozenset(["a", "an", "the", "our", "their", "its", "his", "her", "this", "that", "these", "those"])
PREPOSITIONS = frozenset(word_list("""
under in on at for with from by per after before during across inside outside above below beside between into
onto over through to toward towards upon within without either each every both all any
"""))
SUBJECT_PRONOUNS = frozenset(["we", "they", "it", "he", "she", "i", "you"])
NAME_CONNECTORS = frozenset(["of", "to", "de", "van", "von", "da", "del", "du", "la", "le"])
CONJUNCTION_SO = frozenset({"so", "hence", "therefore"})
TITLES = frozenset(word_list("""
dr dr. doctor prof prof. professor mr mr. mrs mrs. ms ms. miss sir madam dame lord lady
"""))
# Nouns after which a number is an identifier ("room 12", "gate 4"), not a quantity.
ID_NOUNS = frozenset(word_list("""
room rooms gate gates seat platform terminal desk bay dock ward bed floor level suite unit apartment apt flat
house building block lot order ticket case invoice po req requisition flight train bus route line build
release issue incident job step item page chapter section clause article rule table figure exhibit appendix
version node shard partition cluster pod server host asset serial batch run sprint episode lane court street
road avenue no number #
"""))

NUMBER_WORDS = {w: i for i, w in enumerate(
    word_list("""
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
seventeen eighteen nineteen twenty
"""))}
NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                     "ninety": 90, "hundred": 100, "dozen": 12, "a dozen": 12, "single": 1})

MONTHS = {m: i for i, m in enumerate(word_list("""
january february march april may june july august september october november december
"""), start=1)}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9
WEEKDAYS = frozenset(word_list("""
monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun
"""))

CURRENCY_SYMBOLS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy"}
CURRENCY_WORDS = {"usd": "usd", "dollars": "usd", "dollar": "usd", "eur": "eur", "euro": "eur", "euros": "eur",
                  "gbp": "gbp", "pounds": "gbp", "pound": "gbp", "chf": "chf", "cad": "cad", "aud": "aud",
                  "jpy": "jpy", "yen": "jpy", "sek": "sek", "nok": "nok", "dkk": "dkk", "inr": "inr"}
SCALES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9}

# Units by dimension, with their factor to the dimension's base unit.
UNITS: dict[str, tuple[str, float]] = {}
for _dim, _table in {
    "duration": {"ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001, "s": 1, "sec": 1, "secs": 1,
                 "second": 1, "seconds": 1, "min": 60, "mins": 60, "minute": 60, "minutes": 60, "h": 3600,
                 "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400,
                 "week": 604800, "weeks": 604800, "month": 2629800, "months": 2629800, "year": 31557600,
                 "years": 31557600},
    "bytes": {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 1024, "mib": 1024 ** 2,
              "gib": 1024 ** 3, "tib": 1024 ** 4},
    "mass": {"mcg": 1e-6, "mg": 1e-3, "g": 1, "gram": 1, "grams": 1, "kg": 1e3, "kilo": 1e3, "kilos": 1e3,
             "kilogram": 1e3, "kilograms": 1e3, "tonne": 1e6, "tonnes": 1e6, "ton": 1e6, "tons": 1e6,
             "lb": 453.592, "lbs": 453.592, "pound": 453.592},
    "length": {"mm": 1e-3, "cm": 1e-2, "m": 1, "metre": 1, "metres": 1, "meter": 1, "meters": 1, "km": 1e3,
               "mile": 1609.34, "miles": 1609.34, "ft": 0.3048, "feet": 0.3048, "foot": 0.3048},
    "area": {"sqm": 1, "sqft": 0.0929, "acre": 4046.86, "acres": 4046.86, "hectare": 1e4, "hectares": 1e4},
    "volume": {"ml": 1e-3, "l": 1, "litre": 1, "litres": 1, "liter": 1, "liters": 1},
}.items():
    for _u, _f in _table.items():
        UNITS.setdefault(_u, (_dim, float(_f)))

# Bounds written before a number. Longest first.
_UPPER = ("no more than", "not more than", "not exceed", "must not exceed", "up to", "at most", "maximum of",
          "a maximum of", "max of", "max", "maximum", "capped at", "cap of", "limited to", "limit of", "less than",
          "fewer than", "under", "below", "longer than", "within", "no longer than", "not longer than")
_LOWER = ("at least", "no less than", "not less than", "minimum of", "a minimum of", "min of", "minimum",
          "more than", "over", "above", "greater than", "starting at", "start at", "from")
LIMIT_WORDS = frozenset(word_list("""
limit limits limited cap caps capped maximum max minimum min allowance ceiling floor threshold quota
"""))

# Exclusive states. A state is a value: two different groups are a changed state.
STATE_PHRASES: dict[str, str] = {
    phrase: group
    for group, phrases in {
        "open": "open|opened|reopened|reopen|reopens|open for play|open for business|accepting",
        "closed": "closed|shut|shut down|closed down",
        "on_hold": "on hold|paused|suspended|frozen|on pause",
        "filled": "filled",
        "cancelled": "cancelled|canceled|called off|scrapped",
        "postponed": "postponed|deferred",
        "delayed": "delayed",
        "in_transit": "in transit|en route|on its way|shipped|dispatched",
        "held": "held at customs|held by customs|held up|detained|impounded",
        "delivered": "delivered|arrived",
        "released": "released|cleared",
        "for_sale": "on the market|for sale|listed|relisted",
        "under_contract": "under contract|under offer|sale pending",
        "sold": "sold",
        "active": "active|enabled|live",
        "inactive": "inactive|disabled",
        "approved": "approved|accepted|granted",
        "rejected": "rejected|denied|declined",
        "pending": "pending|awaiting approval",
        "full": "sold out|fully booked",
        "available": "available",
        "unavailable": "unavailable",
        "remote": "remote|fully remote",
    }.items()
    for phrase in phrases.split("|")
}
_STATE_MAX = max(len(p.split()) for p in STATE_PHRASES)

# General synonyms: one concept per group. Kept to words that name the same attribute in everyday
# English; nothing here names a subject.
LEXICON: dict[str, str] = {}
for _concept, _syn in {
    "price": "price prices priced pricing cost costs costing charge charges charged fee fees bill billed billing "
             "tuition pay pays paid paying rate fare fares",
    "leave": "leave vacation holiday holidays pto",
    "manager": "manager managers boss supervisor",
    "capacity": "capacity hold holds fit fits accommodate accommodates room",
    "limit": "limit limits limited cap caps capped maximum max allowance ceiling quota budget budgets",
    "minimum": "minimum min floor",
    "want": "want wants like likes prefer prefers preference preferred ask asks request requests",
    "flight": "flight flights fly flying flies",
    "depart": "depart departs departure leave_flight leaves",
    "due": "arrive arrives arrival land lands delivery due eta deadline deadlines",
    "teach": "teach teaches taught teaching lecturer instructor lecture lectures teacher professor_role",
    "speaker": "speaker speakers deliver delivers delivering present presents presenting presenter",
    "stay": "stay stays staying accommodation hotel lodging booked_at",
    "status": "status state standing",
    "memory": "memory ram",
    "people": "headcount people person persons staff employees employee members member strong rower athlete "
              "enrollment enrolment "
              "athletes player players participant participants attendee attendees students student hires hire "
              "novices novice",
    "assign": "assign assigned assignee belong belongs owner owned",
    "address": "address call called",
    "end": "end ends ended expire expires expiry expiration run_until",
    "squad": "squad roster team side",
    "opening": "opening openings hiring hire requisition vacancy vacancies position role job_opening",
    "venue": "venue venues location host hosts hosting",
    "ticket": "ticket tickets",
    "discount": "discount discounts save saves saving savings",
    "annual": "annual annually yearly year",
    "month": "month monthly",
    "week": "week weekly",
    "day": "day daily",
    "plan": "plan plans tier tiers",
    "seat": "seat seats",
    "limit_weight": "weigh weighs weight weighing heavy heaviest",
    "exam": "exam exams examination",
    "final": "final finals",
    "reminder": "reminder reminders remind",
    "gate": "gate gates",
    "apartment": "apartment unit flat",
    "lease": "lease leases lease_term",
    "listing": "listing listed_by",
    "agent": "agent agents realtor broker",
    "carrier": "carrier carriers handled haulier",
    "lane": "lane lanes route routes",
    "firmware": "firmware",
    "warranty": "warranty warranties covered coverage",
    "meeting": "meeting meetings",
    "lunch": "lunch lunches",
    "order": "order orders ordering",
    "enroll": "enroll enrol enrolled",
    "require": "require requires required need needs",
}.items():
    for _w in _syn.split():
        LEXICON.setdefault(_w, _concept)

# Two-word phrases folded first ("reports to" is the manager relation, "annual leave" is leave).
PHRASES: dict[tuple[str, str], str] = {
    ("reports", "to"): "manager", ("report", "to"): "manager", ("reporting", "to"): "manager",
    ("annual", "leave"): "leave", ("time", "off"): "leave", ("paid", "leave"): "leave",
    ("line", "manager"): "manager", ("direct", "manager"): "manager",
    ("list", "price"): "price", ("asking", "price"): "price", ("price", "tag"): "price",
    ("checked", "bag"): "bag", ("check", "in"): "checkin",
    ("taught", "by"): "teach", ("given", "by"): "speaker", ("delivered", "by"): "speaker",
    ("handled", "by"): "carrier",
    ("marketed", "by"): "agent", ("listing", "agent"): "agent",
    ("held", "at"): "venue", ("hosted", "at"): "venue", ("hosted", "by"): "venue",
    ("take", "place"): "happen", ("takes", "place"): "happen",
}

VERBISH = frozenset(word_list("""
is are was were be been has have had will would can could may might must shall should does do did costs cost
runs run includes include requires require holds hold meets meet boards board departs depart leaves leave
arrives arrive expires expire ends end reports report works work captains captain owns own carries carry
weighs weigh sits sit lasts last starts start stands stand counts count belongs belong accepts accept allows
allow takes take gives give needs need moves move goes go comes come lives live uses use stays stay rents rent
trains train awards award says say wants want likes like prefers prefer asks ask eats eat handles handle
marketed taught held listed scheduled booked assigned given delivered based located priced billed gets get
pays pay serves serve remains remain lists list sets set keeps keep
"""))


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True)
class FrameValue:
    """A typed value. `kind`: date | time | money:<cur> | percent | version | qty:<dim> | count | state."""

    kind: str
    key: tuple[object, ...]      # what equality compares (dates: (year or None, month, day or None))
    text: str
    unit_words: frozenset[str] = frozenset()   # for counts: the noun(s) the number counts
    bound: str | None = None     # "max" | "min" | None
    context: bool = False
    position: int = 0            # token index where it starts

    def same(self, other: FrameValue) -> bool:
        """Does it state the same value as `other` (same kind)?"""
        if self.kind == "date" and other.kind == "date":
            return _dates_same(self.key, other.key)
        return self.key == other.key


@dataclass(frozen=True)
class Mark:
    """A name or code group: lowercase tokens, and where it stands."""

    tokens: tuple[str, ...]
    possessive: bool
    subject_region: bool         # before the claim's first verb
    context: bool
    initial: bool                # the group opens the sentence
    position: int
    conjoined: bool = False      # "A and B …", "A, B …": joined to another mark
    owned: bool = False          # introduced by "of" / "for" ("the rating of X", "rent for 5B"): a subject
    modifier: bool = False       # followed by a noun ("the Leeds office", "the Acme–Keystone contract")
    attached: str | None = None  # the noun it is attached to: "X's dose", "dose for X", "the X contract"

    @property
    def coded(self) -> frozenset[str]:
        return frozenset(t for t in self.tokens if any(ch.isdigit() for ch in t))

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


@dataclass
class Frame:
    text: str
    values: list[FrameValue]
    marks: list[Mark]
    words: list[tuple[str, int, bool]]    # (concept, token index, context?) in order
    ambiguous: list[tuple[str, int, bool]]  # capitalised first words (word, index, context?): names only if
    #                                         the other side agrees
    limit: bool                            # the claim states a limit (a bound, or a limit word)
    sequence: list[str] = field(default_factory=list)   # the main-clause content sequence, for alignment
    first_verb: int | None = None
    possessed: set[str] = field(default_factory=set)     # concepts right after a possessive ("user's partner")

    @property
    def main_words(self) -> set[str]:
        return {w for w, _, ctx in self.words if not ctx}

    @property
    def all_words(self) -> set[str]:
        return {w for w, _, _ in self.words}


# ----------------------------------------------------------------------------- tokenising
_TOKEN_RE = re.compile(
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?"                                  # 1,000 / 12,000.50
    r"|\b[A-D]{1,3}[+-](?![\w+-])"                                    # credit grades: A+, BBB-
    r"|[A-Z][a-z]+(?:–[A-Z][a-z]+)+(?:['’]s)?"                         # "Acme–Keystone": two names, one party pair
    r"|[A-Za-z0-9]+(?:[-+./:&][A-Za-z0-9]+)*(?:['’][A-Za-z]+|(?<=s)['’](?!\w))?"  # words, codes, 7.2.3, women's
    r"|[$€£¥%#]"
    r"|[.,;:!?()\"“”—–]|(?<=\s)-(?=\s)"
)
_CLAUSE_BREAK = frozenset({",", ";", ":", "—", "–", "-", "(", ")", "\"", "“", "”"})
_SENTENCE_BREAK = frozenset({".", "!", "?"})
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "no", "approx", "vs", "jr", "sr"})


@dataclass
class _Tok:
    text: str
    low: str
    index: int
    initial: bool = False
    kind: str = "word"           # word | punct | value | mark | stop
    context: bool = False
    possessive: bool = False
    agent: bool = False          # the agent of an update ("The landlord raised …"): context for words only

    @property
    def cap(self) -> bool:
        return self.text[:1].isupper()

    @property
    def digit(self) -> bool:
        return any(ch.isdigit() for ch in self.text)


def _tokenise(text: str) -> list[_Tok]:
    text = text.replace("’", "'").replace("‘", "'")
    out: list[_Tok] = []
    start = True
    for m in _TOKEN_RE.finditer(text):
        raw = m.group(0)
        possessive = False
        if re.search(r"'s$", raw) and len(raw) > 2:
            raw, possessive = raw[:-2], True
        elif raw.endswith(("s'", "s’")) and len(raw) > 2:
            raw, possessive = raw[:-1], True
        elif "'" in raw:
            raw = raw.split("'")[0] if raw.lower().endswith(("n't",)) is False else raw
        if raw == "." and out and out[-1].low in _ABBREVIATIONS:
            continue  # "Dr. Reyes": the title's full stop ends no sentence
        tok = _Tok(raw, raw.lower(), len(out), initial=start, possessive=possessive)
        if raw in _CLAUSE_BREAK or raw in _SENTENCE_BREAK:
            tok.kind = "punct"
        out.append(tok)
        if raw in _SENTENCE_BREAK or raw == ":":
            start = True
        elif raw not in {"\"", "“", "(", "—", "–"}:
            start = False
    return out


_ING_WORDS = frozenset(word_list("""
evening morning ceiling building wedding meeting spring string thing nothing something anything everything
during sibling king ring wing bring ping
"""))


def stem(word: str) -> str:
    """A light, predictable fold (plural, -ing, -ed) — enough to meet "captains"/"captain"."""
    w = word.lower()
    if len(w) <= 3 or any(ch.isdigit() for ch in w):
        return w
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("sses", "ss")):
        if w.endswith(suffix) and len(w) > 4:
            return w[: -len(suffix)] + repl
    if w.endswith("s") and not w.endswith(("ss", "us", "is", "ous")):
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5 and w not in _ING_WORDS:
        w = w[:-3]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "lsz":
            w = w[:-1]
    elif w.endswith("ed") and len(w) > 4:
        base = w[:-2]
        if len(base) > 2 and base[-1] == base[-2] and base[-1] not in "lsz":
            base = base[:-1]
        w = base
    return w


def concept(word: str) -> str:
    low = word.lower()
    if low in LEXICON:
        return LEXICON[low]
    s = stem(low)
    return LEXICON.get(s, s)


# ----------------------------------------------------------------------------- values
def _number(text: str) -> float | None:
    t = text.lower().replace(",", "")
    if t in NUMBER_WORDS:
        return float(NUMBER_WORDS[t])
    try:
        return float(t)
    except ValueError:
        return None


def _ordinal_day(text: str) -> int | None:
    m = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)?", text.lower())
    if m is None:
        return None
    d = int(m.group(1))
    return d if 1 <= d <= 31 else None


def _year(text: str) -> int | None:
    return int(text) if re.fullmatch(r"(19|20)\d\d", text) else None


def _dates_same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    ya, ma, da = a
    yb, mb, db = b
    if ma != mb:
        return False
    if ya is not None and yb is not None and ya != yb:
        return False
    return da == db


def _bound_before(toks: Sequence[_Tok], i: int) -> str | None:
    """The bound written just before token i ("at most 30 kg" → "max"); its words are consumed."""
    window = [t for t in toks[max(0, i - 4):i] if t.kind != "punct"]
    tail = " ".join(t.low for t in window)
    for direction, phrases in (("max", _UPPER), ("min", _LOWER)):
        for phrase in sorted(phrases, key=len, reverse=True):
            if phrase != "from" and (tail == phrase or tail.endswith(" " + phrase)):
                for t in window[len(window) - len(phrase.split()):]:
                    if t.kind == "word":
                        t.kind = "bound"
                return direction
    return None


def _is_id_number(toks: Sequence[_Tok], i: int) -> bool:
    """A number that names something: after an id noun or a capitalised word ("CHEM 201", "gate 4"),
    or before a capitalised name ("14 Elm Street")."""
    prev = toks[i - 1] if i > 0 else None
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    if prev is not None and prev.kind != "punct":
        if prev.low in ID_NOUNS or (prev.cap and not prev.initial and prev.low not in MONTHS
                                    and prev.low not in WEEKDAYS and prev.low not in CURRENCY_WORDS):
            return True
        if prev.cap and prev.text.isupper() and len(prev.text) >= 2:
            return True
    return nxt is not None and nxt.kind == "word" and nxt.cap and nxt.low not in MONTHS and nxt.low not in UNITS \
        and nxt.low not in CURRENCY_WORDS and not nxt.text.isupper()


def _values(toks: list[_Tok]) -> list[FrameValue]:
    """Find typed values left to right, most specific first, and mark their tokens."""
    out: list[FrameValue] = []
    n = len(toks)

    def take(i: int, j: int) -> None:
        for t in toks[i:j]:
            t.kind = "value"

    def free(i: int) -> bool:
        return 0 <= i < n and toks[i].kind == "word"

    i = 0
    while i < n:
        t = toks[i]
        if not free(i):
            i += 1
            continue
        low = t.low
        # ---- dates
        start = i
        j = i
        if low in WEEKDAYS and free(i + 1):
            j = i + 1
        month = MONTHS.get(toks[j].low.rstrip(".")) if free(j) else None
        if month is not None and not (toks[j].low == "may" and not _may_is_month(toks, j)):
            day = _ordinal_day(toks[j + 1].low) if free(j + 1) else None
            k = j + 1
            if day is not None:
                k = j + 2
                if k < n and toks[k].text == "," and k + 1 < n and _year(toks[k + 1].text):
                    k += 1
            year = _year(toks[k].text) if free(k) else None
            end = k + 1 if year is not None else k
            out.append(FrameValue("date", (year, month, day), " ".join(x.text for x in toks[start:end]),
                                  position=start))
            take(start, end)
            i = end
            continue
        day = _ordinal_day(toks[j].low) if free(j) else None
        if day is not None and re.fullmatch(r"\d{1,2}(?:st|nd|rd|th)?", toks[j].low):
            k = j + 1
            if k < n and toks[k].low == "of":
                k += 1
            month = MONTHS.get(toks[k].low.rstrip(".")) if free(k) else None
            if month is not None:
                year = _year(toks[k + 1].text) if free(k + 1) else None
                end = k + 2 if year is not None else k + 1
                out.append(FrameValue("date", (year, month, day), " ".join(x.text for x in toks[start:end]),
                                      position=start))
                take(start, end)
                i = end
                continue
        m = re.fullmatch(r"((?:19|20)\d\d)-(\d{2})-(\d{2})", low)
        if m:
            out.append(FrameValue("date", (int(m[1]), int(m[2]), int(m[3])), t.text, position=i))
            take(i, i + 1)
            i += 1
            continue
        # ---- times
        m = re.fullmatch(r"(\d{1,2}):(\d{2})", low)
        if m or (re.fullmatch(r"\d{1,2}", low) and free(i + 1) and toks[i + 1].low in {"am", "pm", "a.m", "p.m"}):
            h, mi = (int(m[1]), int(m[2])) if m else (int(low), 0)
            end = i + 1
            if free(i + 1) and toks[i + 1].low in {"am", "pm", "a.m", "p.m"}:
                if toks[i + 1].low.startswith("p") and h < 12:
                    h += 12
                if toks[i + 1].low.startswith("a") and h == 12:
                    h = 0
                end = i + 2
            if h <= 23 and mi <= 59:
                out.append(FrameValue("time", (h * 60 + mi,), " ".join(x.text for x in toks[i:end]), position=i))
                take(i, end)
                i = end
                continue
        if low in {"noon", "midday", "midnight"}:
            out.append(FrameValue("time", (720 if low != "midnight" else 0,), t.text, position=i))
            take(i, i + 1)
            i += 1
            continue
        # ---- credit grades ("A+", "BBB-", "AA")
        graded = i > 0 and toks[i - 1].low in {"rated", "rating", "to", "at", "is", "of"} and "rat" in " ".join(
            x.low for x in toks[max(0, i - 8):i])
        if (re.fullmatch(r"[A-D]{1,3}[+-]|AAA|AA|BBB|BB|CCC", t.text) or (graded and re.fullmatch(r"[A-D]", t.text))) \
                and i > 0:
            out.append(FrameValue("grade", (t.text,), t.text, position=i))
            take(i, i + 1)
            i += 1
            continue
        # ---- versions
        m = re.fullmatch(r"v(\d+(?:\.\d+)*)", low)
        if m or re.fullmatch(r"\d+\.\d+\.\d+(?:\.\d+)*", low) or (
                re.fullmatch(r"\d+(?:\.\d+)+", low) and i > 0
                and toks[i - 1].low in {"version", "firmware", "release", "v", "macos", "ios", "android", "windows",
                                        "kernel", "build", "on"} and toks[i - 1].kind != "value"):
            ver = m[1] if m else low
            parts = tuple(int(p) for p in ver.split("."))
            while len(parts) > 1 and parts[-1] == 0:
                parts = parts[:-1]
            out.append(FrameValue("version", parts, t.text, position=i))
            take(i, i + 1)
            i += 1
            continue
        # ---- money
        if low in CURRENCY_SYMBOLS and free(i + 1) and _number(toks[i + 1].low) is not None:
            amount = _number(toks[i + 1].low) or 0.0
            end = i + 2
            if free(end) and toks[end].low in SCALES:
                amount *= SCALES[toks[end].low]
                end += 1
            out.append(FrameValue(f"money:{CURRENCY_SYMBOLS[low]}", (round(amount, 4),),
                                  " ".join(x.text for x in toks[i:end]), _per(toks, end), bound=_bound_before(toks, i),
                                  position=i))
            take(i, end)
            i = end
            continue
        # "Motel One", "Formula One": a capitalised number word inside a sentence is part of a name
        spelled = low in NUMBER_WORDS and not (t.cap and not t.initial)
        num = _number(low) if (t.digit or spelled) else None
        if (num is not None and low not in {"one", "single"} | ({"a"} if low == "a" else set())) or (
                num is not None and free(i + 1) and _counts_noun(toks, i + 1)):
            end = i + 1
            scale = 1.0
            if free(end) and toks[end].low in SCALES and toks[end].low not in {"m"}:
                scale = SCALES[toks[end].low]
                end += 1
            nxt = toks[end].low if free(end) else ""
            if nxt in CURRENCY_WORDS:
                out.append(FrameValue(f"money:{CURRENCY_WORDS[nxt]}", (round(num * scale, 4),),
                                      " ".join(x.text for x in toks[i:end + 1]), _per(toks, end + 1),
                                      bound=_bound_before(toks, i), position=i))
                take(i, end + 1)
                i = end + 1
                continue
            if nxt == "%" or nxt in {"percent", "pct"}:
                out.append(FrameValue("percent", (num,), " ".join(x.text for x in toks[i:end + 1]),
                                      bound=_bound_before(toks, i), position=i))
                take(i, end + 1)
                i = end + 1
                continue
            if t.digit and _is_id_number(toks, i):
                i += 1
                continue  # an identifier: becomes part of a mark
            if t.digit and _year(t.text) and nxt not in UNITS:
                out.append(FrameValue("date", (int(t.text), None, None), t.text, position=i))
                take(i, i + 1)
                i += 1
                continue
            # "30-day" / "4-star": number and unit joined
            unit_tok = nxt
            joined = re.fullmatch(r"(\d+(?:\.\d+)?)-([a-z]+)", low)
            if joined:
                num, unit_tok, end = float(joined[1]), joined[2], i
            if unit_tok in UNITS:
                dim, factor = UNITS[unit_tok]
                if dim == "duration" and unit_tok in {"m", "s", "h"} and nxt != unit_tok:
                    dim, factor = "", 1.0
                if dim:
                    value = round(num * scale * factor, 6)
                    last = end + 1 if not joined else i + 1
                    out.append(FrameValue(f"qty:{dim}", (value,), " ".join(x.text for x in toks[i:last]),
                                          bound=_bound_before(toks, i), position=i))
                    take(i, last)
                    i = last
                    continue
            # a count of something: the head of the noun phrase after it ("30 spare monitors" counts monitors)
            nouns: set[str] = set()
            k = end
            head = ""
            while k < n and toks[k].kind == "word" and k < end + 3:
                if toks[k].low in STOP or toks[k].cap:
                    break
                head = concept(toks[k].low)
                k += 1
            if head:
                nouns.add(head)
            out.append(FrameValue("count", (round(num * scale, 6),), " ".join(x.text for x in toks[i:end]),
                                  frozenset(nouns), bound=_bound_before(toks, i), position=i))
            take(i, end)
            i = end
            continue
        # ---- months alone ("into May")
        if low in MONTHS and low != "may" and len(low) > 3:
            out.append(FrameValue("date", (None, MONTHS[low], None), t.text, position=i))
            take(i, i + 1)
            i += 1
            continue
        if low == "may" and _may_is_month(toks, i):
            out.append(FrameValue("date", (None, 5, None), t.text, position=i))
            take(i, i + 1)
            i += 1
            continue
        i += 1
    # ---- states (multiword first), on what is still free
    i = 0
    while i < n:
        hit = None
        for size in range(min(_STATE_MAX, n - i), 0, -1):
            span = toks[i:i + size]
            if any(x.kind != "word" for x in span):
                continue
            phrase = " ".join(x.low for x in span)
            if phrase in STATE_PHRASES:
                hit = (size, STATE_PHRASES[phrase], phrase)
                break
        if hit is None:
            i += 1
            continue
        size, group, phrase = hit
        follower = toks[i + size] if i + size < n else None
        if follower is not None and (follower.low in {"a", "an", "the", "our", "its", "their"} or follower.digit):
            i += size   # "The board approved an increase": a verb with an object, not a state
            continue
        out.append(FrameValue("state", (group,), phrase, position=i))
        take(i, i + size)
        i += size
    out.sort(key=lambda v: v.position)
    # A bound written after the value: "30 minutes at most", "by 20 March at the latest".
    for idx, v in enumerate(out):
        if v.bound is not None or v.kind in {"date", "time"}:
            continue
        end = v.position
        while end < n and toks[end].kind == "value":
            end += 1
        tail = " ".join(t.low for t in toks[end:end + 3])
        for phrase, direction in (("at most", "max"), ("at the latest", "max"), ("or less", "max"),
                                  ("or fewer", "max"), ("max", "max"), ("at least", "min"), ("or more", "min")):
            if tail == phrase or tail.startswith(phrase + " "):
                for t in toks[end:end + len(phrase.split())]:
                    t.kind = "bound"
                out[idx] = FrameValue(v.kind, v.key, v.text, v.unit_words, direction, v.context, v.position)
                break
    return out


_PERIODIC = {"monthly": "month", "yearly": "year", "annually": "year", "annual": "year", "weekly": "week",
             "daily": "day", "hourly": "hour", "nightly": "night", "quarterly": "quarter"}


def _per(toks: Sequence[_Tok], i: int) -> frozenset[str]:
    """What an amount is per ("$14 a month", "$12 per seat each month", "€6.49 monthly", "$0.15 a share"):
    a recurring price and a one-off fee are two attributes, however alike the rest of the words."""
    out: set[str] = set()
    j = i
    while j < len(toks) and toks[j].kind in {"word", "stop"} and j < i + 6:
        low = toks[j].low
        if low in _PERIODIC:
            out.add(_PERIODIC[low])
            j += 1
            continue
        if low in {"per", "a", "an", "each", "every"} and j + 1 < len(toks) and toks[j + 1].kind == "word" \
                and toks[j + 1].low not in STOP:
            out.add(stem(toks[j + 1].low))
            if j + 2 < len(toks) and toks[j + 2].kind == "word" and toks[j + 2].low not in STOP \
                    and not toks[j + 2].low.endswith("ly"):
                out.add(stem(toks[j + 2].low))
            j += 2
            continue
        break
    return frozenset(out)


def _may_is_month(toks: Sequence[_Tok], i: int) -> bool:
    t = toks[i]
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    prev = toks[i - 1] if i > 0 else None
    if t.text == "May" and not t.initial:
        return True
    if nxt is not None and _ordinal_day(nxt.low) is not None:
        return True
    return prev is not None and _ordinal_day(prev.low) is not None


def _counts_noun(toks: Sequence[_Tok], i: int) -> bool:
    return i < len(toks) and toks[i].kind == "word" and toks[i].low not in STOP


# ----------------------------------------------------------------------------- analysis
def analyse(text: str) -> Frame:
    toks = _tokenise(text)
    values = _values(toks)
    n = len(toks)

    # Context clauses: a side clause opened by a subordinator, and what comes before ", so …".
    clause_start = 0
    for i, t in enumerate(toks):
        if t.kind == "punct" and (t.text in _CLAUSE_BREAK or t.text in _SENTENCE_BREAK):
            clause_start = i + 1
            continue
        if t.low == "before" and i + 1 < n and toks[i + 1].kind == "value":
            j = i + 1
            while j < n and toks[j].kind == "value":   # "signed before 2024": a condition, not the value
                toks[j].context = True
                j += 1
            continue
        if t.low in CONJUNCTION_SO and i > 0 and toks[i - 1].text == ",":
            for x in toks[:i]:
                x.context = True
            continue
        opener = t.low in SUBORDINATORS or (t.low == "from" and i == clause_start)
        if t.low == "due" and not (i + 1 < n and toks[i + 1].low == "to"):
            opener = False
        if t.low == "as" and i != clause_start:
            opener = False
        if t.low == "with" and i != clause_start:
            opener = False
        if t.low == "when" and i == clause_start and i == 0:
            opener = False
        if t.low in {"after", "following", "until", "since"} and i + 1 < n and toks[i + 1].kind == "value":
            opener = False   # "after 6 pm" is the value's own qualifier
        if opener:
            sentence_start = i == clause_start
            j = i
            seen = False
            comma = any(x.text == "," for x in toks[i:])
            while j < n and not (toks[j].kind == "punct" and (toks[j].text in _CLAUSE_BREAK
                                                               or toks[j].text in _SENTENCE_BREAK)):
                if sentence_start and j > i and toks[j].low in SUBJECT_PRONOUNS:
                    break  # "After the vendor advisory we moved …": the main clause starts at "we"
                if sentence_start and not comma and seen and toks[j].low in DETERMINERS:
                    break  # "From Q3 onward an Enterprise deal …"
                seen = seen or (j > i and toks[j].low not in DETERMINERS)
                toks[j].context = True
                j += 1
    # A short header ("Gate change: …", "Registrar update: …"): its words may match, never differ.
    colon = next((i for i, t in enumerate(toks) if t.text == ":"), None)
    header_words = {"update", "updated", "change", "changed", "reminder", "note", "correction", "news", "heads",
                    "fyi", "preference", "answer", "call", "new", "date", "latest", "rule", "policy"}
    if colon is not None and 0 < colon <= 5 and (colon <= 3 or any(x.low in header_words for x in toks[:colon])):
        for x in toks[:colon]:
            if x.kind != "value":
                x.context = x.agent = True   # words may match, never differ; names stay names
    # Agent of an update at the start: "[The|Our] W [W] <update verb> …"
    first = next((i for i, t in enumerate(toks) if t.kind not in {"punct"}), None)
    if first is not None:
        k = first
        if toks[k].low in {"the", "our", "we", "they", "a"}:
            k += 1
        for size in (1, 2):
            vi = k + size
            if vi < n and toks[vi].kind in {"word", "value"} and _update_verb(toks[vi].low,
                                                                           toks[vi + 1].low if vi + 1 < n else ""):
                for x in toks[first:vi]:
                    if x.kind in {"word", "stop"} and not x.context:
                        x.context = x.agent = True
                break
            if vi < n and toks[vi].low in {"have", "has"} and vi + 1 < n and _update_verb(toks[vi + 1].low, ""):
                for x in toks[first:vi]:
                    if x.kind in {"word", "stop"} and not x.context:
                        x.context = x.agent = True
                break

    # Values inherit context from their tokens.
    values = [FrameValue(v.kind, v.key, v.text, v.unit_words, v.bound, toks[v.position].context, v.position)
              for v in values]

    # First verb: the end of the subject region.
    first_verb = None
    for i, t in enumerate(toks):
        if t.kind != "word" or t.context:
            continue
        if t.initial and t.cap and i + 1 < n and toks[i + 1].low in DETERMINERS and t.low not in DETERMINERS \
                and t.low not in STOP and t.low not in PREPOSITIONS:
            first_verb = i   # an imperative: "Address the user as Katherine."
            break
        if t.low.endswith("ed") and not t.cap and i > 0 and toks[i - 1].kind == "word" \
                and toks[i - 1].low not in DETERMINERS and toks[i - 1].low not in STOP:
            first_verb = i   # "The user asked …"
            break
        if t.low in VERBISH or (i > 0 and _update_verb(t.low, "") and toks[i - 1].low not in {"the", "a", "an"}):
            first_verb = i
            break
        if t.low.endswith(("ed", "s")) and not t.cap and i > 0 and toks[i - 1].kind == "word" \
                and (toks[i - 1].cap or toks[i - 1].digit) and not toks[i - 1].possessive:
            first_verb = i
            break

    # Marks: groups of capitalised words and codes.
    marks: list[Mark] = []
    ambiguous: list[tuple[str, int, bool]] = []
    i = 0
    while i < n:
        t = toks[i]
        if t.kind != "word" or not (t.cap or t.digit) or (t.low in STOP and not t.digit) \
                or t.low in WEEKDAYS or t.low in MONTHS or (t.initial and (t.low in UPDATE_WORDS
                                                                           or t.low in PREPOSITIONS)):
            i += 1
            continue
        j = i
        group: list[_Tok] = []
        while j < n and toks[j].kind == "word" and (toks[j].cap or toks[j].digit) and \
                (j == i or toks[j].low not in STOP or toks[j].digit) and toks[j].low not in WEEKDAYS:
            group.append(toks[j])
            if toks[j].possessive:
                j += 1
                break
            j += 1
            # "Intro to Statistics", "Bank of America": a lowercase connector between two capitalised words
            if j + 1 < n and toks[j].kind == "word" and toks[j].low in NAME_CONNECTORS and toks[j + 1].kind == "word" \
                    and toks[j + 1].cap and not toks[j + 1].initial and toks[j + 1].low not in MONTHS:
                j += 1
        # connectors inside names: "Kuehne+Nagel" is one token; "Intro to Statistics" stays two groups
        names = [g for g in group if g.low.rstrip(".") not in TITLES]
        if not names:
            i = j
            continue
        plain_caps = [g for g in names if not g.digit and not g.text.isupper()]
        if names[0].initial and len(names) == 1 and not names[0].digit and not (
                names[0].text.isupper() and len(names[0].text) >= 2 and _next_is_mark(toks, j)):
            # A capitalised first word alone: a name only if the other claim writes it as one.
            ambiguous.append((names[0].low, names[0].index, names[0].context))
            i = j
            continue
        if len(names) == 1 and names[0].text.isupper() and not names[0].digit and not names[0].initial:
            # An acronym on its own ("API", "RAM", "MBA") is a word, not a name — but it may be one
            # ("NYSE"), so it counts against a name the other claim has in its place.
            ambiguous.append((names[0].low, names[0].index, names[0].context))
            i = j
            continue
        if names[0].initial and len(names) >= 2 and not names[0].digit and names[1].digit and not \
                names[0].text.isupper():
            # "Shipment PO-7781": the first word is a common noun in front of a code.
            names[0].context = names[0].agent = True   # a classifier ("Container", "Shipment"): soft
            ambiguous.append((names[0].low, names[0].index, True))
            names = names[1:]
        del plain_caps
        for g in group:
            if g in names or g.low.rstrip(".") in TITLES:
                g.kind = "mark"
        prev = toks[i - 1] if i > 0 else None
        nxt = toks[j] if j < n else None
        conj = (prev is not None and prev.low in {"and", "&", "or"}) or (nxt is not None and nxt.low in {"and", "&"}
                                                                        and j + 1 < n and toks[j + 1].cap)
        possessive = group[-1].possessive
        before = toks[names[0].index - 1] if names[0].index > 0 else None
        if before is not None and before.low in DETERMINERS and names[0].index > 1:
            before = toks[names[0].index - 2]
        owned = before is not None and before.low in {"of", "for"}
        after = toks[j] if j < n else None
        modifier = after is not None and after.kind == "word" and not after.cap and after.low not in STOP \
            and after.low not in LIGHT_VERBS and after.low not in VERBISH and after.low not in UPDATE_WORDS \
            and not after.low.endswith("ed") and after.low not in TIME_WORDS and not group[-1].possessive
        parts = tuple(p for g in names for p in (re.split(r"[-–]", g.low.rstrip("."))
                                                   if g.cap and not g.digit and re.search(r"[-–]", g.low) else
                                                   [g.low.rstrip(".")]) if p)
        attached = None
        if possessive or modifier:
            k = j
            while k < n and (toks[k].kind != "word" or toks[k].low in STOP or toks[k].low in UPDATE_WORDS):
                if toks[k].kind == "punct" or toks[k].kind == "mark":
                    break
                k += 1
            if k < n and toks[k].kind == "word" and toks[k].low not in STOP and not toks[k].cap:
                attached = concept(toks[k].low)
        elif owned:
            k = names[0].index - 2
            while k >= 0 and toks[k].low in DETERMINERS | {"of", "for"}:
                k -= 1
            if k >= 0 and toks[k].kind == "word" and toks[k].low not in STOP and toks[k].low not in UPDATE_WORDS:
                attached = concept(toks[k].low)
        marks.append(Mark(parts, possessive,
                          first_verb is None or names[0].index < first_verb, names[0].context and not names[0].agent,
                          names[0].initial or (i > 0 and toks[i - 1].initial and toks[i - 1].low == "the"),
                          names[0].index, conj, owned, modifier, attached))
        i = j

    # Frame words.
    words: list[tuple[str, int, bool]] = []
    possessed: set[str] = set()
    limit = any(v.bound == "max" and v.kind not in {"date", "time"} for v in values)
    minimum = any(v.bound == "min" and v.kind not in {"date", "time"} for v in values)
    i = 0
    while i < n:
        t = toks[i]
        if t.kind != "word" or t.low in STOP:
            i += 1
            continue
        nxt = toks[i + 1] if i + 1 < n and toks[i + 1].kind == "word" else None
        if nxt is not None and (t.low, nxt.low) in PHRASES:
            words.append((PHRASES[(t.low, nxt.low)], i, t.context))
            i += 2
            continue
        low = t.low
        if low in NUMBER_WORDS and low not in {"one"}:
            i += 1
            continue
        if low in UPDATE_WORDS or low in LIGHT_VERBS or low in TIME_WORDS or low in TITLES:
            i += 1
            continue
        c = concept(low)
        if c in {"limit", "minimum"} and not t.context:
            limit = True
        if i > 0 and toks[i - 1].possessive and toks[i - 1].kind in {"word", "mark"}:
            possessed.add(c)
        words.append((c, i, t.context))
        i += 1
    if limit:
        words.append(("limit", n, False))
    if minimum:
        words.append(("minimum", n, False))

    # The content sequence for alignment: main-clause words, values as their kind, marks as text.
    seq: list[str] = []
    by_index: dict[int, str] = {}
    for w, idx, ctx in words:
        if not ctx and idx < n:
            by_index[idx] = w
    for v in values:
        if not v.context:
            by_index[v.position] = f"<{v.kind.split(':')[0]}>"
    for mk in marks:
        if not mk.context:
            by_index[mk.position] = "@" + mk.text
    for idx in sorted(by_index):
        seq.append(by_index[idx])
    return Frame(text, values, marks, words, ambiguous, limit, seq, first_verb, possessed)


def _update_verb(word: str, after: str) -> bool:
    if word == "signed" and after == "off":
        return True
    return (word in UPDATE_WORDS and (word.endswith("ed") or word in {"cut", "set", "took", "got", "put", "kept"})) \
        or word in {"named", "handed", "swapped", "bought", "filled", "returned", "cancelled", "rebooked", "approved",
                    "accepted", "released"}


def _next_is_mark(toks: Sequence[_Tok], j: int) -> bool:
    return j < len(toks) and toks[j].kind == "word" and (toks[j].cap or toks[j].digit)


def resolve(a: Frame, b: Frame) -> tuple[list[Mark], list[Mark]]:
    """The marks of both frames, with each side's ambiguous first word promoted to a name when the
    other side has it as a name (or as an ambiguous first word written the same)."""
    def tokens_of(marks: Iterable[Mark]) -> set[str]:
        return {t for m in marks for t in m.tokens}

    ta, tb = tokens_of(a.marks), tokens_of(b.marks)

    def promote(f: Frame, other_tokens: set[str], other_marks: Sequence[Mark]) -> list[Mark]:
        out = list(f.marks)
        for low, idx, _ in f.ambiguous:
            acronym = any(t.isupper() and t.lower() == low for t in re.findall(r"[A-Za-z]+", f.text))
            if acronym and not any(m.tokens == (low,) for m in other_marks):
                continue
            if low in other_tokens:
                out.append(Mark((low,), False, f.first_verb is None or idx < f.first_verb, False, True, idx))
        return sorted(out, key=lambda m: m.position)

    return promote(a, tb, b.marks), promote(b, ta, a.marks)


# ----------------------------------------------------------------------------- comparing two frames
# Nouns that make a possessive a different subject: "the user's partner" is not the user.
ROLE_NOUNS = frozenset(word_list("""
partner partners wife husband spouse child children son daughter parent parents mother father brother sister
friend friends colleague colleagues coworker assistant deputy guest guests visitor visitors client clients
customer customers family team manager boss cofounder co-founder founder owner landlord tenant neighbour
neighbor kid kids baby dog cat pet roommate employer employee
"""))

# How confident each kind of slot is, before the frame agreement scales it.
SLOT_STRENGTH = {"value": 0.94, "state": 0.92, "name": 0.9, "code": 0.92, "category": 0.86}


@dataclass(frozen=True)
class Comparison:
    """The outcome for (newer, older). `slot` is what changed; when `supersedes` is False, `slot`
    names the test that failed (subject, frame, substitution, occasion, restatement, no_value)."""

    supersedes: bool
    slot: str
    confidence: float
    detail: str
    old_value: str = ""       # normalised old value, to spot restatements of the same old value
    new_value: str = ""


def _matched(m: Mark, others: Sequence[Mark]) -> bool:
    """The same entity: one group's words are all in the other's ("Reyes" / "Alan Reyes"), and they
    carry the same codes ("CHEM 201" is not "CHEM 202"; "Executive MBA" is not "Evening MBA")."""
    mine = set(m.tokens)
    for o in others:
        theirs = set(o.tokens)
        if mine == theirs:
            return True
        smaller = mine if mine <= theirs else theirs if theirs <= mine else None
        if smaller is not None and m.coded == o.coded and smaller - m.coded:
            return True
    # a group split differently on the other side ("Harbor View 5B" / "5B in Harbor View")
    pool = {t for o in others for t in o.tokens}
    return mine <= pool and m.coded <= pool


def _group(kind: str) -> str:
    return kind


def _comparable(x: FrameValue, y: FrameValue) -> bool:
    if x.kind != y.kind:
        return False
    if x.kind == "count":
        return not x.unit_words or not y.unit_words or bool(x.unit_words & y.unit_words)
    if x.kind.startswith("money"):
        return x.unit_words == y.unit_words or bool(x.unit_words & y.unit_words)
    return True


def _value_slots(a: Frame, b: Frame) -> tuple[list[tuple[FrameValue, FrameValue]], list[str]]:
    """(changed pairs, kinds stated equal) between the main-clause values of the two frames."""
    va = [v for v in a.values if not v.context]
    vb = [v for v in b.values if not v.context]
    changed: list[tuple[FrameValue, FrameValue]] = []
    equal: list[str] = []
    kinds = sorted({v.kind for v in va} & {v.kind for v in vb})
    for kind in kinds:
        xs = [v for v in va if v.kind == kind]
        ys = [v for v in vb if v.kind == kind]
        pairs = [(x, y) for x in xs for y in ys if _comparable(x, y)]
        if not pairs:
            continue
        if any(x.same(y) for x, y in pairs):
            equal.append(kind)
        else:
            changed.append(pairs[0])
    return changed, equal


def _show(v: FrameValue) -> str:
    return v.text.replace("$ ", "$").replace("€ ", "€").replace("£ ", "£")


def _words_of(f: Frame, promoted: set[str], main_only: bool) -> set[str]:
    return {w for w, _, ctx in f.words if not (main_only and ctx)} - promoted


def _unmatched_words(mine: set[str], theirs: set[str]) -> set[str]:
    """Words of `mine` the other side does not have; a hyphenated compound is matched by its parts."""
    out = set()
    for w in mine:
        if w in theirs:
            continue
        parts = [concept(p) for p in w.split("-") if p and p not in STOP]
        if "-" in w and parts and all(p in theirs for p in parts):
            continue
        out.add(w)
    return out


def _parts_matched(mine: set[str], theirs: set[str]) -> set[str]:
    """Words of `mine` that are parts of a compound the other side writes ("checked bag" / "checked-bag")."""
    out = set()
    for w in theirs:
        if "-" in w:
            parts = {concept(p) for p in w.split("-") if p and p not in STOP}
            if parts and parts <= mine:
                out |= parts
    return out


def compare(a: Frame, b: Frame) -> Comparison:
    """Does `a` (the newer claim) restate `b`'s attribute of `b`'s subject with another value?"""
    ma, mb = resolve(a, b)
    promoted_a = {m.tokens[0] for m in ma if m not in a.marks}
    promoted_b = {m.tokens[0] for m in mb if m not in b.marks}
    main_a = [m for m in ma if not m.context]
    main_b = [m for m in mb if not m.context]
    shared_marks = [m for m in ma if _matched(m, mb)]
    ua = [m for m in main_a if not _matched(m, mb)]
    # An old name the newer claim mentions only in passing ("Dr. Reyes is on sabbatical, so …") is
    # still the old value, so B's names are matched against A's main clause only.
    ub = [m for m in main_b if not _matched(m, main_a)]

    wa_main, wb_main = _words_of(a, promoted_a, True), _words_of(b, promoted_b, True)
    wa_all, wb_all = _words_of(a, promoted_a, False), _words_of(b, promoted_b, False)
    shared = ((wa_all & wb_all) | _parts_matched(wa_all, wb_all) | _parts_matched(wb_all, wa_all)) \
        - {"limit", "minimum"}
    only_a = _unmatched_words(wa_main, wb_all) - _parts_matched(wa_main, wb_all) - {"limit", "minimum"}
    only_b = _unmatched_words(wb_main, wa_all) - _parts_matched(wb_main, wa_all) - {"limit", "minimum"}
    # A word the other claim writes inside a name ("the evening MBA" / "Evening MBA tuition") is no difference.
    only_a -= {concept(t) for m in mb for t in m.tokens} | {t for m in mb for t in m.tokens}
    only_b -= {concept(t) for m in ma for t in m.tokens} | {t for m in ma for t in m.tokens}
    amb_a = {low for low, _, ctx in a.ambiguous if not ctx and low not in promoted_a and concept(low) not in wb_all}
    amb_b = {low for low, _, ctx in b.ambiguous if not ctx and low not in promoted_b and concept(low) not in wa_all}

    # ---- names and codes
    tokens_a = {x for m in ma for t in m.tokens for x in (t, concept(t))} | wa_all
    tokens_b = {x for m in mb for t in m.tokens for x in (t, concept(t))} | wb_all
    for m, other, marks in [(m, tokens_b, mb) for m in ua] + [(m, tokens_a, ma) for m in ub]:
        mine = {concept(t) for t in m.tokens} | set(m.tokens)
        if not _matched(m, marks) and mine & other and not {concept(t) for t in m.tokens} <= other:
            # "Executive MBA" / "evening MBA", "Lakeside Rowing Club" / "Riverside Rowing Club"
            return Comparison(False, "subject", 0.0, f"{m.text!r} is a variant of something the other claim names")
    amb_a -= {t for m in mb for t in m.tokens}
    amb_b -= {t for m in ma for t in m.tokens}
    if (ua and amb_b) or (ub and amb_a):
        # a name on one side, an unexplained capitalised first word on the other ("Business plan …")
        named = (ua or ub)[0].text
        instead = sorted(amb_b if ua else amb_a)
        return Comparison(False, "subject", 0.0, f"{named!r} on one side, {instead[:2]} in its place on the other")
    name_slot: tuple[Mark, Mark] | None = None
    if ua and ub:
        pairs = [(x, y) for x in ua for y in ub if bool(x.coded) == bool(y.coded)
                 and not (x.possessive or y.possessive or x.conjoined or y.conjoined or x.owned or y.owned)
                 and not (x.subject_region and y.subject_region)]
        # Prefer two objects ("gate A10" / "gate B32"); a name that changes grammatical role between
        # the two wordings ("Jess Moreno captains …" / "… named Alicia Duarte") only when it is alone.
        pairs.sort(key=lambda p: (p[0].subject_region + p[1].subject_region, p[0].position, p[1].position))
        for x, y in pairs:
            if (x.subject_region or y.subject_region) and (len(ua) > 1 or len(ub) > 1):
                continue
            if (x.modifier and not x.subject_region) or (y.modifier and not y.subject_region):
                continue  # "manages the Everly–Acme contract": a name that says which thing, not its value
            name_slot = (x, y)
            break
        if name_slot is None:
            who = ", ".join(m.text for m in ua[:2]) + " / " + ", ".join(m.text for m in ub[:2])
            return Comparison(False, "subject", 0.0, f"names or codes differ on both sides: {who}")
        rest_a = [m for m in ua if m is not name_slot[0]]
        rest_b = [m for m in ub if m is not name_slot[1]]
        if rest_a and rest_b:
            return Comparison(False, "subject", 0.0,
                              f"more than one name differs: {rest_a[0].text!r} / {rest_b[0].text!r}")
        rest = rest_a + rest_b
    else:
        rest = ua + ub
    for m in rest:
        if m.possessive or m.conjoined:
            return Comparison(False, "subject", 0.0, f"{m.text!r} is named by one claim only")
    # A subject named on one side ("The Lakeside Rowing Club squad …") and other words in its place on
    # the other ("The customer support team …") are two subjects, not one named two ways.
    for m in rest:
        other_words = only_b if m in ua else only_a
        if m.subject_region and not m.context and other_words:
            return Comparison(False, "subject", 0.0,
                              f"{m.text!r} on one side, {sorted(other_words)[:2]} in its place on the other")

    for side, other in ((a.possessed, wb_all), (b.possessed, wa_all)):
        refined = sorted(w for w in side if w in ROLE_NOUNS and w not in other)
        if refined:
            return Comparison(False, "subject", 0.0, f"another subject: someone's {refined[0]!r}")
    hyphen_a = sorted(w for w in only_a if "-" in w and not w[:1].isdigit())
    hyphen_b = sorted(w for w in only_b if "-" in w and not w[:1].isdigit())
    if hyphen_a and hyphen_b:
        # "billing-api" / "billing-worker": hyphenated names are identifiers, and these differ
        return Comparison(False, "subject", 0.0, f"{hyphen_b[0]!r} / {hyphen_a[0]!r}: another identifier")
    bounded_a = a.limit or "minimum" in wa_main
    bounded_b = b.limit or "minimum" in wb_main
    if bounded_a != bounded_b:
        return Comparison(False, "attribute", 0.0, "one states a limit, the other a figure: not the same attribute")
    coded_anchor = any(m.coded for m in shared_marks)
    if wb_main and only_a and not (wb_main & (shared | {"limit", "minimum"})) \
            and not _parts_matched(wb_main, wa_all):
        return Comparison(False, "frame", 0.0,
                          f"nothing of the older claim's frame is in the newer: {sorted(wb_main)[:3]}")
    anchor = len(shared) + 2 * len(shared_marks)

    # ---- values
    changed, equal = _value_slots(a, b)
    dated = {"date", "time"}
    if changed:
        kinds = {x.kind for x, _ in changed}
        if kinds & dated and kinds - dated - {"state"}:
            return Comparison(False, "occasion", 0.0, "dates and values both differ: two occasions, not an update")
        if kinds <= dated and any(k not in dated and k != "state" for k in equal):
            return Comparison(False, "occasion", 0.0, "the same value on another date: two occasions")
        if name_slot is not None:
            return Comparison(False, "subject", 0.0,
                              f"a name differs as well as the value ({name_slot[0].text!r} / {name_slot[1].text!r})")
        if len(kinds) > 1:
            # "The gym opens at 6:00" / "The gym closes at 22:00": two things changed, so they are two facts
            return Comparison(False, "attribute", 0.0, f"more than one kind of value differs: {sorted(kinds)}")
    def _specific(kind: str) -> bool:
        return kind in dated or kind.startswith(("money", "version"))

    specific = (bool(changed) and all(_specific(x.kind) for x, _ in changed)) or (
        not changed and bool(equal) and all(_specific(k) for k in equal))
    if anchor < 2 and not (anchor == 1 and specific and len(only_a) + len(only_b) <= 2 and not (only_a and only_b)):
        return Comparison(False, "frame", 0.0, f"too little in common ({sorted(shared)[:4]})")

    # ---- one subject, two of its attributes ("Yuki Benali's furosemide" / "sertraline for Yuki Benali")
    for x in ma:
        if x.attached is None or x.attached in wb_all:
            continue
        for y in mb:
            if y.attached is not None and y.attached != x.attached and y.attached not in wa_all and _matched(x, [y]):
                return Comparison(False, "substitution", 0.0,
                                  f"{y.attached!r} of {y.text!r} → {x.attached!r}: another attribute of it")

    # ---- different modifiers of one noun ("the supply contract" / "the licensing contract")
    mods_a, mods_b = _modifiers(a, shared), _modifiers(b, shared)
    for head in sorted(set(mods_a) & set(mods_b)):
        mod_a, mod_b = mods_a[head], mods_b[head]
        if mod_a != mod_b and mod_a in only_a and mod_b in only_b:
            return Comparison(False, "substitution", 0.0, f"{mod_b!r} {head} → {mod_a!r} {head}: another {head}")

    # ---- alignment: a word swapped in place is a sibling fact, unless it is the value
    matcher = difflib.SequenceMatcher(None, a.sequence, b.sequence, autojunk=False)
    alike = matcher.ratio() >= 0.5
    category: tuple[str, str] | None = None
    swaps: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace":
            continue
        xs = [w for w in a.sequence[i1:i2] if w in only_a]
        ys = [w for w in b.sequence[j1:j2] if w in only_b]
        if not xs or not ys or i2 - i1 > 2 or j2 - j1 > 2:
            continue
        right = i2 < len(a.sequence) and j2 < len(b.sequence) and a.sequence[i2] == b.sequence[j2]
        left = i1 > 0 and j1 > 0 and a.sequence[i1 - 1] == b.sequence[j1 - 1]
        if left or right:
            swaps.append((" ".join(xs), " ".join(ys)))
            if category is None and len(xs) == len(ys) == 1 and right and a.sequence[i2][:1] not in {"@", "<"} \
                    and _after_verb(a, xs[0]) and _after_verb(b, ys[0]):
                category = (xs[0], ys[0])
    slot: str
    detail: str
    old_value = new_value = ""
    if changed:
        new_v, old_v = changed[0]
        slot = "state" if new_v.kind == "state" else "value"
        detail = f"{new_v.kind.split(':')[0]} {_show(old_v)!r} → {_show(new_v)!r}"
        old_value, new_value = f"{old_v.kind}={old_v.key}", f"{new_v.kind}={new_v.key}"
        if swaps and alike:
            return Comparison(False, "substitution", 0.0,
                              f"{swaps[0][1]!r} → {swaps[0][0]!r} in place: a sibling fact, not a new value")
    elif name_slot is not None:
        x_m, y_m = name_slot
        slot = "code" if x_m.coded else "name"
        detail = f"{slot} {y_m.text!r} → {x_m.text!r}"
        old_value, new_value = f"{slot}={y_m.text}", f"{slot}={x_m.text}"
    elif equal and not (only_a and only_b):
        return Comparison(False, "restatement", 0.0, f"the same {equal[0].split(':')[0]} again: not an update")
    elif shared_marks and not ua and not ub and not (only_a and only_b) and (len(shared_marks) >= 2 or shared) \
            and not [v for v in a.values if not v.context] and not [v for v in b.values if not v.context]:
        return Comparison(False, "restatement", 0.0, "the same names again, nothing else changed: not an update")
    else:
        return Comparison(False, "no_value", 0.0, "no value that changed")

    # ---- what else differs. A typed value pins the attribute down, so some rewording is fine; a
    # name, code or category does not, so then the rest of the two frames must agree.
    if only_a and only_b:
        if slot in {"name", "code", "category"}:
            return Comparison(False, "frame", 0.0,
                              f"the {slot} changed but so did the wording: {sorted(only_b)[:3]} / {sorted(only_a)[:3]}")
        budget = anchor - 1 + (2 if coded_anchor else 0)
        if min(len(only_a), len(only_b)) > (2 if coded_anchor else 1) or len(only_a) + len(only_b) > max(2, budget):
            return Comparison(False, "frame", 0.0,
                              f"different wording of different things: {sorted(only_b)[:3]} / {sorted(only_a)[:3]}")
    spread = anchor / (anchor + 0.5 * (len(only_a) + len(only_b))) if anchor else 0.0
    confidence = round(SLOT_STRENGTH[slot] * (0.7 + 0.3 * spread), 4)
    what = ", ".join([m.text for m in shared_marks][:2] + sorted(shared)[:3])
    return Comparison(True, slot, confidence, f"{detail}; same frame ({what})", old_value, new_value)


def _modifiers(f: Frame, heads: set[str]) -> dict[str, str]:
    """For each shared noun, the content word right before it in the claim ("supply" in "supply contract")."""
    out: dict[str, str] = {}
    words = sorted(f.words, key=lambda w: w[1])
    for (w0, i0, _), (w1, i1, _) in itertools.pairwise(words):
        if i1 == i0 + 1 and w1 in heads and w1 not in out:
            out[w1] = w0
    return out


def _head(f: Frame) -> str | None:
    """The last main-clause content word before the first verb: the head of the subject's noun phrase."""
    if f.first_verb is None:
        return None
    before = [w for w, idx, ctx in f.words if idx < f.first_verb and not ctx]
    return before[-1] if before else None


def _both_bounded(a: Frame, b: Frame) -> bool:
    return any(v.bound for v in a.values) and any(v.bound for v in b.values)


INCLUSION = frozenset(word_list("""
include includes included including contain contains containing offer offers offered support supports
supported cover covers covered feature features allow allows has have
"""))


def _inclusive(f: Frame) -> bool:
    """Does the claim list one of several things ("includes a … clause")? Then another item is no new value."""
    return any(w in INCLUSION for w in re.findall(r"[a-z]+", f.text.lower()))


def _after_verb(f: Frame, word: str) -> bool:
    """Is `word` in the object region (after the first verb)?"""
    if f.first_verb is None:
        return False
    return any(w == word and idx > f.first_verb for w, idx, _ in f.words)


__all__ = ["Comparison", "Frame", "FrameValue", "Mark", "analyse", "compare", "concept", "resolve", "stem"]
