"""Issue 45: local mode (no API keys) serves loopback Host names only — GraphQL over HTTP, the WebSocket
upgrade and MCP's HTTP transport alike — so a web page that rebinds its own name to 127.0.0.1 can
neither write nor read. A name the operator allows is served; with keys configured the Host is not
looked at. Before, a POST with `Host: attacker.rebind.example` ingested and recalled.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.host_guard import host_allowed, host_name
from palimpsest.api.memory import Memory
from palimpsest.settings import Settings
from tests.reliability.conftest import serving

pytestmark = pytest.mark.integration

EVIL = "attacker.rebind.example"
INGEST = 'mutation($ns: String) { ingest(input: {content: "The vault code is 4417", source: "x"}, namespace: $ns) ' \
         "{ revision } }"
RECALL = 'query($ns: String) { recall(query: "vault code", namespace: $ns) { items { content } } }'


@pytest.mark.parametrize(("header", "name", "loopback"), [
    ("localhost", "localhost", True), ("LOCALHOST:8000", "localhost", True), ("127.0.0.1:1", "127.0.0.1", True),
    ("[::1]:8000", "::1", True), ("::1", "::1", True), ("localhost.", "localhost", True),
    (EVIL, EVIL, False), (f"{EVIL}:8000", EVIL, False), ("127.0.0.1.nip.io", "127.0.0.1.nip.io", False),
    ("localhost.attacker.example", "localhost.attacker.example", False), ("[::2]:80", "::2", False),
])
def test_host_names(header: str, name: str, loopback: bool) -> None:
    assert host_name(header) == name
    assert host_allowed(header) is loopback
    assert host_allowed(None) is False and host_allowed("") is False


def _post(c: TestClient, query: str, ns: str, host: str, headers: dict[str, str] | None = None) -> Any:
    return c.post("/graphql", json={"query": query, "variables": {"ns": ns}}, headers={"host": host, **(headers or {})})


def test_local_mode_refuses_a_foreign_host_over_http(runtime: Any, namespace: str) -> None:
    with TestClient(create_app(runtime, keys=KeyStore([])), base_url="http://localhost") as c:
        for query in (INGEST, RECALL):
            resp = _post(c, query, namespace, EVIL)
            assert resp.status_code == 421, resp.text
            error = resp.json()["errors"][0]
            assert error["extensions"] == {"code": "MISDIRECTED", "field": "Host"} and EVIL in error["message"]
        written, _, _ = runtime.driver.execute_query("MATCH (c:Claim {namespace: $ns}) RETURN count(c) AS n",
                                                     ns=namespace)
        assert written[0]["n"] == 0  # nothing was written
        for host in ("localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000"):
            for query in (INGEST, RECALL):
                resp = _post(c, query, namespace, host)
                assert resp.status_code == 200 and "errors" not in resp.json(), (host, resp.text)
        assert c.get("/health", headers={"host": EVIL}).status_code == 421


def test_an_allowed_name_is_served_and_keys_mode_ignores_the_host(runtime: Any, namespace: str) -> None:
    allowed = Settings(local_allowed_hosts=("memory.lan",))
    with TestClient(create_app(runtime, keys=KeyStore([]), settings=allowed), base_url="http://localhost") as c:
        resp = _post(c, INGEST, namespace, "memory.lan:8000")
        assert resp.status_code == 200 and resp.json()["data"]["ingest"]["revision"] == 1, resp.text
        assert _post(c, RECALL, namespace, EVIL).status_code == 421
    keys = KeyStore.from_json(json.dumps([{"name": "k", "sha256": hash_key("host-key"),
                                           "namespaces": {namespace: ["read", "write"]}}]))
    with TestClient(create_app(runtime, keys=keys), base_url="http://localhost") as c:
        resp = _post(c, INGEST, namespace, EVIL, {"authorization": "Bearer host-key"})
        assert resp.status_code == 200 and resp.json()["data"]["ingest"]["revision"] == 2, resp.text
        resp = _post(c, RECALL, namespace, EVIL)  # no key: the key decides, not the Host
        assert resp.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


def _upgrade_status(port: int, host: str) -> str:
    """The status line uvicorn answers a graphql-transport-ws upgrade with, sent with `host`."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall((f"GET /graphql HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                      "Sec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n").encode())
        return sock.recv(4096).split(b"\r\n", 1)[0].decode()


def test_local_mode_refuses_a_foreign_host_on_the_websocket(runtime: Any) -> None:
    with serving(create_app(runtime, keys=KeyStore([]))) as port:
        assert " 421 " in _upgrade_status(port, EVIL)
        assert " 101 " in _upgrade_status(port, f"127.0.0.1:{port}")


def test_mcp_http_answers_a_foreign_host_421_with_the_same_door(memory: Memory) -> None:
    import httpx2

    from palimpsest.api.mcp_server import build_mcp, http_app

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    accept = {"accept": "application/json, text/event-stream"}

    async def status(app: Any, server: Any, host: str) -> tuple[int, Any]:
        async with server.session_manager.run(), httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app), base_url=f"http://{host}", headers=accept) as hc:
            resp = await hc.post("/mcp", json=init)
            return resp.status_code, resp.json()

    local = KeyStore([])
    for bind, allowed, host, expected in (("0.0.0.0", (), EVIL, 421), ("127.0.0.1", (), EVIL, 421),
                                          ("0.0.0.0", (), "127.0.0.1:8001", 200),
                                          ("127.0.0.1", ("memory.lan",), "memory.lan:8001", 200)):
        server = build_mcp(memory, keys=local)
        code, body = anyio.run(status, http_app(server, local, memory.namespace, host=bind, allowed_hosts=allowed),
                               server, host)
        assert code == expected, (bind, host, body)
        if code == 421:
            assert body["errors"][0]["extensions"]["code"] == "MISDIRECTED"
    keys = KeyStore.from_json(json.dumps([{"name": "k", "sha256": hash_key("mcp-key"),
                                           "namespaces": {memory.namespace: ["read"]}}]))
    server = build_mcp(memory, keys=keys)
    code, body = anyio.run(status, http_app(server, keys, memory.namespace, host="0.0.0.0"), server, EVIL)
    assert code == 401 and body["error"]["code"] == "UNAUTHENTICATED"  # keys mode: the key decides
