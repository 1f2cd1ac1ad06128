"""Import an export file into a namespace (docs/EXPORT.md): staged out of sight, switched in at once.

Records are read one line at a time and written in batches into a *staging* namespace — a name no
face accepts (`~import-…`), with no Store node, so no recall, worker or writer ever sees it. When
the whole file has been read and checked, one transaction moves every staged node into the target
namespace and creates (or, when merging, advances) its Store node. A bad line, a conflict or a
crash before that leaves the target untouched; the staging namespace is dropped on any failure.

Three modes:

* `copy` (default): into an empty namespace, ids and revisions as they are — the store answers every
  recall, at every revision and world time, as the source did (the packets name the new namespace,
  so their fingerprints equal the source's when the namespace name is the same). Ids are unique
  database-wide, so copying next to the source in one database is refused: use remap.
* `remap` into an empty namespace: every claim, tombstone, entity and fact gets a fresh id, derived
  from (target namespace, old id) so the same file always maps the same way; everything else is
  copied. Logged packets are left out (they name the old ids).
* `merge` (remap into a non-empty namespace): fresh ids, and the source's history is appended after
  the target's — every imported revision is shifted by the target's store revision. Claims,
  tombstones, supersessions, contradictions, the Commit log and policies the target lacks come in;
  entities and facts do not (the target's worker re-derives them, since the target's
  `projections_seq` stays where it was), nor do logged packets, nor the source's default-policy
  history (the target's settings stay). A claim_key or idempotency key both stores use is refused:
  two timelines of one key cannot be joined without re-deciding them.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from neo4j import Driver, ManagedTransaction
from neo4j.exceptions import ConstraintError

from palimpsest.graph.claims import index as claim_index
from palimpsest.graph.claims.index import namespace_label
from palimpsest.graph.claims.order import content_hash
from palimpsest.graph.claims.store import vector_text
from palimpsest.graph.claims.visibility import OPEN
from palimpsest.graph.db.errors import driver_errors
from palimpsest.graph.lifecycle import export_format as fmt
from palimpsest.graph.lifecycle.maintenance import NAMESPACED_LABELS, drop_namespace
from palimpsest.schema.errors import ConflictError, SchemaMismatchError
from palimpsest.schema.models import ImportResult

Mode = Literal["copy", "remap", "merge"]
BATCH = 500  # records per staging write
_STATUSES = frozenset({"current", "superseded", "retracted"})
_KIND_OF_LABEL = {"Claim": "claim", "Entity": "entity", "Fact": "fact"}
_ID_KINDS = {"claim": "claim", "erased": "claim", "entity": "entity", "fact": "fact"}  # id spaces


def remapped_id(namespace: str, space: str, old: str) -> str:
    """The fresh id `remap` gives `old` in `namespace`: a hash, so the same file maps the same way into
    the same namespace (importing it twice is a conflict, not a duplicate), shaped like the ids the
    store mints (32 hex digits for claims, `ent-`/`fact-` and 24 for entities and facts)."""
    digest = hashlib.sha256(f"{namespace}\x00{space}\x00{old}".encode()).hexdigest()
    prefix = {"entity": "ent-", "fact": "fact-"}.get(space, "")
    return prefix + digest[:24] if prefix else digest[:32]


@dataclass(frozen=True)
class _Target:
    revision: int
    claims: int
    empty: bool


def _target(tx: ManagedTransaction, namespace: str) -> _Target:
    anything = " OR ".join(f"EXISTS {{ MATCH (:{label} {{namespace: $ns}}) }}" for label in NAMESPACED_LABELS)
    record = tx.run(f"OPTIONAL MATCH (s:Store {{namespace: $ns}}) RETURN s.revision AS rev, s.claims AS claims, "
                    f"{anything} AS anything", ns=namespace).single(strict=True)
    return _Target(int(record["rev"] or 0), int(record["claims"] or 0), not record["anything"])


@dataclass
class _Plan:
    target: str
    staging: str
    source: str
    mode: Mode
    offset: int
    target_claims: int
    dimension: int
    skip: frozenset[str]


@dataclass
class _Importer:
    """Reads records in file order, checks them, transforms them for the mode and stages them."""

    driver: Driver
    plan: _Plan
    database: str | None
    read: Counter[str] = field(default_factory=Counter)
    written: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    pending: dict[str, list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)
    seen: dict[str, set[str]] = field(default_factory=lambda: {"claim": set(), "entity": set(), "fact": set()})
    keys: dict[str, set[Any]] = field(default_factory=dict)
    rank: int = 1
    store: dict[str, Any] | None = None

    # ---- reading ------------------------------------------------------------------------------
    def take(self, record: dict[str, Any], line: int) -> None:
        kind = str(record["kind"])
        rank = fmt.KINDS.index(kind)
        if rank < self.rank or kind == "header":
            raise fmt.FormatError(line, f"a {kind!r} record after the {fmt.KINDS[self.rank]!r} section: "
                                        f"the sections must come in the order {', '.join(fmt.KINDS)}")
        if rank > self.rank:
            self.flush_all()
            self.rank = rank
        self.read[kind] += 1
        if kind == "store":
            self._take_store(record, line)
        elif kind == "rel":
            self._take_rel(record, line)
        else:
            self._take_node(kind, record, line)

    def _take_store(self, record: dict[str, Any], line: int) -> None:
        if self.read["store"] > 1:
            raise fmt.FormatError(line, "a second 'store' record")
        props = fmt.decode_props(record.get("props"), line)
        if not isinstance(props.get("revision"), int):
            raise fmt.FormatError(line, "the store record has no integer 'revision'")
        # Which indexes the source had is a fact of the source database (graph.claims.index): the
        # target gets its own when the import is in.
        props.pop("claim_indexes", None)
        self.store = props

    def _take_node(self, kind: str, record: dict[str, Any], line: int) -> None:
        if self.store is None:
            raise fmt.FormatError(line, "records before the 'store' record")
        props = fmt.decode_props(record.get("props"), line)
        key = fmt.KEYS[kind]
        value = props.get(key)
        valid = (isinstance(value, int) and not isinstance(value, bool)) if key == "revision" else \
            (isinstance(value, str) and bool(value))
        if not valid:
            raise fmt.FormatError(line, f"a {kind} record without its {key!r}")
        seen = self.keys.setdefault(_ID_KINDS.get(kind, kind), set())
        if value in seen:
            raise fmt.FormatError(line, f"{kind} {key} {value!r} appears twice")
        seen.add(value)
        if kind == "claim":
            _check_claim(props, line)
        vector = record.get("embedding")
        if kind == "claim" and vector is None:
            raise fmt.FormatError(line, "a claim record without its embedding")
        embedding = None if vector is None else fmt.decode_vector(vector, line, self.plan.dimension)
        if kind in ("claim", "entity", "fact"):
            self.seen[kind].add(str(value))
        if kind in self.plan.skip:
            self.skipped[kind] += 1
            return
        if kind == "policy" and self.plan.mode == "merge" and self._policy_known(props, line):
            self.skipped[kind] += 1
            return
        row: dict[str, Any] = {"props": self._transform(kind, props)}
        if embedding is not None:
            row["embedding"] = vector_text(embedding)
        self.pending.setdefault(kind, []).append((line, row))
        if len(self.pending[kind]) >= BATCH:
            self.flush(kind)

    def _take_rel(self, record: dict[str, Any], line: int) -> None:
        start, end, rtype = record.get("from"), record.get("to"), record.get("type")
        if not (isinstance(start, list) and isinstance(end, list) and len(start) == len(end) == 2
                and all(isinstance(x, str) for x in (*start, *end)) and isinstance(rtype, str)):
            raise fmt.FormatError(line, "a rel record needs 'type', 'from': [label, id] and 'to': [label, id]")
        if (start[0], rtype, end[0]) not in fmt.RELATIONSHIPS:
            raise fmt.FormatError(line, f"unknown relationship {start[0]}-[:{rtype}]->{end[0]}")
        ends = (_KIND_OF_LABEL[start[0]], start[1]), (_KIND_OF_LABEL[end[0]], end[1])
        for kind, node in ends:
            if node not in self.seen[kind]:
                raise fmt.FormatError(line, f"the relationship's {kind} {node!r} is not in the file")
        props = fmt.decode_props(record.get("props"), line)
        if any(kind in self.plan.skip for kind, _ in ends):
            self.skipped[f"rel:{rtype}"] += 1
            return
        ids = [self._id(kind, node) for kind, node in ends]
        self.pending.setdefault("rel", []).append((line, {"group": (start[0], rtype, end[0]), "a": ids[0],
                                                          "b": ids[1], "props": self._shift(props)}))
        if len(self.pending["rel"]) >= BATCH:
            self.flush("rel")

    def _policy_known(self, props: Mapping[str, Any], line: int) -> bool:
        """Merging: a policy the target already has is skipped when it is the same, refused when not."""
        records, _, _ = self.driver.execute_query(
            "MATCH (p:Policy {namespace: $ns, version: $v}) RETURN p.content_hash AS h",
            ns=self.plan.target, v=props["version"], database_=self.database, routing_="r")
        if not records:
            return False
        if records[0]["h"] != props.get("content_hash"):
            raise ConflictError(f"line {line}: policy {props['version']!r} exists in {self.plan.target!r} with "
                                "other content; policies are immutable", field="line")
        return True

    # ---- transforming -------------------------------------------------------------------------
    def _id(self, space: str, old: str) -> str:
        return old if self.plan.mode == "copy" else remapped_id(self.plan.target, _ID_KINDS[space], old)

    def _shift(self, props: dict[str, Any]) -> dict[str, Any]:
        """Merging: every store revision moves past the target's (OPEN, "still live", stays OPEN)."""
        off = self.plan.offset
        if not off:
            return props
        out = dict(props)
        for name, value in props.items():
            if name in ("vis_from", "vis_to") and isinstance(value, list):
                out[name] = [v + off if isinstance(v, int) and v < OPEN else v for v in value]
            elif (name == "revision" or name.endswith("_revision")) and isinstance(value, int) \
                    and not isinstance(value, bool):
                out[name] = value + off
        return out

    def _transform(self, kind: str, props: dict[str, Any]) -> dict[str, Any]:
        props = self._shift(props)
        if kind == "commit":
            props["claims"] = int(props.get("claims") or 0) + self.plan.target_claims
        if kind in _ID_KINDS:
            props["id"] = self._id(kind, str(props["id"]))
        if kind == "claim":  # derived from the content, and what recall's orders end in (graph.claims.order)
            props["content_hash"] = content_hash(props["content"])
        if kind == "fact" and self.plan.mode != "copy":
            old_object = props.get("object_id")
            for name in ("subject_id", "object_id"):
                if isinstance(props.get(name), str):
                    props[name] = self._id("entity", props[name])
            if isinstance(props.get("superseded_by"), str):
                props["superseded_by"] = self._id("fact", props["superseded_by"])
            if old_object is not None and props.get("object_key") == old_object:
                props["object_key"] = props["object_id"]
        return props

    # ---- staging ------------------------------------------------------------------------------
    def flush_all(self) -> None:
        for kind in list(self.pending):
            self.flush(kind)

    def flush(self, kind: str) -> None:
        rows = self.pending.pop(kind, [])
        if not rows:
            return
        if kind in _ID_KINDS:
            self._refuse_taken(kind, rows)
        if kind == "claim" and self.plan.mode == "merge":
            self._refuse_shared_keys(rows)
        with self.driver.session(database=self.database) as session:
            session.execute_write(_stage, kind, self.plan.staging, [row for _, row in rows])
        if kind == "rel":
            for _, row in rows:
                self.written[f"rel:{row['group'][1]}"] += 1
        else:
            self.written[kind] += len(rows)

    def _refuse_taken(self, kind: str, rows: list[tuple[int, dict[str, Any]]]) -> None:
        """Ids are unique in the whole database: one another namespace holds is a conflict, named by line."""
        label = fmt.LABELS[kind]
        by_id = {str(row["props"]["id"]): line for line, row in rows}
        records, _, _ = self.driver.execute_query(
            f"UNWIND $ids AS id MATCH (n:{label} {{id: id}}) RETURN id LIMIT 1",
            ids=sorted(by_id), database_=self.database, routing_="r")
        if records:
            taken = str(records[0]["id"])
            hint = ("import with remap (--remap) for fresh ids" if self.plan.mode == "copy"
                    else "this file was imported into this namespace before")
            raise ConflictError(f"line {by_id[taken]}: {kind} id {taken!r} already exists in this database; {hint}",
                                field="line")

    def _refuse_shared_keys(self, rows: list[tuple[int, dict[str, Any]]]) -> None:
        for prop in ("claim_key", "idempotency_key"):
            by_key = {row["props"][prop]: line for line, row in rows if row["props"].get(prop) is not None}
            if not by_key:
                continue
            records, _, _ = self.driver.execute_query(
                f"UNWIND $keys AS k MATCH (c:Claim {{namespace: $ns, {prop}: k}}) RETURN k LIMIT 1",
                keys=sorted(by_key), ns=self.plan.target, database_=self.database, routing_="r")
            if records:
                key = records[0]["k"]
                raise ConflictError(f"line {by_key[key]}: {prop} {key!r} is used in {self.plan.target!r} too; "
                                    "merging two timelines of one key is refused", field="line")


