"""Export one namespace as a stream of records (graph.lifecycle.export_format, docs/EXPORT.md).

Everything a store is made of leaves: the Store node (revision, projections_seq, default-policy
history, counters), the Commit log, policies, logged packets, every claim with every stored
property (ids, revisions, windows, per-store-interval visibility lists, statuses, embedding),
tombstones, entities, facts, and every relationship among them with its properties. Nothing is
re-derived on the way back in, so an import answers every as-of recall as the source did.

Consistency: the export runs in one transaction that first takes the namespace's write lock (a
no-op SET on its Store node, as every write does) and is rolled back at the end, so no write can
land halfway through — writers to this namespace wait until the export finishes; readers never
do. Records are streamed: each section is one query read as the driver fetches it, and the caller
writes each line as it comes, so memory stays flat whatever the namespace holds.

Bound: the caller drives the transaction, so a consumer that stalls would hold the lock, and stop every
writer of the namespace, for as long as it stalls. The transaction therefore carries a timeout
(`lock_seconds`): Neo4j ends it, and releases the lock, when the time is up even if no query is
running, and the export then fails with `ExportTimeoutError` (code TIMEOUT) at the consumer's next
read — also when the rest was already buffered by the driver, so an export is either whole and read
within the bound or an error.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from neo4j import Driver, Transaction
from neo4j.exceptions import DriverError, Neo4jError

from palimpsest.graph.db.errors import driver_errors
from palimpsest.graph.lifecycle import export_format as fmt
from palimpsest.schema.errors import BadInputError, DeadlineExceededError, NotFoundError

LOCK_SECONDS = 900.0  # the longest an export holds a namespace's write lock, by default (docs/EXPORT.md)


class ExportTimeoutError(DeadlineExceededError):
    """The export took longer than its bound on the write lock (most often a consumer that stopped
    reading): the transaction was ended and the lock released; what was written is incomplete."""

# (kind, Cypher) per node section, each in its total order: revision first, then id.
_NODE_SECTIONS = (
    ("commit", "MATCH (n:Commit {namespace: $ns}) RETURN properties(n) AS p ORDER BY n.revision"),
    ("policy", "MATCH (n:Policy {namespace: $ns}) RETURN properties(n) AS p ORDER BY n.version"),
    ("packet", "MATCH (n:PacketLog {namespace: $ns}) RETURN properties(n) AS p "
               "ORDER BY coalesce(n.store_revision, -1), n.fingerprint"),
    ("claim", "MATCH (n:Claim {namespace: $ns}) RETURN properties(n) AS p "
              "ORDER BY n.revision, coalesce(n.batch_index, 0), n.id"),
    ("erased", "MATCH (n:ErasedClaim {namespace: $ns}) RETURN properties(n) AS p ORDER BY n.erased_at_revision, n.id"),
    ("entity", "MATCH (n:Entity {namespace: $ns}) RETURN properties(n) AS p ORDER BY coalesce(n.revision, -1), n.id"),
    ("fact", "MATCH (n:Fact {namespace: $ns}) RETURN properties(n) AS p ORDER BY coalesce(n.revision, -1), n.id"),
)
_COUNTS = (
    "RETURN COUNT { (:Commit {namespace: $ns}) } AS commit, COUNT { (:Policy {namespace: $ns}) } AS policy, "
    "COUNT { (:PacketLog {namespace: $ns}) } AS packet, COUNT { (:Claim {namespace: $ns}) } AS claim, "
    "COUNT { (:ErasedClaim {namespace: $ns}) } AS erased, COUNT { (:Entity {namespace: $ns}) } AS entity, "
    "COUNT { (:Fact {namespace: $ns}) } AS fact, "
    "COUNT { (:Claim {namespace: $ns})-[]->({namespace: $ns}) } "
    "+ COUNT { (:Entity {namespace: $ns})-[]->({namespace: $ns}) } "
    "+ COUNT { (:Fact {namespace: $ns})-[]->({namespace: $ns}) } AS rel"
)


def _rels(start: str) -> str:
    # `start` is one of export_format.RELATIONSHIP_STARTS (our constants), never caller input.
    return (f"MATCH (a:{start} {{namespace: $ns}})-[r]->(b) WHERE b.namespace = $ns "
            "RETURN type(r) AS type, a.id AS a, labels(b) AS labels, b.id AS b, properties(r) AS p "
            "ORDER BY type, coalesce(r.revision, -1), a, b, coalesce(r.method, ''), coalesce(r.kind, ''), "
            "coalesce(r.undone_at_revision, -1)")


def export_records(driver: Driver, namespace: str, *, embedding_model: str, embedding_dimension: int,
                   database: str | None = None, lock_seconds: float = LOCK_SECONDS) -> Iterator[dict[str, Any]]:
    """The namespace's records, header first. The transaction stays open while the caller consumes the
    iterator, holding the namespace's write lock — at most `lock_seconds` (then ExportTimeoutError);
    closing the iterator early rolls it back too."""
    if isinstance(lock_seconds, bool) or not isinstance(lock_seconds, (int, float)) or not lock_seconds > 0:
        raise BadInputError("lock_seconds must be a positive number of seconds", field="lock_seconds")
    started = time.monotonic()

    def overdue() -> ExportTimeoutError:
        return ExportTimeoutError(
            f"the export of {namespace!r} held the namespace's write lock for its limit of {lock_seconds:g} s "
            "(the consumer read too slowly, or stopped): the lock was released and the export is incomplete; "
            "discard what was written and export again, reading as it comes, or with a larger bound",
            field="lock_seconds", limit=lock_seconds)

    with driver_errors(), driver.session(database=database) as session:
        tx = session.begin_transaction(timeout=lock_seconds)
        try:
            for record in _records(tx, namespace, embedding_model, embedding_dimension):
                yield record
                if time.monotonic() - started > lock_seconds:
                    raise overdue()
        except Neo4jError as exc:
            if "TransactionTimedOut" in str(getattr(exc, "code", "") or "") or "Terminated" in str(
                    getattr(exc, "code", "") or ""):
                raise overdue() from exc
            raise
        finally:
            # Rolls back: the no-op SET only took the lock, nothing is kept. A transaction the server's
            # timeout already ended has nothing left to roll back.
            with contextlib.suppress(Neo4jError, DriverError):
                tx.close()


def _records(tx: Transaction, namespace: str, embedding_model: str,
             embedding_dimension: int) -> Iterator[dict[str, Any]]:
    store = tx.run("MATCH (s:Store {namespace: $ns}) SET s.revision = s.revision RETURN properties(s) AS p",
                   ns=namespace).single()
    if store is None:
        raise NotFoundError(f"unknown namespace {namespace!r}: nothing was ever written there", field="namespace")
    counted = tx.run(_COUNTS, ns=namespace).single(strict=True)
    counts = {str(k): int(v) for k, v in counted.data().items()}
    props = dict(store["p"])
    props.pop("claim_indexes", None)  # which indexes exist is the database's, not the store's
    props.pop("incarnation", None)  # every import starts a life of its own (graph.knowledge.mention_graph)
    # So are the backfills of the stored analysis (graph.claims.terms) and sentence vectors
    # (graph.claims.sentence_vectors).
    for backfill in ("terms_v", "terms_cursor", "sentence_cursor"):
        props.pop(backfill, None)
    yield {"kind": "header", "format": fmt.FORMAT, "version": fmt.VERSION, "namespace": namespace,
           "store_revision": int(props["revision"]), "projections_seq": int(props.get("projections_seq") or 0),
           "exported_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
           "embedding": {"model": embedding_model, "dimension": embedding_dimension}, "counts": counts}
    yield {"kind": "store", "props": fmt.encode_props(props)}
    for kind, query in _NODE_SECTIONS:
        yield from _nodes(tx, kind, query, namespace)
    for start in fmt.RELATIONSHIP_STARTS:
        yield from _relationships(tx, start, namespace)


def _nodes(tx: Transaction, kind: str, query: str, namespace: str) -> Iterator[dict[str, Any]]:
    for row in tx.run(query, ns=namespace):
        props = dict(row["p"])
        vector = props.pop("embedding", None)
        record: dict[str, Any] = {"kind": kind, "props": fmt.encode_props(props)}
        if vector is not None:
            record["embedding"] = fmt.encode_vector(vector)
        yield record


def _relationships(tx: Transaction, start: str, namespace: str) -> Iterator[dict[str, Any]]:
    for row in tx.run(_rels(start), ns=namespace):
        end = next((label for label in fmt.RELATIONSHIP_STARTS if label in row["labels"]), None)
        if end is None or (start, row["type"], end) not in fmt.RELATIONSHIPS:
            raise ValueError(f"relationship {start}-[:{row['type']}]->{row['labels']} has no export format")
        yield {"kind": "rel", "type": row["type"], "from": [start, row["a"]], "to": [end, row["b"]],
               "props": fmt.encode_props(dict(row["p"]), drop=())}


__all__ = ["LOCK_SECONDS", "ExportTimeoutError", "export_records"]
