"""The demo namespace loads once, shows supersession, and is never duplicated on restart."""

from __future__ import annotations

from typing import Any

import pytest

from palimpsest.api import demo
from palimpsest.api.memory import Memory

pytestmark = pytest.mark.integration


def test_demo_loads_once(runtime: Any, namespace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "DEMO_NAMESPACE", namespace)
    demo.load_demo(runtime)
    demo.load_demo(runtime)
    mem = Memory(runtime, namespace)
    assert mem.stats().claims_by_status == {"current": 4, "superseded": 3}
    packet = mem.recall("where does the payments service keep its data?")
    assert packet.items[0].content.startswith("Payments API moved to database host db-9")
