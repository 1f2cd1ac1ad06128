"""Stored term analysis for claims written before it existed (or under another TERMS_VERSION).

Every claim gets recall's analysis of its content when it is written (graph.claims.store, `Claim.terms`,
`Claim.names`, `Claim.terms_v`). Recall uses a stored analysis only when its version is the current
one and analyses the content otherwise, so a packet never depends on whether this ran — only its cost
does. The worker brings older claims up to date a bounded batch per pass (`Store.terms_cursor`: where
the next pass starts); once a pass finds none left, the Store is marked (`terms_v`), and from then on a
pass is one read: every later write stores its analysis. (Marker and cursor are the database's, like
the claim indexes', and are not exported: an import may bring claims from an older version.)
"""

from __future__ import annotations

from neo4j import Driver

from palimpsest.graph.text import TERMS_VERSION, stored_terms

# From the backfill's cursor on, in the order of the (namespace, revision) index: a pass reads past what
# earlier passes did only within the cursor's own revision, so backfilling a namespace reads it once.
_STALE = (
    "MATCH (c:Claim {namespace: $ns}) WHERE c.revision >= $after AND (c.terms_v IS NULL OR c.terms_v <> $v) "
    "RETURN c.id AS id, c.content AS content, c.revision AS revision ORDER BY c.revision, c.id LIMIT $batch"
)
_WRITE = (
    "UNWIND $rows AS row MATCH (c:Claim {namespace: $ns, id: row.id}) WHERE c.content = row.content "
    "SET c.terms = row.terms, c.names = row.names, c.terms_v = row.terms_v"
)


def backfill_pass(driver: Driver, namespace: str, *, batch: int = 2000, database: str | None = None) -> int:
    """One bounded step of the backfill for the worker's pass: nothing when the Store is marked current.
    The step's cursor (the last revision it reached) is kept on the Store, so no pass rereads the ones
    before; claims written since carry their analysis already."""
    records, _, _ = driver.execute_query("MATCH (s:Store {namespace: $ns}) RETURN s.terms_v AS v, "
                                         "coalesce(s.terms_cursor, 0) AS after", ns=namespace,
                                         database_=database, routing_="r")
    if not records or records[0]["v"] == TERMS_VERSION:
        return 0
    done, reached = _backfill_batch(driver, namespace, int(records[0]["after"]), batch, database)
    driver.execute_query(
        "MATCH (s:Store {namespace: $ns}) SET s.terms_cursor = CASE WHEN $complete THEN null ELSE $reached END, "
        "s.terms_v = CASE WHEN $complete THEN $v ELSE s.terms_v END",
        ns=namespace, complete=done < batch, reached=reached, v=TERMS_VERSION, database_=database)
    return done


def _backfill_batch(driver: Driver, namespace: str, after: int, batch: int,
                    database: str | None) -> tuple[int, int]:
    """Analyse and store up to `batch` claims from revision `after` on: (how many, the last revision seen).
    The write matches the content it analysed, so a claim changed meanwhile is left alone."""
    records, _, _ = driver.execute_query(_STALE, ns=namespace, v=TERMS_VERSION, batch=batch, after=after,
                                         database_=database, routing_="r")
    if not records:
        return 0, after
    rows = [{"id": r["id"], "content": r["content"], **stored_terms(str(r["content"]))} for r in records]
    driver.execute_query(_WRITE, ns=namespace, rows=rows, database_=database)
    return len(rows), int(records[-1]["revision"])

