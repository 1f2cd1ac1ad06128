"""Driver construction and server introspection, configured only from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

from neo4j import Driver, GraphDatabase


@dataclass(frozen=True)
class Neo4jSettings:
    uri: str = "bolt://127.0.0.1:7687"
    user: str = "neo4j"
    password: str | None = None
    database: str | None = None

    @classmethod
    def from_env(cls) -> Neo4jSettings:
        env = os.environ
        port = env.get("PALIMPSEST_NEO4J_BOLT_PORT", "7687")
        return cls(
            uri=env.get("NEO4J_URI", f"bolt://127.0.0.1:{port}"),
            user=env.get("NEO4J_USER", "neo4j"),
            password=env.get("NEO4J_PASSWORD") or None,
            database=env.get("NEO4J_DATABASE") or None,
        )


def open_driver(settings: Neo4jSettings) -> Driver:
    auth = (settings.user, settings.password) if settings.password else None
    driver = GraphDatabase.driver(settings.uri, auth=auth, max_connection_pool_size=50,
                                  notifications_min_severity="OFF")
    driver.verify_connectivity()
    return driver


@dataclass(frozen=True)
class ServerInfo:
    neo4j_version: str
    edition: str
    gds_version: str | None


def server_info(driver: Driver, database: str | None = None) -> ServerInfo:
    records, _, _ = driver.execute_query(
        "CALL dbms.components() YIELD name, versions, edition RETURN versions[0] AS v, edition",
        database_=database,
    )
    gds: str | None
    try:
        gds_records, _, _ = driver.execute_query("RETURN gds.version() AS v", database_=database)
        gds = str(gds_records[0]["v"])
    except Exception:  # GDS missing is reported, not fatal, for /health
        gds = None
    return ServerInfo(str(records[0]["v"]), str(records[0]["edition"]), gds)
