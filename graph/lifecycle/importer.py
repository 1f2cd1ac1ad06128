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

import hashlib
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from neo4j import Driver, ManagedTransaction
from neo4j.exceptions import ClientError, ConstraintError

from palimpsest.graph.claims import index as claim_index
from palimpsest.graph.claims.check import claim_violations
from palimpsest.graph.claims.index import namespace_label
from palimpsest.graph.claims.order import content_hash
from palimpsest.graph.claims.store import vector_text
from palimpsest.graph.claims.visibility import OPEN
from palimpsest.graph.db.errors import driver_errors
from palimpsest.graph.lifecycle import export_format as fmt
from palimpsest.graph.lifecycle import import_rules as rules
from palimpsest.graph.lifecycle.maintenance import NAMESPACED_LABELS, drop_namespace
from palimpsest.schema.errors import ConflictError, SchemaMismatchError, UnavailableError
from palimpsest.schema.models import ImportResult

Mode = Literal["copy", "remap", "merge"]
BATCH = 500  # records per staging write
STAGING_PREFIX = "~import-"  # no face accepts a namespace that starts so (schema.limits.NAMESPACE_RE)
_KIND_OF_LABEL = {"Claim": "claim", "Entity": "entity", "Fact": "fact"}
_ID_KINDS = {"claim": "claim", "erased": "claim", "entity": "entity", "fact": "fact"}  # id spaces


def staging_prefix(namespace: str) -> str:
    """What the staging namespaces of imports into `namespace` start with: `~import-<namespace>~`. A namespace
    has no `~`, so the prefix names one target, and an import finds what an interrupted one left."""
    return f"{STAGING_PREFIX}{namespace}~"


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
    model: str = ""
    source_revision: int = 0


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
    store_line: int = 0
    erase_commits: set[int] = field(default_factory=set)
    policies: set[str] = field(default_factory=set)
    # Each claim's line and id in the file, by its staged id: what the staged claims' `check` finds names
    # them (`finish`).
    claim_lines: dict[str, tuple[int, str]] = field(default_factory=dict)
    # SUPERSEDES edges as (label, from, to, line): chains must end (`finish`).
    supersedes: list[tuple[str, str, str, int]] = field(default_factory=list)

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
        rules.store(props, line, self.plan.source_revision)
        self.store_line = line
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
        self._check_record(kind, props, line)
        vector = record.get("embedding")
        if kind == "claim" and vector is None:
            raise fmt.FormatError(line, "a claim record without its embedding", name="embedding")
        if kind not in ("claim", "entity", "fact") and vector is not None:
            raise fmt.FormatError(line, f"a {kind} record has no embedding", name="embedding")
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

    def _check_record(self, kind: str, props: dict[str, Any], line: int) -> None:
        """The record on its own (graph.lifecycle.import_rules), and what later records are checked against."""
        revision = self.plan.source_revision
        if kind == "commit":
            rules.commit(props, line, self.read["commit"])
            if props.get("kind") == "erase":
                self.erase_commits.add(int(props["revision"]))
        elif kind == "policy":
            rules.policy(props, line)
            self.policies.add(str(props["version"]))
        elif kind == "packet":
            rules.packet(props, line)
        elif kind == "claim":
            rules.claim(props, line, store_revision=revision, model=self.plan.model, dimension=self.plan.dimension)
            self.claim_lines[self._id("claim", str(props["id"]))] = (line, str(props["id"]))
        elif kind == "erased":
            rules.erased(props, line, store_revision=revision, erase_commits=self.erase_commits)
        elif kind == "entity":
            rules.entity(props, line)
        elif kind == "fact":
            rules.fact(props, line, self.seen["entity"])

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
        rules.bounded("rel", props, line)
        if rtype == "SUPERSEDES":
            self.supersedes.append((start[0], start[1], end[1], line))
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

    # ---- checks across records ----------------------------------------------------------------
    def finish(self, last_line: int) -> None:
        """What no single record shows, once every record is read and staged: a Commit per revision, a
        default-policy history of policies the file holds, supersession chains that end, and — over the
        staged claims themselves — everything `check` will verify once they are switched in."""
        assert self.store is not None
        if self.read["commit"] != self.plan.source_revision:
            raise fmt.FormatError(last_line, f"the Commit log ends at revision {self.read['commit']}, the store is at "
                                             f"revision {self.plan.source_revision}", name="revision")
        if self.plan.mode != "merge":  # merging keeps the target's own default-policy history
            rules.policy_history(self.store, self.policies, self.store_line)
        _refuse_cycles(self.supersedes)
        violations = claim_violations(self.driver, self.plan.staging, self.database)
        if violations:
            first = violations[0]
            line, detail = last_line, first.detail
            for staged, (at, old) in self.claim_lines.items():
                if staged in detail:
                    line, detail = min(line, at), detail.replace(staged, old)
            raise fmt.FormatError(line, f"the file's claims fail `check` ({first.check}: {detail})", name=first.check)

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
        try:
            with self.driver.session(database=self.database) as session:
                session.execute_write(_stage, kind, self.plan.staging, [row for _, row in rows])
        except ConstraintError:  # an id staged meanwhile: another import of the same records runs at once
            raise ConflictError(f"lines {rows[0][0]}-{rows[-1][0]}: a {kind} id was taken while the import ran "
                                "(another import of this file?); nothing was imported", field="line") from None
        except ClientError as exc:  # what the checks let through and the database refuses: still the file's
            if "TransactionTimedOut" in str(exc.code or ""):
                raise
            raise fmt.FormatError(rows[0][0], f"the database refused a {kind} record of lines {rows[0][0]}-"
                                              f"{rows[-1][0]} ({exc.message})") from None
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
            f"UNWIND $ids AS id MATCH (n:{label} {{id: id}}) RETURN id, n.namespace AS ns LIMIT 1",
            ids=sorted(by_id), database_=self.database, routing_="r")
        if records:
            taken, holder = str(records[0]["id"]), str(records[0]["ns"])
            if holder.startswith(STAGING_PREFIX):
                hint = (f"it is staged by another import that has not finished ({holder!r}); if none is running, "
                        f"an interrupted one left it: `MATCH (n) WHERE n.namespace = '{holder}' DETACH DELETE n` "
                        "clears it")
            elif self.plan.mode == "copy":
                hint = "import with remap (--remap) for fresh ids"
            else:
                hint = "this file was imported into this namespace before"
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


