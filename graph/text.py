"""Text analysis for recall: the terms, identifiers and lexical scores a query and a claim share.

Every function here is pure (the memoised ones cache a pure result), so a packet's lexical
evidence depends on nothing but the texts. The contradiction heuristics in `extraction` tokenise
with their own stopwords and stemming (they split a claim at its verb); recall's terms are tuned
for matching and are not theirs, and `graph` does not import `extraction`.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import snowballstemmer

_TOKEN_RE = re.compile(r"[a-z0-9]+")
_STOPWORD_TEXT = (
    "a an and are as at be by can did do does for from had has have how i in is it its me my of on or our s so "
    "that the their them then there these they this to was we were what when where which who whom why will with "
    "you your now currently current still any about into"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# Possessive quantifiers and the look-behind keep these linear: a name can only start where a word
# starts, and a failed match never backtracks into the word (tokenising was a third of a recall).
_COMPOUND_RE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]++(?:[-_/.\u2013\u2014][A-Za-z0-9]++)+")
_CODE_RE = re.compile(r"(?<![a-z0-9])[a-z]++[0-9][a-z0-9]*+")
_PART_RE = re.compile(r"[-_/.\u2013\u2014\s]+")
_SEPARATOR_RE = re.compile(r"[A-Za-z0-9][-_/.\u2013\u2014][A-Za-z0-9]")
_DIGIT_RE = re.compile(r"[0-9]")
_HEAD_RE = re.compile(r"[ \t]+([a-z0-9]+)")
_NAME_RE = re.compile(r"\b[A-Z][a-z0-9]+(?:\s+[A-Z][a-z0-9]+)+")


def terms(text: str) -> list[str]:
    """Lower-cased content words with a light plural fold, plus identifier terms.

    Identifiers — hyphenated or dotted names (`ledger-scheduler`, `db-7`) and capitalised
    multi-word names (`Ravi Alvarez`) — are kept whole as extra terms: they name *which* thing
    a claim is about, and sharing one is much stronger evidence than sharing its parts.
    """
    return _terms_and_names(text)[0]


def _terms_and_names(text: str) -> tuple[list[str], list[str]]:
    lowered = text.lower()
    # The plural fold ("nodes" -> "node", not "class" or "bus") written inline: this runs for every word
    # of every candidate a recall has not seen before.
    words = [tok[:-1] if len(tok) > 3 and tok[-1] == "s" and tok[-2] != "s" else tok
             for tok in _TOKEN_RE.findall(lowered) if tok not in STOPWORDS]
    names, phrases = _identifier_terms(text, lowered)
    return words + names + phrases, names


@functools.lru_cache(maxsize=65536)
def _analysed(text: str) -> tuple[frozenset[str], frozenset[str]]:
    all_terms, names = _terms_and_names(text)
    return frozenset(all_terms), frozenset(names)


# The version of the analysis above. Every claim stores its terms and names when written (`Claim.terms`,
# `Claim.names`, `Claim.terms_v`), so recall reads them instead of analysing a few hundred texts; a stored
# list is used only when its version is this one, otherwise the text is analysed again. Any change to
# what `terms` or `identifiers` return must bump it (tests/unit/test_stored_terms.py holds a digest of
# the analysis of a fixed corpus and fails until it is bumped), or old claims would be scored by
# another analysis than new ones.
TERMS_VERSION = 1


def stored_terms(text: str) -> dict[str, object]:
    """What a claim stores of its text's analysis: sorted terms and names, and the analysis version."""
    all_terms, names = _analysed(text)
    return {"terms": sorted(all_terms), "names": sorted(names), "terms_v": TERMS_VERSION}


_STEMMERS = threading.local()


@functools.lru_cache(maxsize=1 << 17)
def stem(word: str) -> str:
    """A word's English Snowball (Porter 2) stem: "camped", "camping" and "camps" are one term.

    A question rarely repeats the inflection its answer was written in ("Where has she camped?" /
    "we went camping"). The stemmer keeps state while it works, so each thread has its own; the
    result is a pure function of the word."""
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = snowballstemmer.stemmer("english")
    return str(stemmer.stemWord(word))


@functools.lru_cache(maxsize=65536)
def stemmed(found: frozenset[str]) -> frozenset[str]:
    """Terms with every word replaced by its `stem`; identifier terms ("~…") are names and stay whole.
    Memoised like `term_set` (a frozenset keeps its hash), as the same claims come back recall after recall."""
    return frozenset(t if t.startswith("~") else stem(t) for t in found)


