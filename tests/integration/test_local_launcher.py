"""The launcher's promises on a second, throwaway server: idempotent start, stop only by our pid."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from graph import server

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_second_instance_start_is_idempotent_and_stop_is_by_pid(tmp_path: Path) -> None:
    base = server.ServerConfig.from_env()
    cfg = server.ServerConfig(
        cache_dir=base.cache_dir, bolt_port=_free_port(), http_port=_free_port(),
        heap="512m", pagecache="64m",
    )
    try:
        first = server.start(cfg)
        assert first.running and first.pid
        again = server.start(cfg)
        assert again.pid == first.pid
        assert server.bolt_answers(cfg.bolt_uri, None)
    finally:
        stopped = server.stop(cfg)
        shutil.rmtree(cfg.instance_dir, ignore_errors=True)
    assert stopped
    assert not server.status(cfg).running
    assert server.stop(cfg) is False  # nothing of ours is left to stop


def test_port_taken_by_a_stranger_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = int(s.getsockname()[1])
        cfg = server.ServerConfig(cache_dir=tmp_path, bolt_port=port, http_port=_free_port())
        with pytest.raises(server.ServerError, match=f"port {port}.*taken"):
            server.start(cfg)


def test_missing_java_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    cfg = server.ServerConfig(cache_dir=tmp_path, bolt_port=_free_port(), http_port=_free_port())
    with pytest.raises(server.ServerError, match="'java' was not found"):
        server.start(cfg)


def test_failed_start_shows_the_log_tail(tmp_path: Path) -> None:
    base = server.ServerConfig.from_env()
    # An invalid heap size makes the JVM refuse to start: the error must carry its words.
    cfg = server.ServerConfig(cache_dir=base.cache_dir, bolt_port=_free_port(), http_port=_free_port(),
                              heap="banana", start_timeout_s=60)
    with pytest.raises(server.ServerError, match=r"(?s)exited during start-up.*Log tail"):
        server.start(cfg)
    assert not cfg.pid_file.exists()
    shutil.rmtree(cfg.instance_dir, ignore_errors=True)


def test_cli_status_reports_json() -> None:
    out = subprocess.run([sys.executable, "-m", "api.cli", "neo4j", "status"], capture_output=True,
                         text=True, check=False)
    assert '"neo4j": "5.26.24"' in out.stdout
