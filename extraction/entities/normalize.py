"""Entity names in canonical form, and the parts of a name that must never be merged away.

Two surface forms name one entity when their canonical forms are equal: casefolded, Unicode
compatibility-normalised, accents kept (they distinguish names), punctuation and separators
turned into single spaces, a leading article dropped. So "Checkout-API", "checkout api" and
"The checkout API" are one key.

A *code signature* is every token that carries a digit ("db-7" → ("7",), "Q1" → ("q1",)).
Near-duplicate merging by embedding similarity is only ever allowed between names with equal
signatures: embedding models place "db-7" and "db-9" almost on top of each other, and merging
them would silently fuse two machines (or two quarters) into one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence


def word_list(text: str) -> list[str]:
    return text.split()


_SEP_RE = re.compile(r"[^\w]+|_+")
_ARTICLES = frozenset({"the", "a", "an"})
_MONTHS = frozenset(word_list(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
))


def tokens(name: str) -> list[str]:
    """Canonical tokens of a name (casefolded, NFKC, split on anything that is not a word character)."""
    text = unicodedata.normalize("NFKC", name).casefold()
    return [t for t in _SEP_RE.split(text) if t]


def canonical(name: str) -> str:
    """The merge key of a name: its tokens joined by one space, without a leading article."""
    toks = tokens(name)
    while len(toks) > 1 and toks[0] in _ARTICLES:
        toks = toks[1:]
    return " ".join(toks)


def code_signature(name: str) -> tuple[str, ...]:
    """The tokens of a name that carry a digit, in order; names with different signatures never merge."""
    return tuple(t for t in tokens(name) if any(ch.isdigit() for ch in t))


def is_value(name: str) -> bool:
    """Numbers, dates, years, amounts and month names are values a claim states, not entities."""
    toks = tokens(name)
    if not toks:
        return True
    return all(t.isdigit() or t in _MONTHS or _is_number_like(t) for t in toks)


def _is_number_like(tok: str) -> bool:
    # "1990s", "3rd", "25th", "10km", "v2" are values or measurements rather than names.
    m = re.fullmatch(r"(\d+)(s|st|nd|rd|th|km|kg|m|cm|mm|ms|gb|mb|tb|k|bn|mn)?", tok)
    return m is not None


def query_phrases(text: str, max_tokens: int = 6) -> list[str]:
    """Every canonical n-gram (1..max_tokens tokens) of a text, sorted: the keys under which a
    query can name an entity. Recall looks these up against `Entity.canonical` directly, which
    is the same dictionary match the claim-side matcher does, as an index lookup."""
    toks = tokens(text)
    out: set[str] = set()
    for i in range(len(toks)):
        for j in range(i + 1, min(len(toks), i + max_tokens) + 1):
            phrase = canonical(" ".join(toks[i:j]))
            if phrase and not is_value(phrase):
                out.add(phrase)
    return sorted(out)


_WORD_RE = re.compile(r"[^\W_]+")


def surface_of(text: str, keys: Sequence[str]) -> str | None:
    """The text's own spelling of the first occurrence of one of `keys` (canonical names): the span
    from the first to the last of the matching tokens, as written ("ZORBULAX-QUENTAVIAN" for the key
    "zorbulax quentavian"). Used when an erasure leaves an entity with no stored spelling a remaining
    claim still writes: its new name is taken from what a remaining claim does write. None when no
    key occurs."""
    wanted = sorted({tuple(k.split()) for k in keys if k.strip()}, key=lambda t: (-len(t), t))
    if not wanted:
        return None
    words = [(m.start(), m.end(), tokens(m.group(0))) for m in _WORD_RE.finditer(text)]
    flat = [(start, end, tok) for start, end, toks in words for tok in toks]
    for i in range(len(flat)):
        for key in wanted:  # longest key first: "acme keystone" before "acme"
            if i + len(key) <= len(flat) and tuple(t for _, _, t in flat[i:i + len(key)]) == key:
                return text[flat[i][0]:flat[i + len(key) - 1][1]]
    return None
