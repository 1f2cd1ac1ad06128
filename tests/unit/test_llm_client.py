"""The shared LLM plumbing: a caller's client is built once, on its first call, from the caller's
completion function."""

from __future__ import annotations

from typing import Any

import pytest

from palimpsest.extraction import llm_client
from palimpsest.extraction.llm_client import LazyClient


def test_the_client_is_built_on_first_use_once_and_from_the_callers_completion(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Any] = []

    def fake_json_client(completion: Any = None) -> object:
        built.append(completion)
        return object()

    monkeypatch.setattr(llm_client, "json_client", fake_json_client)

    def completion(**_: Any) -> None:
        return None

    lazy = LazyClient(completion)
    assert built == []  # constructing a caller loads nothing
    first = lazy.get()
    assert lazy.get() is first
    assert built == [completion]
