"""The shared LLM plumbing: a caller's client is built once, on its first call, from the caller's
completion function."""

from __future__ import annotations

import sys
import types
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


@pytest.mark.parametrize("bad", ["1.82.7", "1.82.8"])
def test_a_compromised_litellm_is_refused_before_it_is_imported(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    asked: list[str] = []

    def version(name: str) -> str:
        asked.append(name)
        return bad

    monkeypatch.setattr(llm_client.metadata, "version", version)
    monkeypatch.setattr(llm_client, "_litellm_checked", False)
    # Were the import attempted, it would raise ModuleNotFoundError, not the guard's error.
    monkeypatch.setitem(sys.modules, "litellm", None)
    with pytest.raises(llm_client.CompromisedPackageError, match=f"litellm {bad} is installed"):
        llm_client.import_litellm()
    with pytest.raises(llm_client.CompromisedPackageError):
        llm_client.json_client(lambda **_: None)  # a caller's own completion does not skip the check
    assert asked and set(asked) == {"litellm"}
    assert llm_client.price(object(), "gpt-4o-mini") is None  # pricing says "unpriced", never imports it


def test_the_pinned_litellm_is_imported_once_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_client.metadata, "version", lambda name: "1.110.2")
    monkeypatch.setattr(llm_client, "_litellm_checked", False)
    fake = types.ModuleType("litellm")
    monkeypatch.setitem(sys.modules, "litellm", fake)
    assert llm_client.import_litellm() is fake
    assert fake.suppress_debug_info is True  # type: ignore[attr-defined]
    monkeypatch.setattr(llm_client.metadata, "version", lambda name: "1.82.7")
    assert llm_client.import_litellm() is fake  # checked once per process, not on every call