def _stage(tx: ManagedTransaction, kind: str, staging: str, rows: list[dict[str, Any]]) -> None:
    if kind != "rel":
        label = fmt.LABELS[kind]  # our constants, never file input
        vector = ("WITH n, row WHERE row.embedding IS NOT NULL "
                  "CALL db.create.setNodeVectorProperty(n, 'embedding', [x IN split(row.embedding, ',') | toFloat(x)])")
        tx.run(f"UNWIND $rows AS row CREATE (n:{label}) SET n = row.props, n.namespace = $ns "
               + (vector if kind in ("claim", "entity", "fact") else ""), rows=rows, ns=staging).consume()
        return
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["group"], []).append({"a": row["a"], "b": row["b"], "props": row["props"]})
    for (start, rtype, end), group in sorted(groups.items()):
        assert (start, rtype, end) in fmt.RELATIONSHIPS  # checked when read; labels and types are our constants
        record = tx.run(
            f"UNWIND $rows AS row MATCH (a:{start} {{namespace: $ns, id: row.a}}) "
            f"MATCH (b:{end} {{namespace: $ns, id: row.b}}) CREATE (a)-[r:{rtype}]->(b) SET r = row.props "
            "RETURN count(r) AS n", rows=group, ns=staging).single(strict=True)
        if int(record["n"]) != len(group):
            raise ConflictError("a relationship's end was not staged; nothing was imported", field="line")


