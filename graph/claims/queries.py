"""Listing and batch lookup of claims: keyset pagination and one-round-trip loads for DataLoaders.

Pagination is by (revision, batch position, id) — a total order that new writes only extend, and
that keeps a batch in the order it was sent — so a cursor stays
valid while agents keep writing, unlike OFFSET paging.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from neo4j import Driver

from palimpsest.graph.claims.store import CLAIM_FIELDS, claim_from_record
from palimpsest.schema.errors import BadInputError
from palimpsest.schema.models import Claim


@dataclass(frozen=True)
class ClaimFilter:
    source: str | None = None
    claim_key: str | None = None
    status: str | None = None
    recorded_after: datetime | None = None
    recorded_before: datetime | None = None
    valid_at: datetime | None = None


def encode_cursor(revision: int, position: int, claim_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([revision, position, claim_id]).encode()).decode()


# A cursor this service issues is ~60 characters: [revision, batch position, 32-hex id] as base64 JSON.
MAX_CURSOR_CHARS = 256
_MAX_INT64 = 2**63 - 1


def decode_cursor(cursor: str) -> tuple[int, int, str]:
    """The (revision, position, id) of a cursor from `encode_cursor`; anything else is BAD_INPUT.

    Checked before it is decoded (type, size: a forged cursor cannot nest JSON deep enough to
    exhaust the parser's recursion, nor carry a megabyte) and after (exactly three items: two
    integers Neo4j can hold, not booleans or floats, and a short string)."""
    refused = BadInputError("after is not a cursor this service issued", field="after")
    if not isinstance(cursor, str) or not 0 < len(cursor) <= MAX_CURSOR_CHARS:
        raise refused
    try:
        decoded = json.loads(base64.b64decode(cursor.encode("ascii"), altchars=b"-_", validate=True))
    except (ValueError, TypeError, RecursionError, binascii.Error):  # UnicodeError is a ValueError
        raise refused from None
    if not (isinstance(decoded, list) and len(decoded) == 3):
        raise refused
    revision, position, claim_id = decoded
    ints_ok = all(type(v) is int and 0 <= v <= _MAX_INT64 for v in (revision, position))
    if not ints_ok or not isinstance(claim_id, str) or not 0 < len(claim_id) <= 128:
        raise refused
    return revision, position, claim_id


def list_claims(driver: Driver, namespace: str, flt: ClaimFilter, first: int, after: str | None,
                default_tau: float, database: str | None = None) -> tuple[list[tuple[Claim, int]], bool]:
    """One page of (claim, batch position) plus whether another follows (fetches first + 1 to know)."""
    start_rev, start_pos, start_id = decode_cursor(after) if after else (-1, -1, "")
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns}) "
        "WITH c, coalesce(c.batch_index, 0) AS pos "
        "WHERE (c.revision > $rev OR (c.revision = $rev AND (pos > $pos OR (pos = $pos AND c.id > $id)))) "
        "AND ($source IS NULL OR c.source = $source) AND ($key IS NULL OR c.claim_key = $key) "
        "AND ($status IS NULL OR c.status = $status) "
        "AND ($after IS NULL OR c.recorded_at > $after) AND ($before IS NULL OR c.recorded_at < $before) "
        "AND ($valid_at IS NULL OR ((c.valid_from IS NULL OR c.valid_from <= $valid_at) "
        "    AND (CASE WHEN c.status = 'current' AND c.vis_until IS NOT NULL THEN c.valid_until ELSE c.valid_to END "
        "         IS NULL OR CASE WHEN c.status = 'current' AND c.vis_until IS NOT NULL THEN c.valid_until "
        "         ELSE c.valid_to END > $valid_at))) "
        f"RETURN {CLAIM_FIELDS} AS c, pos ORDER BY c.revision, pos, c.id LIMIT $limit",
        ns=namespace, rev=start_rev, pos=start_pos, id=start_id, source=flt.source, key=flt.claim_key,
        status=flt.status,
        after=flt.recorded_after, before=flt.recorded_before, valid_at=flt.valid_at, limit=first + 1,
        database_=database, routing_="r",
    )
    claims = [(claim_from_record(dict(r["c"]), default_tau), int(r["pos"])) for r in records]
    return claims[:first], len(claims) > first


def claims_by_ids(driver: Driver, namespace: str, ids: list[str], default_tau: float,
                  database: str | None = None) -> dict[str, Claim]:
    if not ids:
        return {}
    records, _, _ = driver.execute_query(
        f"UNWIND $ids AS wanted MATCH (c:Claim {{namespace: $ns, id: wanted}}) RETURN {CLAIM_FIELDS} AS c",
        ids=sorted(set(ids)), ns=namespace, database_=database, routing_="r",
    )
    out: dict[str, Any] = {}
    for r in records:
        claim = claim_from_record(dict(r["c"]), default_tau)
        out[claim.id] = claim
    return out
