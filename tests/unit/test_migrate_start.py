"""What `migrate` sends for each stored state, against a scripted driver (no database).

Every process start runs `migrate`; on a database already at the packaged version it must be one
read and nothing else (no index listing, no DDL, no write), while any other state — fresh, one
version behind, a migration node missing, duplicated meta nodes — still migrates as before.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from neo4j import Driver, RoutingControl

from palimpsest.schema.errors import SchemaMismatchError
from palimpsest.schema.migrate import load_migrations, migrate

DIM = 384
MIGRATIONS = load_migrations(DIM)
NEWEST = MIGRATIONS[-1].version


class ScriptedDriver:
    """Answers the state read with the given meta nodes and applied versions; records every query."""

    def __init__(self, metas: list[dict[str, Any]], applied: set[int],
                 vector_dims: dict[str, int] | None = None) -> None:
        self.metas, self.applied, self.vector_dims = metas, applied, vector_dims or {}
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def execute_query(self, query: str, **kwargs: Any) -> tuple[list[dict[str, Any]], None, None]:
        self.sent.append((query, kwargs))
        if "collect(m {.*}) AS metas" in query:
            return [{"metas": self.metas, "applied": sorted(self.applied)}], None, None
        if query.startswith("SHOW VECTOR INDEXES"):
            return [{"name": n, "options": {"indexConfig": {"vector.dimensions": d}}}
                    for n, d in self.vector_dims.items()], None, None
        return [], None, None

    @property
    def queries(self) -> list[str]:
        return [q for q, _ in self.sent]


def _run(drv: ScriptedDriver, dimension: int = DIM) -> int:
    return migrate(cast(Driver, drv), embedding_dimension=dimension, embedding_model="all-MiniLM-L6-v2")


def _meta(version: int, dimension: int = DIM) -> dict[str, Any]:
    return {"id": "schema", "version": version, "embedding_dimension": dimension,
            "embedding_model": "all-MiniLM-L6-v2"}


def _statements(versions: list[int]) -> list[str]:
    return [s for m in MIGRATIONS if m.version in versions for s in m.statements]


def test_a_current_database_costs_one_read_and_nothing_else() -> None:
    drv = ScriptedDriver([_meta(NEWEST)], {m.version for m in MIGRATIONS})
    assert _run(drv) == NEWEST
    assert len(drv.sent) == 1, drv.queries
    assert drv.sent[0][1].get("routing_") == RoutingControl.READ


def test_duplicated_meta_nodes_that_agree_are_current_too() -> None:
    """Two first starts racing can each MERGE a meta node (no constraint holds them to one)."""
    drv = ScriptedDriver([_meta(NEWEST), _meta(NEWEST)], {m.version for m in MIGRATIONS})
    assert _run(drv) == NEWEST and len(drv.sent) == 1


def test_a_fresh_database_gets_every_migration_in_order() -> None:
    drv = ScriptedDriver([], set())
    assert _run(drv) == NEWEST
    ddl = [q for q in drv.queries if q in set(_statements([m.version for m in MIGRATIONS]))]
    assert ddl == _statements([m.version for m in MIGRATIONS])
    recorded = [kw["v"] for q, kw in drv.sent if q.startswith("MERGE (m:SchemaMigration")]
    assert recorded == [m.version for m in MIGRATIONS]
    assert drv.queries[1].startswith("SHOW VECTOR INDEXES")
    assert drv.queries[-2].startswith("MERGE (m:SchemaMeta") and drv.sent[-2][1]["version"] == NEWEST
    assert drv.queries[-1] == "CALL db.awaitIndexes($t)"


def test_one_version_behind_runs_only_the_newest_migration() -> None:
    drv = ScriptedDriver([_meta(NEWEST - 1)], {m.version for m in MIGRATIONS if m.version < NEWEST})
    assert _run(drv) == NEWEST
    ran = [q for q in drv.queries if q in set(_statements([m.version for m in MIGRATIONS]))]
    assert ran == _statements([NEWEST])
    assert [kw["v"] for q, kw in drv.sent if q.startswith("MERGE (m:SchemaMigration")] == [NEWEST]
    assert drv.queries[-1] == "CALL db.awaitIndexes($t)"


def test_a_missing_migration_node_is_applied_although_the_meta_is_current() -> None:
    missing = MIGRATIONS[2].version
    drv = ScriptedDriver([_meta(NEWEST)], {m.version for m in MIGRATIONS} - {missing})
    _run(drv)
    assert [kw["v"] for q, kw in drv.sent if q.startswith("MERGE (m:SchemaMigration")] == [missing]
    assert drv.queries[-1] == "CALL db.awaitIndexes($t)"


def test_a_meta_behind_its_migration_nodes_is_brought_up_to_date_without_ddl() -> None:
    drv = ScriptedDriver([_meta(NEWEST - 1)], {m.version for m in MIGRATIONS})
    assert _run(drv) == NEWEST
    assert not [q for q in drv.queries if q in set(_statements([m.version for m in MIGRATIONS]))]
    assert drv.queries[-1].startswith("MERGE (m:SchemaMeta") and drv.sent[-1][1]["version"] == NEWEST


@pytest.mark.parametrize("metas", [[_meta(NEWEST, 768)], [_meta(NEWEST), _meta(NEWEST, 768)]])
def test_another_dimension_is_refused_before_anything_is_written(metas: list[dict[str, Any]]) -> None:
    drv = ScriptedDriver(metas, {m.version for m in MIGRATIONS})
    with pytest.raises(SchemaMismatchError, match="768"):
        _run(drv)
    assert len(drv.sent) == 1


def test_a_vector_index_of_another_dimension_is_refused_when_there_is_no_meta() -> None:
    drv = ScriptedDriver([], set(), vector_dims={"claim_vec_x": 768})
    with pytest.raises(SchemaMismatchError, match="claim_vec_x"):
        _run(drv)
    assert len(drv.sent) == 2  # the state read and the index listing; no DDL, no write
