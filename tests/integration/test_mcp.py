"""The MCP tools against the real store, through the in-process MCP client."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from api.mcp_server import build_mcp
from api.memory import Memory

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
    assert out["tools"] == ["recall", "history", "remember", "retract"] or out["tools"] == sorted(
        ["recall", "history", "remember", "retract"])
    assert out["recalled"].structured_content["items"][0]["content"] == "Backups go to bucket b-2"
    assert out["recalled"].structured_content["hidden"]["superseded"] == 1
    chain = out["hist"].structured_content["result"]
    assert [e["claim"]["status"] for e in chain] == ["superseded", "current"]
    assert out["retracted"].structured_content["restored"] == out["first"].structured_content["id"]
    assert out["after"].structured_content["items"][0]["content"] == "Backups go to bucket b-1"
    assert out["bad"].is_error and "LIMIT_EXCEEDED" in out["bad"].content[0].text
