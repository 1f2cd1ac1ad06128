"""`Memory`: the in-process face. Validates, embeds (extraction), writes and recalls (graph).

Every other face — GraphQL, CLI, MCP — calls these same methods, so there is exactly one
implementation of each operation. Validation happens here, before anything touches Neo4j: a bad
item in a batch gets its own typed error and the rest of the batch still lands.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from palimpsest.api.runtime import Runtime
from palimpsest.graph import policies
from palimpsest.graph.claims import check as check_q
from palimpsest.graph.claims import contradictions as contradiction_queries
from palimpsest.graph.claims import history as history_q
from palimpsest.graph.claims import queries as claim_queries
from palimpsest.graph.claims import store
from palimpsest.graph.claims.queries import ClaimFilter
from palimpsest.graph.lifecycle import erase as erase_q
from palimpsest.schema import limits
from palimpsest.schema.dates import parse_instant
from palimpsest.schema.errors import BadInputError, ConflictError, LimitExceededError, NotFoundError, PalimpsestError
from palimpsest.schema.models import (
    DEFAULT_POLICY,
    CheckReport,
    Claim,
    ClaimInput,
    ContextPacket,
    ContradictionRecord,
    Entity,
    EntityDetail,
    EntityNeighbour,
    EraseResult,
    Fact,
    HistoryEntry,
    ImportResult,
    InferredLink,
    IngestItemResult,
    IngestResult,
    NamespaceSettings,
    Policy,
    RetractResult,
    RouterCost,
    StoreStats,
    UndoInferenceResult,
)
from palimpsest.schema.subjects import embedded_subject, embedding_text

if TYPE_CHECKING:
    from palimpsest.api.worker import BackgroundWorker, PassReport, WorkerConfig
    from palimpsest.extraction.router_llm import RouteVerdict
    from palimpsest.graph.recall.packet_log import Retention
    from palimpsest.graph.recall.router import Route
    from palimpsest.schema.ask import AskResult, MultiRoundRecall

# Recall (graph.recall, the entity matcher, the LLM router), export, import, the entity graph, facts and
# inferred links are imported by the methods that use them: a process that only reads a key's history,
# checks a namespace or reads its policy (`palimpsest history`, `check`, `policy`) does not load them.

_LIMIT_CTX = ("max_length", "min_length", "gt", "ge", "lt", "le")
# A recall redone because the namespace's default or a cached policy changed under it; more is churn.
_RECALL_ATTEMPTS = 4


def bad_input_from(exc: ValidationError, prefix: str = "") -> BadInputError:
    """The first pydantic error as our typed error: which field, what limit, in plain words."""
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or "input"
    ctx = err.get("ctx") or {}
    ours = ctx.get("error")
    if isinstance(ours, BadInputError):  # raised by one of our validators (e.g. schema.dates): keep its words
        return type(ours)(f"{prefix}{ours.message}", field=ours.field or field, limit=ours.limit)
    limit = next((ctx[key] for key in _LIMIT_CTX if key in ctx), None)
    if err["type"] == "string_too_short" and limit == 1:
        # Text fields strip surrounding whitespace first, so "   " arrives here as "": say that, not
        # pydantic's "should have at least 1 character", which reads as a bug to whoever sent spaces.
        return BadInputError(f"{prefix}{field} must not be empty or only whitespace", field=field, limit=1)
    message = f"{prefix}{field}: {str(err['msg']).removeprefix('Value error, ')}"
    cls = LimitExceededError if err["type"] in {"string_too_long", "too_long"} else BadInputError
    return cls(message, field=field, limit=limit if isinstance(limit, int | float | str) else None)


def _text(value: Any, field: str) -> str:
    """A string argument as Neo4j and the embedder can take it: a `str` that encodes as UTF-8.

    A lone surrogate (`"\\ud800"`, which JSON can carry) does not; pydantic refuses it in ingest's
    fields, and this gives every other string argument the same answer: BAD_INPUT naming the field.
    """
    if not isinstance(value, str):
        raise BadInputError(f"{field} must be a string", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInputError(f"{field} must be valid Unicode text (it holds a lone surrogate)", field=field) from None
    return value


def _opt_text(value: Any, field: str) -> str | None:
    return None if value is None else _text(value, field)


def _check_pinned_route(stages: Sequence[str]) -> None:
    """A pinned route is an earlier packet's `stages`: its router entries are applied as recorded
    (graph.recall.router.held), so only entries a decision can write are taken."""
    from palimpsest.graph.recall import router as router_q

    if len(stages) > limits.MAX_PINNED_STAGES:
        raise LimitExceededError(f"pinned_route must hold at most {limits.MAX_PINNED_STAGES} stages",
                                 field="pinned_route", limit=limits.MAX_PINNED_STAGES)
    unknown = sorted({s for s in stages if s.startswith(router_q.PREFIX) and s not in router_q.ENTRIES})
    if unknown:
        raise BadInputError(f"pinned_route holds router entries no decision writes: {', '.join(unknown[:5])}",
                            field="pinned_route")


def validate_namespace(namespace: str) -> str:
    if not isinstance(namespace, str) or not limits.NAMESPACE_RE.fullmatch(namespace):
        raise BadInputError("namespace must be 1-64 characters of letters, digits, '_', '.', '-'",
                            field="namespace")
    return namespace


def to_claim_input(item: ClaimInput | Mapping[str, Any]) -> ClaimInput:
    if isinstance(item, ClaimInput):
        return item
    try:
        return ClaimInput.model_validate(dict(item))
    except ValidationError as exc:
        raise bad_input_from(exc) from None


@dataclass
class ReplayResult:
    packet: ContextPacket
    recomputed_fingerprint: str
    matches: bool



def _interrupted(exc: Exception, batch: int, batches: int, revisions: Sequence[int], claims: int) -> PalimpsestError:
    """The error of an erase that failed after some of its batches had committed: the failure as the
    driver reported it, with what *was* committed — each batch is a transaction of its own, so the
    earlier ones stay erased whatever happens to this one. Running the same erase again finishes it
    (what is gone answers `already_erased`)."""
    from palimpsest.graph.db.errors import OUTCOME_UNKNOWN, RETRY_SAFE

    cause = exc.message if isinstance(exc, PalimpsestError) else f"{type(exc).__name__}: {exc}"
    cause = cause.replace(RETRY_SAFE, "that batch was not committed").replace(
        OUTCOME_UNKNOWN, "that batch may or may not have been committed")
    message = (f"the erase stopped at batch {batch} of {batches}: {len(revisions)} batch(es) had committed before "
               f"the failure, erasing {claims} claim(s) at revision(s) {', '.join(str(r) for r in revisions)}, and "
               f"they stay erased; batch {batch} failed ({cause}); run the same erase again to finish it "
               "(what is already erased answers already_erased)")
    if isinstance(exc, PalimpsestError):
        return type(exc)(message, field=exc.field, limit=exc.limit)
    return PalimpsestError(message)

class Memory:
    """One namespace's memory. Cheap to create; share the Runtime between many.

    A Memory built in-process is the operator: it holds the database's own driver, so it checks no API
    key and may do what every right allows (api.auth: `register_policy`, `set_default_policy` and
    `undo_inferred` are `admin` on the served faces, which check the key before calling here). The models
    it may call are still the operator's allow-list (`Runtime.models`, from the settings).
    """

    def __init__(self, runtime: Runtime, namespace: str = "default", *, log_packets: bool = False,
                 packet_retention: Retention | None = None) -> None:
        # `log_packets` decides for every recall, including each round of `recall_rounds` and `ask`;
        # `packet_retention` bounds what the log keeps (PALIMPSEST_PACKET_LOG_MAX / _TTL_S).
        self.rt = runtime
        self.namespace = validate_namespace(namespace)
        self.log_packets = log_packets
        self.packet_retention = packet_retention  # None: packet_log.Retention()'s defaults
        self._owns_runtime = False

    @classmethod
    def from_env(cls, namespace: str = "default", *, log_packets: bool = False) -> Memory:
        mem = cls(Runtime.from_env(), namespace, log_packets=log_packets)
        mem._owns_runtime = True
        return mem

    @property
    def _db(self) -> str | None:
        return self.rt.settings.database

    # ---- writes -------------------------------------------------------------------------
    def ingest(self, content: str, source: str, *, claim_key: str | None = None, tau: float | None = None,
               valid_from: datetime | date | str | None = None, valid_to: datetime | date | str | None = None,
               metadata: dict[str, Any] | None = None, idempotency_key: str | None = None,
               correction: bool = False) -> IngestItemResult:
        """Write one claim. With a `claim_key` it composes with the key's other versions on both time
        axes (docs/TEMPORAL.md); `correction=True` says it corrects every version its window overlaps."""
        raw = {"content": content, "source": source, "claim_key": claim_key, "tau": tau,
               "valid_from": valid_from, "valid_to": valid_to, "metadata": metadata or {},
               "idempotency_key": idempotency_key, "correction": correction}
        claim = to_claim_input(raw)
        result = self.ingest_many([claim]).items[0]
        if not result.ok:  # validation already raised above: a conflict found by the write itself
            error = result.error or {}
            cls = ConflictError if error.get("code") == ConflictError.code else BadInputError
            raise cls(str(error.get("message", error)), field=error.get("field"))
        return result

    def ingest_many(self, items: Sequence[ClaimInput | Mapping[str, Any]], *,
                    on_progress: Callable[[int], None] | None = None,
                    embed_subjects: bool = True) -> IngestResult:
        """Write a batch in one transaction (one store revision); each item gets its own result.

        With `embed_subjects` (the default), a claim whose metadata declares a `subject` (or `title`)
        is embedded as "subject: content" (schema.subjects; measured in docs/research-log.md) and
        the subject is stored as `search_subject`; `content` is stored exactly as given either way.

        `on_progress(n)` is told as items are done: refused ones at once, the rest as their embeddings
        are computed (the bulk of the time), one embedder batch at a time — so a progress bar moves
        per item rather than per transaction. Without it the batch is embedded in one call.
        """
        if len(items) > limits.MAX_BATCH_ITEMS:
            raise LimitExceededError(f"a batch holds at most {limits.MAX_BATCH_ITEMS} items, got {len(items)}",
                                     field="items", limit=limits.MAX_BATCH_ITEMS)
        failed: dict[int, IngestItemResult] = {}
        valid: list[tuple[int, ClaimInput]] = []
        for index, item in enumerate(items):
            try:
                valid.append((index, to_claim_input(item)))
            except PalimpsestError as exc:
                failed[index] = IngestItemResult(index=index, ok=False, error=exc.to_dict())
        subjects = [embedded_subject(c.content, c.metadata) if embed_subjects else None for _, c in valid]
        texts = [embedding_text(c.content, subject) for (_, c), subject in zip(valid, subjects, strict=True)]
        if on_progress is None:
            vectors = self.rt.embedder.embed(texts)
        else:
            if failed:
                on_progress(len(failed))
            step = max(1, int(getattr(self.rt.embedder, "batch_size", 64)))
            vectors = []
            for start in range(0, len(texts), step):
                vectors.extend(self.rt.embedder.embed(texts[start:start + step]))
                on_progress(len(texts[start:start + step]))
        prepared = [store.PreparedClaim(index=i, claim=c, embedding=v, subject=subject)
                    for (i, c), v, subject in zip(valid, vectors, subjects, strict=True)]
        written = store.write_claims(self.rt.driver, self.namespace, prepared, self._db)
        results = {r.index: r for r in written} | failed
        revision = max((r.revision or 0 for r in written), default=0)
        if not written:
            revision = self._revision_or_zero()
        return IngestResult(revision=revision, items=[results[i] for i in sorted(results)])

    def stored_idempotency_keys(self, keys: Sequence[str]) -> set[str]:
        """Which of `keys` are already held by a claim here. A caller re-sending inputs it may have sent
        before (`palimpsest ingest` run again) skips embedding those whose key it made from the input
        itself: the write would return the earlier claim anyway."""
        if len(keys) > limits.MAX_BATCH_ITEMS:
            raise LimitExceededError(f"at most {limits.MAX_BATCH_ITEMS} keys at once, got {len(keys)}",
                                     field="keys", limit=limits.MAX_BATCH_ITEMS)
        return store.stored_idempotency_keys(self.rt.driver, self.namespace, [_text(k, "keys") for k in keys],
                                             self._db)

    def retract(self, claim_id: str, reason: str) -> RetractResult:
        claim_id = _text(claim_id, "id")
        if not isinstance(reason, str) or not _text(reason, "reason").strip():
            raise BadInputError("reason must not be empty", field="reason")
        if len(reason) > limits.MAX_REASON_CHARS:
            raise LimitExceededError(f"reason must be at most {limits.MAX_REASON_CHARS} characters",
                                     field="reason", limit=limits.MAX_REASON_CHARS)
        return store.retract(self.rt.driver, self.namespace, claim_id, reason.strip(), self._db)

    def erase(self, ids: Sequence[str] | None = None, *, source: str | None = None,
              metadata: Mapping[str, Any] | None = None, reason: str, dry_run: bool = False,
              batch_size: int = erase_q.BATCH) -> EraseResult:
        """Remove claims' content for good, with everything derived from them (graph.lifecycle.erase): select by
        `ids`, or by `source` and/or top-level `metadata` values; each batch of `batch_size` claims is
        one transaction at a store revision of its own. What they had superseded is restored as a
        retraction would. With `dry_run`, nothing is written: the result lists what would go.

        Entities the erased claims had named are re-named from the claims left, and this process's
        caches of text are emptied (`_forget_erased_text`).

        Raises:
            BadInputError: no selector, both kinds of selector, an empty reason, a bad batch size.
            NotFoundError: an id that was never a claim of this namespace.
            UnavailableError (or the failing batch's own error): a batch failed. When earlier batches
                had committed, the message says how many, which revisions and how many claims: they
                stay erased, and the same erase run again finishes the rest.
        """
        if not isinstance(reason, str) or not _text(reason, "reason").strip():
            raise BadInputError("reason must not be empty", field="reason")
        if len(reason) > limits.MAX_REASON_CHARS:
            raise LimitExceededError(f"reason must be at most {limits.MAX_REASON_CHARS} characters",
                                     field="reason", limit=limits.MAX_REASON_CHARS)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= erase_q.MAX_BATCH:
            raise LimitExceededError(f"batch_size must be between 1 and {erase_q.MAX_BATCH}", field="batch_size",
                                     limit=erase_q.MAX_BATCH)
        if ids is not None and len(ids) > limits.MAX_BATCH_ITEMS:
            raise LimitExceededError(f"at most {limits.MAX_BATCH_ITEMS} ids per call", field="ids",
                                     limit=limits.MAX_BATCH_ITEMS)
        if metadata is not None and not isinstance(metadata, Mapping):
            raise BadInputError("metadata must be an object of key: value pairs", field="metadata")
        selector = erase_q.Selector(tuple(_text(i, "ids") for i in ids or ()), _opt_text(source, "source"),
                                    dict(metadata) if metadata else None)
        selected, already = erase_q.select(self.rt.driver, self.namespace, selector, self._db)
        result = EraseResult(namespace=self.namespace, dry_run=dry_run, matched=len(selected), claims=selected,
                             already_erased=already)
        if dry_run:
            return result
        from palimpsest.extraction.entities.normalize import canonical, surface_of
        from palimpsest.graph.knowledge.entities import EntityNaming

        naming = EntityNaming(canonical, surface_of)
        counts = dict.fromkeys(("facts_removed", "supports_removed", "entities_removed", "mentions_removed",
                                "contradictions_removed", "supersessions_removed", "packets_erased"), 0)
        restored: set[str] = set()
        erased: set[str] = set()
        batches = [[c.id for c in selected[start:start + batch_size]] for start in range(0, len(selected), batch_size)]
        try:
            for number, chunk in enumerate(batches, start=1):
                try:
                    done = erase_q.erase_batch(self.rt.driver, self.namespace, chunk, reason.strip(), self._db, naming)
                except Exception as exc:
                    if not result.revisions:
                        raise  # nothing of this erase was committed: the error says so as it is
                    raise _interrupted(exc, number, len(batches), result.revisions, len(erased)) from exc
                if done is None:  # erased by someone else meanwhile
                    result.already_erased.extend(chunk)
                    continue
                result.revisions.append(done.revision)
                erased.update(done.erased)
                result.already_erased.extend(sorted(set(chunk) - set(done.erased)))
                restored = (restored | set(done.restored)) - erased
                for name in counts:
                    counts[name] += getattr(done, name)
        finally:
            if result.revisions:
                self._forget_erased_text()
        return result.model_copy(update={"restored": sorted(restored - erased), **counts,
                                         "already_erased": sorted(set(result.already_erased))})

    def _forget_erased_text(self) -> None:
        """Drop what this process keeps in memory keyed by, or made of, text: the embedder's query and
        sentence caches, the memoised text analyses, content hashes and frames, and the namespace's
        entity-graph snapshot. Which entries held the erased text cannot be told (a query quoting it is
        not the claim), so all of them go; they fill again as recalls come. Other processes keep theirs
        until they restart (docs/OPERATIONS.md, "Erasing")."""
        from palimpsest.extraction import supersession
        from palimpsest.graph import text
        from palimpsest.graph.claims import order

        forget = getattr(self.rt.embedder, "forget_texts", None)
        if callable(forget):
            forget()
        text.forget()
        order.content_hash.cache_clear()
        supersession.forget_frames()
        if self.rt.mentions is not None:
            self.rt.mentions.drop(self.namespace)

    # ---- moving a namespace ---------------------------------------------------------------
    def export_lines(self, progress: Callable[[int, int], None] | None = None, *,
                     lock_seconds: float | None = None) -> Iterator[str]:
        """The namespace as an export file (docs/EXPORT.md), one JSON line at a time, header first.

        Streamed: consume it as it comes (write each line out). While it is being consumed the export
        holds the namespace's write lock, so it is one consistent snapshot and writes to this namespace
        wait; stop early and the lock is released. `progress(done, total)` is told after each record.
        The lock is held at most `lock_seconds` (default graph.lifecycle.export.LOCK_SECONDS): past that
        the database ends the transaction and the next line raises ExportTimeoutError (TIMEOUT).
        """
        from palimpsest.graph.lifecycle import export as export_q
        from palimpsest.graph.lifecycle import export_format

        records = export_q.export_records(self.rt.driver, self.namespace, embedding_model=self.rt.embedder.model_name,
                                          embedding_dimension=self.rt.embedder.dimension, database=self._db,
                                          lock_seconds=export_q.LOCK_SECONDS if lock_seconds is None else lock_seconds)
        total = 0
        for done, record in enumerate(records, start=1):
            if record["kind"] == "header":
                total = 2 + sum(int(n) for n in record["counts"].values())
            yield export_format.dumps(record)
            if progress is not None:
                progress(done, total)

    def import_lines(self, lines: Iterable[str], *, remap: bool = False,
                     progress: Callable[[int, int], None] | None = None) -> ImportResult:
        """Import an export file into this namespace (graph.lifecycle.importer): into an empty namespace as it was
        (`copy`), or with `remap` under fresh ids — into an empty namespace, or appended after a
        non-empty one's history (`merge`). Staged and switched in by one transaction: on any error
        nothing is written. `progress(done, total)` is told after each record.

        Raises:
            BadInputError: the file is not an export of a version this release reads, or a line is
                malformed (the message names the line).
            ConflictError: the namespace is not empty without `remap`, or ids/keys are already taken.
            SchemaMismatchError: the file was embedded with another model.
        """
        from palimpsest.graph.lifecycle import importer as importer_q

        result = importer_q.import_records(self.rt.driver, self.namespace, lines, remap=remap,
                                           embedding_model=self.rt.embedder.model_name,
                                           embedding_dimension=self.rt.embedder.dimension, database=self._db,
                                           progress=progress)
        policies.forget_namespace(self.namespace)  # cached policies and defaults of what was there before
        return result

    def register_policy(self, policy: Policy | Mapping[str, Any]) -> Policy:
        if not isinstance(policy, Policy):
            try:
                policy = Policy.model_validate(dict(policy))
            except ValidationError as exc:
                raise bad_input_from(exc) from None
        serves = getattr(self.rt.embedder, "serves", None)
        served = self.rt.embedder.model_name
        if not (serves(policy.embedding_model) if callable(serves) else policy.embedding_model == served):
            # Recall embeds with the server's one model whatever a policy says: accepting another name
            # would promise what no recall under the policy does.
            raise BadInputError(f"embedding_model {policy.embedding_model!r} is not served here: this server embeds "
                                f"with {served!r}", field="embedding_model")
        # Every model the policy would have the server call or load is the operator's to allow.
        self.rt.models.check_policy(policy)
        return policies.register_policy(self.rt.driver, self.namespace, policy, self._db)

    def set_default_policy(self, version: str) -> NamespaceSettings:
        """Make a registered policy version (or `default-v1`) the namespace's default: the one every
        recall without a version and every worker pass use, in any process, from the new store
        revision this write is recorded at on. Unknown versions raise NotFoundError (field `version`)."""
        if not isinstance(version, str) or not _text(version, "version").strip():
            raise BadInputError("version must not be empty", field="version")
        return policies.set_default_policy(self.rt.driver, self.namespace, version, self._db)

    # ---- reads --------------------------------------------------------------------------
    def settings(self) -> NamespaceSettings:
        """The namespace's stored settings (its default policy), read from the store now."""
        return policies.namespace_settings(self.rt.driver, self.namespace, self._db)

    def policy(self, version: str | None = None) -> Policy:
        """A registered policy; without a version, the namespace's default now."""
        wanted = _opt_text(version, "version") or policies.default_policy_version(self.rt.driver, self.namespace,
                                                                                  self._db)
        return policies.get_policy(self.rt.driver, self.namespace, wanted, self._db)

    def policies(self) -> list[Policy]:
        return policies.list_policies(self.rt.driver, self.namespace, self._db)

    def claim(self, claim_id: str) -> Claim:
        return store.get_claim(self.rt.driver, self.namespace, _text(claim_id, "id"), DEFAULT_POLICY.default_tau,
                               self._db)

    def claims(self, flt: ClaimFilter | None = None, *, first: int = 20,
               after: str | None = None) -> tuple[list[tuple[Claim, int]], bool]:
        if not isinstance(first, int) or not 1 <= first <= limits.MAX_PAGE:
            raise LimitExceededError(f"first must be between 1 and {limits.MAX_PAGE}", field="first",
                                     limit=limits.MAX_PAGE)
        if flt is not None:
            for name in ("source", "claim_key", "status"):
                _opt_text(getattr(flt, name), f"filter.{name}")
        _opt_text(after, "after")
        return claim_queries.list_claims(self.rt.driver, self.namespace, flt or ClaimFilter(), first, after,
                                         DEFAULT_POLICY.default_tau, self._db)

    def claims_by_ids(self, ids: Sequence[str]) -> dict[str, Claim]:
        return claim_queries.claims_by_ids(self.rt.driver, self.namespace, list(ids), DEFAULT_POLICY.default_tau,
                                           self._db)

    def contradictions(self, since: datetime | date | str | None = None, first: int = 20) -> list[ContradictionRecord]:
        if not isinstance(first, int) or not 1 <= first <= limits.MAX_PAGE:
            raise LimitExceededError(f"first must be between 1 and {limits.MAX_PAGE}", field="first",
                                     limit=limits.MAX_PAGE)
        return contradiction_queries.recent_contradictions(self.rt.driver, self.namespace,
                                                           parse_time(since, "since"), first, self._db)

    def contradictions_after(self, revision: int, limit: int = 100) -> list[ContradictionRecord]:
        return contradiction_queries.contradictions_after(self.rt.driver, self.namespace, revision, limit, self._db)

    def contradictions_token(self) -> tuple[int, str] | None:
        """Changes whenever new contradictions may exist (graph.claims.contradictions.feed_token)."""
        return contradiction_queries.feed_token(self.rt.driver, self.namespace, self._db)

    def history(self, claim_key: str) -> list[HistoryEntry]:
        if not claim_key or len(_text(claim_key, "claim_key")) > limits.MAX_CLAIM_KEY_CHARS:
            raise BadInputError(f"claim_key must be 1-{limits.MAX_CLAIM_KEY_CHARS} characters", field="claim_key",
                                limit=limits.MAX_CLAIM_KEY_CHARS)
        return history_q.history(self.rt.driver, self.namespace, claim_key, DEFAULT_POLICY.default_tau, self._db)

    def check(self) -> CheckReport:
        """Verify the namespace's stored invariants (graph.claims.check; docs/TEMPORAL.md) and report what broke.

        Returns:
            A CheckReport; `report.ok` is True when every invariant holds.
        Raises:
            NotFoundError: nothing was ever written to the namespace.
        """
        return check_q.check(self.rt.driver, self.namespace, self._db)

    def stats(self) -> StoreStats:
        return history_q.stats(self.rt.driver, self.namespace, self._db)

    def require_namespace(self) -> int:
        """The namespace's store revision; NotFoundError if nothing was ever written there.

        One read of its Store node. A recall finds an unknown namespace only after embedding the query,
        and a process that has not loaded the model yet pays seconds for that: a face that has not asks
        this first (the CLI's recall, ask, stats and retract), so the mistake is reported at once.
        """
        from palimpsest.graph.projections import projections_state

        state = projections_state(self.rt.driver, self.namespace, self._db)
        if state is None:
            raise NotFoundError(f"unknown namespace {self.namespace!r}: nothing was ever written there",
                                field="namespace")
        return state.revision

    def recall(self, query: str, *, k: int | None = None, policy_version: str | None = None,
               as_of_revision: int | None = None, valid_at: datetime | date | str | None = None,
               projections_seq: int | None = None, explain: bool = False,
               pinned_route: Sequence[str] | None = None, later_rounds: bool = False) -> ContextPacket:
        """A context packet. Without `policy_version`, the namespace's default policy *at the revision
        served* (`set_default_policy`; `default-v1` until one is set): an as-of recall uses the default
        in effect then, so a later change of the default does not change an old revision's packet.

        The default is guessed from this process's last sight of it and checked against the Store in
        the recall's own first round trip; if another process changed it, the recall is redone with the
        version found there. Policies themselves are cached by version (immutable; their stored hash is
        re-checked the same way).

        With `explain`, each item carries `explanation` (its score in parts: vector, lexical, graph and
        lending contributions that add up to the fused relevance, then penalties and decay) and the
        packet `hidden_explanation` (which rule hid which candidates). The fingerprint is the same
        with or without it, and the packet log keeps the packet unexplained.

        Under a policy with a `router` (graph.recall.router), the router picks which of the policy's stages
        run for this query, and the packet's `stages` says what it decided; `packet.router_cost` is what
        the LLM router's call cost. `pinned_route` (an earlier packet's `stages`) makes it decide as that
        packet did, without asking the rules or the model again: replay and later rounds use it.
        `later_rounds`: the caller will run later rounds after this one and wants them, not graph expansion,
        to take the second hop: a question the router reads as multi-hop then skips PPR (cheaper; on the
        multi-hop sets it found less, so `recall_rounds` does not ask for it).

        Example:
            >>> packet = memory.recall("where do backups go?", explain=True)
            >>> e = packet.items[0].explanation
            >>> parts = [t.contribution for t in (e.vector, e.lexical, e.graph, e.lending) if t is not None]
            >>> math.isclose(sum(parts) * math.prod(p.factor for p in e.penalties) * e.decay.factor,
            ...              packet.items[0].score)
            True
        """
        from palimpsest.extraction import rerank as rerank_models
        from palimpsest.extraction.entities import query_phrases
        from palimpsest.graph.recall import PolicyChangedError, RecallRequest, packet_log
        from palimpsest.graph.recall import recall as recall_q

        if not isinstance(explain, bool):
            raise BadInputError("explain must be true or false", field="explain")
        if not isinstance(later_rounds, bool):
            raise BadInputError("later_rounds must be true or false", field="later_rounds")
        if pinned_route is not None and (isinstance(pinned_route, str)
                                         or not all(isinstance(s, str) for s in pinned_route)):
            raise BadInputError("pinned_route must be a list of stage names", field="pinned_route")
        if pinned_route is not None:
            _check_pinned_route(pinned_route)
        if not isinstance(query, str) or not _text(query, "query").strip():
            raise BadInputError("query must not be empty", field="query")
        _opt_text(policy_version, "policy_version")
        if len(query) > limits.MAX_QUERY_CHARS:
            raise LimitExceededError(f"query must be at most {limits.MAX_QUERY_CHARS} characters",
                                     field="query", limit=limits.MAX_QUERY_CHARS)
        if as_of_revision is not None and (not isinstance(as_of_revision, int) or as_of_revision < 0):
            raise BadInputError("as_of_revision must be a non-negative integer", field="as_of_revision")
        when = parse_time(valid_at, "valid_at")
        text = query.strip()
        explicit = policy_version is not None
        version = policy_version or policies.cached_default(self.rt.driver, self.namespace, self._db)
        verified = explicit  # a guess from the cache is checked (and corrected) by the recall itself
        if version is None:
            version = policies.default_policy_version(self.rt.driver, self.namespace, self._db, as_of_revision)
            verified = True
            policies.remember_default(self.rt.driver, self.namespace, version, self._db)
        vector: list[float] | None = None
        asked: dict[str, tuple[RouteVerdict | None, RouterCost]] = {}  # the LLM router: one call per recall
        for _ in range(_RECALL_ATTEMPTS):
            pol, stored_hash = policies.resolve_policy(self.rt.driver, self.namespace, version, self._db)
            used_k = pol.k if k is None else k
            if not isinstance(used_k, int) or used_k < 1:
                raise BadInputError("k must be a positive integer", field="k")
            if used_k > pol.max_k:
                if not verified:  # a stale guess must not refuse a k the real default allows
                    version = policies.default_policy_version(self.rt.driver, self.namespace, self._db,
                                                              as_of_revision)
                    verified = True
                    continue
                raise LimitExceededError(f"k must be at most {pol.max_k} under policy {pol.version!r}",
                                         field="k", limit=pol.max_k)
            if vector is None:
                vector = self.rt.embedder.embed_query(text)
            decision, cost = self._route(text, pol, pinned_route, asked, later_rounds)
            pol = decision.policy if decision is not None else pol
            # The query's entity names seed PPR and the fact beam search (graph.recall.fact_source).
            phrases = (tuple(query_phrases(text)) if pol.graph_expansion == "ppr" or pol.fact_retrieval == "beam"
                       else ())
            req = RecallRequest(self.namespace, text, vector, pol, used_k, as_of_revision, when, projections_seq,
                                phrases, check_policy=True, policy_hash=stored_hash, check_default=not explicit,
                                explain=explain, route=decision.stages if decision is not None else (),
                                mentions=self.rt.mentions,
                                # the model rerankers with the process's options (extraction.rerank.configure)
                                # (one the allow-list no longer holds is unavailable, and the packet says so)
                                rerank_scorer=self.rt.models.guard_scorer(rerank_models.process_options()),
                                # (an embedder without a text cache — a benchmark's wrapper — leaves the
                                # sentence reranker unavailable, which the packet says)
                                embed_texts=getattr(self.rt.embedder, "embed_cached", None),
                                embed_model=str(getattr(self.rt.embedder, "model_name", "") or ""))
            try:
                packet = recall_q(self.rt.driver, req, self._db)
            except PolicyChangedError as exc:
                if exc.default is not None:  # the namespace's default is another version (at that revision)
                    version, verified = exc.default, True
                    if as_of_revision is None:
                        policies.remember_default(self.rt.driver, self.namespace, version, self._db)
                else:  # the cached policy went stale (namespace dropped, version re-registered)
                    policies.forget_policy(self.rt.driver, self.namespace, version, self._db)
                continue
            if cost is not None:
                packet = packet.model_copy(update={"router_cost": cost})
            if self.log_packets:
                packet_log.log_packet(self.rt.driver, packet, self._db, self.packet_retention)
            return packet
        raise ConflictError("the namespace's policy kept changing during the recall; retry",
                            field="policy_version")

    def _route(self, text: str, pol: Policy, pinned_route: Sequence[str] | None,
               asked: dict[str, tuple[RouteVerdict | None, RouterCost]],
               later_rounds: bool = False) -> tuple[Route | None, RouterCost | None]:
        """The router's decision for `text` under `pol` (None: the policy has no router), and the LLM
        router's cost when it was asked. A pinned decision (an earlier packet's stages) is taken as it was,
        later rounds included."""
        from palimpsest.extraction.router_llm import classify as classify_question
        from palimpsest.graph.recall import router as router_q

        if pol.router == "none":
            return None, None
        held = router_q.pinned(pinned_route) if pinned_route else None
        if held is not None:
            return router_q.held(pol, held), None
        if pol.router == "rules" or not pol.router_model:
            return router_q.route(text, pol, later_rounds=later_rounds), None
        if not self.rt.models.allows("llm", pol.router_model):  # stored before the allow-list changed
            return router_q.decide(pol, router_q.features(text), "llm-unavailable", later_rounds=later_rounds), None
        if pol.router_model not in asked:
            asked[pol.router_model] = classify_question(text, pol.router_model, self.rt.reader)
        verdict, cost = asked[pol.router_model]
        if verdict is None:
            return router_q.decide(pol, router_q.features(text), "llm-unavailable", later_rounds=later_rounds), cost
        found = {router_q.MULTI_HOP: verdict.multi_hop, router_q.COMPARISON: verdict.comparison,
                 router_q.TEMPORAL: verdict.temporal}
        return router_q.decide(pol, frozenset(f for f, on in found.items() if on), "llm",
                               later_rounds=later_rounds), cost

    def replay(self, fingerprint: str, *, explain: bool = False) -> ReplayResult:
        """The logged packet, and whether recomputing it at its revision gives the same fingerprint; with
        `explain`, the recomputed packet's explanations are put on the logged packet's items (when it
        matches: the same fingerprint is the same ranking)."""
        from palimpsest.graph.recall import packet_log

        logged = packet_log.load_packet(self.rt.driver, self.namespace, _text(fingerprint, "fingerprint"), self._db)
        again = self.recall(logged.query, k=logged.k, policy_version=logged.policy_version,
                            as_of_revision=logged.store_revision, valid_at=logged.valid_at,
                            projections_seq=logged.projections_seq, explain=explain, pinned_route=logged.stages)
        if explain and again.fingerprint == logged.fingerprint:
            logged = logged.model_copy(update={"items": again.items, "hidden_explanation": again.hidden_explanation})
        return ReplayResult(logged, again.fingerprint, again.fingerprint == logged.fingerprint)

    # ---- rounds and ask (api.ask) ----------------------------------------------------------
    def recall_rounds(self, query: str, *, rounds: int | None = None, k: int | None = None,
                      policy_version: str | None = None, as_of_revision: int | None = None,
                      valid_at: datetime | date | str | None = None, explain: bool = False) -> MultiRoundRecall:
        """Recall with the offline second round (no model): round 1 with `query`, then up to `rounds` - 1
        rounds (default: the policy's `ask_rounds`, at least 2) with the query expanded by the subjects
        and bridge entities of the round before's top items, fused by reciprocal rank to the first k.
        Every round's packet is logged and replayable; later rounds run at round 1's revision.

        Raises:
            BadInputError / LimitExceededError: as `recall`, or `rounds` outside 1..MAX_ASK_ROUNDS.
        """
        from palimpsest.api.ask import recall_rounds

        return recall_rounds(self, query, rounds=rounds, k=k, policy_version=policy_version,
                             as_of_revision=as_of_revision, valid_at=valid_at, explain=explain)

    def ask(self, question: str, *, llm_model: str | None = None, rounds: int | None = None,
            expansion: str | None = None, k: int | None = None, policy_version: str | None = None,
            as_of_revision: int | None = None, valid_at: datetime | date | str | None = None,
            explain: bool = False) -> AskResult:
        """Answer `question` from memory through an LLM reader (extraction.reader), with the claim ids the
        answer rests on, or `not_in_memory`. IRCoT (`expansion` "thought", the default of policies): the
        reader's thought drives the next retrieval round, up to `rounds` (default: policy `ask_rounds`);
        "offline": the rounds expand the query as `recall_rounds` does and the reader reads once.
        The model is `llm_model` or the policy's `reader_model`; the provider key comes from its own
        environment variable. Every round's packet is logged and replayable; cost is in `result.cost`.
        With `explain`, every round's packet explains itself (as `recall` does; fingerprints unchanged).

        Example:
            >>> mem.ask("Who directed the film the studio made in 1997?", llm_model="gpt-4o-mini").answer

        Raises:
            BadInputError: an empty question, no model, bad `rounds` / `expansion`, an `llm_model` the
                operator does not allow (`Runtime.models`).
            UnavailableError: the reader's call failed, or the policy's reader_model is not allowed any
                more (field `llm_model`; the provider's own text goes to the log, not the caller).
        """
        from palimpsest.api.ask import ask

        return ask(self, question, llm_model=llm_model, rounds=rounds, expansion=expansion, k=k,
                   policy_version=policy_version, as_of_revision=as_of_revision, valid_at=valid_at,
                   options=self.rt.reader, explain=explain, models=self.rt.models)

    # ---- inferred supersession ------------------------------------------------------------
    def inferred_links(self, claim_ids: Sequence[str] | None = None, *, as_of_revision: int | None = None,
                       include_undone: bool = False, first: int = 100) -> list[InferredLink]:
        """The supersessions the worker inferred between claims without a claim_key: the ones touching
        `claim_ids` (a packet's item ids, say — `[it.id for it in packet.items]` with
        `as_of_revision=packet.store_revision` lists what inference did to that packet), or the whole
        namespace; in force at `as_of_revision` (default: now), or every one ever recorded with
        `include_undone`. Each has its reason, confidence and revision."""
        from palimpsest.graph.claims import inferred as inferred_q

        if claim_ids is not None:
            if len(claim_ids) > limits.MAX_BATCH_ITEMS:
                raise LimitExceededError(f"at most {limits.MAX_BATCH_ITEMS} claim ids", field="claimIds",
                                         limit=limits.MAX_BATCH_ITEMS)
            claim_ids = [_text(c, "claimIds") for c in claim_ids]
        if not 1 <= first <= 1000:
            raise BadInputError("first must be between 1 and 1000", field="first")
        revision = self._revision_or_zero() if as_of_revision is None else int(as_of_revision)
        with self.rt.driver.session(database=self._db, default_access_mode="READ") as session:
            return session.execute_read(inferred_q.inferred_links, self.namespace, claim_ids, revision,
                                        include_undone=include_undone, limit=first)

    def undo_inferred(self, newer_id: str, older_id: str, reason: str) -> UndoInferenceResult:
        """Undo one inferred supersession (an operator's correction), at a new store revision: the older
        claim is current again from then on, and the worker will not infer the same pair again."""
        from palimpsest.graph.claims import inferred as inferred_q

        newer_id, older_id = _text(newer_id, "newerId"), _text(older_id, "olderId")
        if not isinstance(reason, str) or not reason.strip():
            raise BadInputError("reason must not be empty", field="reason")
        if len(reason) > limits.MAX_REASON_CHARS:
            raise LimitExceededError(f"reason must be at most {limits.MAX_REASON_CHARS} characters",
                                     field="reason", limit=limits.MAX_REASON_CHARS)
        with self.rt.driver.session(database=self._db) as session:
            return session.execute_write(inferred_q.undo_inferred, self.namespace, newer_id, older_id, reason.strip())

    def _revision_or_zero(self) -> int:
        try:
            return self.stats().revision
        except PalimpsestError:
            return 0

    # ---- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        if self._owns_runtime:
            self.rt.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ---- projections (background worker) -------------------------------------------------
    def wait_for_projections(self, revision: int, timeout: float = 30.0, *, poll: float = 0.05) -> int:
        """Block until the background projections have processed `revision`; return projections_seq.

        For tests and careful callers that must see the contradictions of what they just wrote.
        Raises ProjectionsTimeoutError if the worker has not got there within `timeout` seconds.
        """
        from palimpsest.graph.projections import projections_state
        from palimpsest.schema.errors import ProjectionsTimeoutError

        if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
            raise BadInputError("revision must be a non-negative integer", field="revision")
        if not isinstance(timeout, int | float) or timeout < 0:
            raise BadInputError("timeout must be a non-negative number of seconds", field="timeout")
        deadline = time.monotonic() + float(timeout)
        while True:
            state = projections_state(self.rt.driver, self.namespace, self._db)
            seq = state.projections_seq if state else 0
            if seq >= revision:
                return seq
            if state is None:
                raise NotFoundError(f"unknown namespace {self.namespace!r}: nothing was ever written there",
                                    field="namespace")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProjectionsTimeoutError(
                    f"projections of {self.namespace!r} reached revision {seq}, not {revision}, within {timeout}s "
                    f"(store revision {state.revision}); is a worker running?", field="revision", limit=seq)
            time.sleep(min(poll, remaining))

    def run_projections(self, config: WorkerConfig | None = None) -> PassReport:
        """Run one worker pass for this namespace now, synchronously, in this thread."""
        from palimpsest.api.worker import run_once

        return run_once(self.rt, self.namespace, config)

    def start_worker(self, *, interval: float = 0.5, config: WorkerConfig | None = None) -> BackgroundWorker:
        """Start a background worker thread for this namespace; stop it with `.stop()` (or use `with`)."""
        from palimpsest.api.worker import BackgroundWorker

        return BackgroundWorker(self.rt, namespaces=[self.namespace], interval=interval, config=config).start()


    # ---- entities (knowledge graph) -------------------------------------------------------
    # Typed results (schema.models Entity, EntityDetail, EntityNeighbour, Fact), built by the graph reads.
    def entity(self, entity_id: str) -> EntityDetail:
        """One entity with its names, type, PageRank and `mentions`, the number of claims mentioning it.

        Example:
            >>> mem.entity(mem.find_entities("Checkout API")[0].id).mentions

        Raises:
            NotFoundError: no entity with that id in this namespace.
        """
        from palimpsest.graph.knowledge import entities as entity_q

        return entity_q.get_entity(self.rt.driver, self.namespace, _text(entity_id, "id"), self._db)

    def find_entities(self, name: str) -> list[Entity]:
        """Entities whose canonical name equals the canonical form of `name` ("Checkout-API" → "checkout api"),
        by id.

        Raises:
            BadInputError: `name` holds no letter or digit.
        """
        from palimpsest.extraction.entities import canonical
        from palimpsest.graph.knowledge import entities as entity_q

        key = canonical(_text(name or "", "name"))
        if not key:
            raise BadInputError("name must contain a letter or digit", field="name")
        return entity_q.find_entities(self.rt.driver, self.namespace, [key], self._db)

    def entity_neighbours(self, entity_id: str, first: int = 20) -> list[EntityNeighbour]:
        """RELATED neighbours with the edge's `weight`, by weight, then PageRank, then id.

        Raises:
            NotFoundError: no entity with that id. BadInputError: `first` outside 1..1000.
        """
        from palimpsest.graph.knowledge import entities as entity_q

        return entity_q.neighbourhood(self.rt.driver, self.namespace, _text(entity_id, "id"), first, self._db)

    def entity_path(self, source_id: str, target_id: str, max_hops: int = 4) -> list[Entity]:
        """One shortest RELATED path between two entities, as its entities in order (ends included; one
        entity when they are the same), [] if none within max_hops.

        Raises:
            NotFoundError: either end is not an entity. BadInputError: `max_hops` outside 1..6.
        """
        from palimpsest.graph.knowledge import entities as entity_q

        return entity_q.shortest_path(self.rt.driver, self.namespace, _text(source_id, "from"), _text(target_id, "to"),
                                      max_hops, self._db)

    def entity_neighbours_many(self, entity_ids: Sequence[str], first: int = 20) -> dict[str, list[EntityNeighbour]]:
        """`entity_neighbours` of many entities in one round trip: id -> neighbours ([] for an unknown id)."""
        from palimpsest.graph.knowledge import entities as entity_q

        ids = [_text(e, "id") for e in entity_ids]
        return entity_q.neighbourhoods(self.rt.driver, self.namespace, ids, first, self._db)

    def top_entities(self, first: int = 20) -> list[Entity]:
        """Entities by global PageRank as last computed by the worker (those it has not ranked yet are left out)."""
        from palimpsest.graph.knowledge import entities as entity_q

        return entity_q.top_entities(self.rt.driver, self.namespace, first, self._db)

    def facts(self, entity_id: str | None = None, *, include_superseded: bool = False,
              first: int = 100) -> list[Fact]:
        """Facts the worker derived (about `entity_id` as subject or object, if given), newest first,
        with confidence and supporting claim ids; superseded ones too when asked, since they still
        say what held before (`superseded_by` names the fact that replaced one).

        Example:
            >>> [(f.subject, f.predicate, f.object, f.confidence) for f in mem.facts()]
        """
        from palimpsest.graph.knowledge import facts as facts_q

        return facts_q.list_facts(self.rt.driver, self.namespace, entity_id=_opt_text(entity_id, "entity_id"),
                                  include_superseded=include_superseded, first=first, database=self._db)

    def facts_many(self, entity_ids: Sequence[str], *, include_superseded: bool = False,
                   first: int = 100) -> dict[str, list[Fact]]:
        """`facts(entity_id)` of many entities in one round trip: id -> its facts, newest first."""
        from palimpsest.graph.knowledge import facts as facts_q

        ids = [_text(e, "id") for e in entity_ids]
        return facts_q.facts_of(self.rt.driver, self.namespace, ids, include_superseded=include_superseded,
                                first=first, database=self._db)

    def refresh_pagerank(self, *, force: bool = True) -> bool:
        """Recompute global PageRank now (the worker does it when the graph grew enough); True if it ran."""
        from palimpsest.graph.knowledge.gds import refresh_pagerank

        return refresh_pagerank(self.rt.driver, self.namespace, force=force, database=self._db).ran


def parse_time(value: datetime | date | str | None, field: str) -> datetime | None:
    """The one date parser (schema.dates.parse_instant): aware UTC or a BadInputError naming `field`."""
    return parse_instant(value, field)
