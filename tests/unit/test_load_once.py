"""extraction.load_once: one build per key, and a failed build held back for `retry_after` seconds."""

from __future__ import annotations

import pytest

from palimpsest.extraction.load_once import LoadOnce


class Unavailable(Exception):
    pass


def test_builds_once_and_holds_back_a_failure_until_retry_after() -> None:
    memo: LoadOnce[object] = LoadOnce(Unavailable)
    calls: list[str] = []

    def good() -> object:
        calls.append("good")
        return object()

    assert memo.get("a", "model 'a'", good, 60.0) is memo.get("a", "model 'a'", good, 60.0)
    assert calls == ["good"]

    def bad() -> object:
        calls.append("bad")
        raise OSError("no such file")

    for _ in range(3):
        with pytest.raises(Unavailable, match="model 'b' failed to load: OSError: no such file"):
            memo.get("b", "model 'b'", bad, 60.0)
    assert calls == ["good", "bad"]  # held back: one attempt in the interval
    with pytest.raises(Unavailable):
        memo.get("b", "model 'b'", bad, 0.0)  # the interval is over: tried again
    assert calls == ["good", "bad", "bad"]
    assert memo.get("b", "model 'b'", good, 0.0) is not None  # and a later success is kept
