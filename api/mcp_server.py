"""MCP face: `remember`, `recall`, `recall_rounds`, `ask`, `history`, `retract` and `erase` tools over the same
Memory.

Agent frameworks speak MCP; giving them these tools makes Palimpsest their memory without
any glue code. One server serves one namespace (the agent's), fixed at start-up, so a model
cannot wander into another tenant by choosing an argument.

Over stdio the server is the local user's own child process: no keys. Over HTTP anyone who can
reach the port can call it, so it takes the API keys GraphQL takes (api/auth.py, the same
`Authorization: Bearer <key>` or `X-API-Key` headers): `KeyGuard` answers 401 before any MCP
message is read when the key is missing or wrong, and 403 when it has no right on the namespace;
each tool then checks the right it needs (read: recall, recall_rounds, ask, history; write: remember,
retract; erase: erase, a right of its own as on every face). No tool registers a policy, sets the
namespace's default or undoes an inference: those need the admin right, on GraphQL. With
no keys configured HTTP is in local mode, open like GraphQL's, and like GraphQL's it then serves only
loopback Host names (api/host_guard.py).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any, cast

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

from palimpsest.api.auth import KeyStore, Principal, Right
from palimpsest.api.host_guard import HostGuard
from palimpsest.api.memory import Memory
from palimpsest.schema.ask import AskResult, MultiRoundRecall
from palimpsest.schema.errors import ForbiddenError, PalimpsestError
from palimpsest.schema.models import ContextPacket, EraseResult, HistoryEntry, IngestItemResult, RetractResult

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_DATES = ("Dates (valid_from, valid_to, valid_at): ISO-8601 with a timezone (2017-07-25T10:00:00Z), or "
          "2017-07-25, 2017-07 or 2017 meaning the start of that day, month or year in UTC; no Unix timestamps.")


def package_version() -> str:
    """The installed palimpsest's version: what MCP clients see as `serverInfo.version`."""
    try:
        return version("palimpsest")
    except PackageNotFoundError:  # running from a tree that was never installed
        return "0+unknown"


def api_key(headers: Mapping[str, str]) -> str | None:
    """The key a caller sent, the way GraphQL reads it: `Authorization: Bearer …`, else `X-API-Key`."""
    header = headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return headers.get("x-api-key")


def _run(fn: Any) -> Any:
    try:
        return fn()
    except PalimpsestError as exc:
        # ToolError is shown to the client as is; other exceptions are masked by the SDK.
        raise ToolError(f"{exc.code} ({exc.field or 'input'}): {exc.message}") from None


def build_mcp(memory: Memory, *, keys: KeyStore | None = None) -> MCPServer:
    """The MCP server of one namespace. `keys`: the API keys every tool call must present (HTTP);
    None for stdio, where the caller is the local user's own process."""
    server = MCPServer(
        "palimpsest",
        version=package_version(),
        instructions=(
            "Long-term memory with time. Use `remember` for atomic facts (give a claim_key to let a newer "
            "fact replace an older one), `recall` before acting on remembered facts (only what is true now "
            "comes back, with contradictions), `history` to see how a fact changed, `retract` to undo a mistake."
        ),
    )

    def allow(ctx: Context[Any, Any], right: Right) -> None:
        """The caller's key must grant `right` on the namespace (headers of this HTTP request)."""
        if keys is None:
            return
        _run(lambda: keys.authenticate(api_key(ctx.headers or {})).require(memory.namespace, right))

    @server.tool(description="Store one atomic, source-tagged claim. A claim_key makes it replace the key's "
                             "current claim. " + _DATES)
    def remember(ctx: Context[Any, Any], content: str, source: str, claim_key: str | None = None,
                 valid_from: str | None = None, valid_to: str | None = None,
                 tau_seconds: float | None = None) -> IngestItemResult:
        allow(ctx, "write")
        result: IngestItemResult = _run(lambda: memory.ingest(
            content, source, claim_key=claim_key, valid_from=valid_from, valid_to=valid_to, tau=tau_seconds))
        return result

    @server.tool(description="Recall what is true now (or at a revision / world time), ranked and bounded. "
                             "explain=true adds each item's score in parts (explanation) and which rule hid "
                             "what (hidden_explanation). " + _DATES)
    def recall(ctx: Context[Any, Any], query: str, k: int | None = None, as_of_revision: int | None = None,
               valid_at: str | None = None, explain: bool = False) -> ContextPacket:
        allow(ctx, "read")
        packet: ContextPacket = _run(lambda: memory.recall(query, k=k, as_of_revision=as_of_revision,
                                                           valid_at=valid_at, explain=explain))
        return packet

    @server.tool(description="Recall in rounds without a model: round 1 with the query, then the query expanded "
                             "by the subjects and entities round 1 found (the second hop of a multi-hop "
                             "question), fused; each round's packet is replayable. " + _DATES)
    def recall_rounds(ctx: Context[Any, Any], query: str, rounds: int | None = None, k: int | None = None,
                      as_of_revision: int | None = None, valid_at: str | None = None) -> MultiRoundRecall:
        allow(ctx, "read")
        result: MultiRoundRecall = _run(lambda: memory.recall_rounds(query, rounds=rounds, k=k,
                                                                     as_of_revision=as_of_revision,
                                                                     valid_at=valid_at))
        return result

    @server.tool(description="Answer a question from memory through an LLM reader: the answer, the claim ids it "
                             "rests on, or not_in_memory; the reader's thought drives a second retrieval round "
                             "(expansion 'thought') or the offline expansion does ('offline'). llm_model: a "
                             "litellm model name (default: the policy's reader_model). " + _DATES)
    def ask(ctx: Context[Any, Any], question: str, llm_model: str | None = None, rounds: int | None = None,
            expansion: str | None = None, k: int | None = None, as_of_revision: int | None = None,
            valid_at: str | None = None) -> AskResult:
        allow(ctx, "read")
        result: AskResult = _run(lambda: memory.ask(question, llm_model=llm_model, rounds=rounds,
                                                    expansion=expansion, k=k, as_of_revision=as_of_revision,
                                                    valid_at=valid_at))
        return result

    @server.tool(description="The whole chain of a claim key, oldest first, with supersessions and retractions.")
    def history(ctx: Context[Any, Any], claim_key: str) -> list[HistoryEntry]:
        allow(ctx, "read")
        chain: list[HistoryEntry] = _run(lambda: memory.history(claim_key))
        return chain

    @server.tool(description="Retract a claim (it stops being recalled); what it had replaced comes back.")
    def retract(ctx: Context[Any, Any], claim_id: str, reason: str) -> RetractResult:
        allow(ctx, "write")
        result: RetractResult = _run(lambda: memory.retract(claim_id, reason))
        return result

    @server.tool(description="Erase claims' content for good (irreversible, unlike retract; needs the erase "
                             "right): by claim ids, or by source and/or top-level metadata values. Each keeps only "
                             "a tombstone; what was derived from it goes, what it had superseded is restored. "
                             "Run with dry_run=true first: it lists what would go and writes nothing.")
    def erase(ctx: Context[Any, Any], reason: str, ids: list[str] | None = None, source: str | None = None,
              metadata: dict[str, Any] | None = None, dry_run: bool = False) -> EraseResult:
        allow(ctx, "erase")
        if dry_run:  # a dry run shows what is stored (ids, sources, keys): the read right too
            allow(ctx, "read")
        result: EraseResult = _run(lambda: memory.erase(ids, source=source, metadata=metadata, reason=reason,
                                                        dry_run=dry_run))
        return result

    return server


