"""Driver exceptions, translated once: the one place a neo4j exception becomes a Palimpsest error.

Every face — `Memory`, GraphQL, CLI, MCP and the background worker — reaches Neo4j through the
driver `graph.db.connection.open_driver` returns (a `GuardedDriver`; `api.runtime.Runtime` wraps any
other driver it is handed). Its calls run inside `driver_errors()`, so callers see only the
`schema.errors` hierarchy, and every message says whether retrying is safe:

    neo4j exception                                       Palimpsest error (code)
    ─────────────────────────────────────────────────     ───────────────────────────────────────────
    ServiceUnavailable (connect refused, routing,          UnavailableError (UNAVAILABLE): nothing was
      pool full: ConnectionAcquisitionTimeoutError),         committed — retry (writes with the same
      SessionExpired, TransientError/DatabaseUnavailable     idempotency keys) is safe
      (the driver's retries exhausted), NotALeader,
      ForbiddenOnReadOnlyDatabase
    └─ IncompleteCommit (lost while committing)            UnavailableError (UNAVAILABLE): the outcome is
                                                             unknown — retry with the same idempotency
                                                             keys is safe, what landed answers duplicate
    ClientError …Transaction.TransactionTimedOut*          DeadlineExceededError (TIMEOUT): rolled back
    AuthError, Forbidden (our own credentials)             UnavailableError (UNAVAILABLE): a server
                                                             configuration problem, retrying will not help
    anything else (CypherSyntaxError, ConstraintError,     unchanged: graph code handles the ones it
      CypherTypeError, …)                                    expects (a concurrent registration's
                                                             ConstraintError); the rest is a bug, which the
                                                             faces mask
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from neo4j.exceptions import (
    AuthError,
    ConnectionAcquisitionTimeoutError,
    DriverError,
    Forbidden,
    ForbiddenOnReadOnlyDatabase,
    IncompleteCommit,
    Neo4jError,
    NotALeader,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from palimpsest.graph.db.deadline import Deadline, current
from palimpsest.schema.errors import DeadlineExceededError, PalimpsestError, UnavailableError

RETRY_SAFE = ("nothing was committed, so retrying is safe (for ingests, with the same idempotency keys)")
OUTCOME_UNKNOWN = ("the write may or may not have been committed; retrying with the same idempotency keys is safe "
                   "(claims that landed answer duplicate=true)")


def _code(exc: Neo4jError) -> str:
    return str(getattr(exc, "code", None) or "")


def translate(exc: BaseException, limit: Deadline | None = None) -> PalimpsestError | None:
    """The Palimpsest error for a driver exception, or None when it is not one we translate."""
    if isinstance(exc, PalimpsestError):
        return exc
    if isinstance(exc, IncompleteCommit):
        return UnavailableError(f"the connection to the database was lost while committing: {OUTCOME_UNKNOWN}")
    if isinstance(exc, ConnectionAcquisitionTimeoutError):
        return UnavailableError(f"no database connection became free in time (the pool is exhausted): {RETRY_SAFE}")
    if isinstance(exc, (ServiceUnavailable, SessionExpired)):
        return UnavailableError(f"the database is unavailable ({type(exc).__name__}): {RETRY_SAFE}")
    if isinstance(exc, Neo4jError) and "TransactionTimedOut" in _code(exc):
        if limit is not None:
            return limit.exceeded("the database work of this request")
        return DeadlineExceededError(f"the database's transaction timeout ended the query; it was rolled back: "
                                     f"{RETRY_SAFE}", field="timeout")
    if isinstance(exc, (NotALeader, ForbiddenOnReadOnlyDatabase)):
        return UnavailableError(f"the database is switching leaders: {RETRY_SAFE}")
    if isinstance(exc, TransientError):
        return UnavailableError(f"the database stayed busy through every retry ({_code(exc) or 'transient'}): "
                                f"{RETRY_SAFE}")
    if isinstance(exc, (AuthError, Forbidden)):
        return UnavailableError("the service cannot sign in to its database (check NEO4J_USER/NEO4J_PASSWORD); "
                                "retrying will not help until that is fixed")
    return None


@contextmanager
def driver_errors() -> Iterator[None]:
    """Run a driver call, raising the Palimpsest error of any driver exception that has one."""
    try:
        yield
    except (DriverError, Neo4jError) as exc:
        mapped = translate(exc, current())
        if mapped is None:
            raise
        raise mapped from exc
