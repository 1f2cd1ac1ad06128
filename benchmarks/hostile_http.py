"""The hostile HTTP corpus (issue 13), as data: what each request sends and what it must answer.

Every case is one request to the GraphQL endpoint. `status` and `code` are the answer the
service must give: no 5xx, and every refusal a JSON error document whose first error carries
`extensions.code` (`code=None` only for the benign controls, which must succeed). A case whose
behaviour depends on the transport (chunked framing, a lying or stalled body, big bodies) has
`needs_socket` set and is sent over a raw socket by `send_raw`; the others can go through any
client (`Case.headers_for`, `Case.body`).

Used by tests/reliability/test_http_hostile.py against a real uvicorn on loopback (with the body
timeouts shortened) and meant for the reliability benchmark, which runs it against `palimpsest
serve` with its defaults (the slow cases then take the full timeouts):

    python -m benchmarks.hostile_http --port 8000 [--key KEY]
"""

from __future__ import annotations

import argparse
import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

MIB = 1024 * 1024
JSON_TYPE = (("Content-Type", "application/json"),)
QUERY = b'{"query":"{ __typename }"}'


def _gql(query: str, **extra: object) -> bytes:
    return json.dumps({"query": query, **extra}).encode()


@dataclass(frozen=True)
class Case:
    name: str
    status: int
    code: str | None
    body: bytes = QUERY
    method: str = "POST"
    path: str = "/graphql"
    headers: tuple[tuple[str, str], ...] = JSON_TYPE
    # Transport: send `body` `repeat` times, `piece` bytes at a time, chunked or not, sleeping
    # `interval` s after each piece; declare `declared_length` instead of the true length; `stall`:
    # never end the body (no last chunk) and wait for the answer with the connection open.
    chunked: bool = False
    repeat: int = 1
    declared_length: int | None = None
    interval: float = 0.0
    piece: int = 64 * 1024
    stall: bool = False
    why: str = field(default="", compare=False)

    @property
    def needs_socket(self) -> bool:
        return (self.chunked or self.repeat > 1 or self.declared_length is not None or self.interval > 0
                or self.stall)

    @property
    def total_bytes(self) -> int:
        return len(self.body) * self.repeat

    def headers_for(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {**dict(self.headers), **(extra or {})}

    def pieces(self) -> Iterator[bytes]:
        """The body as it goes on the wire (chunk framing included when chunked)."""
        for _ in range(self.repeat):
            for start in range(0, len(self.body), self.piece):
                part = self.body[start:start + self.piece]
                yield b"%x\r\n%s\r\n" % (len(part), part) if self.chunked else part
        if self.chunked and not self.stall:
            yield b"0\r\n\r\n"

    def head(self, host: str, extra: dict[str, str] | None = None) -> bytes:
        lines = [f"{self.method} {self.path} HTTP/1.1", f"Host: {host}"]
        lines += [f"{k}: {v}" for k, v in self.headers_for(extra).items()]
        if self.chunked:
            lines.append("Transfer-Encoding: chunked")
        elif self.method != "GET" or self.body:
            length = self.total_bytes if self.declared_length is None else self.declared_length
            lines.append(f"Content-Length: {length}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _deep(depth: int) -> bytes:
    return b'{"query":"{ __typename }","variables":{"v":' + b"[" * depth + b"]" * depth + b"}}"


CASES: tuple[Case, ...] = (
    # -- bodies over the cap, whatever the framing says ------------------------------------
    Case("chunked-5MiB", 413, "LIMIT_EXCEEDED", body=b"a" * MIB, repeat=5, chunked=True,
         why="Transfer-Encoding: chunked used to bypass the Content-Length check (got 200)"),
    Case("chunked-50MiB", 413, "LIMIT_EXCEEDED", body=b"a" * MIB, repeat=50, chunked=True,
         why="got 200 and +121 MB server memory"),
    Case("chunked-cap-plus-one", 413, "LIMIT_EXCEEDED", body=b"a" * (2 * MIB + 1), chunked=True),
    Case("declared-over-cap", 413, "LIMIT_EXCEEDED", body=b"a", declared_length=3 * MIB,
         why="refused from the header, before any body byte is read"),
    Case("length-5MiB", 413, "LIMIT_EXCEEDED", body=b"a" * MIB, repeat=5),
    # -- bodies that do not arrive ---------------------------------------------------------
    Case("expect-100-over-cap", 413, "LIMIT_EXCEEDED", body=b"", declared_length=3 * MIB, stall=True,
         headers=(*JSON_TYPE, ("Expect", "100-continue")), why="refused without inviting the body"),
    Case("declared-1000-sent-1", 408, "LIMIT_EXCEEDED", body=b"{", declared_length=1000, stall=True,
         why="held 200 s: no read timeout"),
    Case("chunked-stalled", 408, "LIMIT_EXCEEDED", body=b'{"query":', chunked=True, stall=True),
    Case("drip-under-chunk-timeout", 408, "LIMIT_EXCEEDED", body=b"{" * 400, piece=1, declared_length=1000,
         interval=0.25, stall=True, why="each gap is short, the whole body is not: the body deadline answers"),
    # -- malformed bodies: 400 BAD_INPUT, never 500 ----------------------------------------
    Case("nested-1000", 400, "BAD_INPUT", body=b"[" * 1000 + b"]" * 1000, why="RecursionError → 500"),
    Case("nested-1000-in-variables", 400, "BAD_INPUT", body=_deep(1000)),
    Case("nested-100000", 400, "BAD_INPUT", body=b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
    Case("binary", 400, "BAD_INPUT", body=b"\x00\xff\xfe\x00\x01garbage\xff", why="UnicodeDecodeError → 500"),
    Case("bare-string", 400, "BAD_INPUT", body=b'"{ __typename }"', why="AttributeError on str → 500"),
    Case("bare-number", 400, "BAD_INPUT", body=b"42"),
    Case("bare-null", 400, "BAD_INPUT", body=b"null"),
    Case("bare-true", 400, "BAD_INPUT", body=b"true"),
    Case("array", 400, "BAD_INPUT", body=b'[{"query":"{ __typename }"}]'),
    Case("empty-array", 400, "BAD_INPUT", body=b"[]"),
    Case("empty-body", 400, "BAD_INPUT", body=b""),
    Case("invalid-utf8", 400, "BAD_INPUT", body=b'{"query":"{ __typename \xff\xfe }"}', why="→ 500"),
    Case("overlong-utf8", 400, "BAD_INPUT", body=b'{"query":"\xc0\xaf"}'),
    Case("lone-surrogate-escape", 400, "BAD_INPUT", body=b'{"query":"{ __typename }","variables":{"q":"\\ud800"}}'),
    Case("utf16", 400, "BAD_INPUT", body='{"query":"{ __typename }"}'.encode("utf-16")),
    Case("trailing-garbage", 400, "BAD_INPUT", body=QUERY + b" }{"),
    Case("truncated", 400, "BAD_INPUT", body=QUERY[:-3]),
    Case("query-not-string", 400, "BAD_INPUT", body=b'{"query": 5}'),
    Case("variables-not-object", 400, "BAD_INPUT", body=b'{"query":"{ __typename }","variables":[1]}'),
    Case("no-query", 400, "BAD_INPUT", body=b"{}"),
    Case("text-plain", 400, "BAD_INPUT", headers=(("Content-Type", "text/plain"),)),
    Case("no-content-type", 400, "BAD_INPUT", headers=()),
    Case("subscription-post", 400, "BAD_INPUT",
         body=_gql("subscription { contradictions { revision } }"), why="masked 'Internal error.', no code"),
    Case("subscription-get", 400, "BAD_INPUT", method="GET", body=b"", headers=(),
         path="/graphql?query=subscription%20%7B%20contradictions%20%7B%20revision%20%7D%20%7D"),
    Case("get-variables-nested", 400, "BAD_INPUT", method="GET", body=b"", headers=(),
         path="/graphql?query=%7B__typename%7D&variables=" + "%5B" * 1000 + "%5D" * 1000),
    # -- benign controls: the guard must not refuse honest requests -------------------------
    Case("control-length", 200, None),
    Case("control-chunked", 200, None, chunked=True, piece=7),
    Case("control-nested-100-variables", 200, None, body=_deep(100)),
)


@dataclass
class Answer:
    status: int  # 0: no answer (connection reset or closed before a status line)
    body: bytes
    seconds: float
    error: str = ""

    def code(self) -> str | None:
        try:
            errors = json.loads(self.body)["errors"]
            return str(errors[0]["extensions"]["code"])
        except (ValueError, KeyError, IndexError, TypeError):
            return None


def send_raw(case: Case, host: str, port: int, *, extra: dict[str, str] | None = None,
             timeout: float = 30.0) -> Answer:
    """Send one case over a fresh TCP connection and read the answer (stops sending when refused)."""
    start = time.perf_counter()
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.sendall(case.head(f"{host}:{port}", extra))
            for part in case.pieces():
                sock.sendall(part)
                if case.interval:
                    time.sleep(case.interval)
        except OSError:
            pass  # the server answered and closed before the body was sent: read what it said
        status, body, error = _read_response(sock)
    return Answer(status, body, time.perf_counter() - start, error)


def _read_response(sock: socket.socket) -> tuple[int, bytes, str]:
    data = b""
    error = ""
    try:
        while True:
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep:
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                               if line.lower().startswith(b"content-length:")), None)
                if length is not None and len(rest) >= length:
                    break
            got = sock.recv(65536)
            if not got:
                break
            data += got
    except OSError as exc:
        error = type(exc).__name__
    head, _, rest = data.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    return status, rest, error


def main() -> None:
    parser = argparse.ArgumentParser(description="Send the hostile HTTP corpus to a running server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--key", help="API key (Authorization: Bearer)")
    args = parser.parse_args()
    extra = {"Authorization": f"Bearer {args.key}"} if args.key else {}
    mismatches = server_errors = uncoded = 0
    print("| case | status | code | ms | as expected |\n|---|---|---|---|---|")
    for case in CASES:
        answer = send_raw(case, args.host, args.port, extra=extra, timeout=120)
        ok = (answer.status, answer.code()) == (case.status, case.code)
        mismatches += not ok
        server_errors += answer.status >= 500
        uncoded += answer.status >= 400 and answer.code() is None
        print(f"| {case.name} | {answer.status} | {answer.code()} | {answer.seconds * 1000:.0f} "
              f"| {'yes' if ok else 'NO'} |")
    print(f"\n{len(CASES)} cases: {mismatches} not as expected, {server_errors} HTTP 5xx, "
          f"{uncoded} errors without a code")


if __name__ == "__main__":
    main()
