"""A namespace's MENTIONS graph held in process, so graph expansion reads its neighbourhood without Cypher.

Recall's PPR (graph.ppr, graph.recall.expansion) needs, per query, the seed entities' three-hop
neighbourhood in the Claim–Entity MENTIONS graph as of a projections_seq. Read by a statement, that
walk was half of PPR recall's cost at 100k claims (a p50 of 21 ms, 49 ms at p90, for 300–5,000
pairs). The same walk over adjacency lists in memory takes well under a millisecond per thousand
pairs. This module keeps those lists, one snapshot per namespace, and answers the three questions
expansion asks — the neighbourhood, the entities' document frequencies, the entities of given
claims or names — with exactly the answers of the statements in graph.ppr (tests compare them on
random graphs, seqs and degrees). It is an accelerator: a packet is the same with it, without it,
cold or warm, in any process.

Why a snapshot can be kept and brought up to date cheaply: a MENTIONS edge carries the revision it
was written at (`m.revision`, graph.entities), the worker writes every edge of revision ≤ S in the
transaction that moves projections_seq to S, and only erasure deletes one. So a snapshot holding
every edge of revision ≤ S stays exact for any seq ≤ S (edges are filtered by revision when read),
and catches up to S' by reading the edges of revisions (S, S'] alone (the `mentions_revision` index).
What would break that — an erasure, an import into the namespace, the namespace dropped and written
again — gives the Store a new `incarnation` (graph.revisions, graph.erase, graph.importer), and a
snapshot of another incarnation is read again whole.

Bounded: a whole read stops at `max_edges` rows (a namespace above it is served by the statements,
and remembered as too large for that incarnation); a catch-up of more than `max_edges` rows reads the
whole graph instead; snapshots beyond `max_edges` in total are dropped least recently used first.
And off the request path: a server's cache reads in a background thread while the statements serve
(`MentionCache`), so no recall waits for a read of the whole graph.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from neo4j import Driver, ManagedTransaction

log = logging.getLogger(__name__)

# (claim id, claim revision, entity id, entity canonical, edge revision) per MENTIONS edge.
_Edge = tuple[str, int, str, str, int]

_WHOLE_CYPHER = (
    "MATCH (e:Entity {namespace: $ns})<-[m:MENTIONS]-(c) WHERE m.revision <= $seq "
    "RETURN c.id AS c, c.revision AS cr, e.id AS e, e.canonical AS canonical, m.revision AS r LIMIT $cap"
)
# Edges of revisions (from, to]: the relationship index finds them in every namespace at those
# revisions, and the entity's namespace keeps this one's (MENTIONS never cross namespaces).
_DELTA_CYPHER = (
    "MATCH (c)-[m:MENTIONS]->(e:Entity) USING INDEX m:MENTIONS(revision) "
    "WHERE m.revision > $from AND m.revision <= $to AND e.namespace = $ns "
    "RETURN c.id AS c, c.revision AS cr, e.id AS e, e.canonical AS canonical, m.revision AS r LIMIT $cap"
)


@dataclass(frozen=True)
class MentionGraph:
    """Every MENTIONS edge of one namespace incarnation with revision ≤ `seq`. Never changed once
    built: catching up builds a new one, so a reader's snapshot stays what it was."""

    incarnation: str
    seq: int
    # entity id → its claims as (−claim revision, claim id, edge revision), sorted: the order in which
    # the neighbourhood statement takes an entity's first max_degree claims.
    by_entity: dict[str, tuple[tuple[int, str, int], ...]]
    # claim id → its entities as (entity id, edge revision), sorted.
    by_claim: dict[str, tuple[tuple[str, int], ...]]
    # entity canonical name → entity ids.
    by_canonical: dict[str, tuple[str, ...]]
    edges: int

    def with_edges(self, seq: int, edges: Iterable[_Edge]) -> MentionGraph:
        """This graph and `edges` (all of revisions (self.seq, seq]), as a new graph at `seq`."""
        by_entity: dict[str, list[tuple[int, str, int]]] = {}
        by_claim: dict[str, list[tuple[str, int]]] = {}
        by_canonical: dict[str, set[str]] = {}
        added = 0
        for claim, claim_revision, entity, canonical, revision in edges:
            by_entity.setdefault(entity, []).append((-claim_revision, claim, revision))
            by_claim.setdefault(claim, []).append((entity, revision))
            by_canonical.setdefault(canonical, set()).add(entity)
            added += 1
        entities = dict(self.by_entity)
        for key, more in by_entity.items():
            entities[key] = tuple(sorted({*entities.get(key, ()), *more}))
        claims = dict(self.by_claim)
        for key, more_e in by_claim.items():
            claims[key] = tuple(sorted({*claims.get(key, ()), *more_e}))
        canonicals = dict(self.by_canonical)
        for key, ids in by_canonical.items():
            canonicals[key] = tuple(sorted({*canonicals.get(key, ()), *ids}))
        return MentionGraph(self.incarnation, seq, entities, claims, canonicals, self.edges + added)


