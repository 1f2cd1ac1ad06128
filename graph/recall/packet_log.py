"""The optional packet log: what an agent was told, kept so it can be replayed and audited.

An erased claim (graph.lifecycle.erase) must not live on in a logged packet: every logged packet that named
it — as an item, a contradiction's other side, a belief's support, a supersession — or whose query
carries its text (`erase_packets`) keeps only its fingerprint and the facts of the recall (revision,
policy, k, valid_at), and replaying it answers ERASED with the ids, never the content.

The log is bounded (`Retention`): a namespace keeps at most `max_packets` packets, none older than
`ttl_s`. Each write trims its own namespace in the same call, with bounded work — at most
`TRIM_BATCH` expired and `TRIM_BATCH` surplus packets (oldest first) per write, found through the
(namespace, logged_at) index — so no worker is needed and a namespace that stops logging keeps what
it has until its next write (or `trim`). A read that logs can therefore add at most one packet's worth
of storage per round, however often it is repeated or aliased.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from neo4j import Driver, ManagedTransaction

from palimpsest.graph.claims.revisions import Revision
from palimpsest.graph.text import identifiers
from palimpsest.schema.errors import ErasedError, NotFoundError
from palimpsest.schema.models import PACKET_DERIVED, ContextPacket


def packet_claim_ids(packet: ContextPacket) -> list[str]:
    """Every claim id a packet names, sorted: its items, what they replaced or matched via, the other
    side of each contradiction and the supports of each belief."""
    ids: set[str] = set()
    for it in packet.items:
        ids.update(x for x in (it.id, it.supersedes, it.matched_via) if x)
    ids.update(c.other.id for c in packet.contradictions)
    ids.update(cid for b in packet.beliefs for cid in b.supported_by)
    return sorted(ids)


TRIM_BATCH = 500  # packets one write may remove, of each kind (expired, over the cap)


@dataclass(frozen=True)
class Retention:
    """How much of the packet log a namespace keeps (PALIMPSEST_PACKET_LOG_MAX / _TTL_S)."""

    max_packets: int = 10_000
    ttl_s: float = 30 * 24 * 3600.0


def trim(driver: Driver, namespace: str, retention: Retention, database: str | None = None) -> int:
    """Remove the namespace's expired packets, then its oldest beyond `max_packets`; at most
    `TRIM_BATCH` of each per call. Returns how many went."""
    expired, _, _ = driver.execute_query(
        "MATCH (p:PacketLog {namespace: $ns}) WHERE p.logged_at < datetime() - duration({milliseconds: $ttl_ms}) "
        "WITH p ORDER BY p.logged_at LIMIT $batch DETACH DELETE p RETURN count(*) AS n",
        ns=namespace, ttl_ms=int(retention.ttl_s * 1000), batch=TRIM_BATCH, database_=database,
    )
    counted, _, _ = driver.execute_query(
        "MATCH (p:PacketLog {namespace: $ns}) WHERE p.logged_at IS NOT NULL RETURN count(p) AS n",
        ns=namespace, database_=database, routing_="r",
    )
    surplus = min(int(counted[0]["n"]) - retention.max_packets, TRIM_BATCH)
    removed = int(expired[0]["n"])
    if surplus > 0:
        over, _, _ = driver.execute_query(
            "MATCH (p:PacketLog {namespace: $ns}) WHERE p.logged_at IS NOT NULL "
            "WITH p ORDER BY p.logged_at, p.fingerprint LIMIT $n DETACH DELETE p RETURN count(*) AS n",
            ns=namespace, n=surplus, database_=database,
        )
        removed += int(over[0]["n"])
    return removed


def log_packet(driver: Driver, packet: ContextPacket, database: str | None = None,
               retention: Retention | None = None) -> None:
    """Same fingerprint, same packet: MERGE keeps the first copy and ignores repeats. A packet that
    names a claim erased since it was computed is not logged (it would bring the content back), and
    what `explain` derived is not kept (an explained packet logs as the same packet unexplained).
    Then the namespace is trimmed to `retention` (default: `Retention()`)."""
    driver.execute_query(
        "OPTIONAL MATCH (e:ErasedClaim {namespace: $ns}) WHERE e.id IN $ids "
        "WITH count(e) AS erased WHERE erased = 0 "
        "MERGE (p:PacketLog {namespace: $ns, fingerprint: $fp}) "
        "ON CREATE SET p.packet_json = $json, p.query = $query, p.policy_version = $policy, "
        "p.store_revision = $rev, p.k = $k, p.valid_at = $valid_at, p.logged_at = datetime()",
        ns=packet.namespace, fp=packet.fingerprint, json=packet.model_dump_json(exclude=PACKET_DERIVED),
        query=packet.query, policy=packet.policy_version, rev=packet.store_revision, k=packet.k,
        valid_at=packet.valid_at, ids=packet_claim_ids(packet), database_=database,
    )
    trim(driver, packet.namespace, retention or Retention(), database)


def load_packet(driver: Driver, namespace: str, fingerprint: str, database: str | None = None) -> ContextPacket:
    """The logged packet; ErasedError when it named a claim that has been erased since."""
    records, _, _ = driver.execute_query(
        "MATCH (p:PacketLog {namespace: $ns, fingerprint: $fp}) "
        "RETURN p.packet_json AS j, p.erased_claims AS erased, p.erased_at_revision AS at",
        ns=namespace, fp=fingerprint, database_=database, routing_="r",
    )
    if not records:
        raise NotFoundError(f"no logged packet with fingerprint {fingerprint!r}", field="fingerprint")
    row = records[0]
    if row["j"] is None:
        raise _erased(fingerprint, list(row["erased"] or []), row["at"])
    packet = ContextPacket.model_validate_json(row["j"])
    # A packet logged while an erasure of one of its claims was committing: the tombstone decides.
    late, _, _ = driver.execute_query(
        "UNWIND $ids AS id MATCH (e:ErasedClaim {namespace: $ns, id: id}) "
        "RETURN e.id AS id, e.erased_at_revision AS at ORDER BY at, id",
        ids=packet_claim_ids(packet), ns=namespace, database_=database, routing_="r",
    )
    if late:
        raise _erased(fingerprint, [str(r["id"]) for r in late], late[0]["at"])
    return packet


def _erased(fingerprint: str, ids: list[str], revision: object) -> ErasedError:
    return ErasedError(f"the packet {fingerprint!r} held claims erased at revision {revision}: {', '.join(ids)}; "
                       "its content is gone and it cannot be replayed", field="fingerprint")


def erase_packets(tx: ManagedTransaction, namespace: str, claim_ids: Sequence[str], rev: Revision,
                  contents: Mapping[str, str] | None = None) -> int:
    """Reduce every logged packet of the namespace that names one of `claim_ids`, or whose query carries
    their text (`_queries_carrying`; `contents`: id → the claim's content), to a tombstone (its
    fingerprint, recall parameters and which erased claims it held), in the erasure's transaction.
    Packets are found by the ids in their JSON and by their queries: a scan of the namespace's packet
    log, once per batch."""
    if not claim_ids:
        return 0
    ids = sorted(set(claim_ids))
    by_query = _queries_carrying(tx, namespace, contents or {})
    record = tx.run(
        "MATCH (p:PacketLog {namespace: $ns}) WHERE p.packet_json IS NOT NULL "
        "WITH p, [id IN $ids WHERE p.packet_json CONTAINS id OR id IN coalesce($by_query[p.fingerprint], [])] AS hit "
        "WHERE size(hit) > 0 "
        "SET p.erased_claims = coalesce(p.erased_claims, []) + hit, "
        "p.erased_at_revision = $rev, p.erased_at = $at "
        "REMOVE p.packet_json, p.query RETURN count(p) AS n",
        ns=namespace, ids=ids, by_query=by_query, rev=rev.number, at=rev.at,
    ).single()
    return 0 if record is None else int(record["n"])


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _queries_carrying(tx: ManagedTransaction, namespace: str, contents: Mapping[str, str]) -> dict[str, list[str]]:
    """fingerprint → the erased claims whose text a logged packet's query carries: the whole content
    (case and spacing aside), or one of its names and identifiers (graph.text.identifiers: codes such
    as "4417-quizzical", hyphenated and capitalised names) that no claim left in the namespace writes.
    A name other claims still write is not erased text — asking about it is not asking about the erased
    claim — so packets about it stay. A query that merely paraphrases the claim is not recognised."""
    texts = {cid: _normal(text) for cid, text in contents.items() if text.strip()}
    if not texts:
        return {}
    names = {cid: {n[1:] for n in identifiers(text)} for cid, text in contents.items()}
    found: dict[str, dict[str, set[str]]] = {}  # fingerprint → claim id → names it shares (empty: whole text)
    for row in tx.run("MATCH (p:PacketLog {namespace: $ns}) WHERE p.query IS NOT NULL "
                      "RETURN p.fingerprint AS fp, p.query AS query", ns=namespace):
        query = str(row["query"])
        asked, words = {n[1:] for n in identifiers(query)}, _normal(query)
        for cid, text in texts.items():
            if text in words:
                found.setdefault(str(row["fp"]), {})[cid] = set()
            elif names[cid] & asked:
                found.setdefault(str(row["fp"]), {}).setdefault(cid, set()).update(names[cid] & asked)
    shared = sorted({n for hits in found.values() for ns_ in hits.values() for n in ns_})
    still_written = {str(r["n"]) for r in tx.run(
        "MATCH (c:Claim {namespace: $ns}) WHERE c.status <> 'erased' WITH toLower(c.content) AS text "
        "UNWIND $names AS n WITH n, text WHERE text CONTAINS n RETURN DISTINCT n",
        ns=namespace, names=shared,
    )} if shared else set()
    out: dict[str, list[str]] = {}
    for fp, hits in found.items():
        carried = sorted(cid for cid, shared_names in hits.items() if not shared_names or shared_names - still_written)
        if carried:
            out[fp] = carried
    return out