def term_set(text: str) -> frozenset[str]:
    """`terms` as a set, memoised: a recall scores a few hundred texts several ways, and popular
    claims come back recall after recall; the function is pure, so caching changes nothing."""
    return _analysed(text)[0]


def identifiers(text: str) -> frozenset[str]:
    """The names a text is about (identifier terms, without their head-word phrases)."""
    return _analysed(text)[1]


def forget() -> None:
    """Empty the memoised analyses of texts (an erasure: they hold the erased claims' words and names)."""
    for memo in (_analysed, stemmed, _stems, stem):
        memo.cache_clear()


def _identifier_terms(text: str, lowered: str) -> tuple[list[str], list[str]]:
    # Codes that start with a letter and carry a digit (q3, v2, db7) name one thing: "q3" is not
    # "q2". Values with units (300ms, 5mg) and ordinals (99th) start with the digit and are not codes.
    names = ["~" + code for code in _CODE_RE.findall(lowered)] if _DIGIT_RE.search(lowered) else []
    phrases: list[str] = []
    # Most texts have no compound at all; a scan for its separators is far cheaper than the pattern.
    for m in _COMPOUND_RE.finditer(text) if _SEPARATOR_RE.search(text) else ():
        anchor = m.group(0).lower()
        names.append("~" + anchor)
        # A name's head words say *which* of its things: "Acme–Keystone reseller contract" is not
        # "Acme–Keystone supply contract", though both share the name. Only for names (several
        # capitalised parts, or a digit): after "long-term" the next word is just more prose.
        following = _HEAD_RE.match(text, m.end()) if _is_name(m.group(0)) else None
        head = following.group(1).lower() if following else ""
        if head and head not in STOPWORDS:
            phrases.append(f"~{anchor} {head}")
    for m in _NAME_RE.finditer(text):
        parts = [w for w in m.group(0).lower().split() if w not in STOPWORDS]  # "The Acme" -> "acme"
        if len(parts) > 1:
            names.append("~" + " ".join(parts))
    return names, phrases


def _is_name(compound: str) -> bool:
    parts = [p for p in _PART_RE.split(compound) if p]
    return sum(p[0].isupper() for p in parts) >= 2 or any(c.isdigit() for c in compound)


@functools.lru_cache(maxsize=65536)
def _stems(term: str) -> tuple[str, ...]:
    # Truncated parts, so inflections of one name ("auto-renewal", "auto-renews") stay one name.
    return tuple(p[:5] for p in _PART_RE.split(term[1:]) if p)


def names_sibling(query_names: frozenset[str], names: frozenset[str]) -> bool:
    """Does the text name a *sibling* of what the query names, and not the thing itself?

    "checkout-gateway" shares a part with "checkout-scheduler", "Sterling Systems" with
    "Sterling Holdings": a claim that names such a sibling but none of the query's names is about
    something else, however well its other words match. Texts that name nothing are not judged.
    `names` are the text's `identifiers` (stored with the claim, or analysed).
    """
    if not query_names:
        return False
    asked = {_stems(q) for q in query_names}
    own = {_stems(c) for c in names}
    others = own - asked  # naming two things the query names is not naming a sibling
    return any(q not in own and any(set(q) & set(c) for c in others) for q in sorted(asked))


_CAPITALISED_RUN_RE = re.compile(r"[A-Z][\w.\u2019'-]*(?:[ \t]+[A-Z][\w.\u2019'-]*)*")
_POSSESSIVE_RE = re.compile(r"['\u2019]s?$")


def _name_runs(text: str) -> set[str]:
    """Every run of adjacent capitalised words in the text and every part of one, possessives cut
    ("Melanie's" -> "Melanie")."""
    runs: set[str] = set()
    for m in _CAPITALISED_RUN_RE.finditer(text):
        words = [_POSSESSIVE_RE.sub("", w) for w in m.group(0).split()]
        runs.update(" ".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1))
    return runs


def named_source(query: str, sources: Sequence[str]) -> str | None:
    """The one source the query names by name, or None (none named, or several).

    Who said a thing is part of what it is: "What does Melanie's family do?" asks for what Melanie
    said, not for what others said near the same words. A source is named when its capitalised words
    stand in the query as a run of capitalised words ("Priya Raman", or the first name "Priya" when
    no other source starts with it). Sources that are not names ("runbook", "t", "incident-142") are
    never named this way, so stores whose sources are systems or documents are not touched."""
    runs = _name_runs(query)
    if not runs:
        return None
    words = {src: src.split() for src in set(sources)}
    firsts = Counter(parts[0] for parts in words.values() if parts)
    named = [src for src, parts in sorted(words.items())
             if parts and all(p[:1].isupper() for p in parts)
             and (src in runs or (len(parts) > 1 and firsts[parts[0]] == 1 and parts[0] in runs))]
    return named[0] if len(named) == 1 else None