def empty(incarnation: str) -> MentionGraph:
    return MentionGraph(incarnation, 0, {}, {}, {}, 0)


def _claims_of(graph: MentionGraph, entity: str, seq: int, limit: int) -> list[str]:
    """The entity's first `limit` claims as of `seq`, by claim revision descending, then id."""
    out: list[str] = []
    for _, claim, revision in graph.by_entity.get(entity, ()):
        if revision <= seq:
            out.append(claim)
            if len(out) == limit:
                break
    return out


def neighbourhood(graph: MentionGraph, seq: int, seed_entities: Sequence[str],
                  max_degree: int) -> list[tuple[str, str]]:
    """graph.ppr.neighbourhood's answer, from memory: the seeds' (at most max_degree) claims, those
    claims' entities, and each such entity's claims — all of them when it has at most max_degree,
    else only the seeds' claims that mention it (a hub does not expand)."""
    near_claims: set[str] = set()
    for seed in sorted(set(seed_entities)):
        near_claims.update(_claims_of(graph, seed, seq, max_degree))
    near: dict[str, list[str]] = {}
    for claim in near_claims:
        for entity, revision in graph.by_claim.get(claim, ()):
            if revision <= seq:
                near.setdefault(entity, []).append(claim)
    pairs: set[tuple[str, str]] = set()
    for entity, seeds_claims in near.items():
        bounded = _claims_of(graph, entity, seq, max_degree + 1)
        pairs.update((claim, entity) for claim in (seeds_claims if len(bounded) > max_degree else bounded))
    return sorted(pairs)


def specificity(graph: MentionGraph, seq: int, entity_ids: Sequence[str], cap: int) -> dict[str, int]:
    """graph.ppr.entity_specificity's positive counts: claims mentioning each entity as of `seq`, up to
    cap + 1. Entities no claim mentions by then are left out (the statement counts them 0, and seed
    choice drops a 0)."""
    counts = {entity: len(_claims_of(graph, entity, seq, cap + 1)) for entity in sorted(set(entity_ids))}
    return {entity: df for entity, df in counts.items() if df > 0}


