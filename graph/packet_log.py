"""The optional packet log: what an agent was told, kept so it can be replayed and audited."""

from __future__ import annotations

from neo4j import Driver

from schema.errors import NotFoundError
from schema.models import ContextPacket


def log_packet(driver: Driver, packet: ContextPacket, database: str | None = None) -> None:
    """Same fingerprint, same packet: MERGE keeps the first copy and ignores repeats."""
    driver.execute_query(
        "MERGE (p:PacketLog {namespace: $ns, fingerprint: $fp}) "
        "ON CREATE SET p.packet_json = $json, p.query = $query, p.policy_version = $policy, "
        "p.store_revision = $rev, p.k = $k, p.valid_at = $valid_at, p.logged_at = datetime()",
        ns=packet.namespace, fp=packet.fingerprint, json=packet.model_dump_json(), query=packet.query,
        policy=packet.policy_version, rev=packet.store_revision, k=packet.k, valid_at=packet.valid_at,
        database_=database,
    )


def load_packet(driver: Driver, namespace: str, fingerprint: str, database: str | None = None) -> ContextPacket:
    records, _, _ = driver.execute_query(
        "MATCH (p:PacketLog {namespace: $ns, fingerprint: $fp}) RETURN p.packet_json AS j",
        ns=namespace, fp=fingerprint, database_=database, routing_="r",
    )
    if not records:
        raise NotFoundError(f"no logged packet with fingerprint {fingerprint!r}", field="fingerprint")
    return ContextPacket.model_validate_json(records[0]["j"])
