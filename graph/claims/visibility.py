"""When a claim is visible: the bi-temporal rules in one pure module.

Store time: a claim carries the revision intervals in which it was live, as parallel lists
`vis_from` / `vis_to` (half-open, `OPEN` for "still live"). A correction closes the open
interval; a retraction that restores an older claim opens a new one. So "what was live at
revision R" is a lookup, not a replay of the log — and it stays exact after restorations.

World time: `valid_from` / `valid_to` are the window the writer stated. A keyed claim's window can
also be closed by a later version of its key that starts inside it (graph.claims.temporal): that end
is recorded per store interval in `vis_until` (a third parallel list, microseconds since the epoch,
`OPEN` for unbounded), so an as-of recall before the closing revision still sees the window open.
A claim without `vis_until` (written before it existed) ends where it says.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Literal

OPEN = 2**62

HiddenReason = Literal["superseded", "retracted", "not_yet_valid", "expired", "recorded_later"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def current_at(vis_from: Sequence[int], vis_to: Sequence[int], revision: int) -> bool:
    return any(start <= revision < end for start, end in zip(vis_from, vis_to, strict=True))


def end_at(vis_from: Sequence[int], vis_to: Sequence[int], vis_until: Sequence[int] | None,
           revision: int) -> int | None:
    """The world-time end (microseconds) a live claim had at `revision`; None when the claim was not
    live then or records no per-interval ends."""
    if not vis_until:
        return None
    for start, end, until in zip(vis_from, vis_to, vis_until, strict=True):
        if start <= revision < end:
            return int(until)
    return None


def micros(value: datetime | None) -> int:
    """A world instant as integer microseconds since the epoch; None (an unbounded end) is `OPEN`.
    Integers keep the per-interval end lists homogeneous and exact in Neo4j."""
    if value is None:
        return OPEN
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def hidden_reason(
    *,
    recorded_revision: int,
    vis_from: Sequence[int],
    vis_to: Sequence[int],
    retracted_at_revision: int | None,
    valid_from: datetime | None,
    valid_to: datetime | None,
    revision: int,
    valid_at: datetime | None,
    vis_until: Sequence[int] | None = None,
) -> HiddenReason | None:
    """None when the claim is visible at (revision, valid_at); otherwise why it is not.

    A window closed by a later version of the key hides the claim as `superseded` (the world moved
    on to the next version); a window that ends where its writer said hides it as `expired`."""
    if recorded_revision > revision:
        return "recorded_later"
    if not current_at(vis_from, vis_to, revision):
        if retracted_at_revision is not None and retracted_at_revision <= revision:
            return "retracted"
        return "superseded"
    if valid_at is not None:
        if valid_from is not None and valid_at < valid_from:
            return "not_yet_valid"
        if valid_to is not None and valid_at >= valid_to:
            return "expired"
        until = end_at(vis_from, vis_to, vis_until, revision)
        if until is not None and until < OPEN and micros(valid_at) >= until:
            return "superseded"
    return None


def windows_overlap(a_from: datetime | None, a_to: datetime | None, b_from: datetime | None,
                    b_to: datetime | None) -> bool:
    """Do two half-open world-time windows share an instant? A missing bound is unbounded."""
    return (a_to is None or b_from is None or b_from < a_to) and (b_to is None or a_from is None or a_from < b_to)


def from_micros(value: int) -> datetime | None:
    return None if value >= OPEN else _EPOCH + timedelta(microseconds=value)