def lucene_query(text: str) -> str:
    """Terms are [a-z0-9]+ only, so no Lucene syntax can come through from user text."""
    return " ".join(_query_words(text))


def _query_words(text: str) -> list[str]:
    return sorted(set(_TOKEN_RE.findall(text.lower())) - STOPWORDS)


# A stem shorter than this is searched whole, not as a prefix: "go*" would match half the vocabulary.
MIN_STEM_PREFIX = 3


@dataclass(frozen=True)
class TextQuery:
    """What recall asks the text index for a query, and the terms its answer is cut on.

    Under `stem_terms` the ranking counts "camping" as a match of "camped" (one stem), so the candidates
    it ranks must be found the same way: a claim that shares only a stem with the question is otherwise
    never fetched, and the ranking cannot count what it never sees. The index stores words, not stems, so
    a word's stem is searched as a prefix — by Lucene ("camp*"), by the exact search of a namespace without
    its own index (a word beginning with it), and in the cut (a stored term beginning with it). A prefix
    finds a little more than the stem ("campaign"); the ranking still counts stems only. Identifier terms
    ("~…", names) and words whose stem is shorter than MIN_STEM_PREFIX are matched whole, as without stems.
    """

    lucene: str  # the Lucene query
    tokens: tuple[str, ...]  # the same as word patterns, for a namespace searched without its own index
    exact: tuple[str, ...]  # query terms the cut counts whole
    prefixes: tuple[str, ...]  # word stems the cut counts as prefixes of a claim's terms

    @classmethod
    def of(cls, text: str, *, stems: bool = False) -> TextQuery:
        words, query_terms = _query_words(text), sorted(set(terms(text)))
        if not stems:
            return cls(" ".join(words), tuple(words), tuple(query_terms), ())
        prefixes = sorted({stem(t) for t in query_terms if not t.startswith("~") and len(stem(t)) >= MIN_STEM_PREFIX})
        exact = [t for t in query_terms if t.startswith("~") or len(stem(t)) < MIN_STEM_PREFIX]
        return cls(" ".join([*words, *(f"{p}*" for p in prefixes)]), (*words, *(f"{p}[a-z0-9]*" for p in prefixes)),
                   tuple(exact), tuple(prefixes))

    @property
    def counted(self) -> int:
        """How many terms the cut counts: the denominator of `share`."""
        return len(self.exact) + len(self.prefixes)

    def share(self, present: frozenset[str]) -> float:
        """The unweighted share of the query's terms a claim (its term set) contains — a prefix counting
        when one of the claim's terms begins with it: the order the text answer is cut on."""
        return self.hits(present) / self.counted if self.counted else 0.0

    def hits(self, present: frozenset[str]) -> int:
        """How many of the query's terms a claim contains (what the candidate statement counts as `hits`)."""
        whole = sum(1 for t in self.exact if t in present)
        return whole + sum(1 for p in self.prefixes if any(x.startswith(p) for x in present))


def pool_idf(doc_terms: Sequence[frozenset[str]], qterms: set[str], identifier_boost: float = 1.0) -> dict[str, float]:
    """BM25-style IDF of the query terms over the candidate pool itself (the candidates' term sets).

    Corpus-wide statistics would make a packet drift as unrelated writes arrive; the pool is a
    function of what is visible at the packet's revision, so these weights are replay-stable.
    Within the pool a subject's name is rare and a word every candidate shares is not, which is
    what tells "Ravi Alvarez" from "Hiroshi Alvarez". Terms no candidate contains carry no
    evidence either way and are left out; identifier terms are weighted up by the policy.
    """
    n = len(doc_terms)
    idf = {}
    for t in sorted(qterms):
        df = sum(1 for d in doc_terms if t in d)
        if df == 0:
            continue
        weight = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        idf[t] = weight * (identifier_boost if t.startswith("~") else 1.0)
    return idf


def weighted_lexical(idf: dict[str, float], present: frozenset[str]) -> float:
    """The IDF-weighted share of the query's terms a text (its term set `present`) contains."""
    total = sum(idf.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in idf.items() if t in present) / total