def _refuse_cycles(edges: list[tuple[str, str, str, int]]) -> None:
    """A supersession chain must end: recall and the worker follow `SUPERSEDES` from newer to older, and a
    cycle has no current end. Iterative (a chain can be as long as the store), over the edges in memory."""
    for label in sorted({e[0] for e in edges}):
        out: dict[str, list[tuple[str, int]]] = {}
        for start, a, b, line in edges:
            if start == label:
                out.setdefault(a, []).append((b, line))
        state: dict[str, int] = {}  # 1: on the path being walked, 2: done
        for root in sorted(out):
            if state.get(root):
                continue
            state[root] = 1
            stack: list[tuple[str, int]] = [(root, 0)]
            while stack:
                node, i = stack[-1]
                nexts = out.get(node, [])
                if i == len(nexts):
                    state[node] = 2
                    stack.pop()
                    continue
                stack[-1] = (node, i + 1)
                target, _ = nexts[i]
                if state.get(target) == 1:  # blame the cycle's last edge in file order
                    walked = [n for n, _ in stack]
                    cycle = [out[n][j - 1] for n, j in stack[walked.index(target):]]
                    last = max(cycle, key=lambda edge: edge[1])
                    raise fmt.FormatError(last[1], f"{label} -[:SUPERSEDES]-> {last[0]!r} closes a cycle of "
                                                   f"{len(cycle)}: a supersession chain must end", name="SUPERSEDES")
                if not state.get(target):
                    state[target] = 1
                    stack.append((target, 0))


def _staged_counts(tx: ManagedTransaction, staging: str) -> dict[str, int]:
    return {kind: int(tx.run(f"MATCH (n:{label} {{namespace: $staging}}) RETURN count(n) AS n",  # our constants
                             staging=staging).single(strict=True)["n"]) for kind, label in fmt.LABELS.items()}


# ------------------------------------------------------------------------------------ switching in
def _switch_in(tx: ManagedTransaction, plan: _Plan, store: dict[str, Any], source_revision: int,
               written: Mapping[str, int]) -> int:
    """Move every staged node into the target, at once; returns the target's store revision.

    First, the staging must hold exactly what was written to it: an import into the same namespace that
    started meanwhile clears what it takes for an interrupted import's staging, and a partial namespace
    must never be switched in."""
    staged = _staged_counts(tx, plan.staging)
    if any(staged[kind] != written.get(kind, 0) for kind in staged):
        raise ConflictError(f"another import into {plan.target!r} started while this one ran and cleared its staging; "
                            "nothing was imported — run one import at a time", field="namespace")
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
               claims=written.get("claim", 0)).consume()
        return plan.offset + source_revision
    return source_revision


