"""`make run`'s promise: /health reports the Neo4j and GDS versions and the embedding model."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from neo4j import Driver

from palimpsest.api.app import create_app
from palimpsest.api.runtime import Runtime
from palimpsest.graph.db.connection import Neo4jSettings

pytestmark = pytest.mark.integration


@pytest.fixture
def client(driver: Driver, embedder: Any, neo4j: Any) -> Any:
    rt = Runtime(Neo4jSettings(uri=neo4j.uri), driver, embedder, schema_version=4)
    with TestClient(create_app(rt), base_url="http://localhost") as c:
        yield c


def test_health_reports_versions_and_model(client: TestClient) -> None:
    body = client.get("/health").json()
    assert body["status"] == "ok"
    assert body["neo4j"]["version"].startswith("5.26")
    assert body["gds"]["version"].startswith("2.13")
    assert body["embedding"] == {"model": "all-MiniLM-L6-v2", "dimension": 384}