def _check_claim(props: Mapping[str, Any], line: int) -> None:
    """What recall and `check` rely on: text, a revision, a status and matching visibility lists."""
    vis_from, vis_to = props.get("vis_from"), props.get("vis_to")
    problems = [
        "'content' must be text" if not isinstance(props.get("content"), str) else "",
        "'revision' must be an integer" if not isinstance(props.get("revision"), int) else "",
        f"'status' must be one of {sorted(_STATUSES)}" if props.get("status") not in _STATUSES else "",
        "'vis_from' and 'vis_to' must be lists of integers of one length"
        if not (isinstance(vis_from, list) and isinstance(vis_to, list) and len(vis_from) == len(vis_to) >= 1
                and all(isinstance(v, int) for v in (*vis_from, *vis_to))) else "",
    ]
    found = [p for p in problems if p]
    if found:
        raise fmt.FormatError(line, "claim: " + "; ".join(found))


# ------------------------------------------------------------------------------------ switching in
def _switch_in(tx: ManagedTransaction, plan: _Plan, store: dict[str, Any], source_revision: int,
               claims: int) -> int:
    """Move every staged node into the target, at once; returns the target's store revision."""
    if plan.mode == "merge":
        record = tx.run("MATCH (s:Store {namespace: $ns}) SET s.revision = s.revision RETURN s.revision AS r",
                        ns=plan.target).single()
        if record is None or int(record["r"]) != plan.offset:
            raise ConflictError(f"namespace {plan.target!r} was written to while the import ran; nothing was "
                                "imported — run it again", field="namespace")
        for prop in ("claim_key", "idempotency_key"):
            clash = tx.run(f"MATCH (c:Claim {{namespace: $staging}}) WHERE c.{prop} IS NOT NULL "
                           f"AND EXISTS {{ MATCH (:Claim {{namespace: $ns, {prop}: c.{prop}}}) }} "
                           f"RETURN c.{prop} AS k LIMIT 1", staging=plan.staging, ns=plan.target).single()
            if clash is not None:
                raise ConflictError(f"{prop} {clash['k']!r} was written to {plan.target!r} while the import ran; "
                                    "nothing was imported", field="namespace")
    elif not _target(tx, plan.target).empty:
        raise ConflictError(f"namespace {plan.target!r} was written to while the import ran; nothing was imported",
                            field="namespace")
    else:
        tx.run("CREATE (s:Store) SET s = $props, s.namespace = $ns", props=store, ns=plan.target).consume()
    tx.run("MATCH (n:Claim {namespace: $staging}) SET n:$($label)", staging=plan.staging,
           label=namespace_label(plan.target)).consume()
    for label in fmt.LABELS.values():  # our constants
        tx.run(f"MATCH (n:{label} {{namespace: $staging}}) SET n.namespace = $ns",
               staging=plan.staging, ns=plan.target).consume()
    # A new life of the namespace: what a process kept of it (graph.knowledge.mention_graph) is read again.
    tx.run("MATCH (s:Store {namespace: $ns}) SET s.incarnation = randomUUID()", ns=plan.target).consume()
    if plan.mode == "merge":
        tx.run("MATCH (s:Store {namespace: $ns}) SET s.revision = s.revision + $revisions, "
               "s.claims = coalesce(s.claims, 0) + $claims", ns=plan.target, revisions=source_revision,
               claims=claims).consume()
        return plan.offset + source_revision
    return source_revision


