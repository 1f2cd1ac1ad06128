"""Request bodies counted as they stream, and read against a clock (pure ASGI).

Invariants, for every HTTP request whatever its headers say:
  * at most `max_bytes` of body are ever held: the bytes of each `http.request` message are
    counted as it arrives, so `Transfer-Encoding: chunked` or a Content-Length that lies cannot
    slip past the cap; the first byte over it answers 413 `LIMIT_EXCEEDED` (`limit` = the cap);
  * a body arrives with no gap longer than `chunk_timeout_s` between messages and whole within
    `body_timeout_s` of the request head, or the request is answered 408 `LIMIT_EXCEEDED`
    (`limit` = the timeout in seconds) — a client that declares 1,000 bytes and sends one holds
    a worker for seconds, not minutes.

The body is read here in full (it is at most `max_bytes`) and handed to the app as one message,
so nothing downstream can wait on the socket. Refusals carry `Connection: close`: the rest of the
body is never read, so the connection cannot be reused.

This is pure ASGI rather than `BaseHTTPMiddleware`, which cannot see the body stream without
reading it through its own wrapper. WebSocket and lifespan scopes pass through untouched.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def error_body(message: str, code: str, **extensions: Any) -> bytes:
    """The GraphQL-shaped error document every refusal at the HTTP boundary answers with."""
    return json.dumps({"errors": [{"message": message, "extensions": {"code": code, **extensions}}]}).encode()


async def send_error(send: Send, status: int, message: str, code: str, *, close: bool = False,
                     **extensions: Any) -> None:
    body = error_body(message, code, **extensions)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class BodyGuard:
    """Wrap an ASGI app so no request body exceeds `max_bytes` or takes longer than the timeouts."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, chunk_timeout_s: float, body_timeout_s: float) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.chunk_timeout_s = chunk_timeout_s
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and (declared < 0 or declared > self.max_bytes):
            # Refused before a byte is read; a malformed length (-1) counts as over the cap.
            await self._too_large(send)
            return
        chunks: list[bytes] = []
        total = 0
        deadline = time.monotonic() + self.body_timeout_s
        while True:
            wait = min(self.chunk_timeout_s, deadline - time.monotonic())
            message: Message | None = None
            if wait > 0:
                with anyio.move_on_after(wait):
                    message = await receive()
            if message is None:
                limit = self.chunk_timeout_s if wait >= self.chunk_timeout_s else self.body_timeout_s
                await send_error(send, 408, f"request body not received within {limit:g} s", "LIMIT_EXCEEDED",
                                 close=True, limit=limit, field="body")
                return
            if message["type"] == "http.disconnect":
                # The client is gone; answer anyway so every layer above sees a finished response.
                await send_error(send, 400, "the client disconnected before the body was complete", "BAD_INPUT",
                                 close=True, field="body")
                return
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > self.max_bytes:
                await self._too_large(send)
                return
            if chunk:
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(b"".join(chunks), receive), send)

    async def _too_large(self, send: Send) -> None:
        await send_error(send, 413, f"request body over {self.max_bytes} bytes", "LIMIT_EXCEEDED", close=True,
                         limit=self.max_bytes, field="body")


def _content_length(scope: Scope) -> int | None:
    """The declared length, None when absent, -1 when it is not a plain decimal number."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() and len(value) <= 18 else -1
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """One `http.request` message with the whole body, then the real channel (for disconnects)."""
    delivered = False

    async def replayed() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
