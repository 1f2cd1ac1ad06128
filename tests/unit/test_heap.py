"""api.heap: start-up's heap is frozen out of the collector's reach, and given back before exit."""

from __future__ import annotations

import gc

from palimpsest.api import heap


def _in_oldest_generation(objects: list[list[int]]) -> int:
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    return sum(1 for o in objects if id(o) in oldest)


def test_freezing_moves_the_live_heap_out_of_the_collectors_reach_and_unfreezing_gives_it_back() -> None:
    gc.unfreeze()
    kept = [[i] for i in range(1000)]  # lists are tracked by the collector
    try:
        frozen = heap.freeze_startup()
        assert frozen > len(kept) and gc.get_freeze_count() > 0
        assert _in_oldest_generation(kept) == 0  # no collection walks them now
    finally:
        heap.unfreeze()
    assert gc.get_freeze_count() == 0
    assert _in_oldest_generation(kept) == len(kept)  # back where a full collection sees them
