"""A reference implementation of docs/TEMPORAL.md, and a harness that holds the real store to it.

The reference is written straight from the table in docs/TEMPORAL.md, as plain loops over every
claim ever written — no revision lists, no incremental state, nothing shared with `graph/` — so a
disagreement means one of the two is wrong about the documented model, not that both copied the
same mistake. `StoreUnderTest` applies the same operations to a real Neo4j namespace through
`graph.claims.store` and `graph.claims.inferred`; `compare` checks the visible set at every revision and at
world instants around every boundary the operations use. The model-based test
(tests/integration/test_temporal_model.py) drives both with hypothesis; `benchmarks.temporal_model`
drives them with long seeded random runs.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from neo4j import Driver

from palimpsest.graph.claims import inferred
from palimpsest.graph.claims.check import check, stored_claims, visible_ids
from palimpsest.graph.claims.store import PreparedClaim, retract, write_claims
from palimpsest.schema.models import ClaimInput

# World instants the generated windows use: few, so starts and ends collide often (the cases
# where the rules differ), with the instants between them checked too.
GRID = tuple(datetime(2001 + i, 1, 1, tzinfo=UTC) for i in range(6))
KEYS = ("k1", "k2", None)


@dataclass(frozen=True)
class Spec:
    """One claim to write: key, stated window, correction flag."""

    key: str | None
    start: datetime | None
    end: datetime | None
    correction: bool = False


@dataclass
class _Claim:
    id: str
    spec: Spec
    order: tuple[int, int]
    recorded: int
    retracted: int | None = None


@dataclass
class _Inference:
    newer: str
    older: str
    revision: int
    undone: int | None = None


def _lo(t: datetime | None) -> datetime:
    return datetime.min.replace(tzinfo=UTC) if t is None else t


def _hi(t: datetime | None) -> datetime:
    return datetime.max.replace(tzinfo=UTC) if t is None else t


@dataclass
class Reference:
    """docs/TEMPORAL.md as a pure-Python store."""

    revision: int = 0
    claims: dict[str, _Claim] = field(default_factory=dict)
    inferences: list[_Inference] = field(default_factory=list)

    # -- the table of cases --------------------------------------------------------------------
    @staticmethod
    def hides(new: Spec, old: Spec) -> bool:
        """Does a later write `new` of the same key hide `old` at every world time (a correction)?"""
        if new.correction:  # the writer said so: every version whose window overlaps
            return _lo(new.start) < _hi(old.end) and _lo(old.start) < _hi(new.end)
        if new.start is None and new.end is None:  # no window at all
            return True
        if _lo(new.start) == _lo(old.start):  # the same start: a new value for the same period
            return True
        # starts earlier and states an end after the old start: it covers the old one's start
        return _lo(new.start) < _lo(old.start) and new.end is not None and new.end > _lo(old.start)

    def standing(self, c: _Claim, revision: int) -> bool:
        return c.recorded <= revision and (c.retracted is None or c.retracted > revision)

    def live(self, c: _Claim, revision: int) -> bool:
        if not self.standing(c, revision):
            return False
        if c.spec.key is not None:
            return not any(d.spec.key == c.spec.key and d.order > c.order and self.standing(d, revision)
                           and self.hides(d.spec, c.spec) for d in self.claims.values())
        return not any(e.older == c.id and e.revision <= revision and (e.undone is None or e.undone > revision)
                       for e in self.inferences)

    def end(self, c: _Claim, live: list[_Claim]) -> datetime:
        """Its stated end, or the start of the next live version of its key if that comes first."""
        end = _hi(c.spec.end)
        if c.spec.key is not None:
            for d in live:
                if d.spec.key == c.spec.key and d.id != c.id and _lo(d.spec.start) > _lo(c.spec.start):
                    end = min(end, _lo(d.spec.start))
        return end

    def visible(self, revision: int, at: datetime | None) -> set[str]:
        return self.visible_at(revision, [at])[0]

    def visible_at(self, revision: int, instants: list[datetime | None]) -> list[set[str]]:
        """`visible` at several instants of one revision (the live set is the same for all of them)."""
        live = [c for c in self.claims.values() if self.live(c, revision)]
        ends = {c.id: self.end(c, live) for c in live}
        return [{c.id for c in live if at is None or _lo(c.spec.start) <= at < ends[c.id]} for at in instants]

    # -- operations ----------------------------------------------------------------------------
    def ingest(self, ids: list[str], specs: list[Spec]) -> None:
        self.revision += 1
        for i, (cid, spec) in enumerate(zip(ids, specs, strict=True)):
            self.claims[cid] = _Claim(cid, spec, (self.revision, i), self.revision)

    def retract(self, cid: str) -> None:
        was_live = self.live(self.claims[cid], self.revision)
        self.revision += 1
        self.claims[cid].retracted = self.revision
        if was_live:
            for e in self.inferences:
                if e.newer == cid and e.undone is None:
                    e.undone = self.revision

    def infer(self, newer: str, older: str) -> bool:
        """An inferred supersession takes effect when both are live and the older has no key."""
        n, o = self.claims[newer], self.claims[older]
        if newer == older or o.spec.key is not None or not (self.live(n, self.revision)
                                                            and self.live(o, self.revision)):
            return False
        self.revision += 1
        self.inferences.append(_Inference(newer, older, self.revision))
        return True


def random_spec(rng: random.Random) -> Spec:
    key = rng.choice(KEYS)
    points = [None, *GRID]
    start = rng.choice(points)
    ends = [None, *(t for t in GRID if start is None or t > start)]
    end = rng.choice(ends) if rng.random() < 0.4 else None
    correction = key is not None and rng.random() < 0.1
    return Spec(key, start, end, correction)


def instants() -> list[datetime | None]:
    """None (no world filter), every grid point, the middle of every gap, and both outsides."""
    out: list[datetime | None] = [None, GRID[0] - timedelta(days=200)]
    for a, b in itertools.pairwise(GRID):
        out.extend([a, a + (b - a) / 2])
    out.extend([GRID[-1], GRID[-1] + timedelta(days=200)])
    return out


class StoreUnderTest:
    """The same operations on a real namespace, through the store's own write functions."""

    def __init__(self, driver: Driver, namespace: str, dimension: int) -> None:
        self.driver, self.namespace = driver, namespace
        self.vector = [1.0 / dimension**0.5] * dimension
        self.written = 0

    def ingest(self, specs: list[Spec]) -> list[str]:
        items = []
        for i, spec in enumerate(specs):
            self.written += 1
            claim = ClaimInput(content=f"claim {self.written} about {spec.key or 'nothing in particular'}",
                               source="model-test", claim_key=spec.key, valid_from=spec.start, valid_to=spec.end,
                               correction=spec.correction)
            items.append(PreparedClaim(i, claim, self.vector))
        return [str(r.id) for r in write_claims(self.driver, self.namespace, items)]

    def retract(self, cid: str) -> None:
        retract(self.driver, self.namespace, cid, "model test")

    def infer(self, newer: str, older: str, revision: int) -> int:
        with self.driver.session() as session:
            return session.execute_write(inferred.write_inferred, self.namespace, [
                inferred.InferredWrite(newer, older, revision, 0.9, "value", "model test")])


