"""PALIMPSEST_MENTION_CACHE_EDGES: how many entity-graph edges a process holds (api.runtime)."""

from __future__ import annotations

import pytest

from palimpsest.api.runtime import DEFAULT_MENTION_CACHE_EDGES, mention_cache_edges
from palimpsest.schema.errors import BadInputError


def test_unset_gives_the_default_and_zero_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PALIMPSEST_MENTION_CACHE_EDGES", raising=False)
    assert mention_cache_edges() == DEFAULT_MENTION_CACHE_EDGES
    monkeypatch.setenv("PALIMPSEST_MENTION_CACHE_EDGES", "0")
    assert mention_cache_edges() == 0


@pytest.mark.parametrize("raw", ["-1", "many", "1e6"])
def test_a_bad_value_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("PALIMPSEST_MENTION_CACHE_EDGES", raw)
    with pytest.raises(BadInputError) as exc:
        mention_cache_edges()
    assert exc.value.field == "PALIMPSEST_MENTION_CACHE_EDGES"
