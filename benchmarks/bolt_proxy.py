"""A TCP proxy in front of Neo4j that loses the reply to every n-th COMMIT.

This is the fault an idempotency key exists for: the server has committed (or is about to), and
the client never hears so. The driver raises `IncompleteCommit` (Palimpsest: UNAVAILABLE, "the
outcome is unknown — retrying with the same idempotency keys is safe"); a client that retries must
end with every claim stored exactly once.

Bolt frames every message as chunks (a 2-byte big-endian length, the bytes, `00 00` at the end).
COMMIT is a structure with no fields and tag 0x12, so on the wire it is always exactly
`00 02 B0 12 00 00`, whatever protocol version the handshake chose; the proxy looks for that
pattern in what the client sends, forwards it, and when the server's next bytes (the reply)
arrive, drops them and closes both sides. Everything else is passed through untouched.

Used by tests/reliability/test_commit_faults.py and `python -m benchmarks.reliability`.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field

COMMIT = b"\x00\x02\xb0\x12\x00\x00"


@dataclass
class ProxyStats:
    connections: int = 0
    commits: int = 0
    dropped_replies: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class _Link:
    """One client connection and its upstream twin."""

    def __init__(self, client: socket.socket, upstream: socket.socket, proxy: CommitDroppingProxy) -> None:
        self.client, self.upstream, self.proxy = client, upstream, proxy
        self.drop_next_reply = False
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()
        for s in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def client_to_server(self) -> None:
        tail = b""
        try:
            while not self.closed.is_set():
                data = self.client.recv(65536)
                if not data:
                    break
                window = tail + data
                found = window.count(COMMIT)
                tail = window[-(len(COMMIT) - 1):]
                if found:
                    with self.proxy.stats.lock:
                        for _ in range(found):
                            self.proxy.stats.commits += 1
                            if self.proxy.drop_every and self.proxy.stats.commits % self.proxy.drop_every == 0:
                                self.drop_next_reply = True
                self.upstream.sendall(data)
        except OSError:
            pass
        self.close()

    def server_to_client(self) -> None:
        try:
            while not self.closed.is_set():
                data = self.upstream.recv(65536)
                if not data:
                    break
                if self.drop_next_reply:
                    with self.proxy.stats.lock:
                        self.proxy.stats.dropped_replies += 1
                    break
                self.client.sendall(data)
        except OSError:
            pass
        self.close()


class CommitDroppingProxy:
    """Listen on 127.0.0.1 (a free port), forward to `target`, lose every `drop_every`-th COMMIT's reply.

    `drop_every=0` passes everything through (a control). Use as a context manager; `uri` is the
    bolt:// address to give the driver.
    """

    def __init__(self, target_host: str, target_port: int, drop_every: int = 5) -> None:
        self.target = (target_host, target_port)
        self.drop_every = drop_every
        self.stats = ProxyStats()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._stop = threading.Event()
        self._links: list[_Link] = []
        self._thread = threading.Thread(target=self._accept, daemon=True, name=f"bolt-proxy-{self.port}")

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    def __enter__(self) -> CommitDroppingProxy:
        self._listener.listen(64)
        self._listener.settimeout(0.2)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()
        for link in list(self._links):
            link.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            link = _Link(client, upstream, self)
            self._links = [lk for lk in self._links if not lk.closed.is_set()] + [link]
            with self.stats.lock:
                self.stats.connections += 1
            for pump in (link.client_to_server, link.server_to_client):
                threading.Thread(target=pump, daemon=True).start()
