"""The CLI's first impression, without a database: usage lines, refused input, where `serve` says it is.

Refused input (a malformed namespace) must answer before anything connects to Neo4j or loads the
model; these tests run with no database reachable, so a command that tried would fail them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from palimpsest.api.cli import app, describe_error, line_keys, listening_line


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
    import tempfile

    light = [["--help"], ["history", "--help"], ["policy", "--help"], ["recall", "x", "-n", "../etc"],
             ["history", "", "-n", "ns"], ["check", "-n", "a b"], ["retract", "id1", "--reason", " ", "-n", "ns"],
             ["stats", "-n", "a/b"], ["ingest", "--help"]]
    claims = Path(tempfile.mkdtemp()) / "claims.jsonl"
    claims.write_text('{"content": "The staging cluster runs 8 nodes", "source": "ops"}\n')
    # Commands that embed (or may) meet the unreachable database before the model: the same refusal, no
    # torch. Each once loaded the model first and reported the database (or an unknown namespace) after it.
    reads = [["history", "some.key", "-n", "ns"], ["check", "-n", "ns"], ["policy", "default", "-n", "ns"],
             ["recall", "x", "-n", "ns"], ["recall-rounds", "x", "-n", "ns"], ["ask", "x", "-n", "ns"],
             ["ingest", str(claims), "-n", "ns"], ["stats", "-n", "ns"], ["retract", "id1", "--reason", "r"]]
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


def test_mcp_help_names_exactly_the_tools_the_server_serves() -> None:
    """The help is read from the server's registry; this compares it with the registry's own listing
    of a server built as `palimpsest mcp` builds it, so a tool added or dropped shows in both or fails."""
    import asyncio

    from palimpsest.api.mcp_server import build_mcp, served_tools

    res = CliRunner().invoke(app, ["mcp", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    text = res.output.split("Tools served (", 1)[1]
    count = int(text.split(")", 1)[0])
    named = re.findall(r"^ {2,3}([a-z_]+): ", text.split("Options", 1)[0], flags=re.MULTILINE)  # wraps: 1 space
    assert len(named) == count, (count, named)
    server = build_mcp(None)  # type: ignore[arg-type]  # listing its tools never touches the memory
    registered = sorted(tool.name for tool in asyncio.run(server.list_tools()))
    assert sorted(named) == registered == sorted(name for name, _ in served_tools()), (named, registered)
    assert {"remember", "recall", "recall_rounds", "ask", "history", "retract", "erase"} <= set(named)


def test_ingest_help_names_every_field_a_line_may_hold() -> None:
    from palimpsest.schema.models import ClaimInput

    res = CliRunner().invoke(app, ["ingest", "--help"], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    fields_line = next(line for line in res.output.splitlines() if "Fields of a line:" in line)
    for name in ClaimInput.model_fields:
        assert f" {name}" in fields_line, (name, fields_line)
    assert "idempotency_key" in res.output and "exit 130" in res.output


def test_default_idempotency_keys_are_the_lines_own_and_count_repeats() -> None:
    """Same text, same key, wherever the line sits and whatever else the file holds; a line repeated in the
    file keeps one claim per occurrence (a key set back to an earlier value is a write of its own)."""
    a = '{"content": "Staging DB is pg-1", "source": "wiki", "claim_key": "staging.db"}'
    b = '{"content": "Staging DB is pg-2", "source": "wiki", "claim_key": "staging.db"}'
    first = line_keys([(1, a), (2, b), (3, a)])
    assert first[1] != first[2] != first[3] != first[1]
    assert first[3] == first[1] + "#2" and first[1].startswith("jsonl:") and len(first[3]) <= 128
    moved = line_keys([(7, "  " + b), (9, a + "\r"), (12, a), (13, "{}")])
    assert (moved[7], moved[9], moved[12]) == (first[2], first[1], first[3])


def test_retract_refuses_bad_input_before_connecting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    for argv, words in [(["retract", "id1", "--reason", "  "], "must not be empty"),
                        (["retract", "id1", "--reason", "x" * 1001], "at most 1000 characters"),
                        (["retract", "--reason", "r"], "Missing argument 'ID...'"),
                        (["retract", "", "--reason", "r"], "a claim id must not be empty"),
                        (["retract", "id1"], "Missing option '--reason'"),
                        (["stats", "-n", "../x"], "namespace is 1-64 characters")]:
        res = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
        assert res.exit_code == 2 and words in res.output, (argv, res.output)
