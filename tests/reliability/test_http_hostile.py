"""Issue 13, the HTTP face: the hostile corpus (benchmarks/hostile_http.py) gives no 5xx and a coded
answer for every refusal; bodies are capped as they stream and read against a clock; /metrics
shows a namespace only to callers that may read it and forgets dropped ones.

Transport cases run against a real uvicorn on loopback (with `palimpsest serve`'s settings and
body timeouts of 0.5 s between pieces, 1.5 s per body); the others through the in-process client.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchmarks.hostile_http import CASES, Case, send_raw
from palimpsest.api.app import BODY_CHUNK_TIMEOUT_ENV, BODY_TIMEOUT_ENV, create_app
from palimpsest.api.auth import KeyStore, hash_key
from tests.conftest import wipe_namespace
from tests.reliability.conftest import environment, serving

pytestmark = pytest.mark.integration

CHUNK_TIMEOUT_S, BODY_TIMEOUT_S = 0.5, 1.5
KEY_A, KEY_B, METRICS_KEY = "hostile-key-a", "hostile-key-b", "hostile-metrics-key"
SOCKET_CASES = [c for c in CASES if c.needs_socket]
CLIENT_CASES = [c for c in CASES if not c.needs_socket]


@pytest.fixture(scope="module")
def tenants(driver: Any) -> Iterator[tuple[str, str]]:
    ns = (f"hh-{uuid.uuid4().hex[:10]}-a", f"hh-{uuid.uuid4().hex[:10]}-b")
    yield ns
    for name in ns:
        wipe_namespace(driver, name)


def _keys(ns_a: str, ns_b: str) -> KeyStore:
    entries = KeyStore.from_json(json.dumps([
        {"name": "a", "sha256": hash_key(KEY_A), "namespaces": {ns_a: ["read", "write"]}},
        {"name": "b", "sha256": hash_key(KEY_B), "namespaces": {ns_b: ["read", "write"]}},
    ])).entries
    return KeyStore(entries, metrics_sha256=hash_key(METRICS_KEY))


def _app(runtime: Any, keys: KeyStore) -> Any:
    with environment(**{BODY_CHUNK_TIMEOUT_ENV: str(CHUNK_TIMEOUT_S), BODY_TIMEOUT_ENV: str(BODY_TIMEOUT_S)}):
        return create_app(runtime, keys=keys)


@pytest.fixture(scope="module")
def live_port(runtime: Any, tenants: tuple[str, str]) -> Iterator[int]:
    with serving(_app(runtime, _keys(*tenants))) as port:
        yield port


@pytest.fixture(scope="module")
def client(runtime: Any, tenants: tuple[str, str]) -> Iterator[TestClient]:
    with TestClient(_app(runtime, _keys(*tenants)), base_url="http://localhost") as c:
        yield c


def _code(body: bytes) -> str | None:
    try:
        return str(json.loads(body)["errors"][0]["extensions"]["code"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


@pytest.mark.parametrize("case", SOCKET_CASES, ids=lambda c: c.name)
def test_transport_case(case: Case, live_port: int) -> None:
    answer = send_raw(case, "127.0.0.1", live_port, extra={"Authorization": f"Bearer {KEY_A}"}, timeout=10)
    assert (answer.status, answer.code()) == (case.status, case.code), (answer, case.why)
    if case.status == 413:
        assert answer.seconds < 2.0, f"{case.name}: refused only after {answer.seconds:.2f} s"
    if case.status == 408:
        limit = BODY_TIMEOUT_S if case.interval >= CHUNK_TIMEOUT_S / 2 else CHUNK_TIMEOUT_S
        assert limit * 0.9 <= answer.seconds < limit + 1.0, f"{case.name}: {answer.seconds:.2f} s"
        assert json.loads(answer.body)["errors"][0]["extensions"]["limit"] == limit


@pytest.mark.parametrize("case", CLIENT_CASES, ids=lambda c: c.name)
def test_malformed_request_case(case: Case, client: TestClient) -> None:
    resp = client.request(case.method, case.path, content=case.body or None,
                          headers=case.headers_for({"Authorization": f"Bearer {KEY_A}"}))
    assert (resp.status_code, _code(resp.content)) == (case.status, case.code), (resp.text[:300], case.why)
    if case.code is not None:
        assert resp.headers["content-type"].startswith("application/json")
        assert resp.json()["errors"][0]["message"]


def test_server_still_answers_after_the_corpus(live_port: int) -> None:
    """Refused bodies leave nothing behind: the same server answers an honest request at once."""
    control = next(c for c in CASES if c.name == "control-length")
    for case in (c for c in SOCKET_CASES if c.name in {"chunked-50MiB", "declared-1000-sent-1"}):
        send_raw(case, "127.0.0.1", live_port, timeout=10)
    answer = send_raw(control, "127.0.0.1", live_port, timeout=5)
    assert answer.status == 200 and json.loads(answer.body) == {"data": {"__typename": "Query"}}
    assert answer.seconds < 1.0


def test_refusals_keep_the_request_id(client: TestClient) -> None:
    resp = client.post("/graphql", content=b"[" * 1000, headers={"Content-Type": "application/json",
                                                                   "X-Request-ID": "rid-hostile-1"})
    assert resp.status_code == 400 and resp.headers["x-request-id"] == "rid-hostile-1"


# -- /metrics -----------------------------------------------------------------------------

INGEST = "mutation($i: ClaimInput!, $ns: String) { ingest(input: $i, namespace: $ns) { revision } }"


def _ingest(client: TestClient, key: str | None, ns: str) -> None:
    body = client.post("/graphql", json={"query": INGEST, "variables": {
        "i": {"content": f"hostile metrics probe {uuid.uuid4().hex}", "source": "hh"}, "ns": ns}},
        headers={"Authorization": f"Bearer {key}"} if key else {}).json()
    assert body.get("errors") is None, body


def _metric_namespaces(client: TestClient, key: str | None) -> set[str]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    resp = client.get("/metrics", headers=headers)
    assert resp.status_code == 200
    assert "palimpsest_http_request_seconds" in resp.text  # series without a tenant are always there
    found = set()
    for line in resp.text.splitlines():
        if not line.startswith("#") and 'namespace="' in line:
            found.add(line.split('namespace="', 1)[1].split('"', 1)[0])
    return found


def test_metrics_show_a_namespace_only_to_who_may_read_it(client: TestClient, tenants: tuple[str, str]) -> None:
    ns_a, ns_b = tenants
    _ingest(client, KEY_A, ns_a)
    _ingest(client, KEY_B, ns_b)
    assert _metric_namespaces(client, None) == set()
    assert _metric_namespaces(client, "not-a-key") == set()
    assert _metric_namespaces(client, KEY_A) == {ns_a}
    assert _metric_namespaces(client, KEY_B) == {ns_b}
    everything = _metric_namespaces(client, METRICS_KEY)
    assert {ns_a, ns_b} <= everything  # plus whatever else lives in the shared database


def test_local_mode_metrics_are_open_unless_a_metrics_key_is_set(runtime: Any, namespace: str) -> None:
    with TestClient(create_app(runtime, keys=KeyStore([])), base_url="http://localhost") as c:
        _ingest(c, None, namespace)
        assert namespace in _metric_namespaces(c, None)
    with TestClient(create_app(runtime, keys=KeyStore([], metrics_sha256=hash_key(METRICS_KEY))),
                    base_url="http://localhost") as c:
        _ingest(c, None, namespace)
        assert _metric_namespaces(c, None) == set()
        assert namespace in _metric_namespaces(c, METRICS_KEY)


def test_dropped_namespace_leaves_metrics(runtime: Any, driver: Any) -> None:
    ns = f"hh-{uuid.uuid4().hex[:10]}-gone"
    with TestClient(create_app(runtime, keys=KeyStore([])), base_url="http://localhost") as c:
        try:
            _ingest(c, None, ns)
            assert ns in _metric_namespaces(c, None)
        finally:
            wipe_namespace(driver, ns)
        assert ns not in _metric_namespaces(c, None)


def test_introspection_is_open_as_documented(client: TestClient) -> None:
    """docs/OPERATIONS.md: introspection is on for every caller (the SDL is public); it names no tenant data."""
    body = client.post("/graphql", json={"query": "{ __schema { queryType { name } } }"}).json()
    assert body == {"data": {"__schema": {"queryType": {"name": "Query"}}}}
