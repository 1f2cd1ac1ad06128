"""Link text to the entities a namespace already knows: one Aho-Corasick pass per text.

The automaton is built over canonical names and aliases, and run over the canonical token
stream of the text, both padded with spaces, so a hit always starts and ends on a token
boundary ("db-7" never matches inside "db-77", "api" never inside "rapid"). Overlapping hits
are resolved longest first, then leftmost ("Bank of America" wins over "America"), which gives
one deterministic set of links whatever order the dictionary was built in. Matching costs
O(text + hits), independent of the size of the dictionary. Claims are linked with `find_all`
(every hit, overlaps included), whose result only grows with the dictionary: that is what makes a
claim's links the same whichever batch taught the worker each name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import ahocorasick

from palimpsest.extraction.entities.normalize import canonical, tokens


@dataclass(frozen=True)
class Match:
    entity_id: str
    key: str        # the canonical name or alias that matched
    start: int      # token offsets in the text's canonical token stream, half-open
    end: int


class EntityMatcher:
    """A frozen dictionary of (canonical key → entity id). A key claimed by two entities goes to the
    smaller id, so the outcome never depends on insertion order."""

    def __init__(self, entries: Iterable[tuple[str, str]]) -> None:
        owner: dict[str, str] = {}
        for entity_id, name in entries:
            key = canonical(name)
            if not key:
                continue
            if key not in owner or entity_id < owner[key]:
                owner[key] = entity_id
        self._owner = owner
        self._automaton: ahocorasick.Automaton | None = None
        if owner:
            automaton = ahocorasick.Automaton()
            for key, entity_id in owner.items():
                automaton.add_word(f" {key} ", (key, entity_id))
            automaton.make_automaton()
            self._automaton = automaton

    def __len__(self) -> int:
        return len(self._owner)

    def owner(self, key: str) -> str | None:
        return self._owner.get(key)

    def _hits(self, text: str) -> list[Match]:
        if self._automaton is None:
            return []
        toks = tokens(text)
        stream = " " + " ".join(toks) + " "
        # char offset of each token start -> token index
        starts: dict[int, int] = {}
        pos = 1
        for i, t in enumerate(toks):
            starts[pos] = i
            pos += len(t) + 1
        hits: list[Match] = []
        for end_char, (key, entity_id) in self._automaton.iter(stream):
            start_char = end_char - len(key)  # the word is " key ": end_char is its trailing space
            first = starts.get(start_char)
            if first is not None:
                hits.append(Match(entity_id, key, first, first + key.count(" ") + 1))
        return hits

    def find(self, text: str) -> list[Match]:
        """Non-overlapping matches, longest first then leftmost, returned in text order."""
        hits = self._hits(text)
        hits.sort(key=lambda m: (-(m.end - m.start), m.start, m.entity_id))
        taken: list[Match] = []
        used: set[int] = set()
        for m in hits:
            span = set(range(m.start, m.end))
            if span & used:
                continue
            used |= span
            taken.append(m)
        taken.sort(key=lambda m: (m.start, m.end))
        return taken

    def find_all(self, text: str) -> list[Match]:
        """Every match, overlapping ones included ("Bank of America Tower" hits "bank of america
        tower", "bank of america" and "america" if all are keys), in text order.

        This is what links claims to entities: the set of hits only grows as the dictionary grows,
        so linking a claim against the final dictionary, or against the part known when it was
        read plus each later batch's new names, gives the same links — longest-first `find` would
        let a name learnt later hide one linked earlier, making links depend on batch boundaries.
        """
        hits = self._hits(text)
        hits.sort(key=lambda m: (m.start, m.end, m.entity_id))
        return hits
