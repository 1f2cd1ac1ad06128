"""The entity job: claims in, entity nodes, aliases and MENTIONS links out. Pure: no Neo4j, no model.

The worker (api/worker.py) runs it in three steps, because near-duplicate resolution needs
vectors (a model) and nearest existing entities (the store), and this module may touch neither:

1. `link_and_propose` — link each claim to known entities with the Aho-Corasick matcher and
   propose new names (declared subject/title, capitalised names, identifiers);
2. the worker embeds the unresolved names and asks the store for each one's nearest entities;
3. `resolve` — exact canonical match → link; cosine ≥ threshold *and* equal code signature →
   alias of that entity (never "db-7" into "db-9", "Q1" into "Q2"); otherwise a new entity
   whose id is a hash of (namespace, canonical), so re-running a batch MERGEs the same nodes.

Within a batch, proposals are resolved in (revision, claim id, canonical) order and the first
one wins, so the entity set is a function of the store's history, not of timing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from extraction.entities.extractor import TRUST, ExtractorOptions, Mention, propose
from extraction.entities.matcher import EntityMatcher
from extraction.entities.normalize import canonical, code_signature


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


@dataclass(frozen=True)
class Neighbour:
    """An existing entity near an unresolved name, as found by the store's vector index."""

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


@dataclass
class LinkResult:
    links: dict[str, set[str]]            # claim id -> entity ids linked to known entities
    unresolved: list[Proposal]            # proposals whose canonical form is not known yet


@dataclass
class EntityJobResult:
    new_entities: list[NewEntity] = field(default_factory=list)
    aliases: dict[str, list[str]] = field(default_factory=dict)   # entity id -> alias surfaces to add
    mentions: list[tuple[str, str, int]] = field(default_factory=list)  # (claim id, entity id, revision)

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
    for c in sorted(claims, key=lambda c: (c.revision, c.id)):
        linked = links.setdefault(c.id, set())
        linked.update(m.entity_id for m in matcher.find(c.content))
        for mention in propose(c.content, c.metadata, opts):
            owner = matcher.owner(mention.canonical)
            if owner is not None:
                linked.add(owner)
            else:
                unresolved.append(Proposal(c.id, c.revision, mention, _type_of(mention, c.metadata)))
    return LinkResult(links, unresolved)


def resolve(namespace: str, claims: Sequence[ClaimText], linked: LinkResult, *,
            vectors: Mapping[str, Sequence[float]] | None = None,
            neighbours: Mapping[str, Sequence[Neighbour]] | None = None,
            threshold: float = 0.92) -> EntityJobResult:
    """Turn proposals into links, aliases and new entities; then link every batch claim to the new
    entities it names anywhere in its text (a name proposed by claim 5 also links claim 2).

    `vectors` maps canonical name → embedding (for near-duplicates inside the batch) and
    `neighbours` maps canonical name → nearest existing entities (cosine in [-1, 1]). Either may be
    omitted, which disables embedding-based merging: exact canonical matches still merge.
    """
    vectors = vectors or {}
    neighbours = neighbours or {}
    result = EntityJobResult()
    links = {cid: set(ids) for cid, ids in linked.links.items()}
    by_key: dict[str, str] = {}          # canonical -> entity id, for names resolved in this batch
    # Earliest revision first; within a revision a declared subject beats a name found in passing
    # (so its type and surface win), then claim id.
    proposals = sorted(linked.unresolved,
                       key=lambda p: (p.revision, TRUST[p.mention.kind], p.claim_id, p.mention.canonical))
    # Cosine between every pair of the batch's unresolved names, once (numpy): the greedy pass below
    # then only looks up rows, instead of O(n²) Python dot products.
    keys = sorted({p.mention.canonical for p in proposals if p.mention.canonical in vectors})
    row_of = {k: i for i, k in enumerate(keys)}
    sims = np.zeros((0, 0))
    if keys:
        mat = np.asarray([vectors[k] for k in keys], dtype=np.float64)
        mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
        sims = mat @ mat.T
    created_rows: list[int] = []           # rows (in `keys`) of entities created in this batch, in order
    created_ids: dict[int, str] = {}
    alias_seen: set[tuple[str, str]] = set()
    for p in proposals:
        key = p.mention.canonical
        target = by_key.get(key)
        if target is None:
            signature = code_signature(key)
            # 1) an existing entity close enough (and with the same numbers/codes)
            for nb in sorted(neighbours.get(key, ()), key=lambda n: (-n.cosine, n.entity_id)):
                if nb.cosine >= threshold and code_signature(nb.name) == signature:
                    target = nb.entity_id
                    break
            # 2) an entity created earlier in this batch
            row = row_of.get(key)
            if target is None and row is not None and created_rows:
                cand = np.asarray(created_rows)
                scores = np.round(sims[row, cand], 6)
                best: tuple[float, str] | None = None
                for idx in np.nonzero(scores >= threshold)[0]:
                    other = int(cand[idx])
                    if code_signature(keys[other]) != signature:
                        continue
                    cos, oid = float(scores[idx]), created_ids[other]
                    if best is None or (-cos, oid) < (-best[0], best[1]):
                        best = (cos, oid)
                target = best[1] if best else None
            if target is not None:
                if (target, key) not in alias_seen:
                    alias_seen.add((target, key))
                    result.aliases.setdefault(target, []).append(p.mention.surface)
            else:
                target = entity_id(namespace, key)
                result.new_entities.append(NewEntity(target, p.mention.surface, key, p.type, p.revision, p.claim_id))
                if row is not None:
                    created_rows.append(row)
                    created_ids[row] = target
            by_key[key] = target
        links.setdefault(p.claim_id, set()).add(target)
    # Second pass: the batch's claims against the names created or aliased in this batch.
    if by_key:
        batch_matcher = EntityMatcher((eid, key) for key, eid in by_key.items())
        for c in claims:
            links.setdefault(c.id, set()).update(m.entity_id for m in batch_matcher.find(c.content))
    revision_of = {c.id: c.revision for c in claims}
    result.mentions = sorted((cid, eid, revision_of[cid]) for cid, ids in links.items() for eid in ids)
    return result


def backfill_links(texts: Sequence[tuple[str, str]], new_entities: Sequence[NewEntity]) -> list[tuple[str, str, int]]:
    """Older claims (id, content) that name entities created in this batch: (claim id, entity id,
    revision), with the revision of the claim that introduced the entity — the link exists from the
    moment the store knew the name, so an as-of recall before it never sees it."""
    if not new_entities or not texts:
        return []
    matcher = EntityMatcher((e.id, e.canonical) for e in new_entities)
    introduced = {e.id: e.revision for e in new_entities}
    out = {(cid, m.entity_id, introduced[m.entity_id]) for cid, content in texts for m in matcher.find(content)}
    return sorted(out)


def canonical_keys(names: Sequence[str]) -> list[str]:
    return sorted({canonical(n) for n in names if canonical(n)})
