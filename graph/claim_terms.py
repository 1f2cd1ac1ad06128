"""Stored term analysis for claims written before it existed (or under another TERMS_VERSION).

Every claim gets recall's analysis of its content when it is written (graph.store, `Claim.terms`,
`Claim.names`, `Claim.terms_v`). Recall uses a stored analysis only when its version is the current
one and analyses the content otherwise, so a packet never depends on whether this ran — only its cost
does. The worker brings older claims up to date a bounded batch per pass; once a pass finds none left,
the Store is marked (`terms_v`), and from then on a pass is one read: every later write stores its
analysis. (The marker is the database's, like the claim indexes', and is not exported: an import may
bring claims from an older version.)
"""

from __future__ import annotations

from neo4j import Driver

from graph.recall.text import TERMS_VERSION, stored_terms

_STALE = (
    "MATCH (c:Claim {namespace: $ns}) WHERE c.terms_v IS NULL OR c.terms_v <> $v "
    "RETURN c.id AS id, c.content AS content ORDER BY id LIMIT $batch"
)
_WRITE = (
    "UNWIND $rows AS row MATCH (c:Claim {namespace: $ns, id: row.id}) WHERE c.content = row.content "
    "SET c.terms = row.terms, c.names = row.names, c.terms_v = row.terms_v"
)


def backfill_pass(driver: Driver, namespace: str, *, batch: int = 2000, database: str | None = None) -> int:
    """One bounded step of the backfill for the worker's pass: nothing when the Store is marked current."""
    records, _, _ = driver.execute_query("MATCH (s:Store {namespace: $ns}) RETURN s.terms_v AS v", ns=namespace,
                                         database_=database, routing_="r")
    if not records or records[0]["v"] == TERMS_VERSION:
        return 0
    done = backfill_terms(driver, namespace, batch=batch, max_batches=1, database=database)
    if done < batch:
        driver.execute_query("MATCH (s:Store {namespace: $ns}) SET s.terms_v = $v", ns=namespace, v=TERMS_VERSION,
                             database_=database)
    return done


def backfill_terms(driver: Driver, namespace: str, *, batch: int = 2000, max_batches: int | None = None,
                   database: str | None = None) -> int:
    """Store the analysis of up to `max_batches` × `batch` claims lacking a current one; returns how many.
    The write matches the content it analysed, so a claim changed (erased) meanwhile is left alone."""
    done, batches = 0, 0
    while max_batches is None or batches < max_batches:
        records, _, _ = driver.execute_query(_STALE, ns=namespace, v=TERMS_VERSION, batch=batch,
                                             database_=database, routing_="r")
        if not records:
            break
        rows = [{"id": r["id"], "content": r["content"], **stored_terms(str(r["content"]))} for r in records]
        driver.execute_query(_WRITE, ns=namespace, rows=rows, database_=database)
        done += len(rows)
        batches += 1
        if len(records) < batch:
            break
    return done
