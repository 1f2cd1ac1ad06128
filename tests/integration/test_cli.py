"""The CLI over the same Memory: ingest a .jsonl with a bad line, recall as table and JSON, history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from api.cli import app

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
