"""Bad input: a typed error naming the field; nothing half-written; one bad batch item fails alone."""

from __future__ import annotations

import pytest

from palimpsest.api.memory import Memory
from palimpsest.schema import limits
from palimpsest.schema.errors import BadInputError, LimitExceededError

pytestmark = pytest.mark.integration

BAD = [
    ({"content": "", "source": "s"}, "content", None),
    ({"content": "x" * (limits.MAX_CONTENT_CHARS + 1), "source": "s"}, "content", limits.MAX_CONTENT_CHARS),
    ({"content": "ok", "source": ""}, "source", None),
    ({"content": "ok", "source": "s", "tau": 0}, "tau", 0),
    ({"content": "ok", "source": "s", "tau": -5}, "tau", 0),
    ({"content": "ok", "source": "s", "valid_from": "not a date"}, "valid_from", None),
    ({"content": "ok", "source": "s", "valid_from": "2026-01-01T00:00:00"}, "valid_from", None),
    # A check across fields names the one to change, not "input".
    ({"content": "ok", "source": "s", "valid_from": "2026-02-01T00:00:00Z", "valid_to": "2026-01-01T00:00:00Z"},
     "valid_to", None),
    ({"content": "ok", "source": "s", "correction": True}, "correction", None),
    ({"content": "   ", "source": "s"}, "content", 1),  # only whitespace: stripped, then empty
    ({"content": "ok", "source": "s", "metadata": {"blob": "y" * limits.MAX_METADATA_BYTES}}, "metadata",
     limits.MAX_METADATA_BYTES),
    ({"content": "ok", "source": "s", "surprise": 1}, "surprise", None),
]


@pytest.mark.parametrize(("raw", "field", "limit"), BAD)
def test_bad_item_is_a_typed_error_naming_the_field(memory: Memory, raw: dict[str, object], field: str,
                                                   limit: object) -> None:
    result = memory.ingest_many([raw])
    error = result.items[0].error
    assert error is not None and not result.items[0].ok
    assert error["field"] == field and error["code"] in {"BAD_INPUT", "LIMIT_EXCEEDED"}
    if limit is not None:
        assert error["limit"] == limit
    if "surprise" not in raw:
        with pytest.raises(BadInputError) as exc:
            memory.ingest(**raw)  # type: ignore[arg-type]
        assert exc.value.field == field
    assert memory.stats().claims_by_status == {} if memory_has_store(memory) else True


def memory_has_store(memory: Memory) -> bool:
    from palimpsest.schema.errors import NotFoundError

    try:
        memory.stats()
    except NotFoundError:
        return False
    return True


def test_one_bad_item_fails_alone_and_the_rest_land(memory: Memory) -> None:
    result = memory.ingest_many([
        {"content": "Good claim one", "source": "s"},
        {"content": "", "source": "s"},
        {"content": "Good claim two", "source": "s", "tau": -1},
        {"content": "Good claim three", "source": "s"},
    ])
    assert [i.ok for i in result.items] == [True, False, False, True]
    assert result.items[1].error and result.items[1].error["field"] == "content"
    assert result.items[2].error and result.items[2].error["code"] == "BAD_INPUT"
    assert memory.stats().claims_by_status == {"current": 2}
    assert result.revision == 1


def test_oversized_batch_is_refused_before_writing(memory: Memory) -> None:
    with pytest.raises(LimitExceededError) as exc:
        memory.ingest_many([{"content": "c", "source": "s"}] * (limits.MAX_BATCH_ITEMS + 1))
    assert exc.value.field == "items" and exc.value.limit == limits.MAX_BATCH_ITEMS


def test_failed_write_leaves_nothing(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after the claims were created, mid-transaction, rolls back everything."""
    memory.ingest("Existing claim", source="s", claim_key="k1")
    from palimpsest.graph.claims import store

    def explode(*_: object) -> None:
        raise RuntimeError("simulated crash between create and supersede")

    monkeypatch.setattr(store, "_supersede", explode)
    with pytest.raises(RuntimeError, match="simulated crash"):
        memory.ingest_many([{"content": "Replacement claim", "source": "s", "claim_key": "k1"},
                            {"content": "Another claim", "source": "s"}])
    stats = memory.stats()
    assert stats.claims_by_status == {"current": 1} and stats.revision == 1
