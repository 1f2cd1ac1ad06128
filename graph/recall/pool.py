"""The candidate pool: which claims an index answer admits, and which hidden versions lend their match.

`Pool` is a value: every step that changes it returns a new one. Nothing here talks to Neo4j —
the rows these steps judge were read by `graph.recall.candidates`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from palimpsest.graph.claims.visibility import current_at
from palimpsest.graph.recall.rows import ClaimRow
from palimpsest.schema.limits import MAX_CANDIDATES

# Per candidate id, the hidden versions whose match it may borrow (packet ranking picks the best).
Lenders = dict[str, list[ClaimRow]]


@dataclass(frozen=True)
class Pool:
    rows: Mapping[str, ClaimRow] = field(default_factory=dict)  # visible at R, in admission order
    hidden: Mapping[str, str] = field(default_factory=dict)  # id -> why it is hidden at R
    exhausted: bool = False
    superseded: Mapping[str, ClaimRow] = field(default_factory=dict)  # hidden as superseded at R
    inferred: frozenset[str] = frozenset()  # of those, hidden by an inferred supersession
    # Hidden as superseded although current at R: a later version's world-time window had taken over at
    # valid_at. Kept for every hidden row, whichever step met it (explain tells the two rules apart).
    closed: frozenset[str] = frozenset()

    def with_rows(self, rows: Iterable[ClaimRow], revision: int, valid_at: datetime | None) -> Pool:
        """Visible rows join the pool (first sighting wins); the others are counted as hidden."""
        admitted, hidden, closed = dict(self.rows), dict(self.hidden), set(self.closed)
        for row in rows:
            reason = row.hidden_reason(revision, valid_at)
            if reason is None:
                admitted.setdefault(row.id, row)
            else:
                hidden.setdefault(row.id, reason)
                if _window_closed(row, reason, revision):
                    closed.add(row.id)
        return replace(self, rows=admitted, hidden=hidden, closed=frozenset(closed))


def _window_closed(row: ClaimRow, reason: str, revision: int) -> bool:
    """Is the row hidden as superseded while current at `revision` (its window was closed at valid_at, not
    its version replaced)?"""
    return reason == "superseded" and current_at(row.vis_from, row.vis_to, revision)


def admit_answer(pool: Pool, rows: Sequence[ClaimRow], raw: int, fetch: int, need: int, revision: int,
                 valid_at: datetime | None, order: Callable[[ClaimRow], Any]) -> Pool | None:
    """The pool with the first `need` visible rows of one index answer; None when the fetch must grow.

    The cut to `need` is made on our own total order (score, then id) — not on the order the
    index happened to return. Approximate search and tied scores can shuffle the tail of an
    index answer between two identical calls; with the cut made here, that tail never decides
    which candidates enter the pool.
    """
    ordered = sorted(rows, key=order)
    reasons = [row.hidden_reason(revision, valid_at) for row in ordered]
    visible = sum(1 for reason in reasons if reason is None)
    if visible < need and raw >= fetch and fetch < MAX_CANDIDATES:
        return None
    admitted, hidden, superseded = dict(pool.rows), dict(pool.hidden), dict(pool.superseded)
    closed = set(pool.closed)
    taken = 0
    for row, reason in zip(ordered, reasons, strict=True):
        if taken >= need:
            break
        if reason is None:
            taken += 1
            admitted.setdefault(row.id, row)
        else:
            hidden.setdefault(row.id, reason)
            if _window_closed(row, reason, revision):
                closed.add(row.id)
            if reason == "superseded":
                superseded.setdefault(row.id, row)
    return replace(pool, rows=admitted, hidden=hidden, superseded=superseded, closed=frozenset(closed),
                   exhausted=pool.exhausted or (visible < need and raw >= fetch))


def lending_keys(pool: Pool) -> list[str]:
    """The claim_keys of every candidate and hidden superseded version: their versions may lend."""
    return sorted({r.claim_key for r in (*pool.rows.values(), *pool.superseded.values()) if r.claim_key is not None})


def with_full_rows(pool: Pool, full: Iterable[ClaimRow], inferred: frozenset[str]) -> Pool:
    """The admitted narrow rows replaced by full rows, with what inference hid."""
    by_id = {row.id: row for row in full}
    # A claim can only vanish with its namespace (a concurrent drop) or by an erasure (graph.lifecycle.erase).
    return replace(pool, rows={cid: by_id[cid] for cid in pool.rows if cid in by_id}, inferred=inferred)


def key_lenders(pool: Pool, versions: Sequence[ClaimRow], revision: int,
                valid_at: datetime | None) -> tuple[Pool, Lenders]:
    """Every version of a candidate's claim_key lends its match to the version current at R.

    A claim_key says "these claims are versions of one fact", so a fact is judged by its best
    wording among the versions that existed at R — not only by the versions that happened to
    make the index cut. Judging by the cut alone is asymmetric: a similar fact about another
    subject whose old wording made the cut would borrow that match, while the asked-about fact
    whose old wording fell just below it would not. The current version joins the pool (its
    `matched_via` says which version matched). Retracted claims lend nothing — they were
    mistakes, not earlier truths. `versions` holds every claim recorded by R of every key the
    index answers touched (the candidate query fetched them), so no further round trip is needed.
    """
    keys = set(lending_keys(pool))
    current: dict[str, ClaimRow] = {}
    earlier: dict[str, dict[str, ClaimRow]] = {}
    for row in versions:
        key = row.claim_key
        if key is None or key not in keys:
            continue
        reason = row.hidden_reason(revision, valid_at)
        if reason is None:
            current[key] = row
        elif reason == "superseded":
            earlier.setdefault(key, {})[row.id] = row
    rows = dict(pool.rows)
    lenders: Lenders = {}
    for key in sorted(keys):
        successor = current.get(key)
        if successor is None or not earlier.get(key):
            continue
        rows.setdefault(successor.id, successor)
        lenders[successor.id] = [earlier[key][i] for i in sorted(earlier[key])]
    return replace(pool, rows=rows), lenders


def inferred_olds(pool: Pool, known: Mapping[str, ClaimRow]) -> list[str]:
    """Keyless candidates an inferred supersession hid: they lend to the end of their inferred chain."""
    return sorted(cid for cid in pool.inferred if cid in known and known[cid].claim_key is None)


def inferred_lenders(pool: Pool, successors: Mapping[str, str], known: Mapping[str, ClaimRow],
                     lenders: Lenders) -> Lenders:
    """A keyless claim hidden by inferred supersession lends its match to the claim at the end of its
    inferred chain, as a key's versions do: the worker judged them one fact, so a query worded like
    the old statement still finds the new one. Successors not in `pool` lend nothing."""
    merged = {cid: list(olds) for cid, olds in lenders.items()}
    for old, successor in sorted(successors.items()):
        if successor in pool.rows:
            merged.setdefault(successor, []).append(known[old])
    return merged
