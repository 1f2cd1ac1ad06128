"""Applies the versioned Cypher migrations in order, idempotently, and guards the vector dimension.

The applied version lives in the database itself (`(:SchemaMigration)` nodes and one
`(:SchemaMeta)` node), so any process pointed at the database knows its schema. A vector index
has a fixed dimension: once a database holds 384-dimensional embeddings, starting a service
configured with a 768-dimensional model would silently break every similarity query, so the
runner refuses instead.

Every process runs `migrate` as it starts, so the common case — a database already at the packaged
version — is one read: the stored meta and the applied versions in one query. Only when that read
shows something missing does the runner inspect the vector indexes, run DDL and write. A start thus
takes no write lock and needs no write rights on a current database, and two processes starting at
once contend only when there is something to migrate; then every statement is idempotent (`IF NOT
EXISTS`, `MERGE`), so both may run it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from neo4j import Driver, RoutingControl

from palimpsest.schema.errors import SchemaMismatchError

_FILE_RE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.cypher$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]
    checksum: str


def load_migrations(embedding_dimension: int) -> list[Migration]:
    """Read the packaged .cypher files; the dimension is the only template value (an int)."""
    if not isinstance(embedding_dimension, int) or not 1 <= embedding_dimension <= 4096:
        raise ValueError(f"embedding_dimension must be an int in 1..4096, got {embedding_dimension!r}")
    found: list[Migration] = []
    for entry in resources.files("palimpsest.schema.migrations").iterdir():
        match = _FILE_RE.fullmatch(entry.name)
        if not match:
            continue
        raw = entry.read_text(encoding="utf-8")
        text = raw.replace("{{embedding_dimension}}", str(embedding_dimension))
        lines = [ln for ln in text.splitlines() if not ln.strip().startswith("//")]
        statements = tuple(s.strip() for s in "\n".join(lines).split(";") if s.strip())
        checksum = hashlib.sha256(raw.encode()).hexdigest()[:16]
        found.append(Migration(int(match.group(1)), match.group(2), statements, checksum))
    found.sort(key=lambda m: m.version)
    return found


def schema_meta(driver: Driver, database: str | None = None) -> dict[str, Any] | None:
    records, _, _ = driver.execute_query(
        "MATCH (m:SchemaMeta {id: 'schema'}) RETURN m {.*} AS meta", database_=database
    )
    return dict(records[0]["meta"]) if records else None


def _index_dimensions(driver: Driver, database: str | None) -> dict[str, int]:
    records, _, _ = driver.execute_query(
        "SHOW VECTOR INDEXES YIELD name, options RETURN name, options", database_=database
    )
    dims: dict[str, int] = {}
    for rec in records:
        config = (rec["options"] or {}).get("indexConfig", {})
        if "vector.dimensions" in config:
            dims[rec["name"]] = int(config["vector.dimensions"])
    return dims


def _stored_state(driver: Driver, database: str | None) -> tuple[list[dict[str, Any]], set[int]]:
    """Every `(:SchemaMeta)` node's properties and the applied versions, in one read."""
    records, _, _ = driver.execute_query(
        "OPTIONAL MATCH (m:SchemaMeta {id: 'schema'}) WITH collect(m {.*}) AS metas "
        "OPTIONAL MATCH (s:SchemaMigration) RETURN metas, collect(DISTINCT s.version) AS applied",
        database_=database, routing_=RoutingControl.READ,
    )
    return [dict(m) for m in records[0]["metas"]], {int(v) for v in records[0]["applied"]}


def migrate(
    driver: Driver,
    *,
    embedding_dimension: int,
    embedding_model: str,
    database: str | None = None,
    index_timeout_s: int = 300,
) -> int:
    """Bring the database to the newest schema; returns the applied version.

    A database already at the newest version, built for this dimension, is answered by one read
    (`_stored_state`): every vector index in it was made at the dimension its meta records (by the
    migrations, and by graph.claims.index from that meta), so the index check would find nothing.
    """
    metas, applied = _stored_state(driver, database)
    for meta in metas:
        if int(meta["embedding_dimension"]) != embedding_dimension:
            raise SchemaMismatchError(
                f"the database was built for {meta['embedding_dimension']}-dimensional embeddings "
                f"(model {meta.get('embedding_model')!r}) but the configured model "
                f"{embedding_model!r} has {embedding_dimension}; use a fresh database or the same model"
            )
    migrations = load_migrations(embedding_dimension)
    version = max((m.version for m in migrations), default=0)
    # The meta's version says the last run finished, each (:SchemaMigration) that its migration ran;
    # both come with the one read, and both must hold, so a database edited by hand still migrates.
    if metas and all(meta.get("version") == version for meta in metas) and {m.version for m in migrations} <= applied:
        return version
    for name, dim in _index_dimensions(driver, database).items():
        if dim != embedding_dimension:
            raise SchemaMismatchError(
                f"vector index {name!r} has dimension {dim}, the configured model "
                f"{embedding_model!r} has {embedding_dimension}"
            )
    ran = False
    for migration in migrations:
        if migration.version in applied:
            continue
        ran = True
        for statement in migration.statements:
            driver.execute_query(statement, database_=database)  # DDL: packaged text only
        driver.execute_query(
            "MERGE (m:SchemaMigration {version: $v}) "
            "ON CREATE SET m.name = $name, m.checksum = $checksum, m.applied_at = datetime()",
            v=migration.version, name=migration.name, checksum=migration.checksum, database_=database,
        )
    driver.execute_query(
        "MERGE (m:SchemaMeta {id: 'schema'}) "
        "ON CREATE SET m.embedding_dimension = $dim, m.embedding_model = $model "
        "SET m.version = $version",
        dim=embedding_dimension, model=embedding_model, version=version, database_=database,
    )
    # Only after creating indexes: `awaitIndexes` waits for every index of the database, and a tenant's
    # own indexes (graph.claims.index) may be populating for minutes — no process start may wait on that.
    if ran:
        driver.execute_query("CALL db.awaitIndexes($t)", t=int(index_timeout_s), database_=database)
    return version
