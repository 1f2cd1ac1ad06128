"""The GraphQL examples of the docs, answered by a real run: `make docs` rewrites them, a test compares.

Every ```graphql block of docs/GRAPHQL.md and docs/RECALL.md (the README links to both) that is
followed by a ```json block is sent to the schema
(in-process, local mode) against a freshly loaded copy of the demo namespace (api/demo.py; the
query's `"demo"` is replaced by that copy's name), and the JSON block is the answer, as a client
receives it (`{"data": …}`). Two kinds of value cannot be the same on every run, and are shown
shortened: a packet's `fingerprint` (it hashes the claims' ids, which are new in every load) is
written as "…", and `score` (relevance × freshness, and freshness decays with the claims' age) is
rounded to 2 decimals — the demo is a few seconds old when it is answered. Every other number is
rounded to 4 decimals: the sixth moves between machines (the same text embeds ~1e-7 apart on another
CPU's float kernels, and a similarity rounded to 6 decimals can then flip its last digit).

    python -m scripts.readme_examples            # rewrite the files
    python -m scripts.readme_examples --check    # exit 1 if a file differs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FILES = (ROOT / "docs" / "GRAPHQL.md", ROOT / "docs" / "RECALL.md")
EXAMPLE = re.compile(r"```graphql\n(?P<query>.*?)```\n```json\n(?P<answer>.*?)```\n", re.S)
WIDTH = 100


def shown(value: Any, key: str | None = None) -> Any:
    """`value` with the run-dependent fields shortened (see the module docstring)."""
    if isinstance(value, dict):
        return {k: shown(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [shown(v) for v in value]
    if key == "fingerprint" and isinstance(value, str):
        return "…"
    if isinstance(value, float):
        return round(value, 2 if key == "score" else 4)
    return value


def render(value: Any, indent: int = 0) -> str:
    """JSON, one line when it fits in WIDTH columns, else one member per line."""
    flat = json.dumps(value, ensure_ascii=False)
    if indent + len(flat) <= WIDTH or not isinstance(value, dict | list) or not value:
        return flat
    pad = " " * (indent + 1)
    if isinstance(value, list):
        return "[" + (",\n" + pad).join(render(v, indent + 1) for v in value) + "]"
    parts = []
    for k, v in value.items():
        head = json.dumps(k, ensure_ascii=False) + ": "
        parts.append(head + render(v, indent + 1 + len(head)))
    return "{" + (",\n" + pad).join(parts) + "}"


def answer(runtime: Any, query: str, namespace: str) -> dict[str, Any]:
    """The schema's answer to `query` (its "demo" replaced by `namespace`), as a client gets it."""
    from palimpsest.api.auth import LOCAL
    from palimpsest.api.graphql_schema import Loaders, schema
    from palimpsest.api.observability import Metrics

    ctx = {"runtime": runtime, "loaders": Loaders(runtime), "metrics": Metrics(), "timeout_s": 30.0,
           "principal": LOCAL, "auth_error": None}
    result = asyncio.run(schema.execute(query.replace('"demo"', json.dumps(namespace)), context_value=ctx))
    if result.errors:
        raise RuntimeError(f"GraphQL example failed: {result.errors[0].message}\n{query}")
    body: dict[str, Any] = {"data": result.data}
    return json.loads(json.dumps(body).replace(namespace, "demo"))


def rewritten(text: str, runtime: Any, namespace: str) -> str:
    """`text` with every example's JSON block replaced by the real answer."""
    def one(match: re.Match[str]) -> str:
        body = render(shown(answer(runtime, match["query"], namespace)))
        return f"```graphql\n{match['query']}```\n```json\n{body}\n```\n"

    return EXAMPLE.sub(one, text)


def with_demo(runtime: Any) -> str:
    """Load the demo into a namespace of its own; returns its name (the caller drops it)."""
    from palimpsest.api import demo
    from palimpsest.api.memory import Memory

    namespace = f"readme-{uuid.uuid4().hex[:10]}"
    memory = Memory(runtime, namespace)
    for batch in demo.DEMO_CLAIMS:
        memory.ingest_many(batch)
    return namespace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when a file differs")
    args = parser.parse_args(argv)
    from palimpsest.api.runtime import Runtime
    from palimpsest.graph.lifecycle.maintenance import drop_namespace

    with Runtime.from_env() as runtime:
        namespace = with_demo(runtime)
        try:
            texts = {path: path.read_text(encoding="utf-8") for path in FILES}
            new = {path: rewritten(text, runtime, namespace) for path, text in texts.items()}
        finally:
            drop_namespace(runtime.driver, namespace)
    drifted = [path for path in FILES if new[path] != texts[path]]
    if args.check:
        for path in drifted:
            print(f"{path.relative_to(ROOT)}: examples differ from a real run; run `make docs`", file=sys.stderr)
        return 1 if drifted else 0
    for path in drifted:
        path.write_text(new[path], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
