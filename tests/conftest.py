"""One real Neo4j for the whole suite, found in this order: NEO4J_URI, Docker, the local launcher.

If none can be had the integration tests fail with the reason; they never skip, because a
green run that silently skipped the database proves nothing.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from neo4j import Driver

from palimpsest.api.allowed_models import AllowedModels

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

GDS_IMAGE = "neo4j:5.26.24-community"


@dataclass
class Neo4jHandle:
    uri: str
    auth: tuple[str, str] | None
    how: str
    http_url: str | None = None
    version: str = "?"
    gds: str | None = None


_HANDLE: Neo4jHandle | None = None


def _docker_answers() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
        return True
    except Exception:
        return False


def _acquire() -> tuple[Neo4jHandle, Any]:
    if os.environ.get("NEO4J_URI"):
        pw = os.environ.get("NEO4J_PASSWORD")
        auth = (os.environ.get("NEO4J_USER", "neo4j"), pw) if pw else None
        return Neo4jHandle(os.environ["NEO4J_URI"], auth, "NEO4J_URI",
                           os.environ.get("NEO4J_HTTP_URL")), None
    if _docker_answers():
        from testcontainers.community.neo4j import Neo4jContainer  # type: ignore[import-not-found]

        container = Neo4jContainer(GDS_IMAGE, password="palimpsest-test")
        container.with_env("NEO4J_PLUGINS", '["graph-data-science"]')
        container.with_env("NEO4J_dbms_security_procedures_unrestricted", "gds.*")
        container.start()
        http = f"http://{container.get_container_host_ip()}:{container.get_exposed_port(7474)}"
        return Neo4jHandle(container.get_connection_url(), ("neo4j", "palimpsest-test"),
                           "testcontainers", http), container
    from palimpsest.graph.db import local_server as server
    from palimpsest.settings import Settings

    cfg = Settings.from_env().local_server()
    st = server.start(cfg)
    auth = ("neo4j", cfg.password) if cfg.password else None
    return Neo4jHandle(st.bolt_uri, auth, "local launcher (Maven Central jars)", st.http_url), None


@pytest.fixture(scope="session")
def neo4j() -> Iterator[Neo4jHandle]:
    """The database every integration test uses; fails (never skips) when none can be had."""
    global _HANDLE
    try:
        handle, container = _acquire()
    except Exception as exc:
        pytest.fail(f"no Neo4j could be had for the integration tests: {exc}", pytrace=False)
    from neo4j import GraphDatabase

    from palimpsest.graph.db.connection import server_info

    with GraphDatabase.driver(handle.uri, auth=handle.auth) as drv:
        info = server_info(drv)
    handle.version, handle.gds = f"{info.neo4j_version} {info.edition}", info.gds_version
    _HANDLE = handle
    yield handle
    if container is not None:
        container.stop()


@pytest.fixture(scope="session")
def embedder() -> Any:
    from palimpsest.extraction.embeddings import shared_embedder

    return shared_embedder()


@pytest.fixture(scope="session")
def driver(neo4j: Neo4jHandle, embedder: Any) -> Iterator[Driver]:
    from neo4j import GraphDatabase

    from palimpsest.schema.migrate import migrate

    drv = GraphDatabase.driver(neo4j.uri, auth=neo4j.auth, notifications_min_severity="OFF")
    migrate(drv, embedding_dimension=embedder.dimension, embedding_model=embedder.model_name)
    yield drv
    drv.close()


@pytest.fixture
def namespace(driver: Driver) -> Iterator[str]:
    """Isolation: each test writes into its own namespace, removed afterwards."""
    ns = f"t-{uuid.uuid4().hex[:12]}"
    yield ns
    wipe_namespace(driver, ns)


def wipe_namespace(driver: Driver, ns: str) -> None:
    from palimpsest.graph.lifecycle.maintenance import drop_namespace

    drop_namespace(driver, ns)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _HANDLE is not None:
        terminalreporter.write_line(
            f"integration tests ran against Neo4j {_HANDLE.version} with GDS {_HANDLE.gds} "
            f"at {_HANDLE.uri} (via {_HANDLE.how})"
        )


# The models the tests' runtime allows, as an operator would list them (PALIMPSEST_ALLOWED_LLM_MODELS):
# the names the tests call through litellm with mocked responses. A test that loads a model from a
# temporary directory allows that path itself (monkeypatching `runtime.models`).
TEST_MODELS = AllowedModels(llm=frozenset({"gpt-4o-mini", "openai/gpt-4o-mini"}))


def allow_models(monkeypatch: pytest.MonkeyPatch, runtime: Any, **names: str) -> None:
    """Let `runtime` call or load these models too for one test, as an operator listing them would:
    `allow_models(monkeypatch, rt, rerank=str(path))` (kinds: llm, rerank, nli)."""
    from dataclasses import replace

    current = runtime.models
    monkeypatch.setattr(runtime, "models", replace(current, **{
        kind: getattr(current, kind) | {name} for kind, name in names.items()}))


@pytest.fixture(scope="session")
def runtime(driver: Driver, embedder: Any, neo4j: Neo4jHandle) -> Any:
    from palimpsest.api.runtime import Runtime
    from palimpsest.graph.db.connection import Neo4jSettings
    from palimpsest.schema.migrate import schema_meta

    meta = schema_meta(driver) or {}
    return Runtime(Neo4jSettings(uri=neo4j.uri), driver, embedder, int(meta.get("version", 0)), models=TEST_MODELS)


@pytest.fixture
def memory(runtime: Any, namespace: str) -> Any:
    from palimpsest.api.memory import Memory

    return Memory(runtime, namespace)
