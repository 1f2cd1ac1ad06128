"""Model-based test: random writes, retractions and inferences, checked after every step against
the reference model of docs/TEMPORAL.md (benchmarks/temporal_reference.py) on a real Neo4j.

After each step the visible set must equal the reference's at every revision so far and at world
instants around every boundary, and `graph.claims.check` must find no broken invariant. Bounded for CI;
`python -m benchmarks.temporal_model --steps N` runs the long version.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from benchmarks.temporal_reference import GRID, KEYS, Reference, Spec, StoreUnderTest, compare
from palimpsest.graph.lifecycle.maintenance import drop_namespace


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    key = draw(st.sampled_from(KEYS))
    start: datetime | None = draw(st.sampled_from([None, *GRID]))
    end = draw(st.sampled_from([None, *(t for t in GRID if start is None or t > start)]))
    return Spec(key, start, end, key is not None and draw(st.booleans()) and draw(st.booleans()))


def test_store_matches_the_reference_model(driver: Any, embedder: Any) -> None:
    namespaces: list[str] = []

    class TemporalMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            ns = f"t-model-{uuid.uuid4().hex[:10]}"
            namespaces.append(ns)
            self.store = StoreUnderTest(driver, ns, embedder.dimension)
            self.ref = Reference()

        @rule(batch=st.lists(specs(), min_size=1, max_size=3))
        def ingest(self, batch: list[Spec]) -> None:
            self.ref.ingest(self.store.ingest(batch), batch)

        @precondition(lambda self: any(c.retracted is None for c in self.ref.claims.values()))
        @rule(pick=st.integers(min_value=0))
        def retract(self, pick: int) -> None:
            standing = sorted(c for c, v in self.ref.claims.items() if v.retracted is None)
            cid = standing[pick % len(standing)]
            self.store.retract(cid)
            self.ref.retract(cid)

        @precondition(lambda self: len(self.ref.claims) >= 2)
        @rule(a=st.integers(min_value=0), b=st.integers(min_value=0))
        def infer(self, a: int, b: int) -> None:
            ids = sorted(self.ref.claims, key=lambda c: self.ref.claims[c].order)
            older, newer = sorted({ids[a % len(ids)], ids[b % len(ids)]}, key=lambda c: self.ref.claims[c].order)[:2] \
                if a % len(ids) != b % len(ids) else (ids[0], ids[-1])
            applied = self.ref.infer(newer, older)
            assert bool(self.store.infer(newer, older, self.ref.claims[newer].recorded)) == applied

        @invariant()
        def agrees_with_the_model(self) -> None:
            if self.ref.revision:
                assert compare(self.store, self.ref) == []

    try:
        run_state_machine_as_test(TemporalMachine, settings=settings(
            max_examples=25, stateful_step_count=20, deadline=None, derandomize=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
    finally:
        for ns in namespaces:
            drop_namespace(driver, ns)
