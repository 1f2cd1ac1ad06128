"""Palimpsest: a temporal knowledge-graph memory for long-lived AI agents, on Neo4j.

    from palimpsest import Memory

    with Memory.from_env(namespace="my-agent") as memory:
        memory.ingest("Alex lives in Portland.", source="chat")
        packet = memory.recall("Where does Alex live?")

The subpackages hold the layers (`palimpsest.schema`, `palimpsest.graph`, `palimpsest.extraction`,
`palimpsest.api`); the names below are the public face. They are loaded on first use, so
`import palimpsest.graph…` (the worker, the CLI's quick checks) does not pay for the service's imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from palimpsest.api.memory import Memory
    from palimpsest.schema.errors import (
        BadInputError,
        ConflictError,
        DeadlineExceededError,
        ErasedError,
        ForbiddenError,
        LimitExceededError,
        NotFoundError,
        PalimpsestError,
        ProjectionsTimeoutError,
        SchemaMismatchError,
        UnauthenticatedError,
        UnavailableError,
    )
    from palimpsest.schema.models import (
        Claim,
        ClaimInput,
        ContextPacket,
        IngestResult,
        PacketItem,
        Policy,
        RetractResult,
    )

__all__ = [
    "BadInputError",
    "Claim",
    "ClaimInput",
    "ConflictError",
    "ContextPacket",
    "DeadlineExceededError",
    "ErasedError",
    "ForbiddenError",
    "IngestResult",
    "LimitExceededError",
    "Memory",
    "NotFoundError",
    "PacketItem",
    "PalimpsestError",
    "Policy",
    "ProjectionsTimeoutError",
    "RetractResult",
    "SchemaMismatchError",
    "UnauthenticatedError",
    "UnavailableError",
]

_ERRORS = "palimpsest.schema.errors"
_MODELS = "palimpsest.schema.models"
# Where each public name is defined: a name is imported from its home on first use.
_HOMES = {name: (_ERRORS if name.endswith("Error") else _MODELS) for name in __all__} | {
    "Memory": "palimpsest.api.memory"}


def __getattr__(name: str) -> Any:
    """PEP 562: the public names resolve on first use to the module that defines them."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'palimpsest' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
