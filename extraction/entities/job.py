"""The entity job: claims in, entity nodes, aliases and MENTIONS links out. Pure: no Neo4j, no model.

The worker (api/worker.py) runs it in three steps, because near-duplicate resolution needs
vectors (a model) and the existing entities' vectors (the store), and this module may touch neither:

1. `link_and_propose` — link each claim to known entities with the Aho-Corasick matcher and
   propose new names (declared subject/title, capitalised names, identifiers);
2. the worker embeds the unresolved names and brings its `EntityVectors` of the namespace up to
   date with the store;
3. `resolve` — exact canonical match → link; cosine ≥ threshold *and* equal code signature →
   alias of that entity (never "db-7" into "db-9", "Q1" into "Q2"); otherwise a new entity
   whose id is a hash of (namespace, canonical), so re-running a batch MERGEs the same nodes.

Deterministic projections: the entities, their ids, names and aliases, and the MENTIONS (with
their revisions) are a function of the claims in write order — (revision, position in the ingest
call), which is the same order whether the claims came one per call or a thousand — and not of
where the worker cut its batches, of when it ran, or of what else the database holds:

* proposals are resolved in write order, the first wins (its surface, type and revision);
* a near-duplicate is compared with *every* earlier entity by exact cosine (`EntityVectors`,
  `exact_cosine`), never with an approximate index's top k, so a batch boundary between two names
  changes nothing;
* ids hash (namespace, canonical name);
* a claim links to every entity one of whose keys occurs in it (`EntityMatcher.find_all`): links
  only grow as the dictionary grows, so the batch's claims against known names, against the
  batch's new names, and older claims against the batch's new names and aliases (backfill) add
  up to the links one batch over everything would make. A link made by a name learnt after the
  claim exists from the revision that introduced the name.

What it still depends on: the write order (which claim named an entity first), the embedding
model's vectors for the names (the worker embeds them in padding-free fixed-shape blocks, so
they do not depend on which other names share a call), and, for backfill, the store's fulltext
index finding the older claims (`graph.knowledge.entities.claims_naming`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from palimpsest.extraction.entities.extractor import TRUST, ExtractorOptions, Mention, propose
from palimpsest.extraction.entities.matcher import EntityMatcher
from palimpsest.extraction.entities.normalize import canonical, code_signature


@dataclass(frozen=True)
class KnownEntity:
    id: str
    name: str
    keys: tuple[str, ...]  # names and aliases (any surface form; canonicalised by the matcher)


@dataclass(frozen=True)
class ClaimText:
    id: str
    content: str
    metadata: Mapping[str, Any]
    revision: int
    # The claim's world-time window; the LLM extractor gives it to facts that state no dates of their own.
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    # Its place in the ingest call that wrote it (Claim.batch_index): with the revision, the order in
    # which the claims were written, whether they came one per call or a thousand.
    position: int = 0


@dataclass(frozen=True)
class Neighbour:
    """An existing entity near an unresolved name with a precomputed cosine (the worker uses
    `EntityVectors` instead, which compares with every entity)."""

    entity_id: str
    name: str
    cosine: float


@dataclass(frozen=True)
class NewEntity:
    id: str
    name: str
    canonical: str
    type: str
    revision: int
    claim_id: str  # the first claim that proposed it (for provenance)


@dataclass(frozen=True)
class Proposal:
    claim_id: str
    revision: int
    mention: Mention
    type: str
    position: int = 0  # the claim's ClaimText.position

    @property
    def order(self) -> tuple[int, int, str, int, str]:
        """Resolution order: write order of the claims, then trust, then name (see `resolve`)."""
        return (self.revision, self.position, self.claim_id, TRUST[self.mention.kind], self.mention.canonical)


@dataclass
class LinkResult:
    links: dict[str, set[str]]            # claim id -> entity ids linked to known entities
    unresolved: list[Proposal]            # proposals whose canonical form is not known yet


@dataclass
class EntityJobResult:
    new_entities: list[NewEntity] = field(default_factory=list)
    aliases: dict[str, list[str]] = field(default_factory=dict)   # entity id -> alias surfaces to add
    mentions: list[tuple[str, str, int]] = field(default_factory=list)  # (claim id, entity id, revision)
    # Every key (canonical name or alias) first resolved in this batch: key -> (entity id, revision
    # of the claim that introduced it). Older claims naming one are linked from that revision on.
    introduced: dict[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def entity_ids(self) -> list[str]:
        return sorted({e for _, e, _ in self.mentions})


def entity_id(namespace: str, key: str) -> str:
    """Deterministic id: the same canonical name in the same namespace is always the same node."""
    return "ent-" + hashlib.sha256(f"{namespace}\x00{key}".encode()).hexdigest()[:24]


def build_matcher(known: Sequence[KnownEntity]) -> EntityMatcher:
    return EntityMatcher((e.id, key) for e in known for key in (e.name, *e.keys))


def _type_of(mention: Mention, metadata: Mapping[str, Any]) -> str:
    if mention.kind == "declared":
        declared = metadata.get("type")
        return declared.strip()[:64] if isinstance(declared, str) and declared.strip() else "subject"
    return mention.kind


def link_and_propose(claims: Sequence[ClaimText], matcher: EntityMatcher,
                     options: ExtractorOptions | None = None) -> LinkResult:
    opts = options or ExtractorOptions()
    links: dict[str, set[str]] = {}
    unresolved: list[Proposal] = []
    for c in sorted(claims, key=lambda c: (c.revision, c.position, c.id)):
        linked = links.setdefault(c.id, set())
        linked.update(m.entity_id for m in matcher.find_all(c.content))
        for mention in propose(c.content, c.metadata, opts):
            owner = matcher.owner(mention.canonical)
            if owner is not None:
                linked.add(owner)
            else:
                unresolved.append(Proposal(c.id, c.revision, mention, _type_of(mention, c.metadata), c.position))
    return LinkResult(links, unresolved)


STAGE_ONE_SLACK = 1e-3  # float32 screening error is < 1e-4 for unit vectors of a few hundred dimensions


def exact_cosine(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Cosine of two vectors, rounded to 6 decimals, computed so that it is the same bits on every
    call: element-wise products are exact IEEE operations and `math.fsum` rounds the sum once,
    so no BLAS kernel choice, alignment or summation order can move it. The merge threshold is
    compared against this value, never against an index score."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    norm = math.sqrt(math.fsum((x * x).tolist())) * math.sqrt(math.fsum((y * y).tolist()))
    return round(math.fsum((x * y).tolist()) / norm, 6) if norm > 0 else 0.0


class EntityVectors:
    """Exact near-duplicate search over entity name embeddings (pure numpy, no store).

    The worker keeps one per namespace, filled from `Entity.embedding`, and `resolve` looks every
    unresolved name up in it: *every* entity is a candidate, not the k nearest an approximate
    index returns (an HNSW index shared by all namespaces returns the nearest entities of any
    namespace first, so which of this namespace's entities were seen depended on what else the
    database held). A float32 matrix product screens; `exact_cosine` decides.
    """

    def __init__(self, dimension: int | None = None) -> None:
        self.dimension = dimension
        self._ids: list[str] = []
        self._keys: list[str] = []
        self._names: list[str] = []
        self._row: dict[str, int] = {}
        self._ignored: dict[str, str] = {}  # id -> name of vectors of another dimension: never candidates
        self._size = 0
        # The vectors as given (float32: the model's output and Entity.embedding are float32, so
        # nothing is lost) and their norms; one matrix, ~1.5 kB per entity at 384 dimensions.
        self._mat = np.zeros((0, dimension or 0), dtype=np.float32)
        self._norms = np.zeros(0, dtype=np.float32)

    def __len__(self) -> int:
        return self._size

    def __contains__(self, entity_id: object) -> bool:
        return entity_id in self._row or entity_id in self._ignored

    def name_of(self, entity_id: str) -> str | None:
        row = self._row.get(entity_id)
        return self._ignored.get(entity_id) if row is None else self._names[row]

    def ids(self) -> list[str]:
        return self._ids + sorted(self._ignored)

    def add(self, entity_id: str, key: str, name: str, vector: Sequence[float]) -> None:
        if entity_id in self:
            return
        raw = np.asarray(vector, dtype=np.float32)
        if self.dimension is None:
            self.dimension = int(raw.shape[0])
            self._mat = np.zeros((0, self.dimension), dtype=np.float32)
        if raw.shape != (self.dimension,):
            self._ignored[entity_id] = name
            return
        if self._size == self._mat.shape[0]:
            grown = np.zeros((max(16, 2 * self._size), self.dimension), dtype=np.float32)
            grown[: self._size] = self._mat[: self._size]
            norms = np.zeros(grown.shape[0], dtype=np.float32)
            norms[: self._size] = self._norms[: self._size]
            self._mat, self._norms = grown, norms
        self._mat[self._size] = raw
        self._norms[self._size] = float(np.linalg.norm(raw.astype(np.float64)))
        self._row[entity_id] = self._size
        self._ids.append(entity_id)
        self._keys.append(key)
        self._names.append(name)
        self._size += 1

    def candidates(self, vector: Sequence[float], threshold: float) -> list[tuple[float, str, str]]:
        """Every entity whose exact cosine to `vector` is ≥ threshold: (cosine, canonical, id)."""
        return self.candidates_many({"": vector}, threshold).get("", [])

    def candidates_many(self, vectors: Mapping[str, Sequence[float]], threshold: float,
                        chunk: int = 8192) -> dict[str, list[tuple[float, str, str]]]:
        """`candidates` for many vectors at once (one matrix product per chunk of entities)."""
        out: dict[str, list[tuple[float, str, str]]] = {}
        if not self._size or self.dimension is None:
            return out
        names = [k for k, v in vectors.items() if len(v) == self.dimension]
        if not names:
            return out
        q = np.asarray([vectors[k] for k in names], dtype=np.float32)
        qnorm = np.sqrt((q.astype(np.float64) ** 2).sum(axis=1)).astype(np.float32)
        for lo in range(0, self._size, chunk):
            hi = min(lo + chunk, self._size)
            denom = np.maximum(np.outer(qnorm, self._norms[lo:hi]), np.float32(1e-30))
            screen = (q @ self._mat[lo:hi].T) / denom
            for i, j in zip(*np.nonzero(screen >= threshold - STAGE_ONE_SLACK), strict=True):
                row = lo + int(j)
                cos = exact_cosine(self._mat[row], q[int(i)])
                if cos >= threshold:
                    out.setdefault(names[int(i)], []).append((cos, self._keys[row], self._ids[row]))
        return out


def resolve(namespace: str, claims: Sequence[ClaimText], linked: LinkResult, *,
            vectors: Mapping[str, Sequence[float]] | None = None,
            neighbours: Mapping[str, Sequence[Neighbour]] | None = None,
            index: EntityVectors | None = None,
            threshold: float = 0.92) -> EntityJobResult:
    """Turn proposals into links, aliases and new entities; then link every batch claim to the new
    names it contains anywhere in its text (a name proposed by claim 5 also links claim 2).

    Proposals are taken in write order — (revision, position in its ingest call), then trust
    within a claim, then canonical name — and each unknown name either becomes an alias of the
    entity created before it with the highest cosine (≥ threshold, equal code signature; ties to
    the smaller canonical name) or a new entity. The candidates are every entity created before
    it: those of earlier batches (`index`, exact cosine; or `neighbours`, precomputed cosines)
    and those created earlier in this batch (`vectors`). Because earlier batches hold exactly the
    names earlier in the write order, this is the decision a single batch over all claims would
    make: where the worker cut its batches does not matter.

    `vectors` maps canonical name → embedding of the name's first surface. Omitting vectors
    disables embedding-based merging: exact canonical matches still merge.
    """
    vectors = vectors or {}
    neighbours = neighbours or {}
    result = EntityJobResult()
    links = {cid: set(ids) for cid, ids in linked.links.items()}
    by_key: dict[str, str] = {}          # canonical -> entity id, for names resolved in this batch
    created = EntityVectors()            # entities created in this batch, with their vectors
    alias_seen: set[tuple[str, str]] = set()
    proposals = sorted(linked.unresolved, key=lambda p: p.order)
    earlier = index.candidates_many({p.mention.canonical: vectors[p.mention.canonical] for p in proposals
                                     if p.mention.canonical in vectors}, threshold) if index is not None else {}
    for p in proposals:
        key = p.mention.canonical
        target = by_key.get(key)
        if target is None:
            signature = code_signature(key)
            found: list[tuple[float, str, str]] = [
                (round(nb.cosine, 6), canonical(nb.name), nb.entity_id) for nb in neighbours.get(key, ())
                if round(nb.cosine, 6) >= threshold]
            vector = vectors.get(key)
            found += earlier.get(key, [])
            if vector is not None:
                found += created.candidates(vector, threshold)
            same_code = [f for f in found if code_signature(f[1]) == signature]
            if same_code:
                target = min(same_code, key=lambda f: (-f[0], f[1], f[2]))[2]
                if (target, key) not in alias_seen:
                    alias_seen.add((target, key))
                    result.aliases.setdefault(target, []).append(p.mention.surface)
            else:
                target = entity_id(namespace, key)
                result.new_entities.append(NewEntity(target, p.mention.surface, key, p.type, p.revision, p.claim_id))
                if vector is not None:
                    created.add(target, key, p.mention.surface, vector)
            by_key[key] = target
            result.introduced[key] = (target, p.revision)
        links.setdefault(p.claim_id, set()).add(target)
    revision_of = {c.id: c.revision for c in claims}
    pairs = {(cid, eid): revision_of[cid] for cid, ids in links.items() for eid in ids}
    # Second pass: the batch's claims against the names first resolved in this batch, linked from the
    # later of the claim's revision and the name's (what a batch boundary between them would give).
    if result.introduced:
        batch_matcher = EntityMatcher((eid, key) for key, (eid, _) in result.introduced.items())
        for c in claims:
            for m in batch_matcher.find_all(c.content):
                revision = max(c.revision, result.introduced[m.key][1])
                pair = (c.id, m.entity_id)
                pairs[pair] = min(pairs.get(pair, revision), revision)
    result.mentions = sorted((cid, eid, rev) for (cid, eid), rev in pairs.items())
    return result


def backfill_links(texts: Sequence[tuple[str, str]], new_entities: Sequence[NewEntity],
                   introduced: Mapping[str, tuple[str, int]] | None = None) -> list[tuple[str, str, int]]:
    """Older claims (id, content) that name entities created in this batch — or any key first
    resolved in it (`EntityJobResult.introduced`: aliases too) — as (claim id, entity id,
    revision), with the revision that introduced the key: the link exists from the moment the store
    knew the name, so an as-of recall before it never sees it. Every occurrence counts
    (`EntityMatcher.find_all`), as in the batch itself."""
    keys = dict(introduced or {})
    for e in new_entities:
        keys.setdefault(e.canonical, (e.id, e.revision))
    if not keys or not texts:
        return []
    matcher = EntityMatcher((eid, key) for key, (eid, _) in keys.items())
    out: dict[tuple[str, str], int] = {}
    for cid, content in texts:
        for m in matcher.find_all(content):
            revision = keys[m.key][1]
            out[(cid, m.entity_id)] = min(out.get((cid, m.entity_id), revision), revision)
    return sorted((cid, eid, rev) for (cid, eid), rev in out.items())


def canonical_keys(names: Sequence[str]) -> list[str]:
    return sorted({canonical(n) for n in names if canonical(n)})
