"""A process start on a migrated database: `migrate` reads once and writes nothing.

The driver fixture (one per test run) has already brought the database to the packaged version, so every
later start (each CLI command, each worker) must find it current in one read-only round trip.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from neo4j import Driver

from palimpsest.schema.migrate import load_migrations, migrate, schema_meta

pytestmark = pytest.mark.integration


class Recording:
    """The real driver, with every query `migrate` sends and its result summary kept."""

    def __init__(self, inner: Driver) -> None:
        self.inner = inner
        self.sent: list[str] = []
        self.writes = 0

    def execute_query(self, query: str, **kwargs: Any) -> Any:
        self.sent.append(query)
        result = self.inner.execute_query(query, **kwargs)
        self.writes += int(result.summary.counters.contains_updates or result.summary.counters.contains_system_updates)
        return result


def test_a_current_database_is_one_read_without_ddl_or_writes(driver: Driver, embedder: Any) -> None:
    dim = embedder.dimension
    recording = Recording(driver)
    version = migrate(cast(Driver, recording), embedding_dimension=dim, embedding_model=embedder.model_name)
    assert version == max(m.version for m in load_migrations(dim))
    assert len(recording.sent) == 1 and recording.sent[0].startswith("OPTIONAL MATCH (m:SchemaMeta"), recording.sent
    assert recording.writes == 0
    meta = schema_meta(driver)
    assert meta is not None and meta["version"] == version
