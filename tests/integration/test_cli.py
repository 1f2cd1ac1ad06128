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
             ["recall", "x", "-n", "../etc"], ["history", "k", "-n", ""], ["ingest", str(bad), "-n", namespace],
             # an unknown namespace, found before the model would load for the query
             ["recall", "x", "-n", namespace], ["recall-rounds", "x", "-n", namespace],
             ["ask", "x", "-n", namespace, "--llm-model", "m"], ["stats", "-n", namespace],
             ["retract", "c1", "--reason", "r", "-n", namespace]]
    env = {**os.environ, "NEO4J_URI": neo4j.uri, "HF_HUB_OFFLINE": "1"}
    if neo4j.auth:
        env["NEO4J_USER"], env["NEO4J_PASSWORD"] = neo4j.auth
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argvs)], env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    history, check, policy, recall, history_empty, ingest, *unknown = report["runs"]
    assert report["loaded"] == [], report["loaded"]
    assert history["exit"] == 1 and "no claims with key 'k'" in history["output"], history
    assert check["exit"] == 1 and "unknown namespace" in check["output"], check
    assert policy["exit"] == 0 and '"default_policy":"default-v1"' in policy["output"], policy
    for refused in (recall, history_empty):  # refused before anything connects
        assert refused["exit"] == 2 and "namespace is 1-64 characters" in refused["output"], refused
    assert ingest["exit"] == 2 and "content must not be empty or only whitespace" in ingest["output"], ingest
    for run in unknown:
        assert run["exit"] == 1 and f"NOT_FOUND (namespace): unknown namespace {namespace!r}" in run["output"], run
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


