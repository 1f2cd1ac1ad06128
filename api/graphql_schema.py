"""The GraphQL schema: every resolver is a thin call into `Memory`, scoped and authorised first.

Resolvers run the (blocking) Neo4j work in a worker thread so one slow recall never stalls the
event loop, under the request's deadline (api/graphql_limits.py, graph/db/deadline.py): a resolver
that runs out of time answers TIMEOUT at once, and its Neo4j transaction, which carries the time
that was left as its timeout, is ended by the server. Per-parent lists (`Entity.neighbors`,
`Entity.facts`, `PacketItem.supersededClaim`) are loaded by DataLoaders: one round trip per level
and namespace, not one per parent. Errors leave as GraphQL errors with a stable
`extensions.code`; anything without a code is masked, so no stack trace or Cypher ever reaches a
client. The path every resolver takes (authorise, thread, deadline, DataLoader, error code) is
api/graphql_resolve.py, shared with the types' own fields (api/graphql_types.py).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Annotated, Any, TypeVar, cast

import anyio
import strawberry
from graphql import GraphQLError
from strawberry.dataloader import DataLoader
from strawberry.scalars import JSON

from palimpsest.api import graphql_ask as ga
from palimpsest.api import graphql_types as t
from palimpsest.api.graphql_limits import (
    MAX_ALIASES,
    MAX_COST,
    MAX_DEPTH,
    MAX_FIELDS,
    MAX_TOKENS,
    RequestGuard,
    code_error,
)
from palimpsest.api.graphql_resolve import authorize, bounded, call, coded, gql_error
from palimpsest.api.memory import Memory, parse_time
from palimpsest.api.runtime import Runtime
from palimpsest.api.subscriptions import Subscriptions
from palimpsest.graph.claims.queries import ClaimFilter, encode_cursor
from palimpsest.schema.errors import BadInputError, LimitExceededError, PalimpsestError
from palimpsest.schema.limits import MAX_BATCH_ITEMS
from palimpsest.schema.models import Claim as ClaimModel
from palimpsest.schema.models import ContradictionRecord, EntityNeighbour, Fact, IngestResult

V = TypeVar("V")

__all__ = ["MAX_ALIASES", "MAX_COST", "MAX_DEPTH", "MAX_FIELDS", "MAX_TOKENS", "Loaders", "build_schema", "schema"]


def _gql_items(res: IngestResult, info: strawberry.Info) -> IngestResult:
    items = [i.model_copy(update={"error": gql_error(i.error, info)}) if i.error else i for i in res.items]
    return res.model_copy(update={"items": items})


class Loaders:
    """Per-request DataLoaders: nested fields cost one Cypher round trip per level and namespace, not per item.

    A batch runs under the deadline of the request that asked for it (graph.db.deadline is inherited by
    the DataLoader's dispatch task). Resolvers authorise before they load (`load`).
    """

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.claims: DataLoader[tuple[str, str], ClaimModel | None] = DataLoader(self._load_claims)
        # (namespace, entity id, first) -> its neighbours
        self.neighbours: DataLoader[tuple[str, str, int], list[EntityNeighbour]] = DataLoader(self._load_neighbours)
        # (namespace, entity id, first, include superseded) -> its facts
        self.facts: DataLoader[tuple[str, str, int, bool], list[Fact]] = DataLoader(self._load_facts)
        self.round_trips = 0

    async def _load_claims(self, keys: list[tuple[str, str]]) -> Sequence[ClaimModel | None]:
        by_ns: dict[str, list[str]] = {}
        for ns, cid in keys:
            by_ns.setdefault(ns, []).append(cid)
        found: dict[tuple[str, str], ClaimModel] = {}
        for ns, ids in sorted(by_ns.items()):
            self.round_trips += 1
            memory = Memory(self.runtime, ns)
            loaded = await bounded(functools.partial(memory.claims_by_ids, ids))
            found.update({(ns, cid): claim for cid, claim in loaded.items()})
        return [found.get(key) for key in keys]

    async def _grouped(self, keys: Sequence[tuple[Any, ...]],
                       fetch: Callable[[Memory, list[str], tuple[Any, ...]], dict[str, list[V]]],
                       ) -> list[list[V] | BaseException]:
        """Keys (namespace, id, *options) grouped by (namespace, options): one fetch per group."""
        groups: dict[tuple[Any, ...], list[str]] = {}
        for ns, eid, *options in keys:
            groups.setdefault((ns, *options), []).append(eid)
        found: dict[tuple[Any, ...], list[V] | BaseException] = {}
        for group, ids in sorted(groups.items(), key=lambda g: repr(g[0])):
            ns, *options = group
            self.round_trips += 1
            memory = Memory(self.runtime, ns)
            try:
                rows = await bounded(functools.partial(fetch, memory, sorted(set(ids)), tuple(options)))
            except PalimpsestError as exc:  # this group's keys fail with it; other groups still load
                found.update({(ns, eid, *options): exc for eid in ids})
                continue
            found.update({(ns, eid, *options): rows.get(eid, []) for eid in ids})
        return [found[tuple(key)] for key in keys]

    async def _load_neighbours(self, keys: list[tuple[str, str, int]],
                               ) -> Sequence[list[EntityNeighbour] | BaseException]:
        return await self._grouped(keys, lambda mem, ids, opts: mem.entity_neighbours_many(ids, first=opts[0]))

    async def _load_facts(self, keys: list[tuple[str, str, int, bool]]) -> Sequence[list[Fact] | BaseException]:
        return await self._grouped(keys, lambda mem, ids, opts: mem.facts_many(
            ids, first=opts[0], include_superseded=opts[1]))


def _principal_ns(info: strawberry.Info) -> str:
    principal = info.context.get("principal")
    return principal.default_namespace() if principal is not None else "default"


def _filter(flt: t.ClaimFilterInput | None, info: strawberry.Info) -> ClaimFilter:
    if flt is None:
        return ClaimFilter()
    if flt.status is not None and flt.status not in {"current", "superseded", "retracted"}:
        raise coded(BadInputError("status must be current, superseded or retracted", field="filter.status"), info)
    try:
        return ClaimFilter(
            source=flt.source, claim_key=flt.claim_key, status=flt.status,
            recorded_after=parse_time(flt.recorded_after, "filter.recordedAfter"),
            recorded_before=parse_time(flt.recorded_before, "filter.recordedBefore"),
            valid_at=parse_time(flt.valid_at, "filter.validAt"),
        )
    except PalimpsestError as exc:
        raise coded(exc, info) from None


def _count(info: strawberry.Info, namespace: str | None, res: IngestResult) -> None:
    principal = info.context.get("principal")
    ns = namespace if namespace is not None else (principal.default_namespace() if principal else "default")
    ok = sum(1 for i in res.items if i.ok and not i.duplicate)
    metrics = info.context["metrics"]
    metrics.ingested.labels(ns).inc(ok)
    metrics.ingest_failed.labels(ns).inc(sum(1 for i in res.items if not i.ok))


NS = Annotated[str | None, strawberry.argument(
    description="Tenant namespace; defaults to the key's only namespace, else 'default'.")]


@strawberry.type
class Query:
    @strawberry.field(description="A bounded, ranked, replayable context packet of what is true now or then.")
    async def recall(self, info: strawberry.Info, query: str, k: int | None = None,
                     policy_version: str | None = None, as_of_revision: int | None = None,
                     valid_at: str | None = None, namespace: NS = None,
                     explain: Annotated[bool, strawberry.argument(
                         description="Give each item an explanation (its score in parts) and the packet a "
                                     "hiddenExplanation; the fingerprint is the same either way.")] = False,
                     ) -> t.ContextPacket:
        start = time.perf_counter()
        packet = await call(info, namespace, "read", lambda mem: mem.recall(
            query, k=k, policy_version=policy_version, as_of_revision=as_of_revision, valid_at=valid_at,
            explain=explain))
        info.context["metrics"].recall.observe(time.perf_counter() - start)
        return t.packet_to_gql(packet)

    @strawberry.field
    async def claim(self, info: strawberry.Info, id: str, namespace: NS = None) -> t.Claim:
        return t.Claim.from_pydantic(await call(info, namespace, "read", lambda mem: mem.claim(id)))

    @strawberry.field(description="Claims in write order (revision, batch position, id), filtered, paginated.")
    async def claims(self, info: strawberry.Info, filter: t.ClaimFilterInput | None = None, first: int = 20,
                     after: str | None = None, namespace: NS = None) -> t.ClaimConnection:
        authorize(info, namespace, "read")
        flt = _filter(filter, info)
        rows, more = await call(info, namespace, "read", lambda mem: mem.claims(flt, first=first, after=after))
        edges = [t.ClaimEdge(cursor=encode_cursor(c.revision, pos, c.id), node=t.Claim.from_pydantic(c))
                 for c, pos in rows]
        return t.ClaimConnection(edges=edges, page_info=t.PageInfo(
            has_next_page=more, end_cursor=edges[-1].cursor if edges else None))

    @strawberry.field(description="A claim key's supersession chain, oldest first.")
    async def history(self, info: strawberry.Info, claim_key: str, namespace: NS = None) -> list[t.HistoryEntry]:
        chain = await call(info, namespace, "read", lambda mem: mem.history(claim_key))
        return [t.HistoryEntry.from_pydantic(e) for e in chain]

    @strawberry.field(description="A logged packet and whether it still recomputes to the same fingerprint.")
    async def replay(self, info: strawberry.Info, fingerprint: str, namespace: NS = None,
                     explain: bool = False) -> t.ReplayResult:
        res = await call(info, namespace, "read", lambda mem: mem.replay(fingerprint, explain=explain))
        return t.ReplayResult(packet=t.packet_to_gql(res.packet), recomputed_fingerprint=res.recomputed_fingerprint,
                              matches=res.matches)

    @strawberry.field(description="Recall with the offline second round: round 1 with the query, later rounds with "
                                  "it expanded by the subjects and bridge entities round 1 found; every round's "
                                  "packet replayable, the rounds fused by reciprocal rank.")
    async def recall_rounds(self, info: strawberry.Info, query: str, rounds: int | None = None, k: int | None = None,
                            policy_version: str | None = None, as_of_revision: int | None = None,
                            valid_at: str | None = None, namespace: NS = None,
                            explain: Annotated[bool, strawberry.argument(
                                description="Every round's packet explains itself, as recall(explain:) does."
                            )] = False) -> ga.MultiRoundRecall:
        res = await call(info, namespace, "read", lambda mem: mem.recall_rounds(
            query, rounds=rounds, k=k, policy_version=policy_version, as_of_revision=as_of_revision,
            valid_at=valid_at, explain=explain))
        return ga.rounds_to_gql(res)

    @strawberry.field(description="Answer a question from memory through an LLM reader, with the claim ids the "
                                  "answer rests on (or notInMemory); expansion 'thought' (IRCoT) or 'offline' "
                                  "drives the later rounds. The model: llmModel or the policy's readerModel.")
    async def ask(self, info: strawberry.Info, question: str, llm_model: str | None = None,
                  rounds: int | None = None, expansion: str | None = None, k: int | None = None,
                  policy_version: str | None = None, as_of_revision: int | None = None,
                  valid_at: str | None = None, namespace: NS = None,
                  explain: Annotated[bool, strawberry.argument(
                      description="Every round's packet explains itself, as recall(explain:) does.")] = False,
                  ) -> ga.AskResult:
        res = await call(info, namespace, "read", lambda mem: mem.ask(
            question, llm_model=llm_model, rounds=rounds, expansion=expansion.lower() if expansion else None,
            k=k, policy_version=policy_version, as_of_revision=as_of_revision, valid_at=valid_at, explain=explain))
        return ga.ask_to_gql(res)

    @strawberry.field
    async def policies(self, info: strawberry.Info, namespace: NS = None) -> list[t.Policy]:
        return [t.Policy.from_pydantic(p) for p in await call(info, namespace, "read", lambda mem: mem.policies())]

    @strawberry.field
    async def policy(self, info: strawberry.Info, version: str, namespace: NS = None) -> t.Policy:
        return t.Policy.from_pydantic(await call(info, namespace, "read", lambda mem: mem.policy(version)))

    @strawberry.field(description="Supersessions the worker inferred between claims without a claim key, oldest "
                                  "first: those touching claimIds (e.g. a packet's item ids, with asOfRevision its "
                                  "storeRevision) or the whole namespace; in force at asOfRevision unless "
                                  "includeUndone.")
    async def inferred_links(self, info: strawberry.Info, claim_ids: list[str] | None = None,
                             as_of_revision: int | None = None, include_undone: bool = False, first: int = 100,
                             namespace: NS = None) -> list[t.InferredLink]:
        found = await call(info, namespace, "read", lambda mem: mem.inferred_links(
            claim_ids, as_of_revision=as_of_revision, include_undone=include_undone, first=first))
        return [t.InferredLink.from_pydantic(link) for link in found]

    @strawberry.field(description="Detected contradictions, newest first.")
    async def contradictions(self, info: strawberry.Info, since: str | None = None, first: int = 20,
                             namespace: NS = None) -> list[t.Contradiction]:
        found = await call(info, namespace, "read", lambda mem: mem.contradictions(since, first))
        return [t.Contradiction.from_pydantic(c) for c in found]

    @strawberry.field(description="One entity by id, or by name (canonical match).")
    async def entity(self, info: strawberry.Info, id: str | None = None, name: str | None = None,
                     namespace: NS = None) -> t.Entity | None:
        authorize(info, namespace, "read")
        if (id is None) == (name is None):
            raise coded(BadInputError("give exactly one of id and name", field="id"), info)
        ns = namespace if namespace is not None else _principal_ns(info)
        if id is not None:
            return t.entity_to_gql(await call(info, namespace, "read", lambda mem: mem.entity(id)), ns)
        found = await call(info, namespace, "read", lambda mem: mem.find_entities(name or ""))
        return t.entity_to_gql(found[0], ns) if found else None

    @strawberry.field(description="Entities by global PageRank (computed in GDS by the worker).")
    async def top_entities(self, info: strawberry.Info, by: str = "PAGERANK", first: int = 20,
                           namespace: NS = None) -> list[t.Entity]:
        authorize(info, namespace, "read")
        if by != "PAGERANK":
            raise coded(BadInputError("by must be PAGERANK", field="by"), info)
        ns = namespace if namespace is not None else _principal_ns(info)
        found = await call(info, namespace, "read", lambda mem: mem.top_entities(first))
        return [t.entity_to_gql(e, ns) for e in found]

    @strawberry.field(description="One shortest RELATED path between two entities, ends included; [] if none.")
    async def path(self, info: strawberry.Info, from_: Annotated[str, strawberry.argument(name="from")], to: str,
                   max_hops: int = 4, namespace: NS = None) -> list[t.Entity]:
        ns = namespace if namespace is not None else _principal_ns(info)
        path = await call(info, namespace, "read", lambda mem: mem.entity_path(from_, to, max_hops))
        return [t.entity_to_gql(e, ns) for e in path]

    @strawberry.field(description="The namespace's stored settings (its default policy).")
    async def settings(self, info: strawberry.Info, namespace: NS = None) -> t.NamespaceSettings:
        return t.NamespaceSettings.from_pydantic(await call(info, namespace, "read", lambda mem: mem.settings()))

    @strawberry.field
    async def stats(self, info: strawberry.Info, namespace: NS = None) -> t.StoreStats:
        return t.stats_to_gql(await call(info, namespace, "read", lambda mem: mem.stats()))


@strawberry.type
class Mutation:
    @strawberry.mutation(description="Write one claim; a claim_key supersedes the key's current claim.")
    async def ingest(self, info: strawberry.Info, input: t.ClaimInput, namespace: NS = None) -> t.IngestResult:
        res = await call(info, namespace, "write", lambda mem: mem.ingest_many([input.to_raw()]))
        _count(info, namespace, res)
        res = _gql_items(res, info)
        first = res.items[0]
        if not first.ok and first.error:
            raise GraphQLError(str(first.error.get("message")), extensions={
                k: v for k, v in first.error.items() if k in {"code", "field", "limit"}})
        return t.IngestResult.from_pydantic(res)

    @strawberry.mutation(description="Write a batch in one transaction; each item reports its own result.")
    async def ingest_many(self, info: strawberry.Info, inputs: list[t.ClaimInput],
                          namespace: NS = None) -> t.IngestResult:
        authorize(info, namespace, "write")
        if len(inputs) > MAX_BATCH_ITEMS:
            raise coded(LimitExceededError(f"ingestMany takes at most {MAX_BATCH_ITEMS} inputs", field="inputs",
                                           limit=MAX_BATCH_ITEMS), info)
        res = await call(info, namespace, "write", lambda mem: mem.ingest_many([i.to_raw() for i in inputs]))
        _count(info, namespace, res)
        return t.IngestResult.from_pydantic(_gql_items(res, info))

    @strawberry.mutation(description="Hide a claim; if it had superseded one, that one becomes current again.")
    async def retract(self, info: strawberry.Info, id: str, reason: str,
                      namespace: NS = None) -> t.RetractResult:
        return t.RetractResult.from_pydantic(await call(info, namespace, "write", lambda mem: mem.retract(id, reason)))

    @strawberry.mutation(description="Remove claims' content for good (needs the erase right): by ids, or by source "
                                     "and/or metadata values; the claim keeps only a tombstone, what it derived goes "
                                     "with it, what it had superseded is restored. dryRun lists what would go.")
    async def erase(self, info: strawberry.Info, reason: str, ids: list[str] | None = None,
                    source: str | None = None, metadata: JSON | None = None, dry_run: bool = False,
                    namespace: NS = None) -> t.EraseResult:
        if dry_run:  # a dry run shows what is stored (ids, sources, keys): the read right too
            authorize(info, namespace, "read")
        # Memory refuses a metadata value that is not an object (BAD_INPUT, field metadata).
        wanted = cast("dict[str, Any] | None", metadata)
        res = await call(info, namespace, "erase", lambda mem: mem.erase(
            ids, source=source, metadata=wanted, reason=reason, dry_run=dry_run))
        return t.EraseResult.from_pydantic(res)

    @strawberry.mutation(description="Undo one inferred supersession at a new revision (like a retraction): the "
                                     "older claim is current again, and the worker will not infer the pair again. "
                                     "Needs the admin right: it changes what every reader of the namespace gets.")
    async def undo_inference(self, info: strawberry.Info, newer_id: str, older_id: str, reason: str,
                             namespace: NS = None) -> t.UndoInferenceResult:
        return t.UndoInferenceResult.from_pydantic(await call(
            info, namespace, "admin", lambda mem: mem.undo_inferred(newer_id, older_id, reason)))

    @strawberry.mutation(description="Register a policy version (needs the admin right: a policy decides every "
                                     "reader's ranking and which models recalls and the worker call).")
    async def register_policy(self, info: strawberry.Info, input: t.PolicyInput,
                              namespace: NS = None) -> t.Policy:
        pol = await call(info, namespace, "admin", lambda mem: mem.register_policy(input.to_raw()))
        return t.Policy.from_pydantic(pol)

    @strawberry.mutation(description="Make a registered policy version the namespace's default (for recalls "
                                     "without a version and for the worker, in every process), at a new revision. "
                                     "Needs the admin right.")
    async def set_default_policy(self, info: strawberry.Info, version: str,
                                 namespace: NS = None) -> t.NamespaceSettings:
        found = await call(info, namespace, "admin", lambda mem: mem.set_default_policy(version))
        return t.NamespaceSettings.from_pydantic(found)


@strawberry.type
class Subscription:
    @strawberry.subscription(description="New contradictions in a namespace as the worker finds them.")
    async def contradictions(self, info: strawberry.Info, after_revision: int = 0,
                             namespace: NS = None) -> AsyncGenerator[t.Contradiction, None]:
        # Capped per key and per server, polled in threads of their own, and idle subscribers of a
        # namespace share one check per tick (api/subscriptions.py).
        subs: Subscriptions | None = info.context.get("subscriptions")
        if subs is None:  # a schema run without the app (tests): one private state
            subs = Subscriptions(10**6, 10**6, float(info.context.get("subscription_poll_s", 1.0)))
        principal = info.context.get("principal")
        key = principal.name if principal is not None else "-"
        ns_key = namespace if namespace is not None else (
            principal.default_namespace() if principal is not None else "default")
        try:
            subs.take(key)
        except PalimpsestError as exc:
            raise coded(exc, info) from None
        try:
            cursor = after_revision
            poll = float(info.context.get("subscription_poll_s", 1.0))
            page = 200
            seen: object = _UNSEEN
            while True:
                token = await subs.token(ns_key, functools.partial(
                    call, info, namespace, "read", _token, limiter=subs.limiter()))
                if token == seen:
                    await anyio.sleep(poll)
                    continue
                found = await call(info, namespace, "read", functools.partial(_after, revision=cursor, limit=page),
                                   limiter=subs.limiter())
                if len(found) == page and found[0].revision != found[-1].revision:
                    # Only whole revisions advance the cursor; the rest comes in the next round.
                    found = [r for r in found if r.revision < found[-1].revision]
                for record in found:
                    cursor = max(cursor, record.revision)
                    yield t.Contradiction.from_pydantic(record)
                if not found:
                    seen = token  # caught up with what this token covers
                    await anyio.sleep(poll)
        finally:
            subs.release(key)


_UNSEEN = object()


def _token(mem: Memory) -> object:
    return mem.contradictions_token()


def _after(mem: Memory, *, revision: int, limit: int) -> list[ContradictionRecord]:
    return mem.contradictions_after(revision, limit)


_log = logging.getLogger("palimpsest")


def log_errors(errors: Sequence[GraphQLError], execution_context: Any = None) -> None:
    """Each error as one JSON line of the service log (api/observability.py), coded as the client sees it.

    A client's mistake (BAD_INPUT, NOT_FOUND, LIMIT_EXCEEDED …) is an `info` line with its code,
    field, limit and path: the server did its job, and strawberry's default — a 25-line traceback at
    `error` for every bad argument — buried the real failures. Only INTERNAL (a bug) is an `error`,
    with its own message and traceback inside the same line.
    """
    context = getattr(execution_context, "context", None)
    request = context.get("request") if isinstance(context, dict) else None
    request_id = getattr(getattr(request, "state", None), "request_id", None)
    operation = getattr(execution_context, "operation_name", None)
    for error in errors:
        shown = code_error(error)
        ext = shown.extensions or {}
        fields: dict[str, Any] = {"code": ext.get("code"), "message": shown.message}
        fields.update({k: ext[k] for k in ("field", "limit") if k in ext})
        if error.path:
            fields["path"] = ".".join(str(p) for p in error.path)
        if operation:
            fields["operation"] = operation
        if request_id:
            fields["request_id"] = request_id
        if ext.get("code") == "INTERNAL":
            fields["detail"] = error.message
            cause = error.original_error or error
            _log.error("graphql error", exc_info=(type(cause), cause, cause.__traceback__), extra={"fields": fields})
        else:
            _log.info("graphql error", extra={"fields": fields})


class LoggedSchema(strawberry.Schema):
    """strawberry's Schema with its error log replaced by `log_errors` (one JSON line per error)."""

    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        log_errors(errors, execution_context)


def build_schema() -> strawberry.Schema:
    # One extension for every limit, the request deadline and error codes (api/graphql_limits.py):
    # strawberry's depth and alias limiters walked every fragment spread again, exponentially.
    return LoggedSchema(query=Query, mutation=Mutation, subscription=Subscription, extensions=[RequestGuard])


schema = build_schema()
