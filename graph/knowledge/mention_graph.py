"""A namespace's MENTIONS graph held in process, so graph expansion reads its neighbourhood without Cypher.

Recall's PPR (graph.knowledge.ppr, graph.recall.expansion) needs, per query, the seed entities' three-hop
neighbourhood in the Claim–Entity MENTIONS graph as of a projections_seq. Read by a statement, that
walk was half of PPR recall's cost at 100k claims (a p50 of 21 ms, 49 ms at p90, for 300–5,000
pairs). This module keeps that graph in memory, one snapshot per namespace, as numpy adjacency in
both directions with claims and entities numbered in id order, and answers the three questions
expansion asks — the neighbourhood (ranked by PPR on the numbers, graph.knowledge.ppr.rank_numbered), the
entities' document frequencies, the entities of given claims or names — with exactly the answers of
the statements in graph.knowledge.ppr (tests compare them on random graphs, seqs and degrees). Measured at
100k claims, the walk and its ranking take ~3 ms p50, against ~16 ms for the same walk over Python
dicts and ~27 ms by statements. It is an accelerator: a packet is the same with it, without it, cold
or warm, in any process.

Why a snapshot can be kept and brought up to date cheaply: a MENTIONS edge carries the revision it
was written at (`m.revision`, graph.knowledge.entities), the worker writes every edge of revision ≤ S in the
transaction that moves projections_seq to S, and only erasure deletes one. So a snapshot holding
every edge of revision ≤ S stays exact for any seq ≤ S (edges are filtered by revision when read),
and catches up to S' by reading the edges of revisions (S, S'] alone (the `mentions_revision` index).
What would break that — an erasure, an import into the namespace, the namespace dropped and written
again — gives the Store a new `incarnation` (graph.claims.revisions, graph.lifecycle.erase,
graph.lifecycle.importer), and a snapshot of another incarnation is read again whole.

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
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from neo4j import Driver, ManagedTransaction

from palimpsest.graph.knowledge import ppr

log = logging.getLogger(__name__)

# (claim id, claim revision, entity id, entity canonical, edge revision, claim content hash) per MENTIONS edge.
_Edge = tuple[str, int, str, str, int, str]

_WHOLE_CYPHER = (
    "MATCH (e:Entity {namespace: $ns})<-[m:MENTIONS]-(c) WHERE m.revision <= $seq "
    "RETURN c.id AS c, c.revision AS cr, e.id AS e, e.canonical AS canonical, m.revision AS r, "
    "coalesce(c.content_hash, '') AS ch LIMIT $cap"
)
# Edges of revisions (from, to]: the relationship index finds them in every namespace at those
# revisions, and the entity's namespace keeps this one's (MENTIONS never cross namespaces).
_DELTA_CYPHER = (
    "MATCH (c)-[m:MENTIONS]->(e:Entity) USING INDEX m:MENTIONS(revision) "
    "WHERE m.revision > $from AND m.revision <= $to AND e.namespace = $ns "
    "RETURN c.id AS c, c.revision AS cr, e.id AS e, e.canonical AS canonical, m.revision AS r, "
    "coalesce(c.content_hash, '') AS ch LIMIT $cap"
)


@dataclass(frozen=True, eq=False)
class MentionGraph:
    """Every MENTIONS edge of one namespace incarnation with revision ≤ `seq`, as numpy adjacency
    (CSR) in both directions. Never changed once built: catching up builds a new one, so a reader's
    snapshot stays what it was.

    Claims and entities are numbered by their sorted ids, so an order of numbers is the order of ids:
    the walk and PPR (graph.knowledge.ppr.rank_numbered) run on numbers and give what they give on the ids."""

    incarnation: str
    seq: int
    claims: np.ndarray        # claim ids, sorted: a claim's number is its place here
    claim_revision: np.ndarray  # each claim's own revision
    claim_hash: np.ndarray  # each claim's content hash ("" when it has none): ties of revision fall to it, not the id
    entities: np.ndarray      # entity ids, sorted
    # Entity e's edges are entity_claim[entity_start[e]:entity_start[e + 1]] (with their edge revisions),
    # in the order the neighbourhood statement takes an entity's first max_degree claims: claim revision
    # descending, content hash, then claim id (then edge revision).
    entity_start: np.ndarray
    entity_claim: np.ndarray
    entity_edge_revision: np.ndarray
    entity_first_revision: np.ndarray  # the lowest edge revision per entity (is it mentioned by seq?)
    # Claim c's edges, by entity id (then edge revision).
    claim_start: np.ndarray
    claim_entity: np.ndarray
    claim_edge_revision: np.ndarray
    # entity canonical name → entity ids.
    by_canonical: dict[str, tuple[str, ...]]
    edges: int

    def with_edges(self, seq: int, edges: Sequence[_Edge]) -> MentionGraph:
        """This graph and `edges` (all of revisions (self.seq, seq]), as a new graph at `seq`. The ids
        held are not sorted again: new ones are put in place and the old edges renumbered."""
        claim_ids = np.array([e[0] for e in edges], dtype=str)
        entity_ids = np.array([e[2] for e in edges], dtype=str)
        claims, claim_moved = _merged(self.claims, claim_ids)
        entities, entity_moved = _merged(self.entities, entity_ids)
        new_claims = np.searchsorted(claims, claim_ids).astype(np.int64)
        ci = np.concatenate([claim_moved[self._edge_claims()], new_claims])
        ei = np.concatenate([entity_moved[self.claim_entity], np.searchsorted(entities, entity_ids).astype(np.int64)])
        er = np.concatenate([self.claim_edge_revision, np.array([e[4] for e in edges], dtype=np.int64)])
        claim_revision = np.zeros(len(claims), dtype=np.int64)
        claim_revision[claim_moved] = self.claim_revision
        claim_revision[new_claims] = np.array([e[1] for e in edges], dtype=np.int64)
        hashes = np.array([e[5] for e in edges], dtype=str)
        claim_hash = np.zeros(len(claims), dtype=np.result_type(self.claim_hash.dtype, hashes.dtype))
        claim_hash[claim_moved] = self.claim_hash
        claim_hash[new_claims] = hashes
        canonicals = dict(self.by_canonical)
        touched: dict[str, set[str]] = {}
        for _, _, entity, canonical, _, _ in edges:
            touched.setdefault(canonical, set(canonicals.get(canonical, ()))).add(entity)
        canonicals.update({key: tuple(sorted(ids)) for key, ids in touched.items()})
        return _build(self.incarnation, seq, claims, (claim_revision, claim_hash), entities, (ci, ei, er), canonicals)

    def _edge_claims(self) -> np.ndarray:
        """The claim number of every edge, in by-claim order (claim_entity's)."""
        claim_of_edge: np.ndarray = np.repeat(np.arange(len(self.claims)), np.diff(self.claim_start))
        return claim_of_edge

    @cached_property
    def canonical_of(self) -> dict[str, str]:
        """Entity id → canonical name, the inverse of `by_canonical` (built on first use)."""
        return {entity: key for key, ids in sorted(self.by_canonical.items(), reverse=True) for entity in ids}

    def has_claim(self, claim_id: str) -> bool:
        return _number(self.claims, [claim_id]).size > 0

    def edge_table(self) -> list[tuple[str, int, str, int]]:
        """(claim id, claim revision, entity id, edge revision) of every edge, sorted (tests compare graphs)."""
        claim_of_edge = self._edge_claims()
        return sorted(zip(self.claims[claim_of_edge].tolist(), self.claim_revision[claim_of_edge].tolist(),
                          self.entities[self.claim_entity].tolist(), self.claim_edge_revision.tolist(), strict=True))


def _csr(rows: np.ndarray, count: int) -> np.ndarray:
    """Row starts of a CSR whose (sorted) row numbers are `rows`."""
    return np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=count))]).astype(np.int64)