class _NoMemory:
    """The memory of a server built only to read its tool registry (`served_tools`): a tool call fails.

    `build_mcp` touches its memory only inside the tools, so the registry can be read without a database.
    """

    namespace = "-"

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"a server built to list its tools has no memory (asked for {name!r})")


def served_tools() -> list[tuple[str, str]]:
    """(name, description) of every tool `build_mcp` registers, read from the server's own registry.

    `palimpsest mcp --help` lists these, so its help names what the server serves however the tools
    change; nothing connects and no model loads.
    """
    import asyncio

    server = build_mcp(cast(Memory, _NoMemory()))
    return [(tool.name, tool.description or "") for tool in asyncio.run(server.list_tools())]


class KeyGuard:
    """Pure-ASGI door of the HTTP transport: no valid key, no MCP session.

    401 `UNAUTHENTICATED` without a valid key, 403 `FORBIDDEN` for a key with no right on the
    namespace, as GraphQL answers them; everything else (and the lifespan) passes to `app`.
    """

    def __init__(self, app: ASGIApp, keys: KeyStore, namespace: str) -> None:
        self.app, self.keys, self.namespace = app, keys, namespace

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.keys.local_mode:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            principal: Principal = self.keys.authenticate(api_key(headers))
            if not principal.local and not principal.grants.get(self.namespace):
                raise ForbiddenError(f"this key has no access to namespace {self.namespace!r}", field="namespace")
        except PalimpsestError as exc:
            status = 401 if exc.code == "UNAUTHENTICATED" else 403
            body = json.dumps({"error": exc.to_dict()}).encode()
            extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()), *extra]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def http_app(server: MCPServer, keys: KeyStore, namespace: str, *, host: str = "127.0.0.1",
             path: str = "/mcp", allowed_hosts: Iterable[str] = ()) -> ASGIApp:
    """The streamable-HTTP app at `path`, behind `KeyGuard`. Run it with uvicorn (its lifespan runs
    the SDK's session manager).

    In local mode (no keys) `HostGuard` — the same door as GraphQL's (api/host_guard.py) — serves loopback
    Host names and `allowed_hosts` only, whatever interface it listens on, and answers others 421; the
    SDK's own DNS-rebinding check is off then, so the two cannot disagree about an allowed name. With keys
    the SDK keeps its check as before (on when `host` is a loopback address).

    Stateless, with plain JSON answers: every tool call is one Memory call that needs nothing from
    an earlier one, so there is no session to keep (or lose on a restart) and no stream to hold open.
    """
    own = TransportSecuritySettings(enable_dns_rebinding_protection=False) if keys.local_mode else None
    inner: ASGIApp = server.streamable_http_app(streamable_http_path=path, host=host, stateless_http=True,
                                                json_response=True, transport_security=own)
    return HostGuard(KeyGuard(inner, keys, namespace), local_mode=lambda _scope: keys.local_mode,
                     allowed=allowed_hosts)
