"""The README's GraphQL examples are what a real run answers (scripts/readme_examples.py; `make docs`
rewrites them). Before this test the README showed a fingerprint and a score of an older code
base, and left out the `{"data": …}` every client receives."""

from __future__ import annotations

from typing import Any

import pytest

from palimpsest.api import demo
from palimpsest.api.memory import Memory
from scripts.readme_examples import EXAMPLE, README, rewritten

pytestmark = pytest.mark.integration


def test_readme_graphql_examples_match_a_real_run(runtime: Any, namespace: str) -> None:
    memory = Memory(runtime, namespace)
    for batch in demo.DEMO_CLAIMS:
        memory.ingest_many(batch)
    text = README.read_text(encoding="utf-8")
    assert len(EXAMPLE.findall(text)) >= 3, "the README's GraphQL examples are gone"
    assert rewritten(text, runtime, namespace) == text, "README examples drifted: run `make docs`"
