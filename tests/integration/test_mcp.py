"""The MCP tools against the real store, through the in-process MCP client."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from palimpsest.api.mcp_server import build_mcp
from palimpsest.api.memory import Memory

pytestmark = pytest.mark.integration


def test_remember_recall_history_retract(memory: Memory) -> None:
    from mcp import Client

    server = build_mcp(memory)

    async def scenario() -> dict[str, Any]:
        async with Client(server) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            first = await client.call_tool("remember", {"content": "Backups go to bucket b-1", "source": "ops",
                                                        "claim_key": "backup.bucket"})
            second = await client.call_tool("remember", {"content": "Backups go to bucket b-2", "source": "ops",
                                                         "claim_key": "backup.bucket"})
            recalled = await client.call_tool("recall", {"query": "where do backups go?"})
            hist = await client.call_tool("history", {"claim_key": "backup.bucket"})
            new_id = second.structured_content["id"]
            retracted = await client.call_tool("retract", {"claim_id": new_id, "reason": "wrong bucket"})
            after = await client.call_tool("recall", {"query": "where do backups go?"})
            bad = await client.call_tool("recall", {"query": "x", "k": 10_000})
            return {"tools": tools, "first": first, "recalled": recalled, "hist": hist, "retracted": retracted,
                    "after": after, "bad": bad}

    out = anyio.run(scenario)
    assert {"recall", "history", "remember", "retract", "erase"} <= set(out["tools"])
    assert out["recalled"].structured_content["items"][0]["content"] == "Backups go to bucket b-2"
    assert out["recalled"].structured_content["hidden"]["superseded"] == 1
    chain = out["hist"].structured_content["result"]
    assert [e["claim"]["status"] for e in chain] == ["superseded", "current"]
    assert out["retracted"].structured_content["restored"] == out["first"].structured_content["id"]
    assert out["after"].structured_content["items"][0]["content"] == "Backups go to bucket b-1"
    assert out["bad"].is_error and "LIMIT_EXCEEDED" in out["bad"].content[0].text


def test_server_info_carries_the_package_version(memory: Memory) -> None:
    from importlib.metadata import version

    from mcp import Client

    async def scenario() -> Any:
        async with Client(build_mcp(memory), mode="legacy") as client:  # legacy: the initialize handshake
            return client.server_info

    info = anyio.run(scenario)
    assert info is not None and info.name == "palimpsest"
    assert info.version == version("palimpsest") and info.version != ""


def test_http_transport_takes_the_graphql_api_keys(memory: Memory) -> None:
    """401 without a key or with a wrong one, 403 for a key of another namespace (before any MCP
    message is read); with a key: the tools, each checking its right (read-only keys cannot write)."""
    from importlib.metadata import version

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from palimpsest.api.auth import KeyEntry, KeyStore, hash_key
    from palimpsest.api.mcp_server import http_app

    ns = memory.namespace
    keys = KeyStore([KeyEntry("agent", hash_key("key-rw"), {ns: frozenset({"read", "write"})}),
                     KeyEntry("reader", hash_key("key-r"), {ns: frozenset({"read"})}),
                     KeyEntry("other", hash_key("key-other"), {"elsewhere": frozenset({"read", "write"})})])
    server = build_mcp(memory, keys=keys)
    app = http_app(server, keys, ns)
    base = "http://127.0.0.1:8001"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    accept = {"accept": "application/json, text/event-stream"}

    def client_for(headers: dict[str, str]) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=base, headers=headers)

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with server.session_manager.run():
            for name, headers in {"none": {}, "wrong": {"authorization": "Bearer nope"},
                                  "other": {"x-api-key": "key-other"}}.items():
                async with client_for({**accept, **headers}) as hc:
                    resp = await hc.post("/mcp", json=init)
                    out[name] = (resp.status_code, resp.json())
            async with client_for({"authorization": "Bearer key-rw"}) as hc, \
                    Client(streamable_http_client(f"{base}/mcp", http_client=hc)) as client:
                out["version"] = client.server_info.version if client.server_info else None
                out["remember"] = await client.call_tool("remember", {"content": "Backups go to bucket b-7",
                                                                      "source": "ops"})
                out["recall"] = await client.call_tool("recall", {"query": "where do backups go?"})
            async with client_for({"x-api-key": "key-r"}) as hc, \
                    Client(streamable_http_client(f"{base}/mcp", http_client=hc)) as client:
                out["reader_recall"] = await client.call_tool("recall", {"query": "where do backups go?"})
                out["reader_remember"] = await client.call_tool("remember", {"content": "x", "source": "ops"})
        return out

    out = anyio.run(scenario)
    for name, code in (("none", "UNAUTHENTICATED"), ("wrong", "UNAUTHENTICATED"), ("other", "FORBIDDEN")):
        status, body = out[name]
        assert (status, body["error"]["code"]) == (401 if code == "UNAUTHENTICATED" else 403, code), (name, body)
    assert out["version"] == version("palimpsest")
    assert not out["remember"].is_error, out["remember"]
    assert out["recall"].structured_content["items"][0]["content"] == "Backups go to bucket b-7"
    assert not out["reader_recall"].is_error
    assert out["reader_remember"].is_error and "FORBIDDEN" in out["reader_remember"].content[0].text
    assert memory.stats().claims_by_status.get("current") == 1  # the refused write wrote nothing
