"""The parts of multi-round recall below the API: what a round found that the next should ask about,
and the fusion of the rounds' rankings.

* **Expansion terms** (the offline second round): a multi-hop question names the first hop; the
  passage that answers it names the bridge ("… directed by James Cameron"), and the second hop is
  about that bridge. So the next query is the question plus, for the top `expansion_items` items
  of the round before, in rank order: the item's declared subject (metadata `subject` or `title`;
  policy `expansion_subjects`) and the other entities it MENTIONS, most specific first (fewest
  mentioning claims, then by name: an entity id is derived from its namespace; hubs beyond
  `ppr_max_degree` are skipped) — terms the question already
  contains are not added again. When the router read the question as one hop ("router:one-round"),
  a second round still runs if another claim is *about* one of those bridges (declares it as its
  subject, or opens with its name): then the store holds what the first round could not have asked
  for — in passages titled by their subject, the bridge's own passage. Without one it does not.
  Entity links are read as of the packet's `projections_seq`, so the
  expansion of a packet is a function of the packet: the same packet always yields the same next
  query.
* **Fusion**: weighted reciprocal rank over the rounds (round 1 weight 1, later rounds
  `expansion_weight`), with ranks 1..`expansion_protect_top` kept as round 1 had them, so the
  direct hits stay on top and the later rounds fill the ranks below. Ties fall to the best rank in
  any round, then the claim's content and id (graph.claims.order): a total order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from neo4j import Driver

from palimpsest.graph.claims.order import tie_key
from palimpsest.schema.ask import FusedItem
from palimpsest.schema.models import ContextPacket, PacketItem, Policy

SUBJECT_KEYS = ("subject", "title")

# With `$about` (only a router's one-hop reading needs it): is another claim mentioning the entity (hubs
# not looked into) about it — its declared subject as embedded (`search_subject`) is the entity's name, or
# that name with a trailing disambiguation ("Lilu (mythology)"), or its text opens with the name (a text
# that names its subject first is embedded without the prefix: schema.subjects), but not as a speaker's
# label ("Ada Brennan: I …" is hers, not about her)?
BRIDGE_ENTITIES = (
    "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id})-[m:MENTIONS]->(e:Entity {namespace: $ns}) "
    "USING INDEX c:Claim(id) WHERE m.revision <= $seq "
    "CALL (c, e) { MATCH (x:Claim)-[mx:MENTIONS]->(e) WHERE mx.revision <= $seq WITH c, e, x LIMIT $over "
    "WITH c, x, toLower(e.name) AS name "
    "RETURN count(x) AS df, sum(CASE WHEN $about AND x <> c AND (toLower(x.search_subject) = name "
    "  OR toLower(x.search_subject) STARTS WITH name + ' (' "
    "  OR (toLower(x.content) STARTS WITH name AND substring(x.content, size(name), 1) <> ':')) "
    "  THEN 1 ELSE 0 END) AS about } "
    "RETURN id, e.id AS eid, e.name AS name, df, df < $over AND about > 0 AS about ORDER BY id, df, eid"
)


@dataclass(frozen=True)
class Bridge:
    claim_id: str
    entity_id: str
    name: str
    df: int  # claims mentioning it as of the packet's projections_seq, counted up to the hub cap + 1
    # Another claim is about it (BRIDGE_ENTITIES): a second hop has somewhere to go.
    about: bool = False


def bridge_entities(driver: Driver, namespace: str, claim_ids: Sequence[str], seq: int, hub_cap: int,
                    database: str | None = None, *, about: bool = False) -> list[Bridge]:
    """Entities the claims mention as of projections_seq `seq`, per claim most specific first; with
    `about`, whether another claim is about each (`Bridge.about`; False otherwise)."""
    if not claim_ids:
        return []
    rows, _, _ = driver.execute_query(BRIDGE_ENTITIES, ids=list(claim_ids), ns=namespace, seq=seq,
                                      over=hub_cap + 1, about=about, database_=database, routing_="r")
    return [Bridge(r["id"], r["eid"], str(r["name"]), int(r["df"]), bool(r["about"])) for r in rows]


def _words(text: str) -> set[str]:
    return {w for w in "".join(ch.lower() if ch.isalnum() else " " for ch in text).split() if w}


def subject_of(item: PacketItem) -> str | None:
    for key in SUBJECT_KEYS:
        value = item.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def expansion_terms(question: str, packet: ContextPacket, bridges: Sequence[Bridge], policy: Policy,
                    exclude_ids: Sequence[str] = (), *, about_only: bool = False) -> list[str]:
    """The terms the next round adds to `question`: subjects and bridge entities of the packet's top
    `expansion_items` items (those in `exclude_ids` — already used by an earlier round — skipped), at
    most `expansion_terms`, none whose words the question (or an earlier term) already holds.

    With `about_only` (the router read the question as one hop), the terms are the same, but only
    when at least one of the bridges among them has a claim `about` it; otherwise none."""
    seen = _words(question)
    skip = set(exclude_ids)
    by_claim: dict[str, list[Bridge]] = {}
    for b in bridges:
        by_claim.setdefault(b.claim_id, []).append(b)
    out: list[str] = []
    anchored = False

    def add(term: str) -> bool:
        words = _words(term)
        if not words or words <= seen or len(out) >= policy.expansion_terms:
            return False
        out.append(term)
        seen.update(words)
        return True

    for item in [it for it in packet.items if it.id not in skip][:policy.expansion_items]:
        subject = subject_of(item)
        own = _words(subject) if subject else set()
        if subject and policy.expansion_subjects:
            add(subject)
        for b in sorted(by_claim.get(item.id, []), key=lambda b: (b.df, tie_key(b.name, b.entity_id))):
            # The item's own subject is what was found, not a bridge to what was not.
            if b.df <= policy.ppr_max_degree and _words(b.name) != own and add(b.name) and b.about:
                anchored = True
    return out if anchored or not about_only else []


def expanded_query(question: str, terms: Sequence[str], max_chars: int) -> str:
    """The question followed by the terms, cut at a whole term so it stays within `max_chars`."""
    query = question
    for term in terms:
        longer = f"{query} {term}"
        if len(longer) > max_chars:
            break
        query = longer
    return query


def fuse(packets: Sequence[ContextPacket], policy: Policy, k: int) -> list[FusedItem]:
    """Weighted reciprocal-rank fusion of the rounds' packets (module docstring), the first `k` items."""
    rounds = len(packets)
    ranks: dict[str, list[int | None]] = {}
    first: dict[str, PacketItem] = {}
    for r, packet in enumerate(packets):
        for it in packet.items:
            ranks.setdefault(it.id, [None] * rounds)[r] = it.rank
            first.setdefault(it.id, it)
    score: dict[str, float] = {}
    for cid, per_round in ranks.items():
        total = 0.0
        for r, rank in enumerate(per_round):
            if rank is not None:
                total += (1.0 if r == 0 else policy.expansion_weight) / (policy.rrf_k + rank)
        score[cid] = round(total, 9)
    protected = [it.id for it in packets[0].items[:policy.expansion_protect_top]] if packets else []
    rest = sorted((cid for cid in ranks if cid not in set(protected)),
                  key=lambda cid: (-score[cid], min(r for r in ranks[cid] if r is not None),
                                   tie_key(first[cid].content, cid)))
    order = [*protected, *rest][:k]
    return [FusedItem(id=cid, content=first[cid].content, source=first[cid].source,
                      metadata=first[cid].metadata, rank=n, score=score[cid], round_ranks=ranks[cid])
            for n, cid in enumerate(order, start=1)]


__all__ = ["BRIDGE_ENTITIES", "Bridge", "bridge_entities", "expanded_query", "expansion_terms", "fuse", "subject_of"]
