"""Erasure: remove a claim's content for good, and everything derived from it.

Retraction hides a claim and keeps it (a palimpsest keeps what was written over); erasure is for
what must not be kept at all — personal data, a leaked secret. Each batch is one write
transaction at a store revision of its own (a Commit of kind `erase`), and for each claim it:

1. takes the claim out of the live versions and undoes what it changed, through the same code as a
   retraction (`graph.claims.store.undo_claim`): what it had corrected comes back, windows it closed reopen,
   its key's timeline is recomputed. A supersession the claim still made although no longer live (an
   inferred chain old ← erased ← newest) is carried over to the claim that hid it, so `old` stays
   hidden exactly as a retraction would leave it, without an edge to the tombstone;
2. withdraws its support from facts (graph.knowledge.facts.withdraw_supports: facts it alone supported go,
   the others re-fuse their confidence) and its mentions from the entity graph
   (graph.knowledge.entities.withdraw_mentions: RELATED recounted, entities nothing mentions any more go);
3. reduces every logged packet that named it to a tombstone (graph.recall.packet_log.erase_packets);
4. replaces the claim by `(:ErasedClaim {id, namespace, revision, erased_at_revision, erased_at,
   reason})`: the node and every relationship it had (SUPERSEDES, CONTRADICTS, MENTIONS,
   SUPPORTED_BY) are deleted, so its text and embedding leave the fulltext and vector indexes with
   it. The tombstone has no other property and no relationship; `palimpsest check` verifies that.

As-of recalls of earlier revisions no longer see the claim (nothing can show it), and a claim it had
hidden is current again only from the erasure's revision on, as after a retraction. Selection is by
ids, or by source and/or top-level metadata values, read in pages; a dry run returns the selection
and writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from neo4j import Driver, ManagedTransaction

from palimpsest.graph.claims.revisions import Revision, bump, optional_datetime
from palimpsest.graph.claims.store import restore, undo_claim
from palimpsest.schema.errors import BadInputError, NotFoundError
from palimpsest.schema.models import EraseCandidate

if TYPE_CHECKING:  # imported when an erase writes (see _erase_tx)
    from palimpsest.graph.knowledge.entities import EntityNaming

BATCH = 100          # claims per erase transaction, by default
MAX_BATCH = 500      # the most one transaction takes: each claim is undone with a few statements
_PAGE = 1000         # rows per selection read


@dataclass(frozen=True)
class Selector:
    """Which claims to erase: explicit ids, or every claim whose source equals `source` and whose
    metadata holds each top-level key of `metadata` with an equal JSON value (`canonical_value`;
    both, if both are given)."""

    ids: tuple[str, ...] = ()
    source: str | None = None
    metadata: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for value in (self.metadata or {}).values():
            canonical_value(value)  # refuse what is not a JSON value before reading anything
        filtered = self.source is not None or bool(self.metadata)
        if bool(self.ids) == filtered:
            raise BadInputError("give either ids, or a source and/or metadata to select claims by", field="ids")


@dataclass
class BatchOutcome:
    revision: int
    erased: list[str]
    restored: list[str] = field(default_factory=list)
    facts_removed: int = 0
    supports_removed: int = 0
    entities_removed: int = 0
    mentions_removed: int = 0
    contradictions_removed: int = 0
    supersessions_removed: int = 0
    packets_erased: int = 0


class _NothingToErase(Exception):
    """Every claim of the batch was erased by someone else first: roll back, spend no revision."""


# ------------------------------------------------------------------------------------ selection
def _candidate(row: Mapping[str, Any]) -> EraseCandidate:
    return EraseCandidate(id=row["id"], revision=int(row["revision"]), status=row["status"], source=row["source"],
                          claim_key=row["claim_key"])


def select(driver: Driver, namespace: str, selector: Selector,
           database: str | None = None) -> tuple[list[EraseCandidate], list[str]]:
    """The claims the selector names, in write order (revision, batch position, id), and the ids it
    gave that are already tombstones. An id that was never a claim here is NOT_FOUND."""
    if selector.ids:
        return _select_ids(driver, namespace, selector.ids, database)
    return _select_filtered(driver, namespace, selector, database), []


def _select_ids(driver: Driver, namespace: str, ids: Sequence[str],
                database: str | None) -> tuple[list[EraseCandidate], list[str]]:
    records, _, _ = driver.execute_query(
        "UNWIND $ids AS id OPTIONAL MATCH (c:Claim {namespace: $ns, id: id}) "
        "RETURN id, c {.id, .revision, .status, .source, .claim_key, pos: coalesce(c.batch_index, 0)} AS c, "
        "EXISTS { MATCH (:ErasedClaim {namespace: $ns, id: id}) } AS erased",
        ids=sorted(set(ids)), ns=namespace, database_=database, routing_="r",
    )
    found, erased = [], []
    for r in records:
        if r["c"] is not None:
            found.append(dict(r["c"]))
        elif r["erased"]:
            erased.append(str(r["id"]))
        else:
            raise NotFoundError(f"no claim {r['id']!r} in namespace {namespace!r}", field="ids")
    found.sort(key=lambda c: (int(c["revision"]), int(c["pos"]), c["id"]))
    return [_candidate(c) for c in found], erased


def canonical_value(value: Any) -> Any:
    """A metadata value in the form erase-by-metadata compares: the JSON value, not its spelling.
    Numbers by their exact value (81, 81.0 and 8.1e1 are one value), objects whatever their key order
    or whitespace, strings after JSON unescaping and otherwise exact, lists in order; true and false
    are never the numbers 1 and 0 (Python's `True == 1` is not JSON's). Stored metadata may have come
    from an import, spelt by another JSON encoder than this release's, so the selection never
    compares text."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, (int, float)):
        return ("number", value)  # int == float compares exact values: 81 == 81.0, 10**300 != 1e300
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, Mapping):
        return ("object", frozenset((str(k), canonical_value(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(canonical_value(v) for v in value))
    raise BadInputError(f"metadata values must be JSON values, not {type(value).__name__}", field="metadata")


def metadata_matches(stored_json: str | None, wanted: Mapping[str, Any]) -> bool:
    """Does the stored metadata (JSON text) hold every key of `wanted` with an equal value
    (`canonical_value`)? Text that is not a JSON object never matches."""
    try:
        stored = json.loads(stored_json or "{}")
    except ValueError:
        return False
    if not isinstance(stored, dict):
        return False
    return all(k in stored and canonical_value(stored[k]) == canonical_value(v) for k, v in wanted.items())


def _select_filtered(driver: Driver, namespace: str, selector: Selector,
                     database: str | None) -> list[EraseCandidate]:
    wanted = dict(selector.metadata or {})
    out: list[EraseCandidate] = []
    cursor: tuple[int, int, str] = (-1, -1, "")
    while True:
        records, _, _ = driver.execute_query(
            "MATCH (c:Claim {namespace: $ns}) WITH c, coalesce(c.batch_index, 0) AS pos "
            "WHERE (c.revision > $rev OR (c.revision = $rev AND (pos > $pos OR (pos = $pos AND c.id > $id)))) "
            # No textual pre-filter on the metadata: the same value has many JSON spellings.
            "AND ($source IS NULL OR c.source = $source) AND (NOT $by_metadata OR c.metadata_json IS NOT NULL) "
            "RETURN c {.id, .revision, .status, .source, .claim_key, .metadata_json} AS c, pos "
            "ORDER BY c.revision, pos, c.id LIMIT $page",
            ns=namespace, rev=cursor[0], pos=cursor[1], id=cursor[2], source=selector.source,
            by_metadata=bool(wanted), page=_PAGE, database_=database, routing_="r",
        )
        for r in records:
            row = dict(r["c"])
            if metadata_matches(row.get("metadata_json"), wanted):
                out.append(_candidate(row))
        if len(records) < _PAGE:
            return out
        last = records[-1]
        cursor = (int(last["c"]["revision"]), int(last["pos"]), str(last["c"]["id"]))


# ------------------------------------------------------------------------------------ one batch
def erase_batch(driver: Driver, namespace: str, ids: Sequence[str], reason: str,
                database: str | None = None, naming: EntityNaming | None = None) -> BatchOutcome | None:
    """Erase these claims in one transaction at a new revision; None when every one of them was
    already gone (erased concurrently): nothing is written then. `naming` lets surviving entities be
    re-named from the claims left (graph.knowledge.entities.EntityNaming); without it an entity whose
    name only the erased claims spelled is deleted rather than kept under that name."""
    with driver.session(database=database) as session:
        try:
            result: BatchOutcome = session.execute_write(_erase_tx, namespace, sorted(set(ids)), reason, naming)
        except _NothingToErase:
            return None
    return result


def _erase_tx(tx: ManagedTransaction, namespace: str, ids: list[str], reason: str,
              naming: EntityNaming | None) -> BatchOutcome:
    # Here, not at the top: Memory imports this module for its batch bounds, and the entity graph and
    # facts modules are only needed by an erase that writes.
    from palimpsest.graph.knowledge import entities as entity_q
    from palimpsest.graph.knowledge import facts as facts_q
    from palimpsest.graph.recall import packet_log

    rev = bump(tx, namespace, "erase", len(ids))  # the write lock first: what is read below stays true
    rows = [dict(r) for r in tx.run(
        "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id}) "
        "RETURN c.id AS id, c.status AS status, c.claim_key AS key, c.revision AS revision, "
        "coalesce(c.batch_index, 0) AS pos, c.content AS content",
        ids=ids, ns=namespace,
    )]
    if not rows:
        raise _NothingToErase()
    gone = [str(r["id"]) for r in rows]
    tx.run(
        "MATCH (s:Store {namespace: $ns}) MATCH (k:Commit {namespace: $ns, revision: $rev}) "
        # Erasure deletes MENTIONS: a new incarnation makes processes read the entity graph again.
        "SET s.claims = s.claims - $n, k.claims = k.claims - $n, k.items = $n, s.incarnation = randomUUID()",
        ns=namespace, rev=rev.number, n=len(gone),
    ).consume()
    out = BatchOutcome(rev.number, gone)
    restored: list[str] = []
    # Newest first: a claim this batch also erases, restored by a later one, is then undone in turn.
    for row in sorted(rows, key=lambda r: (int(r["revision"]), int(r["pos"]), str(r["id"])), reverse=True):
        was_current = row["status"] == "current"
        tx.run(
            "MATCH (c:Claim {namespace: $ns, id: $id}) SET c.status = 'erased', "
            "c.vis_to = CASE WHEN $was_current THEN c.vis_to[..-1] + [$rev] ELSE c.vis_to END",
            ns=namespace, id=row["id"], rev=rev.number, was_current=was_current,
        ).consume()
        restored += undo_claim(tx, namespace, str(row["id"]), row["key"], was_current, rev, "erased")
        restored += _carry_over(tx, namespace, str(row["id"]), rev)
    out.restored = sorted(set(restored) - set(gone))
    withdrawn = facts_q.withdraw_supports(tx, namespace, gone)
    out.supports_removed, out.facts_removed = withdrawn.supports, withdrawn.facts
    out.mentions_removed, out.entities_removed = entity_q.withdraw_mentions(tx, namespace, gone, withdrawn.entities,
                                                                           withdrawn.pairs, naming)
    out.packets_erased = packet_log.erase_packets(tx, namespace, gone, rev,
                                                  {str(r["id"]): str(r["content"] or "") for r in rows})
    out.contradictions_removed, out.supersessions_removed = _tombstone(tx, namespace, gone, rev, reason)
    return out


def _carry_over(tx: ManagedTransaction, namespace: str, claim_id: str, rev: Revision) -> list[str]:
    """Supersessions the erased claim still makes after `undo_claim` (it was no longer live, so its
    inferred ones stand, as after a retraction) move to the claim hiding it — the successor replaces
    what it replaced — with the judge's wording dropped (it quoted the erased text). With no one
    hiding it, the claims come back instead. Returns the ids restored."""
    rows = list(tx.run(
        "MATCH (c:Claim {namespace: $ns, id: $id})-[s:SUPERSEDES]->(o:Claim {namespace: $ns}) "
        "WHERE s.undone_at_revision IS NULL AND coalesce(s.kind, '') <> 'succession' AND o.status = 'superseded' "
        "OPTIONAL CALL (c) { MATCH (c)<-[h:SUPERSEDES]-(n:Claim {namespace: $ns}) "
        "  WHERE h.undone_at_revision IS NULL AND coalesce(h.kind, '') <> 'succession' AND n.status <> 'erased' "
        "  RETURN n.id AS by ORDER BY h.revision, n.id LIMIT 1 } "
        "WITH s, o, by, COUNT { (o)<-[x:SUPERSEDES]-(m:Claim) WHERE x.undone_at_revision IS NULL "
        "  AND coalesce(x.kind, '') <> 'succession' AND m.id <> $id } AS others "
        "SET s.undone_at_revision = $rev, s.undone_at = $at, s.undone_reason = 'erased' "
        "RETURN o.id AS old, o.valid_to AS valid_to, by, others, properties(s) AS props ORDER BY old",
        ns=namespace, id=claim_id, rev=rev.number, at=rev.at,
    ))
    carried = [{"by": r["by"], "old": r["old"], "props": {k: v for k, v in dict(r["props"]).items()
                                                        if not k.startswith("undone")}}
               for r in rows if r["by"] is not None and r["by"] != r["old"]]
    if carried:
        tx.run(
            "UNWIND $rows AS row MATCH (n:Claim {namespace: $ns, id: row.by}), (o:Claim {namespace: $ns, id: row.old}) "
            "CREATE (n)-[t:SUPERSEDES]->(o) SET t = row.props, t.detail = 'carried over from an erased claim', "
            "t.carried_at_revision = $rev",
            rows=carried, ns=namespace, rev=rev.number,
        ).consume()
    back = [(str(r["old"]), optional_datetime(r["valid_to"])) for r in rows
            if (r["by"] is None or r["by"] == r["old"]) and int(r["others"]) == 0]
    restore(tx, namespace, back, rev.number)
    return [cid for cid, _ in back]


def _tombstone(tx: ManagedTransaction, namespace: str, ids: list[str], rev: Revision,
               reason: str) -> tuple[int, int]:
    """Replace each claim by its tombstone; returns (CONTRADICTS, SUPERSEDES) relationships deleted."""
    record = tx.run(
        "CALL () { UNWIND $ids AS id MATCH (:Claim {namespace: $ns, id: id})-[r:CONTRADICTS]-() "
        "  RETURN count(DISTINCT r) AS contradictions } "
        "CALL () { UNWIND $ids AS id MATCH (:Claim {namespace: $ns, id: id})-[r:SUPERSEDES]-() "
        "  RETURN count(DISTINCT r) AS supersessions } "
        "RETURN contradictions, supersessions",
        ids=ids, ns=namespace,
    ).single(strict=True)
    tx.run(
        "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id}) WITH c, id, c.revision AS revision "
        "DETACH DELETE c "
        "CREATE (:ErasedClaim {id: id, namespace: $ns, revision: revision, erased_at_revision: $rev, "
        "erased_at: $at, reason: $reason})",
        ids=ids, ns=namespace, rev=rev.number, at=rev.at, reason=reason,
    ).consume()
    return int(record["contradictions"]), int(record["supersessions"])


__all__ = ["BATCH", "MAX_BATCH", "BatchOutcome", "Selector", "canonical_value", "erase_batch", "metadata_matches",
           "select"]
