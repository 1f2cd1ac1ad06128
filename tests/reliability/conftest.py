"""A real uvicorn on loopback, built with `palimpsest serve`'s own settings (api.app.server_config).

Tests whose behaviour depends on the transport — chunked framing, stalled bodies, WebSocket
upgrades — go through it; the server runs in a thread of the test process, on a socket bound
before it starts (no free-port race).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from palimpsest.api.app import server_config


@contextmanager
def serving(app: Any) -> Iterator[int]:
    """Serve `app` on 127.0.0.1 and yield the port; stops the server on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=f"uvicorn-{port}")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set environment variables for the duration (apps read their body timeouts when built)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