def _env(neo4j: Any) -> dict[str, str]:
    import os

    env = {**os.environ, "NEO4J_URI": neo4j.uri, "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    if neo4j.auth:
        env["NEO4J_USER"], env["NEO4J_PASSWORD"] = neo4j.auth
    return env


def _claims_in(driver: Any, namespace: str) -> dict[str, int]:
    rows, _, _ = driver.execute_query("MATCH (c:Claim {namespace: $ns}) RETURN c.content AS content, count(*) AS n",
                                      ns=namespace)
    return {str(r["content"]): int(r["n"]) for r in rows}


def test_an_interrupted_ingest_says_what_committed_and_runs_again_safely(tmp_path: Path, namespace: str,
                                                                        neo4j: Any, driver: Any) -> None:
    """SIGINT once some batches have committed: exit 130, the message's count is what the store holds
    (batch by batch: the write in flight finishes first), and the same command run again ends with
    every line stored exactly once, without embedding the stored lines again."""
    import re
    import signal
    import subprocess
    import sys
    import time

    total, batch = 3000, 50
    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps({"content": f"Host h-{i} runs service s-{i} in rack r-{i % 40}.",
                                       "source": "inventory"}) + "\n" for i in range(total)))
    argv = [sys.executable, "-m", "palimpsest.api.cli", "ingest", str(big), "-n", namespace, "--batch", str(batch)]
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(argv, env=_env(neo4j), cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None and not _claims_in(driver, namespace):
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        assert _claims_in(driver, namespace), "no batch committed in time"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err[-3000:])
    said = re.search(r"interrupted: (\d+) of 3000 lines committed into '[^']+', through line (\d+) "
                     r"\((\d+) claims written, 0 already stored, 0 failed\)", err)
    assert said, err[-3000:]
    committed, through, written = (int(g) for g in said.groups())
    stored = _claims_in(driver, namespace)
    assert committed == through == written == sum(stored.values()), (said.group(0), len(stored))
    assert 0 < committed < total and committed % batch == 0 and set(stored.values()) == {1}
    assert "Running the same command again continues safely" in err and "Traceback" not in err

    again = subprocess.run(argv, env=_env(neo4j), cwd=root, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (f"ingested {total} of {total} claims into {namespace!r} ({committed} already stored by an earlier run, "
            "not written again); 0 failed") in again.stderr, again.stderr[-3000:]
    stored = _claims_in(driver, namespace)
    assert len(stored) == total and set(stored.values()) == {1}


def test_ingest_run_twice_writes_each_line_once_and_keeps_repeats(tmp_path: Path, namespace: str, neo4j: Any,
                                                                  monkeypatch: pytest.MonkeyPatch, driver: Any) -> None:
    """A key set back to an earlier value (line 3 repeats line 1) stays a write of its own; a line's own
    idempotency_key is used as given, and reusing it with other content is the store's CONFLICT."""
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    one = {"content": "Staging DB is pg-1", "source": "wiki", "claim_key": "staging.db"}
    lines = [one, {"content": "Staging DB is pg-2", "source": "ticket", "claim_key": "staging.db"}, one,
             {"content": "Backups go to s3", "source": "wiki", "idempotency_key": "backups-1"}]
    data = tmp_path / "claims.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    runner = CliRunner()
    first = runner.invoke(app, ["ingest", str(data), "-n", namespace])
    assert first.exit_code == 0 and "ingested 4 of 4 claims" in first.output, first.output
    again = runner.invoke(app, ["ingest", str(data), "-n", namespace, "--batch", "3"])
    assert again.exit_code == 0, again.output
    assert "ingested 4 of 4 claims" in again.output and "(4 already stored" in again.output, again.output
    assert _claims_in(driver, namespace) == {"Staging DB is pg-1": 2, "Staging DB is pg-2": 1, "Backups go to s3": 1}
    history = runner.invoke(app, ["history", "staging.db", "-n", namespace])
    assert [ln.split("]")[0].strip("[ ") for ln in history.stdout.splitlines()] == ["superseded", "superseded",
                                                                                    "current"]
    lines[3] = {**lines[3], "content": "Backups go to gcs"}
    data.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    changed = runner.invoke(app, ["ingest", str(data), "-n", namespace])
    assert changed.exit_code == 2 and "line 4: idempotency_key 'backups-1' was already used" in changed.output


def test_retract_and_stats(tmp_path: Path, namespace: str, neo4j: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    data = tmp_path / "claims.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in [
        {"content": "Staging DB is pg-1", "source": "wiki", "claim_key": "staging.db"},
        {"content": "Staging DB is pg-2", "source": "ticket", "claim_key": "staging.db"},
        {"content": "Backups go to s3", "source": "wiki"}]) + "\n")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(data), "-n", namespace]).exit_code == 0
    res = runner.invoke(app, ["stats", "-n", namespace])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0].startswith(f"namespace {namespace}: revision 1; projections at revision ")
    assert res.stdout.splitlines()[1] == "claims: 3 (current 2, superseded 1)", res.stdout
    packet = json.loads(runner.invoke(app, ["recall", "staging database", "-n", namespace, "--json"]).stdout)
    pg2 = next(it for it in packet["items"] if it["content"] == "Staging DB is pg-2")
    res = runner.invoke(app, ["retract", pg2["id"], "nope", pg2["id"], "--reason", "wrong ticket", "-n", namespace])
    assert res.exit_code == 1, res.output
    lines = res.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"retracted {pg2['id']} at revision 2; ") and \
        lines[0].endswith(" is current again"), res.stdout
    assert "nope: NOT_FOUND (id): no claim 'nope'" in res.output
    assert f"{pg2['id']}: CONFLICT (id): claim {pg2['id']!r} is already retracted" in res.output
    assert "retracted 1 of 3 claims" in res.output
    res = runner.invoke(app, ["stats", "-n", namespace, "--json"])
    assert res.exit_code == 0
    stats = json.loads(res.stdout)
    assert stats["revision"] == 2 and stats["claims_by_status"] == {"current": 2, "retracted": 1}, stats
    packet = json.loads(runner.invoke(app, ["recall", "staging database", "-n", namespace, "--json"]).stdout)
    assert packet["items"][0]["content"] == "Staging DB is pg-1"
    res = runner.invoke(app, ["retract", "c1", "--reason", "r", "-n", namespace + "-none"])
    assert res.exit_code == 1 and "unknown namespace" in res.output
