"""The GraphQL examples of docs/GRAPHQL.md and docs/RECALL.md are what a real run answers
(scripts/readme_examples.py; `make docs` rewrites them). Before this test the examples showed a
fingerprint and a score of an older code base, and left out the `{"data": …}` every client receives."""

from __future__ import annotations

from typing import Any

import pytest

from palimpsest.api import demo
from palimpsest.api.memory import Memory
from scripts.readme_examples import EXAMPLE, FILES, ROOT, rewritten

pytestmark = pytest.mark.integration


def test_docs_graphql_examples_match_a_real_run(runtime: Any, namespace: str) -> None:
    memory = Memory(runtime, namespace)
    for batch in demo.DEMO_CLAIMS:
        memory.ingest_many(batch)
    texts = {path: path.read_text(encoding="utf-8") for path in FILES}
    assert sum(len(EXAMPLE.findall(text)) for text in texts.values()) >= 4, "the GraphQL examples are gone"
    for path, text in texts.items():
        assert EXAMPLE.search(text), f"{path.relative_to(ROOT)} shows no GraphQL example any more"
        drift = f"{path.relative_to(ROOT)}: examples drifted: run `make docs`"
        assert rewritten(text, runtime, namespace) == text, drift