def _merged(names: np.ndarray, more: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`names` (sorted, distinct) with those of `more` it lacks put in place, and where each old name went.
    The array is widened to the longer ids (numpy strings have a fixed width: never truncate an id)."""
    fresh = np.unique(more)
    fresh = fresh[~_present(names, fresh)]
    places = np.searchsorted(names, fresh)
    merged = np.insert(names.astype(np.result_type(names.dtype, fresh.dtype)), places, fresh)
    moved = np.arange(names.size, dtype=np.int64) + np.searchsorted(places, np.arange(names.size), side="right")
    return merged, moved


def _build(incarnation: str, seq: int, claims: np.ndarray, claim_keys: tuple[np.ndarray, np.ndarray],
           entities: np.ndarray, edges: tuple[np.ndarray, np.ndarray, np.ndarray],
           canonicals: dict[str, tuple[str, ...]]) -> MentionGraph:
    """The graph of numbered edges (claim, entity, edge revision), each distinct triple once (the
    statements see distinct relationships), indexed both ways."""
    ci, ei, er = edges
    order = np.lexsort((er, ei, ci))
    ci, ei, er = ci[order], ei[order], er[order]
    distinct = np.ones(len(ci), dtype=bool)
    distinct[1:] = (np.diff(ci) != 0) | (np.diff(ei) != 0) | (np.diff(er) != 0)
    ci, ei, er = ci[distinct], ei[distinct], er[distinct]  # now in (claim, entity, revision) order
    claim_revision, claim_hash = claim_keys
    by_entity = np.lexsort((er, ci, claim_hash[ci], -claim_revision[ci], ei))
    first = np.full(len(entities), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, ei, er)
    return MentionGraph(
        incarnation, seq, claims, claim_revision, claim_hash, entities,
        _csr(ei, len(entities)), ci[by_entity], er[by_entity], first,
        _csr(ci, len(claims)), ei, er, canonicals, len(ci),
    )


def empty(incarnation: str) -> MentionGraph:
    none = np.array([], dtype=str)
    nums = np.array([], dtype=np.int64)
    return MentionGraph(incarnation, 0, none, nums, none, none, np.zeros(1, dtype=np.int64), nums, nums, nums,
                        np.zeros(1, dtype=np.int64), nums, nums, {}, 0)


def _present(names: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Which of `wanted` are in `names` (sorted, distinct), as a mask over `wanted`."""
    if not names.size or not wanted.size:
        return np.zeros(wanted.size, dtype=bool)
    at = np.minimum(np.searchsorted(names, wanted), names.size - 1)
    found: np.ndarray = names[at] == wanted
    return found


def _number(names: np.ndarray, ids: Sequence[str]) -> np.ndarray:
    """The numbers of those of `ids` that are in `names` (sorted), distinct and ascending."""
    wanted = np.unique(np.array(list(ids), dtype=str))
    numbers: np.ndarray = np.searchsorted(names, wanted[_present(names, wanted)]).astype(np.int64)
    return numbers


def _spans(start: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR positions of `rows`, one after the other, and the index in `rows` each belongs to."""
    lengths = start[rows + 1] - start[rows]
    row_of = np.repeat(np.arange(len(rows)), lengths)
    first = np.cumsum(lengths) - lengths
    return start[rows][row_of] + np.arange(int(lengths.sum())) - first[row_of], row_of


def _leading(mask: np.ndarray, row_of: np.ndarray, rows: int, limit: int) -> np.ndarray:
    """Of each row's positions where `mask` holds, the first `limit` (in CSR order)."""
    if not mask.size:
        return mask
    taken = np.cumsum(mask)
    before = taken - mask
    starts = np.searchsorted(row_of, np.arange(rows))
    base = before[np.minimum(starts, mask.size - 1)]
    leading: np.ndarray = mask & (taken - base[row_of] <= limit)
    return leading


def _entity_claims(graph: MentionGraph, entities: np.ndarray, seq: int,
                   limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Each entity's first `limit` claims as of `seq`, by claim revision descending, content hash, then id:
    (positions in entity_claim, index in `entities` of each)."""
    at, row_of = _spans(graph.entity_start, entities)
    keep = _leading(graph.entity_edge_revision[at] <= seq, row_of, len(entities), limit)
    return at[keep], row_of[keep]


def _neighbourhood(graph: MentionGraph, seq: int, seeds: np.ndarray, max_degree: int) -> tuple[np.ndarray, np.ndarray]:
    """graph.knowledge.ppr.neighbourhood's answer for the seed entity numbers `seeds`, as (claim numbers, entity
    numbers), distinct and in (claim, entity) order: the seeds' (at most max_degree) claims, those claims'
    entities, and each such entity's claims — all of them when it has at most max_degree, else only the
    seeds' claims that mention it (a hub does not expand)."""
    at, _ = _entity_claims(graph, seeds, seq, max_degree)
    near_claims = np.unique(graph.entity_claim[at])
    at, row_of = _spans(graph.claim_start, near_claims)
    current = graph.claim_edge_revision[at] <= seq
    near_claim, near_entity = near_claims[row_of[current]], graph.claim_entity[at[current]]
    bridges = np.unique(near_entity)
    at, row_of = _entity_claims(graph, bridges, seq, max_degree + 1)
    hub = np.bincount(row_of, minlength=len(bridges)) > max_degree
    small = ~hub[row_of]
    through_hub = hub[np.searchsorted(bridges, near_entity)]
    claim = np.concatenate([graph.entity_claim[at[small]], near_claim[through_hub]])
    entity = np.concatenate([bridges[row_of[small]], near_entity[through_hub]])
    width = max(len(graph.entities), 1)
    pair = np.unique(claim * width + entity)
    return pair // width, pair % width


def neighbourhood(graph: MentionGraph, seq: int, seed_entities: Sequence[str],
                  max_degree: int) -> list[tuple[str, str]]:
    """graph.knowledge.ppr.neighbourhood's pairs (claim id, entity id), sorted."""
    claim, entity = _neighbourhood(graph, seq, _number(graph.entities, seed_entities), max_degree)
    return list(zip(graph.claims[claim].tolist(), graph.entities[entity].tolist(), strict=True))


def top_ranked(graph: MentionGraph, seq: int, seed_entities: Sequence[str], max_degree: int, damping: float,
               limit: int) -> dict[str, float]:
    """graph.knowledge.ppr.top_claims(graph.knowledge.ppr.rank(neighbourhood(…)), limit), computed on numbers."""
    seeds = _number(graph.entities, seed_entities)
    claim, entity = _neighbourhood(graph, seq, seeds, max_degree)
    return ppr.top_numbered(*ppr.rank_numbered(claim, entity, seeds, damping=damping), graph.claims, limit)


def seed_facts(graph: MentionGraph, seq: int, entity_ids: Sequence[str],
               cap: int) -> tuple[dict[str, int], dict[str, str]]:
    """graph.knowledge.ppr.seed_facts' answer for the entities some claim mentions by `seq`: their specificity
    (claims mentioning each, up to cap + 1) and their canonical names. Entities no claim mentions by then
    are left out of the counts (the statement counts them 0, and seed choice drops a 0)."""
    entities = _number(graph.entities, entity_ids)
    _, row_of = _entity_claims(graph, entities, seq, cap + 1)
    counts = np.bincount(row_of, minlength=len(entities))
    df = {name: int(n) for name, n in zip(graph.entities[entities].tolist(), counts.tolist(), strict=True) if n > 0}
    return df, {e: graph.canonical_of[e] for e in entity_ids if e in graph.canonical_of}


def linked(graph: MentionGraph, seq: int, phrases: Sequence[str],
           claim_ids: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """graph.knowledge.ppr.linked_entities' answer: entities named by `phrases` that some claim mentions by
    `seq`, and each claim's entities as of `seq`."""
    named = sorted({entity for phrase in set(phrases) for entity in graph.by_canonical.get(phrase, ())})
    numbers = _number(graph.entities, named)
    query_ids = graph.entities[numbers[graph.entity_first_revision[numbers] <= seq]].tolist()
    by_claim: dict[str, list[str]] = {}
    for claim_id in claim_ids:
        number = _number(graph.claims, [claim_id])
        if number.size:
            lo, hi = graph.claim_start[number[0]], graph.claim_start[number[0] + 1]
            mentioned = graph.claim_entity[lo:hi][graph.claim_edge_revision[lo:hi] <= seq]
            if mentioned.size:
                by_claim[claim_id] = graph.entities[mentioned].tolist()
    return query_ids, by_claim


def _read(tx: ManagedTransaction, cypher: str, cap: int, **params: Any) -> list[_Edge] | None:
    """The edges a statement returns, or None when there are more than `cap`."""
    rows = [(str(r["c"]), int(r["cr"]), str(r["e"]), str(r["canonical"]), int(r["r"]), str(r["ch"]))
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

    def drop(self, namespace: str) -> None:
        """Forget the namespace's snapshot (an erasure: it holds content hashes and canonical names of
        the erased claims' entities). The next recall reads it again; one being read meanwhile
        belongs to the old incarnation, which no recall takes."""
        with self._lock:
            self._graphs.pop(namespace, None)
            self._too_large.pop(namespace, None)

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


__all__ = ["MentionCache", "MentionGraph", "empty", "linked", "neighbourhood", "seed_facts", "top_ranked"]
