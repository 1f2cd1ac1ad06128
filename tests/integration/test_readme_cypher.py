"""The Neo4j Browser queries of docs/OPERATIONS.md (the README links there), run on the demo data:
they must be in that page as written and return what it says they return.

The demo is loaded into this test's own namespace (the queries' `'demo'` is replaced by it) and
the worker makes one pass, as `make run`'s in-process worker does a moment after start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from palimpsest.api import demo
from palimpsest.api.worker import ProjectionWorker

pytestmark = pytest.mark.integration

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "OPERATIONS.md").read_text(encoding="utf-8")

WHOLE = """MATCH (c:Claim {namespace: 'demo'})
OPTIONAL MATCH (c)-[r:SUPERSEDES|MENTIONS]->(x)
RETURN c, r, x;"""
CHAIN = """MATCH p = (c:Claim {namespace: 'demo', claim_key: 'payments.db', status: 'current'})
      -[:SUPERSEDES*0..]->(:Claim)
RETURN p;"""
REPLACED = """MATCH (new:Claim {namespace: 'demo'})-[s:SUPERSEDES]->(old:Claim)
RETURN s.revision AS revision, old.content AS was, new.content AS now ORDER BY revision, was;"""
ENTITIES = """MATCH (e:Entity {namespace: 'demo'})<-[:MENTIONS]-(c:Claim)
RETURN e.name AS entity, count(c) AS claims ORDER BY claims DESC, entity;"""
CONTRADICTIONS = """MATCH (a:Claim {namespace: 'demo'})-[r:CONTRADICTS]->(b:Claim)
WHERE r.detected_at >= datetime() - duration('P1D')
RETURN a.content, b.content, r.method, r.score;"""
COMMITS = """MATCH (c:Commit {namespace: 'demo'})
RETURN c.revision AS revision, c.kind AS kind, c.items AS items ORDER BY revision DESC;"""


@pytest.fixture
def demo_graph(runtime: Any, namespace: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(demo, "DEMO_NAMESPACE", namespace)
    demo.load_demo(runtime)
    ProjectionWorker(runtime).run_once(namespace, pagerank=False)
    return namespace


def cypher(runtime: Any, query: str, namespace: str) -> list[dict[str, Any]]:
    assert query in PAGE, f"docs/OPERATIONS.md no longer shows this query:\n{query}"
    records, _, _ = runtime.driver.execute_query(query.replace("'demo'", f"'{namespace}'"))
    return [dict(r) for r in records]


def test_readme_browser_queries_return_what_it_says(runtime: Any, demo_graph: str) -> None:
    ns = demo_graph
    whole = cypher(runtime, WHOLE, ns)
    claims = {r["c"]["content"] for r in whole}
    kinds = sorted(r["r"].type for r in whole if r["r"] is not None)
    entities = {r["x"]["name"] for r in whole if r["x"] is not None and "Entity" in r["x"].labels}
    assert len(claims) == 7 and kinds.count("SUPERSEDES") == 3 and kinds.count("MENTIONS") == 5
    assert entities == {"Payments API", "db-7", "db-9", "on-call"}

    (chain,) = cypher(runtime, CHAIN, ns)[-1:]  # the longest path comes last: current → the one it replaced
    assert [n["content"] for n in chain["p"].nodes] == [
        "Payments API moved to database host db-9 after incident 142.",
        "The payments API stores its data on database host db-7."]

    assert [(r["revision"], r["was"], r["now"]) for r in cypher(runtime, REPLACED, ns)] == [
        (2, "Deploys to production are allowed on weekdays.",
         "Production deploys are frozen until the end of the quarter."),
        (2, "The payments API stores its data on database host db-7.",
         "Payments API moved to database host db-9 after incident 142."),
        (3, "Checkout p99 latency budget is 800 ms.", "Checkout p99 latency budget was tightened to 400 ms."),
    ]
    assert cypher(runtime, ENTITIES, ns)[0] == {"entity": "Payments API", "claims": 2}
    assert cypher(runtime, CONTRADICTIONS, ns) == []
    assert cypher(runtime, COMMITS, ns) == [{"revision": 3, "kind": "ingest", "items": 1},
                                           {"revision": 2, "kind": "ingest", "items": 2},
                                           {"revision": 1, "kind": "ingest", "items": 4}]
