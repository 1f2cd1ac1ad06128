"""The README's first ten minutes, step 1: the Python block is a script that prints its results,
and it prints what the README shows below it.

The block is taken from the README as written (the first ```python block under "The first ten
minutes", and the ```text block after it), run as `__main__` in this process against the test's
Neo4j, in a fresh namespace of its own: its `"quickstart"` is replaced by the test's namespace, and
`Memory.from_env` is pointed at the suite's runtime (the script's own `from_env` would read the same
database from the environment, but would load a second embedding model).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from palimpsest.api.memory import Memory

pytestmark = pytest.mark.integration

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
STEP = re.compile(r"^## The first ten minutes\n.*?^```python\n(?P<script>.*?)^```\n.*?^```text\n(?P<printed>.*?)^```\n",
                  re.S | re.M)


def quickstart() -> tuple[str, str]:
    found = STEP.search(README)
    assert found, "the README's first ten minutes no longer has a Python block followed by its output"
    return found["script"], found["printed"]


def test_readme_first_ten_minutes_script_prints_what_the_readme_shows(
        runtime: Any, namespace: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    script, printed = quickstart()
    assert 'namespace="quickstart"' in script and "print(" in script  # a script, not a REPL session
    assert ">>>" not in script

    def from_env(cls: type[Memory], namespace: str = "default", *, log_packets: bool = False) -> Memory:
        return cls(runtime, namespace, log_packets=log_packets)

    monkeypatch.setattr(Memory, "from_env", classmethod(from_env))
    code = compile(script.replace('"quickstart"', f'"{namespace}"'), "README.md (first ten minutes)", "exec")
    exec(code, {"__name__": "__main__"})
    assert capsys.readouterr().out == printed
