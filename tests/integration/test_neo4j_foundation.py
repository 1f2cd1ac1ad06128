"""The acceptance checks of the foundation: GDS, vector and fulltext indexes, Browser, migrations."""

from __future__ import annotations

import urllib.request

import pytest
from neo4j import Driver

from palimpsest.graph.claims import index as claim_index
from palimpsest.schema.errors import SchemaMismatchError
from palimpsest.schema.migrate import load_migrations, migrate, schema_meta
from tests.conftest import Neo4jHandle

pytestmark = pytest.mark.integration


def test_gds_version_answers(driver: Driver) -> None:
    records, _, _ = driver.execute_query("RETURN gds.version() AS v")
    assert records[0]["v"].startswith("2.13")


def test_pagerank_runs_on_a_projection(driver: Driver, namespace: str) -> None:
    driver.execute_query(
        "UNWIND range(0, 4) AS i CREATE (:Entity {id: $ns + '-' + i, namespace: $ns, name: 'e' + i})",
        ns=namespace,
    )
    # A star: everything points at e0, so e0 must rank first.
    driver.execute_query(
        "MATCH (hub:Entity {namespace: $ns, name: 'e0'}), (o:Entity {namespace: $ns}) "
        "WHERE o <> hub CREATE (o)-[:RELATED {weight: 1.0}]->(hub)", ns=namespace,
    )
    graph_name = f"pr-{namespace}"
    driver.execute_query(
        "MATCH (s:Entity {namespace: $ns}) OPTIONAL MATCH (s)-[r:RELATED]->(t:Entity {namespace: $ns}) "
        "WITH gds.graph.project($g, s, t, {relationshipProperties: r {.weight}}) AS g RETURN g.graphName",
        ns=namespace, g=graph_name,
    )
    try:
        records, _, _ = driver.execute_query(
            "CALL gds.pageRank.stream($g, {relationshipWeightProperty: 'weight'}) "
            "YIELD nodeId, score RETURN gds.util.asNode(nodeId).name AS name, score "
            "ORDER BY score DESC, name", g=graph_name,
        )
    finally:
        driver.execute_query("CALL gds.graph.drop($g, false) YIELD graphName RETURN graphName", g=graph_name)
    assert records[0]["name"] == "e0"
    assert records[0]["score"] > records[1]["score"]


def _claims_with_own_indexes(driver: Driver, namespace: str, rows: list[dict[str, object]]) -> tuple[str, str]:
    """Raw claims of `namespace` (with its label), then its own vector and fulltext indexes."""
    driver.execute_query(
        "CREATE (s:Store {namespace: $ns, revision: 1, claims: size($rows)}) WITH s UNWIND $rows AS row "
        "CREATE (c:Claim {id: row.id, namespace: $ns, content: row.text, status: 'current', revision: 1}) "
        "SET c:$($label) WITH c, row WHERE row.vec IS NOT NULL "
        "CALL db.create.setNodeVectorProperty(c, 'embedding', row.vec)",
        rows=rows, ns=namespace, label=claim_index.namespace_label(namespace),
    )
    assert claim_index.ensure(driver, namespace, minimum=0)
    suffix = claim_index.index_suffix(namespace)
    return claim_index.vector_index_name(suffix), claim_index.text_index_name(suffix)


def test_vector_index_online_and_returns_nearest(driver: Driver, namespace: str, embedder: object) -> None:
    texts = ["The database server is down", "Bananas are yellow fruit", "Payroll runs on Fridays"]
    vectors = embedder.embed(texts)  # type: ignore[attr-defined]
    vector_index, _ = _claims_with_own_indexes(driver, namespace, [
        {"id": f"{namespace}-{i}", "text": t, "vec": v} for i, (t, v) in enumerate(zip(texts, vectors, strict=True))])
    records, _, _ = driver.execute_query(
        "SHOW VECTOR INDEXES YIELD name, state, options, labelsOrTypes WHERE name = $name "
        "RETURN state, options, labelsOrTypes", name=vector_index)
    assert records and records[0]["state"] == "ONLINE"
    assert records[0]["labelsOrTypes"] == [claim_index.namespace_label(namespace)]
    config = records[0]["options"]["indexConfig"]
    assert config["vector.dimensions"] == 384 and config["vector.quantization.enabled"] is False
    query = embedder.embed_query("which fruit is yellow?")  # type: ignore[attr-defined]
    found, _, _ = driver.execute_query(
        "CALL db.index.vector.queryNodes($index, 50, $q) YIELD node, score "
        "RETURN node.content AS content, node.namespace AS ns, score ORDER BY score DESC",
        index=vector_index, q=query,
    )
    assert found[0]["content"] == "Bananas are yellow fruit"
    assert {r["ns"] for r in found} == {namespace}  # the namespace's index holds its claims only


def test_fulltext_index_finds_content(driver: Driver, namespace: str) -> None:
    _, text_index = _claims_with_own_indexes(driver, namespace, [
        {"id": f"{namespace}-ft", "text": "quarterly revenue grew in Lisbon", "vec": None}])
    records, _, _ = driver.execute_query(
        "CALL db.index.fulltext.queryNodes($index, 'lisbon') YIELD node RETURN node.id AS id", index=text_index)
    assert [r["id"] for r in records] == [f"{namespace}-ft"]


def test_browser_is_served(neo4j: Neo4jHandle) -> None:
    assert neo4j.http_url, "set NEO4J_HTTP_URL next to NEO4J_URI so the Browser can be checked"
    with urllib.request.urlopen(f"{neo4j.http_url}/browser/", timeout=10) as resp:
        body = resp.read().decode()
    assert resp.status == 200 and "Neo4j Browser" in body


def test_migrations_are_idempotent_and_recorded(driver: Driver, embedder: object) -> None:
    dim = embedder.dimension  # type: ignore[attr-defined]
    first = migrate(driver, embedding_dimension=dim, embedding_model="all-MiniLM-L6-v2")
    second = migrate(driver, embedding_dimension=dim, embedding_model="all-MiniLM-L6-v2")
    assert first == second == max(m.version for m in load_migrations(dim))
    records, _, _ = driver.execute_query("MATCH (m:SchemaMigration) RETURN count(m) AS n, max(m.version) AS v")
    assert records[0]["n"] == len(load_migrations(dim)) and records[0]["v"] == first
    meta = schema_meta(driver)
    assert meta is not None and meta["embedding_dimension"] == dim


def test_migrate_refuses_other_dimension(driver: Driver) -> None:
    with pytest.raises(SchemaMismatchError, match="768"):
        migrate(driver, embedding_dimension=768, embedding_model="some-768-model")
