"""The one shape a claim has inside recall, and the visibility questions asked of it.

An index answer is cut on a narrow row (visibility and words); the claims the cut admits are read
again in full (source, metadata, freshness, exact cosine). Both are `ClaimRow`s: the fields a
narrow row does not carry are None. Times arrive as ISO strings and are decoded once, here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from palimpsest.graph import text
from palimpsest.graph.claims import order as claim_order
from palimpsest.graph.claims.revisions import optional_datetime
from palimpsest.graph.claims.visibility import HiddenReason, end_at, from_micros, hidden_reason


@dataclass(frozen=True, slots=True)
class ClaimRow:
    id: str
    content: str
    claim_key: str | None
    revision: int
    valid_from: datetime | None
    valid_to: datetime | None
    vis_from: Sequence[int]
    vis_to: Sequence[int]
    vis_until: Sequence[int] | None
    retracted_at_revision: int | None
    # Full rows only.
    source: str | None = None
    metadata_json: str | None = None
    recorded_at: datetime | None = None
    tau: float | None = None
    sim: float | None = None  # exact cosine with the query vector, on the index's (1 + cos) / 2 scale
    # Narrow rows only: the score the index answered with.
    score: float | None = None
    # The analysis stored with the claim (graph.text.stored_terms), when its version is current;
    # None: the content is analysed instead. `hits`: how many query terms the stored terms hold, counted
    # by the text answer's statement (narrow text rows only).
    terms: frozenset[str] | None = None
    names: frozenset[str] | None = None
    hits: int | None = None

    @classmethod
    def from_record(cls, row: Mapping[str, Any]) -> ClaimRow:
        return cls(
            id=row["id"], content=row["content"], claim_key=row["claim_key"], revision=row["revision"],
            valid_from=optional_datetime(row["valid_from"]), valid_to=optional_datetime(row["valid_to"]),
            vis_from=row["vis_from"], vis_to=row["vis_to"], vis_until=row.get("vis_until"),
            retracted_at_revision=row["retracted_at_revision"], source=row.get("source"),
            metadata_json=row.get("metadata_json"), recorded_at=optional_datetime(row.get("recorded_at")),
            tau=row.get("tau"), sim=row.get("sim"), score=row.get("score"),
            terms=_frozen(row.get("terms")), names=_frozen(row.get("names")), hits=row.get("hits"),
        )

    def term_set(self) -> frozenset[str]:
        """The claim's terms: stored, or (no current stored analysis) analysed from its content."""
        return self.terms if self.terms is not None else text.term_set(self.content)

    def tie_key(self) -> tuple[str, str]:
        """What decides between this claim and one that scores alike: its content, then its id
        (graph.claims.order)."""
        return claim_order.tie_key(self.content, self.id)

    def identifiers(self) -> frozenset[str]:
        """The names the claim is about: stored, or analysed from its content."""
        return self.names if self.names is not None else text.identifiers(self.content)

    def hidden_reason(self, revision: int, valid_at: datetime | None) -> HiddenReason | None:
        """Why the claim is not visible at (revision, valid_at); None when it is."""
        return hidden_reason(
            recorded_revision=self.revision, vis_from=self.vis_from, vis_to=self.vis_to,
            retracted_at_revision=self.retracted_at_revision, valid_from=self.valid_from, valid_to=self.valid_to,
            revision=revision, valid_at=valid_at, vis_until=self.vis_until,
        )

    def window_end(self, revision: int) -> datetime | None:
        """Where a visible claim's world-time window ended as of `revision` (its stated end if it records none)."""
        until = end_at(self.vis_from, self.vis_to, self.vis_until, revision)
        return self.valid_to if until is None else from_micros(until)


def _frozen(values: Sequence[str] | None) -> frozenset[str] | None:
    return None if values is None else frozenset(values)


def rows_from(records: Sequence[Mapping[str, Any]]) -> list[ClaimRow]:
    return [ClaimRow.from_record(r) for r in records]
