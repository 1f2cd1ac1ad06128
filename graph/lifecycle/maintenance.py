"""Removing a whole namespace, in bounded chunks so a large tenant never needs one huge transaction."""

from __future__ import annotations

from neo4j import Driver

from palimpsest.graph import policies
from palimpsest.graph.claims import index as claim_index

NAMESPACED_LABELS = ("Claim", "ErasedClaim", "Entity", "Fact", "Store", "Policy", "Commit", "PacketLog")


def drop_namespace(driver: Driver, namespace: str, *, chunk: int = 5000, database: str | None = None) -> int:
    removed = 0
    for label in NAMESPACED_LABELS:  # our constants, never caller input
        while True:
            records, _, _ = driver.execute_query(
                f"MATCH (n:{label} {{namespace: $ns}}) WITH n LIMIT $chunk DETACH DELETE n RETURN count(*) AS n",
                ns=namespace, chunk=chunk, database_=database,
            )
            count = int(records[0]["n"])
            removed += count
            if count == 0:
                break
    claim_index.drop(driver, namespace, database)
    policies.forget_namespace(namespace)
    return removed
