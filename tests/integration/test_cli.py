"""The CLI over the same Memory: ingest a .jsonl with a bad line, recall as table and JSON, history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from palimpsest.api.cli import app

pytestmark = pytest.mark.integration


def test_ingest_recall_history(tmp_path: Path, namespace: str, neo4j: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    data = tmp_path / "claims.jsonl"
    data.write_text("\n".join([
        json.dumps({"content": "Staging DB is pg-1", "source": "wiki", "claim_key": "staging.db"}),
        json.dumps({"content": "Staging DB is pg-2", "source": "ticket-9", "claim_key": "staging.db"}),
        json.dumps({"content": "", "source": "wiki"}),
        "not json",
    ]))
    runner = CliRunner()
    res = runner.invoke(app, ["ingest", str(data), "-n", namespace])
    assert res.exit_code == 2, res.output
    assert "ingested 2 of 4" in res.output and "line 3: content" in res.output and "line 4: invalid JSON" in res.output
    res = runner.invoke(app, ["recall", "which database does staging use?", "-n", namespace, "--json"])
    assert res.exit_code == 0, res.output
    packet = json.loads(res.stdout)
    assert packet["items"][0]["content"] == "Staging DB is pg-2" and packet["hidden"]["superseded"] == 1
    res = runner.invoke(app, ["recall", "staging database", "-n", namespace])
    assert res.exit_code == 0 and "pg-2" in res.output
    res = runner.invoke(app, ["history", "staging.db", "-n", namespace])
    assert res.exit_code == 0
    lines = res.stdout.strip().splitlines()
    assert "superseded" in lines[0] and "pg-1" in lines[0] and "current" in lines[1]
    res = runner.invoke(app, ["recall", "x", "-n", namespace, "--k", "999"])
    assert res.exit_code == 1 and "LIMIT_EXCEEDED" in res.output


def test_ingest_names_file_lines_in_order_once_each(tmp_path: Path, namespace: str, neo4j: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Blank lines keep the numbering (failures name the file's own lines), failures come in line
    order whatever kind they are, the first 20 then "and N more", each naming its field once."""
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    lines = [json.dumps({"content": "Staging DB is pg-1", "source": "wiki"}),     # 1: ok
             "",                                                                 # 2: blank
             json.dumps({"content": "   ", "source": "wiki"}),                   # 3: only whitespace
             "   ",                                                              # 4: blank
             "not json",                                                         # 5: invalid JSON
             json.dumps({"content": "x", "source": "s", "valid_from": "soon"})]  # 6: a bad date
    lines += [json.dumps({"content": "", "source": "s"})] * 23                  # 7..29: empty content
    data = tmp_path / "claims.jsonl"
    data.write_text("\n".join(lines) + "\n\n")
    res = CliRunner().invoke(app, ["ingest", str(data), "-n", namespace, "--batch", "4"])
    assert res.exit_code == 2, res.output
    reported = [int(ln.split("line ")[1].split(":")[0]) for ln in res.output.splitlines() if ln.startswith("  line ")]
    assert reported == [3, 5, 6, *range(7, 24)], res.output
    assert "ingested 1 of 27 claims" in res.output and "26 failed" in res.output
    assert "and 6 more" in res.output
    assert "line 3: content must not be empty or only whitespace" in res.output
    assert "line 5: invalid JSON" in res.output and "line 6: valid_from is not a date" in res.output
    assert "content: content" not in res.output and "at least 1 character" not in res.output
    res = CliRunner().invoke(app, ["recall", "staging", "-n", namespace, "-k", "999"])
    assert res.exit_code == 1 and "LIMIT_EXCEEDED" in res.output, res.output


def test_ingest_progress_moves_per_item(memory: Any) -> None:
    done: list[int] = []
    items: list[dict[str, Any]] = [{"content": f"Host h-{i} runs service s-{i}.", "source": "inv"} for i in range(70)]
    items.insert(3, {"content": "", "source": "inv"})
    result = memory.ingest_many(items, on_progress=done.append)
    assert sum(1 for it in result.items if it.ok) == 70
    step = memory.rt.embedder.batch_size
    assert sum(done) == 71 and len(done) >= 3 and max(done) <= step, done  # not one jump per transaction


_PROBE = """
import json, sys
from typer.testing import CliRunner
from palimpsest.api.cli import app
runs = []
for argv in json.loads(sys.argv[1]):
    r = CliRunner().invoke(app, argv)
    runs.append({"argv": argv, "exit": r.exit_code, "output": r.output})
heavy = ("torch", "sentence_transformers", "transformers", "pandas", "pyarrow")
print(json.dumps({"runs": runs, "loaded": [m for m in heavy if m in sys.modules]}))
"""


