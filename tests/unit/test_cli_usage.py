"""The CLI's first impression, without a database: usage lines, refused input, where `serve` says it is.

Refused input (a malformed namespace) must answer before anything connects to Neo4j or loads the
model; these tests run with no database reachable, so a command that tried would fail them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli import app, describe_error, listening_line


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
    from api.cli import console

    url = "http://127.0.0.1:7474/browser/?dbms=bolt://127.0.0.1:7687&preselectAuthMethod=NO_AUTH"
    with console.capture() as captured:
        console.print(f"Neo4j running (pid 12345) at bolt://127.0.0.1:7687; Browser at {url}")
    assert captured.get().rstrip("\n").endswith(url)
    assert captured.get().count("\n") == 1
