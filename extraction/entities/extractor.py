"""Propose entity mentions in a claim without a model: declared subjects, names, identifiers.

Three sources, in decreasing order of trust:

* **declared** — the claim's metadata `subject` / `title` (a string or a list of strings): the
  writer said what the claim is about, so it is an entity even if it is one lower-case word;
* **identifier** — hyphenated / underscored tokens such as `checkout-api`, `db-7`, `COVID-19`:
  in agent memory these name services, hosts, tickets; common English compounds
  ("well-known", "long-term") are left out by their affixes;
* **name** — runs of two or more capitalised words ("Ravi Alvarez", "Bank of America"), allowing
  lower-case connectors inside ("of", "de", "van"); a sentence-initial function word is trimmed
  ("In Paris Hilton's …" → "Paris Hilton"), and a possessive ends the name ("James Petrova's
  report" → "James Petrova", not a second entity "james petrova s"), and so does a sentence: a word
  ending in a full stop that is no abbreviation ("Mt.", "U.S.", an initial "W.") closes the run, so
  "… Johann Strauss II. He" proposes "Johann Strauss II", not "Johann Strauss II. He". An
  interjection or greeting before a name is a vocative, not part of it ("Thanks Mel", "Hey Caroline"
  → "Mel", "Caroline"). With `single_names=True`,
  single capitalised words that do not start a sentence are proposed too (more recall, more
  noise: measured in benchmarks/multihop.py).

Numbers, dates, years and month names are values, never entities (`normalize.is_value`).
The output is a pure function of (text, metadata, options): sorted, deduplicated by canonical form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from palimpsest.extraction.entities.normalize import canonical, is_value, word_list

MentionKind = Literal["declared", "identifier", "name"]
TRUST = {"declared": 0, "identifier": 1, "name": 2}

_WORD = r"[A-Z][\w'’.&]*"
_CONNECTOR = r"(?:of|the|de|del|der|den|di|da|du|van|von|la|le|and|for|on|upon|in|y|e|&)"
_NAME_RE = re.compile(rf"\b{_WORD}(?:[ \t]+(?:{_CONNECTOR}[ \t]+)*{_WORD})+")
_SINGLE_RE = re.compile(rf"\b{_WORD}")
_IDENT_RE = re.compile(r"(?<![\w-])[A-Za-z0-9][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+(?![\w-])")
_DISAMBIGUATION_RE = re.compile(r"\s*\([^()]*\)\s*$")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:;]\s+|\n\s*|[\"“(]\s*)$")
_POSSESSIVE_RE = re.compile(r"(?<=\w)['’]s$")

_LEADING = frozenset(word_list(
    "a an the in on at by for from to of with after before during since when while if as but and or "
    "this that these those his her its their our my your he she it they we i there here however also "
    "according following although because then now later where what who whom whose which why how yet so "
    "thus hence meanwhile despite unlike like many most some several each every both all no not only "
    "upon into onto between among through throughout under over within without against toward towards "
    "born since until till once "
    # Interjections and greetings: "Hey Caroline" addresses Caroline; the greeting is no part of a name.
    "hey hi hello thanks thank wow oh ah yes yeah yep nope ok okay congrats congratulations bye goodbye "
    "sorry please haha lol omg aw aww "
    # Sentence adverbs of time: "Today the Key West line …" is about Key West.
    "today yesterday tomorrow tonight recently currently finally eventually sometimes"
))
# A word ending in a full stop ends its sentence unless it is an abbreviation: one of these, an initial
# ("W."), or dotted inside ("U.S.", "D.C.").
_ABBREVIATIONS = frozenset(word_list(
    "mr mrs ms dr st mt ft jr sr prof gen col lt sgt capt cmdr adm rev sen rep gov pres hon "
    "co inc ltd corp bros no vol ave blvd rd dept univ est"
))
_TRAILING = frozenset(word_list("of the de and for on in to a an"))
_COMMON_PREFIXES = frozenset(word_list(
    "well long short high low self non re co multi semi anti pre post so full part first second third "
    "one two three four five half mid over under all ever far front right left old much cross"
))
_COMMON_SUFFIXES = frozenset(word_list(
    "based like year years old term time known born level scale free wide related up in out off made "
    "owned run style type sized day week month minded looking ended ever"
))


@dataclass(frozen=True)
class Mention:
    surface: str
    canonical: str
    kind: MentionKind


@dataclass(frozen=True)
class ExtractorOptions:
    single_names: bool = False
    max_name_tokens: int = 8
    declared_keys: tuple[str, ...] = ("subject", "title")


def declared_subjects(metadata: Mapping[str, Any], keys: tuple[str, ...] = ("subject", "title")) -> list[str]:
    out: list[str] = []
    for key in keys:
        value = metadata.get(key)
        values = value if isinstance(value, list) else [value]
        out.extend(v.strip() for v in values if isinstance(v, str) and v.strip())
    return out


def _identifier_ok(token: str) -> bool:
    parts = re.split(r"[-_]", token.lower())
    if any(ch.isdigit() for ch in token) or any(ch.isupper() for ch in token[1:]):
        return not is_value(token)
    return parts[0] not in _COMMON_PREFIXES and parts[-1] not in _COMMON_SUFFIXES


def _split_values(words: list[str]) -> list[list[str]]:
    """Cut a capitalised run at value words ("Bank of America in March" → "Bank of America", …)."""
    runs: list[list[str]] = [[]]
    for w in words:
        if is_value(w):
            runs.append([])
        else:
            runs[-1].append(w)
    return [r for r in runs if r]


def _name_end(word: str) -> str | None:
    """The word as a name keeps it when the name ends with it, else None: a possessive ("Orion Freight's
    CEO" → "Orion Freight", "CEO") or the end of a sentence ("Strauss II. He" → "Strauss II", "He")."""
    bare = _POSSESSIVE_RE.sub("", word)
    if bare != word:
        return bare
    stem = word.rstrip(".")
    if stem != word and len(stem) > 1 and "." not in stem and stem.lower() not in _ABBREVIATIONS:
        return stem
    return None


def _split_ends(words: list[str]) -> list[list[str]]:
    """Cut a capitalised run after every word that ends a name (`_name_end`)."""
    runs: list[list[str]] = [[]]
    for w in words:
        end = _name_end(w)
        runs[-1].append(w if end is None else end)
        if end is not None:
            runs.append([])
    return [r for r in runs if r]


def _trim(words: list[str]) -> list[str]:
    while words and words[0].lower() in _LEADING:
        words = words[1:]
    while words and words[-1].lower() in _TRAILING:
        words = words[:-1]
    return words


def propose(text: str, metadata: Mapping[str, Any] | None = None,
            options: ExtractorOptions | None = None) -> list[Mention]:
    """Entity mentions proposed for one claim, one per canonical form (the most trusted kind wins)."""
    opts = options or ExtractorOptions()
    found: dict[str, Mention] = {}

    def add(surface: str, kind: MentionKind) -> None:
        surface = _POSSESSIVE_RE.sub("", surface.strip(" \t\n'’.,;:")).strip(" \t\n'’.,;:")
        key = canonical(surface)
        if not key or is_value(surface) or len(key) < 2:
            return
        prior = found.get(key)
        if prior is None or (TRUST[kind], surface) < (TRUST[prior.kind], prior.surface):
            found[key] = Mention(surface, key, kind)

    for subject in declared_subjects(metadata or {}, opts.declared_keys):
        # "Lilu (mythology)" is about "Lilu": a trailing disambiguation is not part of the name.
        add(_DISAMBIGUATION_RE.sub("", subject) or subject, "declared")
    for m in _IDENT_RE.finditer(text):
        if _identifier_ok(m.group(0)):
            add(m.group(0), "identifier")
    covered: set[int] = set()
    for m in _NAME_RE.finditer(text):
        for run in (part for ended in _split_ends(m.group(0).split()) for part in _split_values(ended)):
            words = _trim(run)
            if 2 <= len(words) <= opts.max_name_tokens:
                add(" ".join(words), "name")
                covered.update(range(m.start(), m.end()))
    if opts.single_names:
        for m in _SINGLE_RE.finditer(text):
            word = m.group(0)
            if (m.start() in covered or word.lower() in _LEADING or text[m.end():m.end() + 1] in {"-", "_"}
                    or _SENTENCE_START_RE.search(text[: m.start()])):
                continue
            add(word, "name")
    return sorted(found.values(), key=lambda x: (x.canonical, x.kind))
