"""Local mode answers loopback names only: the door against DNS rebinding, for GraphQL and MCP alike.

With no API keys configured every namespace is open to whoever reaches the port — meant for the
developer's own machine. A web page the developer opens can still reach it: it resolves its own name
(`attacker.rebind.example`) to 127.0.0.1 and posts to it, and the browser sends `Host:
attacker.rebind.example`. So in local mode a request (HTTP or WebSocket upgrade) is served only when
its `Host` names loopback — `localhost`, `127.0.0.1` or `::1`, any port — or a name the operator
allowed (PALIMPSEST_LOCAL_ALLOWED_HOSTS); anything else is answered 421 Misdirected Request, as the
MCP SDK answers it, before the request reaches GraphQL or MCP. With keys configured nothing changes
here: a rebinding page holds no key.

`HostGuard` is pure ASGI, so the FastAPI app and the MCP HTTP app wrap themselves in the same class.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from palimpsest.api.body_guard import error_body

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
CODE = "MISDIRECTED"


def host_name(header: str) -> str:
    """The name a `Host` header gives, without its port, lower case: `[::1]:8000` → `::1`."""
    value = header.strip().lower()
    if value.startswith("["):  # [v6]:port
        end = value.find("]")
        return value[1:end] if end > 0 else value
    if value.count(":") == 1:  # name:port (a bare v6 address has several colons and no port)
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def host_allowed(header: str | None, allowed: Iterable[str] = ()) -> bool:
    """Is `header` (the request's Host; None when absent) a loopback name or one of `allowed`?"""
    if not header:
        return False
    name = host_name(header)
    return name in LOOPBACK_HOSTS or name in set(allowed)


def _host(scope: Scope) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == b"host":
            return str(value.decode("latin-1"))
    return None


class HostGuard:
    """Refuse (421) an HTTP request or WebSocket upgrade whose Host is not allowed while `local_mode(scope)`.

    `local_mode` is asked per request because the app learns its keys at start-up (its lifespan).
    """

    def __init__(self, app: ASGIApp, *, local_mode: Callable[[Scope], bool], allowed: Iterable[str] = ()) -> None:
        self.app, self.local_mode, self.allowed = app, local_mode, frozenset(allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self.local_mode(scope):
            await self.app(scope, receive, send)
            return
        host = _host(scope)
        if host_allowed(host, self.allowed):
            await self.app(scope, receive, send)
            return
        message = (f"Host {host!r} is not served: with no API keys configured only localhost, 127.0.0.1 and ::1 "
                   "are (add names to PALIMPSEST_LOCAL_ALLOWED_HOSTS, or configure API keys)")
        body = error_body(message, CODE, field="Host")
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 421, "headers": headers})
            await send({"type": "http.response.body", "body": body})
        elif "websocket.http.response" in scope.get("extensions", {}):  # a real 421 instead of the upgrade
            await send({"type": "websocket.http.response.start", "status": 421, "headers": headers})
            await send({"type": "websocket.http.response.body", "body": body})
        else:
            await send({"type": "websocket.close", "code": 1008, "reason": "host not allowed"})
