"""The entity job in the background worker, against a real Neo4j: links, resolution, RELATED, PageRank."""

from __future__ import annotations

from typing import Any

import pytest

from palimpsest.api.worker import WorkerConfig

pytestmark = pytest.mark.integration


def _entities(driver: Any, ns: str) -> dict[str, dict[str, Any]]:
    records, _, _ = driver.execute_query(
        "MATCH (e:Entity {namespace: $ns}) RETURN e.canonical AS k, e.id AS id, e.name AS name, "
        "e.aliases AS aliases, e.type AS type, e.pagerank AS pr", ns=ns)
    return {r["k"]: dict(r) for r in records}


def _mentions(driver: Any, ns: str) -> set[tuple[str, str]]:
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns})-[:MENTIONS]->(e:Entity {namespace: $ns}) RETURN c.content AS c, "
        "e.canonical AS e", ns=ns)
    return {(r["c"], r["e"]) for r in records}


def test_worker_links_claims_to_entities_and_counts_co_mentions(memory: Any, driver: Any) -> None:
    ns = memory.namespace
    memory.ingest_many([
        {"content": "checkout-api now runs on db-7 in Frankfurt.", "source": "ops",
         "metadata": {"subject": "checkout-api"}},
        {"content": "Ravi Alvarez owns checkout-api and db-7.", "source": "ops"},
        {"content": "db-9 holds the ledger for Ravi Alvarez; revenue was 1,200 in March 2026.", "source": "ops"},
    ])
    report = memory.run_projections()
    assert report.entities_created >= 4
    ents = _entities(driver, ns)
    assert {"checkout api", "db 7", "db 9", "ravi alvarez"} <= set(ents)
    # values are not entities
    assert not any(k in ents for k in ("1 200", "march 2026", "2026", "march"))
    # "db-7" and "db-9" are different machines, whatever their embeddings say
    assert ents["db 7"]["id"] != ents["db 9"]["id"]
    assert ents["checkout api"]["type"] == "subject"
    mentions = _mentions(driver, ns)
    assert ("Ravi Alvarez owns checkout-api and db-7.", "db 7") in mentions
    assert ("Ravi Alvarez owns checkout-api and db-7.", "checkout api") in mentions
    # RELATED weight = number of claims mentioning both ends
    records, _, _ = driver.execute_query(
        "MATCH (a:Entity {namespace: $ns})-[r:RELATED]-(b:Entity {namespace: $ns}) "
        "WHERE a.canonical = 'checkout api' AND b.canonical = 'db 7' RETURN r.weight AS w", ns=ns)
    assert [r["w"] for r in records] == [2.0]
    # PageRank was written (the graph went from empty to something)
    assert report.pagerank_runs == 1
    assert all(e["pr"] is not None and e["pr"] > 0 for e in ents.values())


def test_later_batches_link_known_names_and_backfill_older_claims(memory: Any, driver: Any) -> None:
    ns = memory.namespace
    memory.ingest("The rollout of ledger-scheduler was paused by Mara Quint.", "ops")
    memory.run_projections()
    # A later claim declares "Mara Quint" again (known) and introduces "Blue Harbor", which an
    # *older* claim also named in lower case: the backfill links that older claim too.
    memory.ingest("the blue harbor incident review is on Friday.", "ops")
    memory.run_projections()
    memory.ingest("Mara Quint leads Blue Harbor.", "ops", metadata={"title": "Blue Harbor"})
    report = memory.run_projections()
    mentions = _mentions(driver, ns)
    assert ("Mara Quint leads Blue Harbor.", "mara quint") in mentions
    assert ("the blue harbor incident review is on Friday.", "blue harbor") in mentions
    assert report.entities_created == 1  # only Blue Harbor is new
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns})-[m:MENTIONS]->(e:Entity {canonical: 'blue harbor', namespace: $ns}) "
        "RETURN c.revision AS crev, m.revision AS mrev ORDER BY crev", ns=ns)
    # the backfilled link exists from the revision that introduced the name, not from the old claim's
    assert [(r["crev"], r["mrev"]) for r in records] == [(2, 3), (3, 3)]


def test_rerunning_a_batch_writes_nothing_twice(memory: Any, driver: Any, runtime: Any) -> None:
    from palimpsest.graph.knowledge.entities import EntityBatch, write_entity_batch

    ns = memory.namespace
    memory.ingest_many([{"content": "Nadia Okafor moved search-api to db-3.", "source": "s"},
                        {"content": "search-api latency doubled for Nadia Okafor.", "source": "s"}])
    memory.run_projections()
    before = (_entities(driver, ns), _mentions(driver, ns))
    # Replay the same entity writes in a fresh transaction: MERGE + recount leave everything as it was.
    rows, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns})-[m:MENTIONS]->(e:Entity) RETURN c.id AS claim, e.id AS entity, "
        "m.revision AS revision", ns=ns)
    with driver.session() as session:
        counters = session.execute_write(write_entity_batch, ns, EntityBatch(mentions=[dict(r) for r in rows]))
    assert counters["mentions_created"] == 0
    assert (_entities(driver, ns), _mentions(driver, ns)) == before
    records, _, _ = driver.execute_query(
        "MATCH (a:Entity {namespace: $ns})-[r:RELATED]->(b) RETURN a.canonical AS a, b.canonical AS b, "
        "r.weight AS w", ns=ns)
    weights = {frozenset((r["a"], r["b"])): r["w"] for r in records}
    assert weights[frozenset(("nadia okafor", "search api"))] == 2.0


def test_embedding_near_duplicates_merge_but_codes_never_do(memory: Any, driver: Any) -> None:
    ns = memory.namespace
    cfg = WorkerConfig(entity_merge_threshold=0.9)
    memory.ingest("Quarterly review Q1 of Northwind Traders.", "fin", metadata={"subject": "Northwind Traders"})
    memory.run_projections(cfg)
    memory.ingest("Quarterly review Q2 of Northwind Traders Inc.", "fin",
                  metadata={"subject": ["Northwind Traders Inc", "Q2 review"]})
    memory.ingest("Quarterly review Q1 of the firm.", "fin", metadata={"subject": "Q1 review"})
    memory.run_projections(cfg)
    ents = _entities(driver, ns)
    assert "q1 review" in ents and "q2 review" in ents
    assert ents["q1 review"]["id"] != ents["q2 review"]["id"]
    # "Northwind Traders Inc" folds into "Northwind Traders" as an alias (no code differs)
    assert "northwind traders inc" not in ents
    assert "Northwind Traders Inc" in ents["northwind traders"]["aliases"]