# ------------------------------------------------------------------------------------ entry point
def import_records(driver: Driver, namespace: str, lines: Iterable[str], *, remap: bool, embedding_model: str,
                   embedding_dimension: int, database: str | None = None,
                   progress: Callable[[int, int], None] | None = None) -> ImportResult:
    """Import the lines of an export file into `namespace` (see the module docstring for the modes).

    Raises:
        FormatError (BAD_INPUT, naming the line and field): not this format or version, a malformed or
            out-of-order record, a value recall, the worker or `check` could not rely on
            (graph.lifecycle.import_rules), a supersession cycle, a file cut short (fewer records than
            its header announces).
        ConflictError: the namespace is not empty (without `remap`), ids or keys already taken, or the
            namespace was written to while the import ran.
        SchemaMismatchError: the file's embeddings are of another model or dimension.
        UnavailableError: the database went away; nothing was switched in, and what was staged is removed
            (or, if the database stayed away, by the next import into the namespace).
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
    with driver_errors():
        cleared = clear_interrupted(driver, namespace, database=database)
    plan = _Plan(namespace, f"{staging_prefix(namespace)}{uuid.uuid4().hex}", header["namespace"], mode,
                 target.revision if mode == "merge" else 0, target.claims if mode == "merge" else 0, dimension, skip,
                 model=model, source_revision=int(header["store_revision"]))
    importer = _Importer(driver, plan, database)
    total = sum(int(v) for v in header["counts"].values() if isinstance(v, int) and not isinstance(v, bool)) + 2
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
            importer.finish(line)
            try:
                with driver.session(database=database) as session:
                    revision = session.execute_write(_switch_in, plan, importer.store, int(header["store_revision"]),
                                                     importer.written)
            except ConstraintError as exc:  # a concurrent writer created the namespace's Store, or a key
                raise ConflictError(f"namespace {namespace!r} was written to while the import ran; nothing was "
                                    f"imported ({exc.message})", field="namespace") from None
    except BaseException as exc:
        try:
            drop_namespace(driver, plan.staging, database=database)
        except Exception:  # never hide why the import failed behind a failed cleanup; say what is left
            if isinstance(exc, UnavailableError):
                raise UnavailableError(f"{exc.message}. The records staged so far could not be removed while the "
                                       f"database was unreachable; the next import into {namespace!r} removes them "
                                       "first") from exc
        raise
    claim_index.ensure_quietly(driver, namespace, database)
    return ImportResult(namespace=namespace, source_namespace=plan.source, format_version=fmt.VERSION, mode=mode,
                        revision=revision, revision_offset=plan.offset, written=dict(sorted(importer.written.items())),
                        skipped=dict(sorted(importer.skipped.items())), cleared_staging=cleared)


def clear_interrupted(driver: Driver, namespace: str, *, database: str | None = None, limit: int = 100) -> int:
    """Remove what interrupted imports into `namespace` staged (an outage that also stopped their own
    cleanup, a killed process): nodes nobody can see, which would hold their ids and make the retry a
    CONFLICT. Returns how many nodes were removed. An import into the same namespace still running
    loses its staging too, and its switch-in refuses (`_switch_in`): one import at a time."""
    prefix = staging_prefix(namespace)
    found: set[str] = set()
    for label in fmt.LABELS.values():  # our constants; each a seek on the (namespace, …) index
        records, _, _ = driver.execute_query(
            f"MATCH (n:{label}) WHERE n.namespace STARTS WITH $prefix RETURN DISTINCT n.namespace AS ns LIMIT $limit",
            prefix=prefix, limit=limit, database_=database, routing_="r")
        found.update(str(r["ns"]) for r in records)
    return sum(drop_namespace(driver, staging, database=database) for staging in sorted(found))


def _check_counts(header: Mapping[str, Any], read: Counter[str], last_line: int) -> None:
    counts = header["counts"]
    if read["store"] != 1:
        raise fmt.FormatError(last_line, "the file has no 'store' record")
    for kind in fmt.KINDS[2:]:
        expected = int(counts.get(kind, 0))
        if read[kind] != expected:
            raise fmt.FormatError(last_line, f"the file ends at line {last_line} with {read[kind]} {kind} records; "
                                             f"its header announces {expected} (was it cut short?)")


__all__ = ["BATCH", "STAGING_PREFIX", "Mode", "clear_interrupted", "import_records", "remapped_id", "staging_prefix"]
