"""What a GraphQL request may cost, checked before graphql-core validates it, and how its errors leave.

`RequestGuard` is the schema's one extension for both:

* **Limits, in one pass** (`analyse`): depth, aliases, field selections and a *cost* — each field
  counts 1, and the fields under a list count once per element: `first` (or `k` of `recall`, or
  `maxHops + 1` of `path`) elements when the query says how many, else `DEFAULT_LIST_SIZE`. A
  fragment is analysed once and memoised, so a spread costs the fragment's computed cost without
  walking it again: a fragment chain whose expansion doubles at every step (`F0 = revision ...F1
  ...F1`, …) is priced in linear time, and refused because its price doubles too. Over a limit the
  request is answered `LIMIT_EXCEEDED` with `extensions.limit`, and graphql-core's own rules never
  see it (some of them are quadratic). The product of nested `first` values is what the cost
  bounds: `topEntities(first: 1000) { neighbors(first: 1000) { … } }` is refused before any
  resolver runs. Fields that recall or call a model count that work too (`RECALL_WORK`,
  `MODEL_CALL_WORK`, per round for `recallRounds` and `ask`), so aliases cannot multiply recalls and
  reader calls past the budget.
* **One deadline per request** (`graph.db.deadline`), started when the operation starts, so parsing,
  validation and execution share it; every resolver's Neo4j work runs under what is left (api/
  graphql_resolve.py `call`). Subscriptions give each of their polls a deadline of its own.
* **Every error coded**: errors that carry `extensions.code` pass unchanged; parse and validation
  errors get `BAD_INPUT` (syntax, unknown fields, missing arguments, bad variables) or
  `LIMIT_EXCEEDED` (tokens, nesting, too many validation errors); anything else — a bug — is masked
  as "Internal error." with code `INTERNAL`, so no stack trace or Cypher reaches a client.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLSyntaxError,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
)
from graphql.validation.rules import overlapping_fields_can_be_merged
from strawberry.extensions import SchemaExtension

from palimpsest.graph.db import deadline
from palimpsest.schema.limits import MAX_ASK_ROUNDS

MAX_DEPTH = 10
MAX_ALIASES = 20
MAX_TOKENS = 5_000
MAX_FIELDS = 400
# Fields resolved per request, lists counted per element: a recall of 200 items with every field
# and its supersededClaim is ~10k; 20 entities × 20 neighbours × 50 facts of 3 fields ~65k.
MAX_COST = 100_000
DEFAULT_LIST_SIZE = 10  # elements assumed for a list whose size the query does not state
DEFAULT_TIMEOUT_S = 30.0
# graphql-core stops validating after this many errors ("Too many validation errors … Validation aborted.").
MAX_VALIDATION_ERRORS = 100
# graphql-core's budget for comparing fields that share a response name and sibling fragments
# (OverlappingFieldsCanBeMerged, quadratic in them): its default 500,000 let 400 repeats of one
# field, or ~190 sibling fragment spreads, hold the event loop for 0.4-0.9 s on two loaded cores.
# 50,000 still takes ~110 sibling spreads; the full introspection query and our own test queries
# spend 0. Over it: "Validation aborted." → LIMIT_EXCEEDED.
MAX_VALIDATION_COMPLEXITY = 50_000
overlapping_fields_can_be_merged.MAX_COMPLEXITY_BUDGET = MAX_VALIDATION_COMPLEXITY
# Work a field does beyond the fields it returns: a recall (candidate search, ranking, Neo4j round trips)
# counts RECALL_WORK; `recallRounds` and `replay` count one recall per round, `ask` a recall and a model
# call (MODEL_CALL_WORK) per round, its `rounds` argument or, unstated, MAX_ASK_ROUNDS. So 20 aliases of
# `ask(rounds: 4)` (80 reader calls) cost 400,000 and are refused; 4 of them, or 20 plain recalls, pass.
RECALL_WORK = 1_000
MODEL_CALL_WORK = 4_000
_ROOT_WORK = {"recall": (RECALL_WORK, False), "replay": (RECALL_WORK, False), "recallRounds": (RECALL_WORK, True),
              "ask": (RECALL_WORK + MODEL_CALL_WORK, True)}  # field -> (work per round, has rounds)
# Sizes a query states: argument name -> elements it yields.
_SIZE_ARGS = {"first": 0, "k": 0, "maxHops": 1}
_SATURATE = 10**15  # costs are capped here: a doubling chain stays a small integer

INTERNAL_MESSAGE = "Internal error."


@dataclass(frozen=True)
class Analysis:
    depth: int
    aliases: int
    fields: int
    cost: int


def _named(t: Any) -> tuple[Any, bool]:
    """(named type, is a list) of a field's output type."""
    is_list = False
    while isinstance(t, GraphQLNonNull | GraphQLList):
        if isinstance(t, GraphQLList):
            is_list = True
        t = t.of_type
    return t, is_list


