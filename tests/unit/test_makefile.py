"""`make run` installs the runtime only; `make test` adds the dev extras (pytest, ruff, mypy …)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _recipe(target: str) -> str:
    make = shutil.which("make")
    assert make, "make is needed (.ci/run installs it)"
    # -n: print, run nothing; -B: as if nothing were installed yet, so every install step shows.
    out = subprocess.run([make, "-n", "-B", target, "VENV=/nonexistent/venv"], cwd=REPO, capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_run_installs_no_dev_extras() -> None:
    recipe = _recipe("run")
    assert "pip install -q -e ." in recipe and "palimpsest serve" in recipe
    assert "[dev]" not in recipe, recipe
    # The CLI is not on PATH after `make run`: the recipe prints the absolute path MCP client configs need.
    assert "palimpsest CLI: /nonexistent/venv/bin/palimpsest" in recipe, recipe


def test_test_installs_the_dev_extras() -> None:
    recipe = _recipe("test")
    assert 'pip install -q -e ".[dev]"' in recipe and "pytest" in recipe, recipe