def test_commands_that_do_not_embed_never_load_torch(tmp_path: Path, namespace: str, neo4j: Any,
                                                     runtime: Any) -> None:
    """history, check, policy, refused input and an ingest of nothing valid answer without torch, the
    model (seconds each) or pandas; and, reads as they are, create nothing in the namespace."""
    import os
    import subprocess
    import sys

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"content": " ", "source": "s"}) + "\n")
    argvs = [["history", "k", "-n", namespace], ["check", "-n", namespace], ["policy", "default", "-n", namespace],
             ["recall", "x", "-n", "../etc"], ["history", "k", "-n", ""], ["ingest", str(bad), "-n", namespace]]
    env = {**os.environ, "NEO4J_URI": neo4j.uri, "HF_HUB_OFFLINE": "1"}
    if neo4j.auth:
        env["NEO4J_USER"], env["NEO4J_PASSWORD"] = neo4j.auth
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argvs)], env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    history, check, policy, recall, history_empty, ingest = report["runs"]
    assert report["loaded"] == [], report["loaded"]
    assert history["exit"] == 1 and "no claims with key 'k'" in history["output"], history
    assert check["exit"] == 1 and "unknown namespace" in check["output"], check
    assert policy["exit"] == 0 and '"default_policy":"default-v1"' in policy["output"], policy
    for refused in (recall, history_empty):  # refused before anything connects
        assert refused["exit"] == 2 and "namespace is 1-64 characters" in refused["output"], refused
    assert ingest["exit"] == 2 and "content must not be empty or only whitespace" in ingest["output"], ingest
    records, _, _ = runtime.driver.execute_query("MATCH (n) WHERE n.namespace = $ns RETURN count(n) AS n",
                                                 ns=namespace)
    assert records[0]["n"] == 0


def test_a_command_that_embeds_exits_without_native_leak_warnings(tmp_path: Path, namespace: str,
                                                                  neo4j: Any) -> None:
    """The console entry leaves the heap to the OS at exit only when no model was loaded: after torch,
    native bindings that count their objects at exit would print a page of "leaked" warnings."""
    import os
    import subprocess
    import sys

    claims = tmp_path / "claims.jsonl"
    claims.write_text(json.dumps({"content": "The staging cluster runs 8 nodes", "source": "ops"}) + "\n")
    env = {**os.environ, "NEO4J_URI": neo4j.uri, "HF_HUB_OFFLINE": "1"}
    if neo4j.auth:
        env["NEO4J_USER"], env["NEO4J_PASSWORD"] = neo4j.auth
    out = subprocess.run([sys.executable, "-m", "palimpsest.api.cli", "ingest", str(claims), "-n", namespace], env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert "ingested 1 of 1" in out.stdout + out.stderr
    assert "leaked" not in out.stderr, out.stderr[-2000:]


def test_serve_says_where_it_listens_in_one_line_and_has_frozen_its_startup_heap(neo4j: Any) -> None:
    """Printed once the server answers (not before), on one line whatever the terminal's width. By then
    start-up's heap is frozen (api.heap), as /metrics shows."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "NEO4J_URI": neo4j.uri, "HF_HUB_OFFLINE": "1", "COLUMNS": "40"}
    env.pop("NEO4J_HTTP_URL", None)
    if neo4j.auth:
        env["NEO4J_USER"], env["NEO4J_PASSWORD"] = neo4j.auth
    proc = subprocess.Popen([sys.executable, "-m", "palimpsest.api.cli", "serve", "--host", "127.0.0.1",
                             "--port", str(port), "--no-worker"], env=env,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 240
        line = ""
        assert proc.stderr is not None
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
            if "listening on" in line:
                break
        assert "listening on" in line, f"no listening line; exit {proc.poll()}"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as resp:
            assert resp.status == 200  # it was printed once the server answers
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            frozen = next(float(ln.split()[-1]) for ln in resp.read().decode().splitlines()
                          if ln.startswith("palimpsest_gc_frozen_objects "))
        assert frozen > 10_000  # start-up's heap (torch, the model, the driver) was frozen before serving
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    base = f"http://127.0.0.1:{port}"
    assert line.startswith(f"listening on {base} — GraphiQL at {base}/graphql, "), line
    if neo4j.uri == "bolt://127.0.0.1:7687":
        assert "Neo4j Browser at http://127.0.0.1:7474/browser/" in line, line


def test_the_worker_command_keeps_sentence_vectors_when_asked(tmp_path: Path, namespace: str, neo4j: Any,
                                                              monkeypatch: pytest.MonkeyPatch, driver: Any) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    data = tmp_path / "claims.jsonl"
    data.write_text(json.dumps({"content": "Melanie: Hi! I went swimming.", "source": "Melanie"}) + "\n")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(data), "-n", namespace]).exit_code == 0
    bad = runner.invoke(app, ["worker", "--once", "-n", namespace, "--sentence-vectors", "sometimes"])
    assert bad.exit_code == 1 and "--sentence-vectors" in bad.output
    res = runner.invoke(app, ["worker", "--once", "-n", namespace, "--sentence-vectors", "always"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.strip().splitlines()[-1])["sentence_vectors"] == 1
    rows, _, _ = driver.execute_query("MATCH (c:Claim {namespace: $ns}) RETURN size(c.sentence_vectors) AS n",
                                      ns=namespace)
    assert [r["n"] for r in rows] == [2 * 4 * 384]