Priced = tuple[int, int]  # (cost, depth)
Step = Generator["Step", Any, Priced]  # a pricing step: yields the steps it needs, returns its price


class _Pricer:
    """Depth and cost of each selection set, fragments memoised by (name, stated size, introspection).

    Each step is a generator that yields the sub-steps it needs and gets their price back (`run`
    keeps the stack), so a chain of hundreds of fragments never meets Python's recursion limit.
    """

    def __init__(self, schema: GraphQLSchema, fragments: Mapping[str, FragmentDefinitionNode],
                 variables: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.defaults = defaults
        self.memo: dict[tuple[str, int | None, bool], tuple[int, int]] = {}
        self.active: set[str] = set()

    def _int(self, node: Any) -> int | None:
        if isinstance(node, IntValueNode):
            return int(node.value)
        if isinstance(node, VariableNode):
            name = node.name.value
            value = self.variables.get(name, self.defaults.get(name))
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    def _stated_size(self, node: FieldNode, definition: GraphQLField | None) -> int | None:
        stated: dict[str, Any] = {a.name.value: a.value for a in node.arguments or ()}
        for name, extra in _SIZE_ARGS.items():
            value: int | None = None
            if name in stated:
                value = self._int(stated[name])
            elif definition is not None and name in definition.args:
                default = definition.args[name].default_value
                value = default if isinstance(default, int) and not isinstance(default, bool) else None
            if value is not None:
                return max(0, min(value + extra, _SATURATE))
        return None

    @staticmethod
    def run(step: Step) -> Priced:
        stack: list[Step] = [step]
        value: Any = None
        while True:
            try:
                needed = stack[-1].send(value)
            except StopIteration as done:
                stack.pop()
                if not stack:
                    return done.value  # type: ignore[no-any-return]
                value = done.value
                continue
            stack.append(needed)
            value = None

    def selection_set(self, sel: SelectionSetNode, parent: GraphQLNamedType | None, size: int | None,
                      intro: bool) -> Step:
        cost, depth = 0, 0
        for node in sel.selections:
            if isinstance(node, FieldNode):
                c, d = yield self.field(node, parent, size, intro)
            elif isinstance(node, InlineFragmentNode):
                cond = self.schema.get_type(node.type_condition.name.value) if node.type_condition else parent
                c, d = yield self.selection_set(node.selection_set, cond, size, intro)
            elif isinstance(node, FragmentSpreadNode):
                c, d = yield self.fragment(node.name.value, size, intro)
            else:  # pragma: no cover - the parser makes no other selections
                continue
            cost = min(cost + c, _SATURATE)
            depth = max(depth, d)
        return cost, depth

    def fragment(self, name: str, size: int | None, intro: bool) -> Step:
        key = (name, size, intro)
        if key in self.memo:
            return self.memo[key]
        frag = self.fragments.get(name)
        if frag is None or name in self.active:  # unknown or cyclic: graphql-core's rules report it
            return 0, 0
        self.active.add(name)
        found: Priced = yield self.selection_set(frag.selection_set,
                                                 self.schema.get_type(frag.type_condition.name.value), size, intro)
        self.active.discard(name)
        self.memo[key] = found
        return found

    def field(self, node: FieldNode, parent: GraphQLNamedType | None, size: int | None,
              intro: bool) -> Step:
        name = node.name.value
        definition: GraphQLField | None = None
        if name == "__schema":
            definition = None
            child: GraphQLNamedType | None = self.schema.get_type("__Schema")
            is_list = False
        elif name == "__type":
            child, is_list = self.schema.get_type("__Type"), False
        elif isinstance(parent, GraphQLObjectType | GraphQLInterfaceType) and name in parent.fields:
            definition = parent.fields[name]
            child, is_list = _named(definition.type)
        else:
            child, is_list = None, False
        intro = intro or name.startswith("__")
        if node.selection_set is None:
            return 1, 0
        stated = self._stated_size(node, definition)
        if is_list:
            elements = stated if stated is not None else (size if size is not None else DEFAULT_LIST_SIZE)
            below = None
        else:  # a connection or packet: the size it states is the size of the lists just beneath
            elements, below = 1, stated
        cost, depth = yield self.selection_set(node.selection_set, child, below, intro)
        # Introspection's `ofType` chains walk wrapping types, not data: they add no depth.
        step = 0 if intro and name == "ofType" else 1
        return min(1 + elements * cost + self._work(node, parent), _SATURATE), depth + step

    def _work(self, node: FieldNode, parent: GraphQLNamedType | None) -> int:
        """What a root field's recalls and model calls count (RECALL_WORK, MODEL_CALL_WORK); 0 for others."""
        found = _ROOT_WORK.get(node.name.value)
        if found is None or parent is not self.schema.query_type:
            return 0
        per_round, has_rounds = found
        if not has_rounds:
            return per_round
        stated = next((self._int(a.value) for a in node.arguments or () if a.name.value == "rounds"), None)
        rounds = stated if stated is not None and stated > 0 else MAX_ASK_ROUNDS
        return per_round * min(rounds, MAX_ASK_ROUNDS)


def _counts(document: DocumentNode) -> tuple[int, int]:
    """(field selections, aliases) written in the document: each fragment counted once, as written."""
    fields = aliases = 0
    stack: list[Any] = [d.selection_set for d in document.definitions
                        if isinstance(d, OperationDefinitionNode | FragmentDefinitionNode)]
    while stack:
        sel = stack.pop()
        for node in sel.selections:
            if isinstance(node, FieldNode):
                fields += 1
                aliases += node.alias is not None
            if getattr(node, "selection_set", None) is not None:
                stack.append(node.selection_set)
    return fields, aliases


def analyse(document: DocumentNode, schema: GraphQLSchema, variables: Mapping[str, Any] | None = None,
            operation_name: str | None = None) -> Analysis:
    """Depth, aliases, field selections and cost of the operation that will run, in one linear pass."""
    fields, aliases = _counts(document)
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is not None:
        operations = [d for d in operations if d.name is not None and d.name.value == operation_name] or operations
    cost = depth = 0
    roots = {"query": schema.query_type, "mutation": schema.mutation_type, "subscription": schema.subscription_type}
    for op in operations:  # without an operation name every one is priced: the dearest decides
        defaults = {}
        for var in op.variable_definitions or ():
            if isinstance(var.default_value, IntValueNode):
                defaults[var.variable.name.value] = int(var.default_value.value)
        pricer = _Pricer(schema, fragments, variables or {}, defaults)
        c, d = pricer.run(pricer.selection_set(op.selection_set, roots.get(op.operation.value), None, False))
        cost, depth = max(cost, c), max(depth, d)
    return Analysis(depth=depth, aliases=aliases, fields=fields, cost=cost)


def _limit_error(message: str, limit: int) -> GraphQLError:
    return GraphQLError(message, extensions={"code": "LIMIT_EXCEEDED", "limit": limit})


def limit_errors(found: Analysis) -> list[GraphQLError]:
    errors = []
    if found.depth > MAX_DEPTH:
        errors.append(_limit_error(f"the query nests {found.depth} levels deep; at most {MAX_DEPTH} are allowed",
                                   MAX_DEPTH))
    if found.aliases > MAX_ALIASES:
        errors.append(_limit_error(f"{found.aliases} aliases found; at most {MAX_ALIASES} are allowed", MAX_ALIASES))
    if found.fields > MAX_FIELDS:
        errors.append(_limit_error(f"the query selects more than {MAX_FIELDS} fields", MAX_FIELDS))
    if found.cost > MAX_COST:
        shown = f"{found.cost:,}" if found.cost < _SATURATE else f"over {_SATURATE:,}"
        errors.append(_limit_error(
            f"the query's cost is {shown}; at most {MAX_COST:,} is allowed (each field counts 1, and the fields "
            f"under a list count once per element: its first/k argument, or {DEFAULT_LIST_SIZE})", MAX_COST))
    return errors


def check_limits(document: DocumentNode, schema: GraphQLSchema, variables: Mapping[str, Any] | None = None,
                 operation_name: str | None = None) -> list[GraphQLError]:
    """The LIMIT_EXCEEDED errors of a parsed document ([] when it is within every limit)."""
    try:
        return limit_errors(analyse(document, schema, variables, operation_name))
    except RecursionError:  # nesting the parser survived but our walk does not: too deep by far
        return [_limit_error(f"the query nests deeper than {MAX_DEPTH} levels", MAX_DEPTH)]


# ------------------------------------------------------------------------------------ error codes
def _with(error: GraphQLError, message: str, extensions: dict[str, Any]) -> GraphQLError:
    return GraphQLError(message, nodes=error.nodes, source=error.source, positions=error.positions,
                        path=error.path, original_error=None, extensions=extensions)


# What graphql-core's validation and coercion messages name, in the schema's own spelling: an input
# field or argument that is missing or unknown, or the field a variable's value failed at.
_NAMED_FIELD = tuple(re.compile(p) for p in (
    r"include required field '(\w+)'",
    r"include unknown field '(\w+)'",
    r"^Field '(?:\w+\.)?(\w+)' (?:of required type|is not defined by type)",
    r"^Unknown argument '(\w+)'",
    r"argument '(\w+)' of type '[^']*' is required",
    r"^Argument '[\w.]+\((\w+):\)' of type",
    r"^Cannot query field '(\w+)'",
    r"invalid value at \S*?(\w+):",  # a variable's value, at the (last) input field it failed
))


def _bad_input(message: str) -> dict[str, Any]:
    """BAD_INPUT, with `field` when the message names one."""
    for pattern in _NAMED_FIELD:
        if found := pattern.search(message):
            return {"code": "BAD_INPUT", "field": found[1]}
    return {"code": "BAD_INPUT"}


def code_error(error: GraphQLError) -> GraphQLError:
    """The error as a client may see it: with a code, or masked."""
    ext = error.extensions or {}
    if "code" in ext:
        return error
    cause = error.original_error
    if error.path is None:
        if isinstance(cause, RecursionError):
            return _with(error, f"the query nests deeper than {MAX_DEPTH} levels", {
                "code": "LIMIT_EXCEEDED", "limit": MAX_DEPTH})
        if isinstance(error, GraphQLSyntaxError) or cause is None or isinstance(cause, GraphQLError):
            message = error.message
            if "Parsing aborted" in message and "tokens" in message:
                return _with(error, message, {"code": "LIMIT_EXCEEDED", "limit": MAX_TOKENS})
            if "Parsing aborted" in message:  # "Document is nested too deeply"
                return _with(error, message, {"code": "LIMIT_EXCEEDED", "limit": MAX_DEPTH})
            if "Too many validation errors" in message:
                return _with(error, message, {"code": "LIMIT_EXCEEDED", "limit": MAX_VALIDATION_ERRORS})
            if "Validation aborted" in message:
                return _with(error, "Validation aborted: the query repeats fields too often to be checked",
                             {"code": "LIMIT_EXCEEDED", "limit": MAX_VALIDATION_COMPLEXITY})
            return _with(error, message, _bad_input(message))
        if message_is_variable(error) and isinstance(cause, ValueError | TypeError):
            return _with(error, error.message, _bad_input(error.message))
    return _with(error, INTERNAL_MESSAGE, {"code": "INTERNAL"})


def message_is_variable(error: GraphQLError) -> bool:
    return error.message.startswith("Variable '$")


def code_errors(errors: list[GraphQLError] | None) -> list[GraphQLError] | None:
    return None if errors is None else [code_error(e) for e in errors]


def _code_result(result: object) -> None:
    errors = getattr(result, "errors", None)
    if errors:
        result.errors = code_errors(errors)  # type: ignore[attr-defined]


class RequestGuard(SchemaExtension):
    """Token cap, cost limits before validation, the request deadline, and coded errors (module docstring)."""

    def on_operation(self) -> Iterator[None]:
        ctx = self.execution_context
        ctx.parse_options["max_tokens"] = MAX_TOKENS
        context = ctx.context if isinstance(ctx.context, dict) else {}
        seconds = float(context.get("timeout_s", DEFAULT_TIMEOUT_S))
        token = deadline.set_current(deadline.Deadline.after(seconds))
        try:
            yield
        finally:
            deadline.reset_current(token)
        result = ctx.result
        _code_result(result)
        initial = getattr(result, "initial_result", None)
        if initial is not None:
            _code_result(initial)

    def on_validate(self) -> Iterator[None]:
        ctx = self.execution_context
        if ctx.graphql_document is not None and ctx.pre_execution_errors is None:
            errors = check_limits(ctx.graphql_document, ctx.schema._schema, ctx.variables, ctx.operation_name)
            if errors:  # graphql-core's own rules never see a document over the limits
                ctx.pre_execution_errors = errors
        yield

    def on_stream_result(self, result: Any) -> Iterator[None]:
        _code_result(result)
        for part in list(getattr(result, "incremental", None) or ()) + list(getattr(result, "completed", None) or ()):
            _code_result(part)
        yield

