"""The CLI's first impression, without a database: usage lines, refused input, where `serve` says it is.

Refused input (a malformed namespace) must answer before anything connects to Neo4j or loads the
model; these tests run with no database reachable, so a command that tried would fail them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from palimpsest.api.cli import app, describe_error, listening_line


@pytest.mark.parametrize(("argv", "usage"), [
    (["recall", "--help"], "Usage: palimpsest recall [OPTIONS] QUERY"),
    (["history", "--help"], "Usage: palimpsest history [OPTIONS] CLAIM_KEY"),
    (["ingest", "--help"], "Usage: palimpsest ingest [OPTIONS] FILE"),
    (["policy", "default", "--help"], "Usage: palimpsest policy default [OPTIONS] [VERSION]"),
    (["policy", "register", "--help"], "Usage: palimpsest policy register [OPTIONS] FILE"),
])
def test_usage_lines_name_arguments_plainly(argv: list[str], usage: str) -> None:
    res = CliRunner().invoke(app, argv, env={"COLUMNS": "200"}, prog_name="palimpsest")
    assert res.exit_code == 0, res.output
    assert usage in res.output and "{" not in res.output.split("\n\n", 2)[1], res.output


def test_recall_has_a_short_k_with_help() -> None:
    res = CliRunner().invoke(app, ["recall", "--help"], env={"COLUMNS": "200"})
    line = next(ln for ln in res.output.splitlines() if "--k" in ln)
    assert " -k " in line and "policy's k" in line, line


@pytest.mark.parametrize("argv", [["recall", "x", "-n", "../etc"], ["history", "k", "-n", ""],
                                  ["check", "-n", "a b"], ["worker", "--once", "-n", "ok", "-n", "../x"]])
def test_a_malformed_namespace_is_refused_before_connecting(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")  # nothing listens there: connecting would fail otherwise
    res = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert res.exit_code == 2, res.output
    assert "namespace is 1-64 characters" in res.output, res.output


@pytest.mark.parametrize(("argv", "words"), [
    (["recall", "  "], "must not be empty"),
    (["recall", "x", "--valid-at", "soon"], "is not a date or time, got 'soon'"),
    (["history", ""], "must not be empty"),
])
def test_other_refused_input_answers_before_connecting(argv: list[str], words: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    res = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert res.exit_code == 2 and words in res.output, res.output


def test_a_policy_file_that_is_not_json_is_refused_before_connecting(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    bad = tmp_path / "policy.json"
    bad.write_text("{version: p1}")
    res = CliRunner().invoke(app, ["policy", "register", str(bad)], env={"COLUMNS": "200"})
    assert res.exit_code == 1 and "is not JSON" in res.output, res.output


def test_item_errors_name_their_field_once() -> None:
    assert describe_error({"field": "content", "message": "content must not be empty"}) == "content must not be empty"
    assert describe_error({"field": "tau", "message": "Input should be greater than 0"}) == \
        "tau: Input should be greater than 0"


def test_listening_line_points_at_graphiql_and_the_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NEO4J_URI", "NEO4J_HTTP_URL", "PALIMPSEST_NEO4J_HTTP_PORT", "PALIMPSEST_NEO4J_BOLT_PORT"):
        monkeypatch.delenv(name, raising=False)
    local = listening_line("127.0.0.1", 8000)
    assert local.startswith("listening on http://127.0.0.1:8000 — GraphiQL at http://127.0.0.1:8000/graphql, "
                            "Neo4j Browser at http://127.0.0.1:7474/browser/"), local
    assert "\n" not in local
    monkeypatch.setenv("NEO4J_URI", "bolt://neo4j:7687")
    assert listening_line("0.0.0.0", 8000).endswith("GraphiQL at http://127.0.0.1:8000/graphql, "
                                                    "Neo4j at bolt://neo4j:7687")
    monkeypatch.setenv("NEO4J_HTTP_URL", "http://127.0.0.1:7474/")
    assert listening_line("0.0.0.0", 8000).endswith("Neo4j Browser at http://127.0.0.1:7474/browser/")


def test_status_lines_never_wrap_when_not_a_terminal() -> None:
    """`neo4j start` prints a Browser URL longer than 80 columns; split across lines it cannot be clicked
    or copied (rich wraps at 80 columns when stderr is not a terminal)."""
    from palimpsest.api.cli import console

    url = "http://127.0.0.1:7474/browser/?dbms=bolt://127.0.0.1:7687&preselectAuthMethod=NO_AUTH"
    with console.capture() as captured:
        console.print(f"Neo4j running (pid 12345) at bolt://127.0.0.1:7687; Browser at {url}")
    assert captured.get().rstrip("\n").endswith(url)
    assert captured.get().count("\n") == 1


_IMPORT_PROBE = """
import json, sys
from typer.testing import CliRunner
from palimpsest.api.cli import app
watched = json.loads(sys.argv[2])
seen = {"import api.cli": {"exit": 0, "output": "", "loaded": [m for m in watched if m in sys.modules]}}
for argv in json.loads(sys.argv[1]):
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    seen[" ".join(argv)] = {"exit": result.exit_code, "output": result.output,
                            "loaded": [m for m in watched if m in sys.modules]}
print(json.dumps(seen))
"""
# Seconds each on a 2-core machine, and nothing a read or a refusal uses.
_MODEL_AND_LLM = ("torch", "sentence_transformers", "transformers", "litellm", "instructor", "pandas", "pyarrow")
# What recall, ask and the worker use: a read of one key's history, a check or a policy read does not.
_RECALL_AND_DETECTORS = ("palimpsest.graph.recall", "palimpsest.extraction.entities",
                         "palimpsest.extraction.contradiction", "palimpsest.extraction.router_llm")
_CONNECTING = ("neo4j", "palimpsest.api.memory", "palimpsest.api.runtime")


def test_help_refusals_and_reads_import_only_what_they_use() -> None:
    """`--help` and refused input import neither the driver nor the memory; `history`, `check` and
    `policy default` import the driver and the memory, but not the model, litellm, recall or the
    detectors. Imports are most of what these commands take (the driver alone is about 0.3 s,
    recall and the detectors another 0.2 s), so a module-level import that pulls one of them back
    onto this path fails here rather than only showing in a timing.

    Commands are run in order in one fresh interpreter, so what each one loaded adds to what the ones
    before it did: the refusals come before the reads. The reads meet no database (nothing listens
    on port 1), which they report as unavailable after having imported all they would use."""
    import json
    import os
    import subprocess
    import sys

    light = [["--help"], ["history", "--help"], ["policy", "--help"], ["recall", "x", "-n", "../etc"],
             ["history", "", "-n", "ns"], ["check", "-n", "a b"]]
    reads = [["history", "some.key", "-n", "ns"], ["check", "-n", "ns"], ["policy", "default", "-n", "ns"]]
    watched = [*_MODEL_AND_LLM, *_RECALL_AND_DETECTORS, *_CONNECTING]
    env = {**os.environ, "NEO4J_URI": "bolt://127.0.0.1:1", "PALIMPSEST_NEO4J_RETRY_S": "0.05",
           "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, json.dumps(light + reads), json.dumps(watched)],
                         env=env, cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    for name in ["import api.cli", *(" ".join(argv) for argv in light)]:
        assert seen[name]["exit"] in (0, 2), (name, seen[name])
        assert seen[name]["loaded"] == [], (name, seen[name]["loaded"])
    for argv in reads:
        run = seen[" ".join(argv)]
        assert run["exit"] == 1 and "unavailable" in run["output"], (argv, run)
        assert set(run["loaded"]) == set(_CONNECTING), (argv, run["loaded"])
