"""How keyed claims compose on the world-time axis: the rules of docs/TEMPORAL.md as pure functions.

Store time (revisions) says what the store believed; world time (validity) says when a claim
held. Claims that share a `claim_key` are versions of one fact, and on the world axis a key is a
*timeline*: each live version holds from its start until the next live version starts (or its
own stated end, if earlier). A later write relates to an earlier live version in one of three
ways, decided here by `corrects` and `effective_ends`:

* **correction** — the new version says the old one was wrong, so the old one is hidden at every
  world time: the new claim has no window at all; or it starts where the old one starts; or it
  starts earlier and *states* an end after the old one's start; or the writer said so
  (`correction: true`, which corrects every version whose stated window overlaps its own).
* **succession** — the new version starts after the old one: the world changed, the old claim
  was true until then. Its validity is closed at the new start (at the new revision, so an as-of
  recall before it still sees the window open).
* **backfill** — the new version starts before the old one and states no end (or one before the
  old start): it joins the history and is itself closed by the old version's start.

Starts compare with a missing `valid_from` as the beginning of time. Because equal starts
correct and every end is capped by the next start, live versions never overlap: at most one
claim per key holds at any world instant, at every revision. Nothing here touches Neo4j.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from palimpsest.graph.claims.visibility import OPEN, micros, windows_overlap


@dataclass(frozen=True)
class Version:
    """One claim of a key as the timeline rules see it. `order` is its write position
    (revision, batch position): later writes come after earlier ones."""

    id: str
    order: tuple[int, int]
    valid_from: datetime | None
    valid_to: datetime | None
    correction: bool = False


def _start(v: Version) -> int:
    return -OPEN if v.valid_from is None else micros(v.valid_from)


def _end(v: Version) -> int:
    return micros(v.valid_to)


def corrects(newer: Version, older: Version) -> bool:
    """Does `newer` (written after `older`, same key) hide `older` at every world time?"""
    if newer.correction:
        return windows_overlap(newer.valid_from, newer.valid_to, older.valid_from, older.valid_to)
    if newer.valid_from is None and newer.valid_to is None:
        return True
    s_new, s_old = _start(newer), _start(older)
    if s_new == s_old:
        return True
    return s_new < s_old and newer.valid_to is not None and _end(newer) > s_old


def live_versions(versions: Iterable[Version]) -> list[Version]:
    """The versions no later version corrects, in write order. (Whether a later version is itself
    live does not matter: a correction stands until the correcting claim is retracted.)"""
    ordered = sorted(versions, key=lambda v: (v.order, v.id))
    return [v for i, v in enumerate(ordered) if not any(corrects(later, v) for later in ordered[i + 1:])]


def effective_ends(live: Iterable[Version]) -> dict[str, int]:
    """Each live version's world-time end in microseconds (`OPEN` when unbounded): its stated end,
    capped by the start of the next live version."""
    by_start = sorted(live, key=lambda v: (_start(v), v.order, v.id))
    out: dict[str, int] = {}
    for i, v in enumerate(by_start):
        nxt = by_start[i + 1] if i + 1 < len(by_start) else None
        out[v.id] = min(_end(v), _start(nxt)) if nxt is not None else _end(v)
    return out


def successions(live: Iterable[Version], ends: Mapping[str, int]) -> set[tuple[str, str]]:
    """(later, earlier) pairs where the later version's start closes the earlier one's window."""
    by_start = sorted(live, key=lambda v: (_start(v), v.order, v.id))
    pairs = set()
    for earlier, later in itertools.pairwise(by_start):
        if ends[earlier.id] == _start(later) and _end(earlier) > _start(later):
            pairs.add((later.id, earlier.id))
    return pairs


@dataclass(frozen=True)
class KeyPlan:
    """What one write does to one key's timeline: corrections (new → old), the effective end of
    every live version afterwards, and the succession edges to add and to undo."""

    corrections: list[tuple[str, str]]
    ends: dict[str, int]
    add_successions: set[tuple[str, str]]
    drop_successions: set[tuple[str, str]]


def plan_key(live: Iterable[Version], incoming: Iterable[Version],
             active_successions: set[tuple[str, str]]) -> KeyPlan:
    """Apply `incoming` (in write order) to the key's live versions.

    A new version can only newly correct what is live: what is already hidden stays hidden by
    whoever hid it. So a write reads the key's live versions, not its whole history."""
    current = sorted(live, key=lambda v: (v.order, v.id))
    corrections: list[tuple[str, str]] = []
    for new in sorted(incoming, key=lambda v: (v.order, v.id)):
        hit = sorted((v for v in current if corrects(new, v)), key=lambda v: v.id)
        corrections.extend((new.id, v.id) for v in hit)
        current = [v for v in current if v not in hit] + [new]
    ends = effective_ends(current)
    wanted = successions(current, ends)
    return KeyPlan(corrections, ends, wanted - active_successions, active_successions - wanted)
