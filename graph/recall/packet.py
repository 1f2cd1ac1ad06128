"""Packet assembly: the ranked items with their links, the capped edges and contradictions, the
hidden counts, and the fingerprint. Nothing here reads Neo4j (the caller did the reads); only
`served_at` comes from the clock, and the fingerprint leaves it out (as it leaves out what `explain`
adds: the items' explanations, made by the ranking, and `hidden_explanation`, made here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

from palimpsest.graph.claims.visibility import current_at
from palimpsest.graph.recall.candidates import ContradictionRow
from palimpsest.graph.recall.pool import Pool
from palimpsest.graph.recall.ranking import Ranking, stable_round
from palimpsest.graph.recall.request import RecallRequest
from palimpsest.schema.models import (
    Belief,
    ClaimRef,
    Completeness,
    ContextPacket,
    HiddenCounts,
    HiddenRule,
    PacketContradiction,
    PacketEdge,
    PacketItem,
    iso,
    now_utc,
)


class Staged(NamedTuple):
    """What the stages after fusion made of the ranking (graph.recall.rerank, graph.recall.dedup)."""

    items: list[PacketItem]  # the packet's items, at most k, ranked from 1
    remaining: int  # ranked candidates that did not enter the packet and were not removed by a stage
    deduplicated: list[str]  # ids dedup removed
    stages: list[str]  # the optional stages that ran, in order
    rerank_unavailable: bool


def linked_items(items: Sequence[PacketItem], pool: Pool, supersedes: Mapping[str, str],
                 revision: int) -> list[PacketItem]:
    """Each item with the claim it had replaced and where its world-time window ended, as of the revision."""
    return [it.model_copy(update={"supersedes": supersedes.get(it.id),
                                  "valid_until": iso(pool.rows[it.id].window_end(revision))}) for it in items]


def edges(items: Sequence[PacketItem], supersedes: Mapping[str, str], cap: int) -> tuple[list[PacketEdge], bool]:
    """Supersessions between two items and pairs of items from one source, in item order, at most `cap`."""
    position = {it.id: i for i, it in enumerate(items)}
    found: list[tuple[int, int, str, PacketEdge]] = []
    for new, old in supersedes.items():
        if old in position:
            found.append((position[new], position[old], "supersedes",
                          PacketEdge(kind="supersedes", source_id=new, target_id=old)))
    for i, a in enumerate(items):
        for b in items[i + 1:]:
            if a.source == b.source:
                found.append((i, position[b.id], "shared_source",
                              PacketEdge(kind="shared_source", source_id=a.id, target_id=b.id, detail=a.source)))
    found.sort(key=lambda e: (e[0], e[1], e[2]))
    return [e[3] for e in found[:cap]], len(found) > cap


def contradictions(rows: Sequence[ContradictionRow], ids: Sequence[str], revision: int,
                   cap: int) -> tuple[list[PacketContradiction], bool]:
    """CONTRADICTS edges the projections had found by `seq` whose other side was current at the revision.

    An edge's `revision` is the revision of the claim whose processing found it, so it exists
    for a packet exactly when the worker had moved past that revision.
    """
    in_packet = set(ids)
    per_item: dict[str, list[PacketContradiction]] = {}
    for r in rows:
        if not current_at(r.vis_from, r.vis_to, revision):
            continue
        per_item.setdefault(r.item_id, []).append(PacketContradiction(
            item_id=r.item_id, other=ClaimRef(id=r.other_id, content=r.content, source=r.source,
                                              claim_key=r.claim_key),
            score=stable_round(r.score), method=r.method, revision=r.revision,
            other_in_packet=r.other_id in in_packet,
        ))
    out: list[PacketContradiction] = []
    cut = False
    for item_id in ids:
        found = sorted(per_item.get(item_id, []), key=lambda c: (-c.score, c.other.id, c.method))
        cut = cut or len(found) > cap
        out.extend(found[:cap])
    return out, cut


def hidden_counts(pool: Pool, ranking: Ranking, deduplicated: Sequence[str] = ()) -> HiddenCounts:
    """What visibility hid (claims recorded after the revision are not counted), what inference hid,
    what the relevance floor cut and what dedup removed."""
    hidden = HiddenCounts()
    for reason in pool.hidden.values():
        if reason != "recorded_later":
            setattr(hidden, reason, getattr(hidden, reason) + 1)
    hidden.inferred = len(pool.inferred)
    hidden.below_relevance = len(ranking.below_floor)
    hidden.deduplicated = len(deduplicated)
    return hidden


def hidden_explanation(pool: Pool, ranking: Ranking, revision: int, valid_at: datetime | None,
                       min_relevance: float, deduplicated: Sequence[str] = (),
                       dedup_jaccard: float | None = None) -> list[HiddenRule]:
    """Which rule hid which candidates, in the order of `HiddenCounts`' fields: the ids behind every
    count `hidden_counts` makes (a superseded id is split by how it was superseded)."""
    by_reason: dict[str, list[str]] = {}
    for cid, reason in sorted(pool.hidden.items()):
        if reason != "recorded_later":
            by_reason.setdefault(reason, []).append(cid)
    inferred = set(pool.inferred)
    superseded = [c for c in by_reason.get("superseded", []) if c not in inferred]
    # Current at the revision but hidden as superseded: its world-time window was closed at valid_at.
    closed = [c for c in superseded if c in pool.closed]
    shut = set(closed)
    replaced = [c for c in superseded if c not in shut]
    at = iso(valid_at)
    rules = [
        ("superseded", "replaced", f"not current at revision {revision}: a later version of its claim_key (or a "
                                   "declared supersession) had replaced it",
         replaced),
        ("superseded", "window_closed", f"at valid_at {at}, a later version of its claim_key had taken over (its "
                                        "window ends where that version's begins)", closed),
        ("inferred", "inferred_supersession", f"not current at revision {revision}: the worker inferred that a claim "
                                              "without a claim_key replaced it (counted in superseded too)",
         sorted(inferred)),
        ("retracted", "retracted", f"retracted at or before revision {revision}", by_reason.get("retracted", [])),
        ("not_yet_valid", "valid_from_after_valid_at", f"its valid_from is after valid_at {at}",
         by_reason.get("not_yet_valid", [])),
        ("expired", "valid_to_at_or_before_valid_at", f"its valid_to is at or before valid_at {at}",
         by_reason.get("expired", [])),
        ("below_relevance", "min_relevance", f"fused relevance (before decay) below the policy's min_relevance "
                                             f"{min_relevance}", sorted(ranking.below_floor)),
        ("deduplicated", "dedup_jaccard", f"token Jaccard with a higher-ranked item in the packet at least the "
                                          f"policy's dedup_jaccard {dedup_jaccard}", sorted(deduplicated)),
    ]
    return [HiddenRule(count=count, rule=rule, detail=detail, ids=ids) for count, rule, detail, ids in rules if ids]


def assemble(req: RecallRequest, revision: int, reference: datetime | None, seq: int, pool: Pool,
             ranking: Ranking, staged: Staged, supersedes: Mapping[str, str],
             contradiction_rows: Sequence[ContradictionRow], beliefs: tuple[list[Belief], bool]) -> ContextPacket:
    """The packet, fingerprinted; `served_at` is the only field the fingerprint leaves out."""
    policy = req.policy
    items = linked_items(staged.items, pool, supersedes, revision)
    packet_edges, edges_cut = edges(items, supersedes, policy.d)
    packet_contradictions, contra_cut = contradictions(contradiction_rows, [it.id for it in items], revision,
                                                       policy.c)
    packet = ContextPacket(
        namespace=req.namespace, query=req.query, policy_version=policy.version, k=req.k,
        store_revision=revision, valid_at=iso(req.valid_at), reference_time=iso(reference),
        projections_seq=seq, items=items,
        contradictions=packet_contradictions, edges=packet_edges, beliefs=beliefs[0],
        completeness=Completeness(
            items_truncated=staged.remaining > 0, edges_truncated=edges_cut,
            contradictions_truncated=contra_cut, beliefs_truncated=beliefs[1], candidates_exhausted=pool.exhausted,
            rerank_unavailable=staged.rerank_unavailable,
        ),
        hidden=hidden_counts(pool, ranking, staged.deduplicated), served_at=iso(now_utc()) or "", fingerprint="",
        hidden_explanation=(hidden_explanation(pool, ranking, revision, req.valid_at, policy.min_relevance,
                                               staged.deduplicated, policy.dedup_jaccard)
                            if req.explain else None),
        stages=staged.stages,
    )
    return packet.model_copy(update={"fingerprint": packet.compute_fingerprint()})
