"""When a claim is visible: the bi-temporal rules in one pure module.

Store time: a claim carries the revision intervals in which it was current, as two parallel
lists `vis_from` / `vis_to` (half-open, `OPEN` for "still current"). A supersession closes the
open interval; a retraction that restores an older claim opens a new one. So "what was current
at revision R" is a lookup, not a replay of the log — and it stays exact after restorations.

World time: `valid_from` / `valid_to` bound when the claim holds; a missing bound is unbounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

OPEN = 2**62

HiddenReason = Literal["superseded", "retracted", "not_yet_valid", "expired", "recorded_later"]


def current_at(vis_from: Sequence[int], vis_to: Sequence[int], revision: int) -> bool:
    return any(start <= revision < end for start, end in zip(vis_from, vis_to, strict=True))


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
) -> HiddenReason | None:
    """None when the claim is visible at (revision, valid_at); otherwise why it is not."""
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
    return None
