"""Typed errors with stable codes, shared by every face (Python, GraphQL, CLI, MCP).

A caller — often another program — needs to know *what* was wrong and *which field*, not a
stack trace; the code is stable so clients can branch on it.
"""

from __future__ import annotations

from typing import Any


class PalimpsestError(Exception):
    code = "INTERNAL"

    def __init__(self, message: str, *, field: str | None = None, limit: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.limit = limit

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            out["field"] = self.field
        if self.limit is not None:
            out["limit"] = self.limit
        return out


class BadInputError(PalimpsestError, ValueError):
    code = "BAD_INPUT"


class LimitExceededError(BadInputError):
    code = "LIMIT_EXCEEDED"


class NotFoundError(PalimpsestError, LookupError):
    code = "NOT_FOUND"


class ErasedError(NotFoundError):
    """What was asked for is gone for good: a claim was erased (graph.lifecycle.erase), or a logged packet
    held one. A NotFoundError subclass — the content is not there — with its own code, so a caller
    can tell "never existed" from "existed and was erased on purpose"."""

    code = "ERASED"


class ConflictError(PalimpsestError):
    code = "CONFLICT"


class SchemaMismatchError(PalimpsestError):
    code = "SCHEMA_MISMATCH"


class UnavailableError(PalimpsestError):
    code = "UNAVAILABLE"


class UnauthenticatedError(PalimpsestError):
    code = "UNAUTHENTICATED"


class ForbiddenError(PalimpsestError):
    code = "FORBIDDEN"


class ProjectionsTimeoutError(UnavailableError, TimeoutError):
    """The background projections did not reach the awaited revision in time.

    A subclass of UnavailableError (the store is fine, a derived view is behind), with its own
    code so a caller can tell "retry later" from "the database is down".
    """

    code = "PROJECTIONS_TIMEOUT"


class DeadlineExceededError(UnavailableError, TimeoutError):
    """The request's deadline (`PALIMPSEST_REQUEST_TIMEOUT_S`, graph.db.deadline) passed first.

    A subclass of UnavailableError with its own code, so a caller can tell "this request was too
    slow" from "the database is down". Neo4j rolled back the transaction that ran out of time; a
    write whose commit was already under way may have landed, so retry writes with the same
    idempotency keys.
    """

    code = "TIMEOUT"