# ------------------------------------------------------------------------------------ entry point
def import_records(driver: Driver, namespace: str, lines: Iterable[str], *, remap: bool, embedding_model: str,
                   embedding_dimension: int, database: str | None = None,
                   progress: Callable[[int, int], None] | None = None) -> ImportResult:
    """Import the lines of an export file into `namespace` (see the module docstring for the modes).

    Raises:
        FormatError (BAD_INPUT, naming the line): not this format or version, a malformed or
            out-of-order record, a file cut short (fewer records than its header announces).
        ConflictError: the namespace is not empty (without `remap`), ids or keys already taken, or the
            namespace was written to while the import ran.
        SchemaMismatchError: the file's embeddings are of another model or dimension.
    """
    numbered = enumerate(lines, start=1)
    header, line = None, 0
    for line, text in numbered:
        if text.strip():
            header = fmt.loads(text, line)
            break
    if header is None:
        raise fmt.FormatError(max(line, 1), "the file is empty: an export starts with its header")
    fmt.check_header(header, line)
    model, dimension = header["embedding"]["model"], int(header["embedding"]["dimension"])
    if model != embedding_model or dimension != embedding_dimension:
        raise SchemaMismatchError(f"the file's embeddings are {dimension}-dimensional from {model!r}; this service "
                                  f"embeds with {embedding_model!r} ({embedding_dimension} dimensions): recall "
                                  "would compare vectors of two models", field="embedding_model")
    with driver_errors(), driver.session(database=database, default_access_mode="READ") as session:
        target = session.execute_read(_target, namespace)
    if not target.empty and not remap:
        raise ConflictError(f"namespace {namespace!r} is not empty (store revision {target.revision}); import into "
                            "an empty namespace, or with remap to append the file's history after its own",
                            field="namespace")
    mode: Mode = "copy" if not remap else ("remap" if target.empty else "merge")
    if mode == "merge" and target.revision == 0:
        raise ConflictError(f"namespace {namespace!r} holds nodes but no store; drop it first", field="namespace")
    skip = {"copy": frozenset() if header["namespace"] == namespace else frozenset({"packet"}),
            "remap": frozenset({"packet"}), "merge": frozenset({"packet", "entity", "fact"})}[mode]
    plan = _Plan(namespace, f"~import-{uuid.uuid4().hex}", header["namespace"], mode,
                 target.revision if mode == "merge" else 0, target.claims if mode == "merge" else 0, dimension, skip)
    importer = _Importer(driver, plan, database)
    total = sum(int(v) for v in header["counts"].values() if isinstance(v, int)) + 2
    try:
        with driver_errors():
            for line, text in numbered:
                if text.strip():
                    importer.take(fmt.loads(text, line), line)
                    if progress is not None:
                        progress(sum(importer.read.values()) + 1, total)
            importer.flush_all()
            _check_counts(header, importer.read, line)
            assert importer.store is not None  # _check_counts saw exactly one store record
            try:
                with driver.session(database=database) as session:
                    revision = session.execute_write(_switch_in, plan, importer.store, int(header["store_revision"]),
                                                     importer.written["claim"])
            except ConstraintError as exc:  # a concurrent writer created the namespace's Store, or a key
                raise ConflictError(f"namespace {namespace!r} was written to while the import ran; nothing was "
                                    f"imported ({exc.message})", field="namespace") from None
    except BaseException:
        with contextlib.suppress(Exception):  # never hide why the import failed behind a failed cleanup
            drop_namespace(driver, plan.staging, database=database)
        raise
    claim_index.ensure_quietly(driver, namespace, database)
    return ImportResult(namespace=namespace, source_namespace=plan.source, format_version=fmt.VERSION, mode=mode,
                        revision=revision, revision_offset=plan.offset, written=dict(sorted(importer.written.items())),
                        skipped=dict(sorted(importer.skipped.items())))


def _check_counts(header: Mapping[str, Any], read: Counter[str], last_line: int) -> None:
    counts = header["counts"]
    if read["store"] != 1:
        raise fmt.FormatError(last_line, "the file has no 'store' record")
    for kind in fmt.KINDS[2:]:
        expected = int(counts.get(kind, 0))
        if read[kind] != expected:
            raise fmt.FormatError(last_line, f"the file ends at line {last_line} with {read[kind]} {kind} records; "
                                             f"its header announces {expected} (was it cut short?)")


__all__ = ["BATCH", "Mode", "import_records", "remapped_id"]