def linked(graph: MentionGraph, seq: int, phrases: Sequence[str],
           claim_ids: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """graph.ppr.linked_entities' answer: entities named by `phrases` that some claim mentions by
    `seq`, and each claim's entities as of `seq`."""
    named = {entity for phrase in set(phrases) for entity in graph.by_canonical.get(phrase, ())
             if _claims_of(graph, entity, seq, 1)}
    by_claim: dict[str, list[str]] = {}
    for claim in claim_ids:
        entities = [entity for entity, revision in graph.by_claim.get(claim, ()) if revision <= seq]
        if entities:
            by_claim[claim] = entities
    return sorted(named), by_claim


def _read(tx: ManagedTransaction, cypher: str, cap: int, **params: Any) -> list[_Edge] | None:
    """The edges a statement returns, or None when there are more than `cap`."""
    rows = [(str(r["c"]), int(r["cr"]), str(r["e"]), str(r["canonical"]), int(r["r"]))
            for r in tx.run(cypher, cap=cap + 1, **params)]
    return None if len(rows) > cap else rows


class MentionCache:
    """Snapshots per namespace, bounded by `max_edges` in total; safe to share between threads.

    One per process (api.runtime.Runtime holds it). `graph` is the only entry point: it returns a
    snapshot at least as new as the seq asked for, or None — callers then use the statements, which
    answer the same. Reading a snapshot is never on a request's path when the cache has a `driver`:
    reading 230k edges whole takes seconds at 100k claims, and a catch-up a few hundred milliseconds,
    so a missing or stale snapshot is read by a background thread while requests go on by statements.
    Without a driver (tests), `graph` reads what is missing in the caller's transaction."""

    def __init__(self, max_edges: int = 2_000_000, driver: Driver | None = None, database: str | None = None) -> None:
        self.max_edges = max_edges
        self._driver, self._database = driver, database
        self._lock = threading.Lock()
        self._graphs: OrderedDict[str, MentionGraph] = OrderedDict()
        self._too_large: dict[str, str] = {}  # namespace → incarnation found above max_edges
        self._namespace_locks: dict[str, threading.Lock] = {}
        self._loading: dict[str, threading.Thread] = {}
        self._closed = False

    def graph(self, tx: ManagedTransaction, namespace: str, incarnation: str, seq: int) -> MentionGraph | None:
        if self.max_edges <= 0:
            return None
        with self._lock:
            held = self._fresh(namespace, incarnation, seq)
            if held is not None or self._too_large.get(namespace) == incarnation:
                return held
            if self._driver is not None or self._closed:
                if namespace not in self._loading and not self._closed:
                    thread = threading.Thread(target=self._load, args=(namespace, incarnation, seq), daemon=True,
                                              name=f"mention-graph {namespace}")
                    self._loading[namespace] = thread
                    thread.start()
                return None
        return self._refresh(tx, namespace, incarnation, seq)

    def close(self) -> None:
        """No more background reads (the driver is about to close); a read under way ends quietly."""
        with self._lock:
            self._closed = True
            self._driver = None

    def settle(self, timeout: float | None = None) -> None:
        """Wait for the background reads under way (benchmarks and tests, before they time or compare)."""
        with self._lock:
            threads = list(self._loading.values())
        for thread in threads:
            thread.join(timeout)

    def _load(self, namespace: str, incarnation: str, seq: int) -> None:
        driver = self._driver
        try:
            if driver is not None:
                with driver.session(database=self._database, default_access_mode="READ") as session:
                    session.execute_read(self._refresh, namespace, incarnation, seq)
        except Exception:  # the statements serve meanwhile; the next recall tries again
            if not self._closed:
                log.exception("reading the entity graph of %r failed", namespace)
        finally:
            with self._lock:
                self._loading.pop(namespace, None)

    def _refresh(self, tx: ManagedTransaction, namespace: str, incarnation: str, seq: int) -> MentionGraph | None:
        with self._lock:
            lock = self._namespace_locks.setdefault(namespace, threading.Lock())
        with lock:  # one reader catches up per namespace; the others then find its snapshot
            with self._lock:
                held = self._fresh(namespace, incarnation, seq)
                start = self._graphs.get(namespace)
            if held is not None:
                return held
            built = self._catch_up(tx, namespace, incarnation, seq, start)
            with self._lock:
                if built is None:
                    self._too_large[namespace] = incarnation
                    self._graphs.pop(namespace, None)
                    return None
                self._too_large.pop(namespace, None)
                current = self._graphs.get(namespace)
                if current is None or current.incarnation != built.incarnation or current.seq < built.seq:
                    self._graphs[namespace] = built
                self._graphs.move_to_end(namespace)
                self._evict(keep=namespace)
            return built

    def _fresh(self, namespace: str, incarnation: str, seq: int) -> MentionGraph | None:
        held = self._graphs.get(namespace)
        if held is None or held.incarnation != incarnation or held.seq < seq:
            return None
        self._graphs.move_to_end(namespace)
        return held

    def _catch_up(self, tx: ManagedTransaction, namespace: str, incarnation: str, seq: int,
                  start: MentionGraph | None) -> MentionGraph | None:
        if start is not None and start.incarnation == incarnation and start.seq < seq:
            edges = _read(tx, _DELTA_CYPHER, self.max_edges, ns=namespace, **{"from": start.seq, "to": seq})
            if edges is not None and start.edges + len(edges) <= self.max_edges:
                return start.with_edges(seq, edges)
        edges = _read(tx, _WHOLE_CYPHER, self.max_edges, ns=namespace, seq=seq)
        return None if edges is None else empty(incarnation).with_edges(seq, edges)

    def _evict(self, keep: str) -> None:
        total = sum(g.edges for g in self._graphs.values())
        for namespace in list(self._graphs):
            if total <= self.max_edges:
                break
            if namespace != keep:
                total -= self._graphs.pop(namespace).edges

    def held(self) -> dict[str, int]:
        """Namespace → seq of the snapshots held (for tests and diagnostics)."""
        with self._lock:
            return {namespace: g.seq for namespace, g in self._graphs.items()}


__all__ = ["MentionCache", "MentionGraph", "empty", "linked", "neighbourhood", "specificity"]