def compare(store: StoreUnderTest, ref: Reference) -> list[str]:
    """Every disagreement between the store and the reference, plus every invariant `check` breaks."""
    problems: list[str] = []
    claims = stored_claims(store.driver, store.namespace)
    points = instants()
    for revision in range(0, ref.revision + 1):
        for at, want in zip(points, ref.visible_at(revision, points), strict=True):
            got = visible_ids(claims, revision, at)
            if got != want:
                problems.append(f"revision {revision}, valid_at {at}: store shows {sorted(got - want)} "
                                f"the model hides, hides {sorted(want - got)} the model shows")
    report = check(store.driver, store.namespace)
    if report.revision != ref.revision:
        problems.append(f"store revision {report.revision}, model revision {ref.revision}")
    problems.extend(f"check {v.check}: {v.detail}" for v in report.violations)
    return problems


def random_step(rng: random.Random, store: StoreUnderTest, ref: Reference) -> str:
    """One random operation on both; returns what it was (for reports)."""
    ids = sorted(ref.claims)
    roll = rng.random()
    if ids and roll < 0.15:
        standing = [c for c in ids if ref.claims[c].retracted is None]
        if standing:
            cid = rng.choice(standing)
            store.retract(cid)
            ref.retract(cid)
            return f"retract {cid[:6]}"
    if len(ids) >= 2 and roll < 0.25:
        a, b = sorted(rng.sample(ids, 2), key=lambda c: ref.claims[c].order)
        applied = ref.infer(b, a)
        wrote = store.infer(b, a, ref.claims[b].recorded)
        if bool(wrote) != applied:
            raise AssertionError(f"inference {b[:6]} -> {a[:6]}: store wrote {wrote}, model applied {applied}")
        return f"infer {b[:6]} -> {a[:6]} ({'applied' if applied else 'refused'})"
    specs = [random_spec(rng) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    ref.ingest(store.ingest(specs), specs)
    return "ingest " + ", ".join(f"{s.key}[{_short(s.start)}, {_short(s.end)}){'!' if s.correction else ''}"
                                 for s in specs)


def _short(t: datetime | None) -> str:
    return "-" if t is None else str(t.year)


def describe(ref: Reference) -> dict[str, Any]:
    return {"revision": ref.revision, "claims": len(ref.claims), "inferences": len(ref.inferences)}
