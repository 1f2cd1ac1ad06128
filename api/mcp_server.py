"""MCP face: `remember`, `recall`, `history`, `retract` tools over the same Memory.

Agent frameworks speak MCP; giving them these four tools makes Palimpsest their memory without
any glue code. One server serves one namespace (the agent's), fixed at start-up, so a model
cannot wander into another tenant by choosing an argument.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from api.memory import Memory
from schema.errors import PalimpsestError
from schema.models import ContextPacket, HistoryEntry, IngestItemResult, RetractResult

_DATES = ("Dates (valid_from, valid_to, valid_at): ISO-8601 with a timezone (2017-07-25T10:00:00Z), or "
          "2017-07-25, 2017-07 or 2017 meaning the start of that day, month or year in UTC; no Unix timestamps.")


def _run(fn: Any) -> Any:
    try:
        return fn()
    except PalimpsestError as exc:
        # ToolError is shown to the client as is; other exceptions are masked by the SDK.
        raise ToolError(f"{exc.code} ({exc.field or 'input'}): {exc.message}") from None


def build_mcp(memory: Memory) -> MCPServer:
    server = MCPServer(
        "palimpsest",
        instructions=(
            "Long-term memory with time. Use `remember` for atomic facts (give a claim_key to let a newer "
            "fact replace an older one), `recall` before acting on remembered facts (only what is true now "
            "comes back, with contradictions), `history` to see how a fact changed, `retract` to undo a mistake."
        ),
    )

    @server.tool(description="Store one atomic, source-tagged claim. A claim_key makes it replace the key's "
                             "current claim. " + _DATES)
    def remember(content: str, source: str, claim_key: str | None = None, valid_from: str | None = None,
                 valid_to: str | None = None, tau_seconds: float | None = None) -> IngestItemResult:
        result: IngestItemResult = _run(lambda: memory.ingest(
            content, source, claim_key=claim_key, valid_from=valid_from, valid_to=valid_to, tau=tau_seconds))
        return result

    @server.tool(description="Recall what is true now (or at a revision / world time), ranked and bounded. "
                             + _DATES)
    def recall(query: str, k: int | None = None, as_of_revision: int | None = None,
               valid_at: str | None = None) -> ContextPacket:
        packet: ContextPacket = _run(lambda: memory.recall(query, k=k, as_of_revision=as_of_revision,
                                                           valid_at=valid_at))
        return packet

    @server.tool(description="The whole chain of a claim key, oldest first, with supersessions and retractions.")
    def history(claim_key: str) -> list[HistoryEntry]:
        chain: list[HistoryEntry] = _run(lambda: memory.history(claim_key))
        return chain

    @server.tool(description="Retract a claim (it stops being recalled); what it had replaced comes back.")
    def retract(claim_id: str, reason: str) -> RetractResult:
        result: RetractResult = _run(lambda: memory.retract(claim_id, reason))
        return result

    return server
