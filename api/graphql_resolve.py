"""What every GraphQL resolver runs through: authorise and bind a `Memory`, run it in a thread under
the request's deadline, load per-parent lists through the request's DataLoaders, and code errors.

The schema's root fields (api.graphql_schema) and the types' own fields (api.graphql_types: a packet
item's superseded claim, an entity's neighbours and facts) both resolve through these, so they live
apart from both: the schema imports the types, and neither has to import the other to resolve. An error
names fields in the spelling of the schema answering the request (`validFrom`), read from the request.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import strawberry
from anyio import to_thread
from graphql import (
    GraphQLError,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    OperationType,
    get_named_type,
)
from strawberry.dataloader import DataLoader

from palimpsest.api.auth import Principal, Right
from palimpsest.api.memory import Memory, validate_namespace
from palimpsest.graph.db import deadline
from palimpsest.schema.errors import PalimpsestError

R = TypeVar("R")
K = TypeVar("K")
V = TypeVar("V")


_SNAKE = re.compile(r"_([a-z0-9])")
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")
# A snake_case word standing alone (not a later part of a dotted path, whose keys may be the caller's own).
_SNAKE_WORD = re.compile(r"(?<![\w.])[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_QUOTED = re.compile(r"('[^']*'|\"[^\"]*\")")


def _api_names(info: strawberry.Info) -> tuple[dict[str, str], frozenset[str]]:
    """(Python name -> schema name of every argument and input field; the ones typed JSON), of the schema
    answering the request: this module serves that schema's resolvers, so it reads the schema from the
    request rather than importing it (api.graphql_schema imports this module).

    A JSON argument (`metadata`, a policy's `contradiction`) holds keys the caller chose, spelled as
    they sent them: a path below one is given back as is.
    """
    return _names_of(info.schema._schema)


@functools.cache
def _names_of(gql_schema: GraphQLSchema) -> tuple[dict[str, str], frozenset[str]]:
    names: dict[str, str] = {}
    json_fields: set[str] = set()

    def add(name: str, type_: Any) -> None:
        names[_CAMEL.sub(lambda m: "_" + m[1].lower(), name)] = name
        if get_named_type(type_).name == "JSON":
            json_fields.add(name)

    for named in gql_schema.type_map.values():
        if named.name.startswith("__"):
            continue
        if isinstance(named, GraphQLInputObjectType):
            for name, input_field in named.fields.items():
                add(name, input_field.type)
        elif isinstance(named, GraphQLObjectType | GraphQLInterfaceType):
            for out_field in named.fields.values():
                for name, arg in out_field.args.items():
                    add(name, arg.type)
    return names, frozenset(json_fields)


def gql_name(field: str, info: strawberry.Info) -> str:
    """A field as this schema spells it: `valid_from` -> `validFrom`, each dotted part (`filter.validAt`
    stays), except below a JSON argument: `contradiction.max_pairs_per_claim` is what the caller sent."""
    json_fields = _api_names(info)[1]
    parts: list[str] = []
    verbatim = False
    for part in field.split("."):
        name = part if verbatim else _SNAKE.sub(lambda m: m[1].upper(), part)
        verbatim = verbatim or name in json_fields
        parts.append(name)
    return ".".join(parts)


def _gql_message(message: str, info: strawberry.Info) -> str:
    """The message with every argument or input field it names in the schema's spelling (`valid_to must
    be after valid_from` -> `validTo must be after validFrom`); quoted text is the caller's, left alone."""
    names = _api_names(info)[0]
    pieces = _QUOTED.split(message)
    for i in range(0, len(pieces), 2):  # even pieces are outside quotes
        pieces[i] = _SNAKE_WORD.sub(lambda m: names.get(m[0], m[0]), pieces[i])
    return "".join(pieces)


def gql_error(error: dict[str, Any], info: strawberry.Info) -> dict[str, Any]:
    """An error dict (PalimpsestError.to_dict) with `field`, and the fields its message names, in camelCase.

    Memory names fields as Python does (`valid_from`); a GraphQL client sent `validFrom`, so that is
    the name it gets back — on every error, coded or per batch item.
    """
    field = error.get("field")
    message = str(error.get("message", ""))
    out = dict(error)
    if isinstance(field, str):
        name = gql_name(field, info)
        if message.startswith(field):
            message = name + message[len(field):]
        out["field"] = name
    if "message" in error:
        out["message"] = _gql_message(message, info)
    return out


def coded(exc: PalimpsestError, info: strawberry.Info) -> GraphQLError:
    """The GraphQL error a client gets for `exc`: its code, and its field and message in the schema's names."""
    err = gql_error(exc.to_dict(), info)
    ext: dict[str, Any] = {k: err[k] for k in ("code", "field", "limit") if k in err}
    return GraphQLError(str(err["message"]), extensions=ext)


async def bounded(fn: Callable[[], R], limit: deadline.Deadline | None = None,
                  limiter: anyio.CapacityLimiter | None = None) -> R:
    """`fn()` in a worker thread, under `limit` (default: the request's deadline). `limiter`: the threads
    it may take (default: anyio's pool, shared by requests; subscriptions pass their own, api/subscriptions.py).

    Out of time, the await is abandoned at once (DeadlineExceededError, code TIMEOUT); the thread
    finishes on its own, and no Neo4j call it makes can outlive the deadline (graph.db.deadline).
    """
    limit = limit or deadline.current() or deadline.Deadline.after(30.0)
    left = limit.check()
    try:
        with anyio.fail_after(left):
            return await to_thread.run_sync(functools.partial(deadline.run_within, limit, fn),
                                            abandon_on_cancel=True, limiter=limiter)
    except TimeoutError as exc:
        if isinstance(exc, PalimpsestError):
            raise
        raise limit.exceeded() from None


def _memory(info: strawberry.Info, namespace: str | None, right: Right) -> Memory:
    """Authorise the principal for the namespace and bind a Memory to it (no database work)."""
    ctx = info.context
    if ctx.get("auth_error") is not None:
        raise ctx["auth_error"]
    principal: Principal = ctx["principal"]
    # Omitted: the key's only namespace, else `default`. Given, it must be valid: `""` is BAD_INPUT
    # (field `namespace`), never quietly the default, and is checked before rights are.
    ns = principal.default_namespace() if namespace is None else validate_namespace(namespace)
    principal.require(ns, right)
    return Memory(ctx["runtime"], ns, log_packets=ctx.get("log_packets", False),
                  packet_retention=ctx.get("packet_retention"))


def _limit(info: strawberry.Info) -> deadline.Deadline | None:
    """The request's deadline; each poll of a subscription (which has no end) gets one of its own."""
    if info.operation.operation == OperationType.SUBSCRIPTION:
        return deadline.Deadline.after(float(info.context.get("timeout_s", 30.0)))
    return None


async def call(info: strawberry.Info, namespace: str | None, right: Right, fn: Callable[[Memory], R], *,
               limiter: anyio.CapacityLimiter | None = None) -> R:
    """Authorise, bind the namespace, run in a thread under the deadline, code errors. Every resolver's path."""
    try:
        memory = _memory(info, namespace, right)
        return await bounded(lambda: fn(memory), _limit(info), limiter)
    except PalimpsestError as exc:
        raise coded(exc, info) from None


def authorize(info: strawberry.Info, namespace: str | None, right: Right) -> None:
    """Refuse a caller before looking at its other arguments, so a refusal says nothing about them."""
    try:
        _memory(info, namespace, right)
    except PalimpsestError as exc:
        raise coded(exc, info) from None


async def load(info: strawberry.Info, namespace: str, loader: DataLoader[K, V], key: K) -> V:
    """A per-parent value through the request's DataLoader, authorised like `call` and coded the same."""
    try:
        _memory(info, namespace, "read")
        return await loader.load(key)
    except PalimpsestError as exc:
        raise coded(exc, info) from None


__all__ = ["authorize", "bounded", "call", "coded", "gql_error", "gql_name", "load"]
