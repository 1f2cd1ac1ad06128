"""Entities in the store: the worker's reads and writes, and the graph queries the API serves.

Writes happen inside the projections commit (`graph.projections.commit_batch`), in the same
transaction that advances `projections_seq`, so a batch's entities, links and contradiction
edges land together or not at all. Every write is idempotent:

* `Entity` is MERGEd on a deterministic id (hash of namespace and canonical name);
* `MENTIONS` is MERGEd with the revision of its first detection (`ON CREATE`), which is what
  lets recall at revision R / projections_seq S see exactly the links that existed then;
* `RELATED.weight` is *recounted* (claims mentioning both ends, plus facts linking them — see
  `RELATED_RECOUNT`) rather than incremented, so a re-run can never double-count.

`RELATED` edges are stored once per unordered pair, from the smaller id to the larger, and
projected UNDIRECTED for PageRank. The queries below never call a model: vectors come in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neo4j import Driver, ManagedTransaction

from palimpsest.graph.claims.index import text_hits
from palimpsest.schema.errors import BadInputError, NotFoundError
from palimpsest.schema.models import Entity, EntityDetail, EntityNeighbour

_LUCENE_SAFE = re.compile(r"[^\W_]+")  # canonical tokens: letters and digits, no query syntax


@dataclass(frozen=True)
class EntityRow:
    id: str
    name: str
    canonical: str
    aliases: tuple[str, ...]
    embedded: bool = False  # has an embedding (the worker's EntityVectors holds those)


@dataclass
class EntityBatch:
    """What the entity job decided for one projections batch (plain rows: graph never sees extraction types)."""

    new_entities: list[dict[str, Any]] = field(default_factory=list)  # id, name, canonical, type, revision, embedding
    aliases: list[dict[str, Any]] = field(default_factory=list)       # id, alias
    mentions: list[dict[str, Any]] = field(default_factory=list)      # claim, entity, revision

    def __bool__(self) -> bool:
        return bool(self.new_entities or self.aliases or self.mentions)


# ------------------------------------------------------------------------------------ worker reads
def load_dictionary(driver: Driver, namespace: str, database: str | None = None) -> list[EntityRow]:
    """Every entity of the namespace with its names, ordered by id (the matcher's input)."""
    records, _, _ = driver.execute_query(
        "MATCH (e:Entity {namespace: $ns}) RETURN e.id AS id, e.name AS name, e.canonical AS canonical, "
        "coalesce(e.aliases, []) AS aliases, e.embedding IS NOT NULL AS embedded ORDER BY id",
        ns=namespace, database_=database, routing_="r",
    )
    return [EntityRow(r["id"], r["name"], r["canonical"], tuple(r["aliases"]), bool(r["embedded"])) for r in records]


def entity_vectors(driver: Driver, namespace: str, ids: Sequence[str], chunk: int = 2000,
                   database: str | None = None) -> list[tuple[str, str, str, list[float]]]:
    """(id, canonical, name, embedding) of the given entities that have one, in id order."""
    out: list[tuple[str, str, str, list[float]]] = []
    wanted = sorted(set(ids))
    for i in range(0, len(wanted), chunk):
        records, _, _ = driver.execute_query(
            "UNWIND $ids AS id MATCH (e:Entity {namespace: $ns, id: id}) USING INDEX e:Entity(id) "
            "WHERE e.embedding IS NOT NULL RETURN e.id AS id, e.canonical AS canonical, e.name AS name, "
            "e.embedding AS embedding ORDER BY id",
            ids=wanted[i:i + chunk], ns=namespace, database_=database, routing_="r",
        )
        out.extend((r["id"], r["canonical"], r["name"], list(r["embedding"])) for r in records)
    return out


def candidates_query(phrase: str) -> str | None:
    """A Lucene query matching every claim whose canonical token stream may contain `phrase` (its
    canonical tokens, space-separated), for the `standard-no-stop-words` analyzer of
    `claim_content`. A phrase query is not enough: Lucene keeps "bank's", "o'brien", "search_api"
    and "v2.3" as single terms, where the canonical form has two tokens. So token i must be the
    start of some term (`t*`, which also covers a trailing "'s"), or be glued by one character to
    the tokens before it (`t1?t2*`). It misses a phrase whose *first* token is glued to a word before
    it ("brien" in "o'brien") and scripts Lucene splits differently (CJK); the caller verifies."""
    toks = phrase.split()
    if not toks or not all(_LUCENE_SAFE.fullmatch(t) for t in toks):
        return None
    clauses = []
    for i, tok in enumerate(toks):
        alternatives = [f"{tok}*"] + ["?".join(toks[j:i + 1]) + "*" for j in range(i)]
        clauses.append("(" + " OR ".join(alternatives) + ")")
    return " AND ".join(clauses)


def claims_naming(driver: Driver, namespace: str, phrases: Sequence[str], max_revision: int,
                  database: str | None = None) -> list[tuple[str, str]]:
    """Older claims (revision ≤ max_revision) of the namespace whose text may contain one of the
    phrases (canonical names), via the fulltext index (`candidates_query`): candidates only — the
    caller verifies with its matcher. No limit: a cut on BM25 order would make the links depend on
    the index's statistics rather than on the texts; each name is looked up once, when it is
    introduced, so the total work is bounded by the number of links it makes."""
    queries = sorted({q for q in (candidates_query(p) for p in phrases if p) if q})
    if not queries or max_revision <= 0:
        return []
    records, _, _ = driver.execute_query(
        "MATCH (st:Store {namespace: $ns}) UNWIND $queries AS q "
        f"CALL (st, q) {{ {text_hits('st', 'q', None, ('q',))}"
        "  WITH node WHERE node.namespace = $ns AND node.revision <= $rev RETURN node } "
        "RETURN DISTINCT node.id AS id, node.content AS content ORDER BY id",
        queries=queries, ns=namespace, rev=max_revision, database_=database, routing_="r",
    )
    return [(r["id"], r["content"]) for r in records]


# ------------------------------------------------------------------------------------ worker write
# RELATED weight of an entity pair (bound as `a`, `b` with a.id < b.id): claims mentioning both
# plus facts linking them (SUBJECT/OBJECT, any status: like a superseded claim's co-mention, a
# superseded fact still records that the two were related). Recounted from scratch, never
# incremented, so the entity and the fact writes can both call it and a re-run changes nothing.
# MENTIONS, SUBJECT and OBJECT never cross namespaces (both ends are matched in $ns when written), so
# the claims and facts between two entities of $ns are in $ns. The pattern says so by *not* naming the
# namespace: given `x.namespace = $ns`, a planner with stale statistics (a fresh database) seeks the
# namespace index for x and joins — every claim of the namespace once per pair — instead of expanding
# from a; that made the entity job ~10× slower on a new instance.
# `r.revision` is the first revision at which the pair was related: the earliest co-mention, a
# co-mention existing from the later of its two MENTIONS (a link backfilled at revision 9 into a
# claim of revision 2 relates the pair from 9) — recomputed like the weight, so it is the same
# whichever batch made which link.
RELATED_RECOUNT = (
    "CALL (a, b) { MATCH (a)<-[ma:MENTIONS]-(x:Claim)-[mb:MENTIONS]->(b) "
    "  RETURN count(DISTINCT x) AS w, "
    "  min(CASE WHEN ma.revision >= mb.revision THEN ma.revision ELSE mb.revision END) AS first } "
    "CALL (a, b) { MATCH (a)<-[:SUBJECT|OBJECT]-(f:Fact)-[:SUBJECT|OBJECT]->(b) "
    "  RETURN count(DISTINCT f) AS fw, min(f.revision) AS ffirst } "
    "MERGE (a)-[r:RELATED]->(b) "
    "SET r.revision = CASE WHEN ffirst IS NULL OR first <= ffirst THEN first ELSE ffirst END, "
    "r.weight = toFloat(w + fw), r.facts = fw "
)


def write_entity_batch(tx: ManagedTransaction, namespace: str, batch: EntityBatch) -> dict[str, int]:
    """MERGE entities, aliases and MENTIONS; recount RELATED weights of the pairs the batch touched."""
    counters = {"entities_created": 0, "mentions_created": 0, "related_touched": 0}
    if batch.new_entities:
        summary = tx.run(
            "UNWIND $rows AS row MERGE (e:Entity {id: row.id}) "
            "ON CREATE SET e.namespace = $ns, e.name = row.name, e.canonical = row.canonical, e.type = row.type, "
            "e.aliases = [], e.revision = row.revision, e.created_at = datetime.transaction() "
            "WITH e, row WHERE row.embedding IS NOT NULL AND e.embedding IS NULL "
            "CALL db.create.setNodeVectorProperty(e, 'embedding', row.embedding)",
            rows=batch.new_entities, ns=namespace,
        ).consume()
        counters["entities_created"] = summary.counters.nodes_created
    if batch.aliases:
        tx.run(
            "UNWIND $rows AS row MATCH (e:Entity {namespace: $ns, id: row.id}) USING INDEX e:Entity(id) "
            "WITH e, row WHERE NOT row.alias IN coalesce(e.aliases, []) AND row.alias <> e.name "
            "SET e.aliases = coalesce(e.aliases, []) + row.alias",
            rows=batch.aliases, ns=namespace,
        ).consume()
    if batch.mentions:
        summary = tx.run(
            "UNWIND $rows AS row "
            "MATCH (c:Claim {namespace: $ns, id: row.claim}), (e:Entity {namespace: $ns, id: row.entity}) "
            "USING INDEX c:Claim(id) USING INDEX e:Entity(id) "
            "MERGE (c)-[m:MENTIONS]->(e) ON CREATE SET m.revision = row.revision",
            rows=batch.mentions, ns=namespace,
        ).consume()
        counters["mentions_created"] = summary.counters.relationships_created
        record = tx.run(
            "UNWIND $claims AS cid "
            "MATCH (c:Claim {namespace: $ns, id: cid}) USING INDEX c:Claim(id) "
            "MATCH (c)-[:MENTIONS]->(a:Entity), (c)-[:MENTIONS]->(b:Entity) WHERE a.id < b.id "
            "WITH DISTINCT a, b " + RELATED_RECOUNT + "RETURN count(*) AS n",
            claims=sorted({m["claim"] for m in batch.mentions}), ns=namespace,
        ).single()
        counters["related_touched"] = 0 if record is None else int(record["n"])
    return counters


@dataclass(frozen=True)
class EntityNaming:
    """How names are compared, handed in by the caller (graph never imports extraction): `canonical`
    is the merge key of a name, `surface` finds a text's own spelling of one of some canonical keys
    (extraction.entities.normalize.canonical and surface_of)."""

    canonical: Callable[[str], str]
    surface: Callable[[str, Sequence[str]], str | None]


# The claims that still witness entity `e`'s spellings: those that mention `e` or support a fact about
# it, and are not being erased. A spelling must still occur in one's content or metadata.
_WITNESS_PATHS = ("(e)<-[:MENTIONS]-(c:Claim)", "(e)<-[:SUBJECT|OBJECT]-(:Fact)-[:SUPPORTED_BY]->(c:Claim)")
_SPELLS = ("c.status <> 'erased' AND (toLower(c.content) CONTAINS toLower(s) OR "
           "toLower(coalesce(c.metadata_json, '')) CONTAINS toLower(s))")
_SPELLED = " OR ".join(f"EXISTS {{ MATCH {path} WHERE {_SPELLS} }}" for path in _WITNESS_PATHS)


def withdraw_mentions(tx: ManagedTransaction, namespace: str, claim_ids: Sequence[str],
                      entity_ids: Sequence[str] = (), pairs: Sequence[tuple[str, str]] = (),
                      naming: EntityNaming | None = None) -> tuple[int, int]:
    """Take claims out of the entity graph (graph.lifecycle.erase): delete their MENTIONS, recount RELATED for
    the pairs they co-mentioned (and `pairs`, the ends of facts already deleted) and drop an edge that
    is left with no weight, then delete the entities (of theirs, and `entity_ids`) that nothing
    mentions or names any more. A surviving entity is re-named from the claims left (`_respell`): no
    name, canonical name or alias only the erased claims spelled stays. Returns (mentions removed,
    entities removed)."""
    ids = sorted(set(claim_ids))
    if not ids:
        return 0, 0
    mentioned = {str(r["id"]): [str(e) for e in r["entities"]] for r in tx.run(
        "UNWIND $ids AS cid MATCH (c:Claim {namespace: $ns, id: cid})-[m:MENTIONS]->(e:Entity) "
        "WITH c, collect(e.id) AS entities, collect(m) AS links FOREACH (m IN links | DELETE m) "
        "RETURN c.id AS id, entities",
        ids=ids, ns=namespace,
    )}
    removed = sum(len(v) for v in mentioned.values())
    touched = sorted({*pairs, *((a, b) for ents in mentioned.values() for a in ents for b in ents if a < b)})
    if touched:
        tx.run(
            "UNWIND $pairs AS p MATCH (a:Entity {namespace: $ns, id: p[0]}), (b:Entity {namespace: $ns, id: p[1]}) "
            "USING INDEX a:Entity(id) USING INDEX b:Entity(id) "
            "WITH a, b " + RELATED_RECOUNT + "WITH r WHERE r.weight = 0.0 DELETE r",
            pairs=[list(p) for p in touched], ns=namespace,
        ).consume()
    candidates = sorted({*entity_ids, *(e for ents in mentioned.values() for e in ents)})
    if not candidates:
        return removed, 0
    record = tx.run(
        "UNWIND $ids AS id MATCH (e:Entity {namespace: $ns, id: id}) "
        "WHERE NOT EXISTS { (e)<-[:MENTIONS]-() } AND NOT EXISTS { (e)<-[:SUBJECT|OBJECT]-() } "
        "DETACH DELETE e RETURN count(*) AS n",
        ids=candidates, ns=namespace,
    ).single()
    gone = 0 if record is None else int(record["n"])
    return removed, gone + _respell(tx, namespace, candidates, naming)


def _respell(tx: ManagedTransaction, namespace: str, entity_ids: Sequence[str], naming: EntityNaming | None) -> int:
    """Re-derive the names of surviving entities from the claims left, as the worker would have named
    them had the erased claims never been written: a spelling (the name or an alias) stays only if a
    remaining claim that mentions the entity, or supports a fact about it, writes it (case aside, in
    its content or metadata). When the name goes, the first alias that stays becomes the name —
    aliases are kept in the order the worker learnt them, so that is the earliest remaining spelling,
    as the worker names an entity by the first claim in write order — and the canonical name follows
    it; with no alias left, the earliest remaining claim's own spelling of one of the entity's keys
    (`EntityNaming.surface`). A renamed entity loses its embedding: it was the vector of the erased
    spelling. An entity no remaining claim spells at all is deleted. Returns entities deleted."""
    rows = list(tx.run(
        "UNWIND $ids AS id MATCH (e:Entity {namespace: $ns, id: id}) "
        "WITH e, [s IN [e.name] + coalesce(e.aliases, []) WHERE " + _SPELLED + "] AS kept "
        "RETURN e.id AS id, e.name AS name, e.canonical AS canonical, coalesce(e.aliases, []) AS aliases, kept "
        "ORDER BY id",
        ids=list(entity_ids), ns=namespace,
    ))
    updates: list[dict[str, Any]] = []
    doomed: list[str] = []
    for r in rows:
        name, aliases, kept = str(r["name"]), [str(a) for a in r["aliases"]], {str(s) for s in r["kept"]}
        new_aliases = [a for a in aliases if a in kept]
        if name in kept:
            if new_aliases != aliases:
                updates.append({"id": r["id"], "name": name, "canonical": r["canonical"], "aliases": new_aliases,
                                "renamed": False})
            continue
        if naming is None:  # no way to name it from the claims left: do not keep the erased spelling either
            doomed.append(str(r["id"]))
            continue
        if new_aliases:
            new_name, new_aliases = new_aliases[0], new_aliases[1:]
        else:
            found = _first_surface(tx, namespace, str(r["id"]),
                                   sorted({naming.canonical(s) for s in [name, *aliases]} - {""}), naming)
            if found is None:
                doomed.append(str(r["id"]))
                continue
            new_name = found
        updates.append({"id": r["id"], "name": new_name, "canonical": naming.canonical(new_name),
                        "aliases": [a for a in new_aliases if a != new_name], "renamed": True})
    if updates:
        tx.run(
            "UNWIND $rows AS row MATCH (e:Entity {namespace: $ns, id: row.id}) "
            "SET e.name = row.name, e.canonical = row.canonical, e.aliases = row.aliases "
            "WITH e, row WHERE row.renamed REMOVE e.embedding",
            rows=updates, ns=namespace,
        ).consume()
    if doomed:
        tx.run("UNWIND $ids AS id MATCH (e:Entity {namespace: $ns, id: id}) DETACH DELETE e",
               ids=doomed, ns=namespace).consume()
    return len(doomed)


def _first_surface(tx: ManagedTransaction, namespace: str, entity_id: str, keys: Sequence[str],
                   naming: EntityNaming) -> str | None:
    """The first remaining witness's own spelling of one of `keys`, in write order (revision, position
    in its ingest call, id); streamed, so a much-mentioned entity stops at its first witness."""
    result = tx.run(
        "MATCH (e:Entity {namespace: $ns, id: $id}) "
        f"CALL (e) {{ MATCH {_WITNESS_PATHS[0]} RETURN c UNION MATCH {_WITNESS_PATHS[1]} RETURN c }} "
        "WITH c WHERE c.status <> 'erased' "
        "RETURN c.content AS content ORDER BY c.revision, coalesce(c.batch_index, 0), c.id",
        ns=namespace, id=entity_id,
    )
    for row in result:
        found = naming.surface(str(row["content"]), keys)
        if found:
            result.consume()
            return found
    return None


# ------------------------------------------------------------------------------------ PageRank
@dataclass(frozen=True)
class PageRankRun:
    ran: bool
    entities: int
    related: int
    reason: str


def graph_fingerprint(tx: ManagedTransaction, namespace: str) -> tuple[int, int, float]:
    """(entities, RELATED edges, total RELATED weight). Projections only ever add entities, links and
    facts, so any change to the ranked graph changes this triple: PageRank computed at an equal
    fingerprint is PageRank of the current graph."""
    record = tx.run(
        "CALL () { MATCH (e:Entity {namespace: $ns}) RETURN count(e) AS entities } "
        "CALL () { MATCH (:Entity {namespace: $ns})-[r:RELATED]->(:Entity) "
        "  RETURN count(r) AS related, sum(coalesce(r.weight, 1.0)) AS weight } "
        "RETURN entities, related, weight", ns=namespace,
    ).single(strict=True)
    return int(record["entities"]), int(record["related"]), round(float(record["weight"] or 0.0), 6)


# ------------------------------------------------------------------------------------ API reads
# The API reads return schema.models' Entity and its two richer shapes, each built here from the map
# `_entity_map` projects, so the Cypher and the model it must fill sit together.
def _entity_map(alias: str) -> str:
    return (f"{{id: {alias}.id, name: {alias}.name, canonical: {alias}.canonical, type: {alias}.type, "
            f"aliases: coalesce({alias}.aliases, []), pagerank: {alias}.pagerank}}")


def _entity(row: Mapping[str, Any]) -> Entity:
    return Entity.model_validate(dict(row))


def get_entity(driver: Driver, namespace: str, entity_id: str, database: str | None = None) -> EntityDetail:
    records, _, _ = driver.execute_query(
        f"MATCH (e:Entity {{namespace: $ns, id: $id}}) OPTIONAL MATCH (c:Claim {{namespace: $ns}})-[:MENTIONS]->(e) "
        f"RETURN {_entity_map('e')} AS e, count(c) AS mentions",
        ns=namespace, id=entity_id, database_=database, routing_="r",
    )
    if not records:
        raise NotFoundError(f"no entity {entity_id!r} in namespace {namespace!r}", field="id")
    return EntityDetail.model_validate(dict(records[0]["e"]) | {"mentions": int(records[0]["mentions"])})


def find_entities(driver: Driver, namespace: str, canonical_names: Sequence[str],
                  database: str | None = None) -> list[Entity]:
    """Entities by canonical name (the caller canonicalises: graph never imports extraction)."""
    records, _, _ = driver.execute_query(
        f"UNWIND $names AS n MATCH (e:Entity {{namespace: $ns, canonical: n}}) RETURN {_entity_map('e')} AS e "
        "ORDER BY e.id",
        names=sorted(set(canonical_names)), ns=namespace, database_=database, routing_="r",
    )
    return [_entity(r["e"]) for r in records]


def check_first(first: int) -> None:
    """The page size every entity and fact listing accepts."""
    if not 1 <= first <= 1000:
        raise BadInputError("first must be between 1 and 1000", field="first", limit=1000)


def neighbourhood(driver: Driver, namespace: str, entity_id: str, first: int = 20,
                  database: str | None = None) -> list[EntityNeighbour]:
    """The entity's RELATED neighbours, strongest co-mention first (then PageRank, then id)."""
    check_first(first)
    get_entity(driver, namespace, entity_id, database)
    return neighbourhoods(driver, namespace, [entity_id], first, database)[entity_id]


def neighbourhoods(driver: Driver, namespace: str, entity_ids: Sequence[str], first: int = 20,
                   database: str | None = None) -> dict[str, list[EntityNeighbour]]:
    """`neighbourhood` of many entities in one round trip (for a DataLoader): id -> its neighbours, in
    the same order and with the same limit; an id that is not (or no longer) an entity maps to []."""
    check_first(first)
    wanted = sorted(set(entity_ids))
    out: dict[str, list[EntityNeighbour]] = {eid: [] for eid in wanted}
    if not wanted:
        return out
    records, _, _ = driver.execute_query(
        "UNWIND $ids AS id MATCH (e:Entity {namespace: $ns, id: id}) "
        "CALL (e) { MATCH (e)-[r:RELATED]-(n:Entity {namespace: $ns}) "
        f"  RETURN {_entity_map('n')} AS n, r.weight AS weight "
        "  ORDER BY weight DESC, coalesce(n.pagerank, 0.0) DESC, n.id LIMIT $first } "
        "RETURN e.id AS of, n, weight",
        ids=wanted, ns=namespace, first=first, database_=database, routing_="r",
    )
    for r in records:
        out[r["of"]].append(EntityNeighbour.model_validate(dict(r["n"]) | {"weight": float(r["weight"])}))
    for rows in out.values():  # the order of `neighbourhood`, whatever order the rows came back in
        rows.sort(key=lambda n: (-n.weight, -(n.pagerank or 0.0), n.id))
    return out


def shortest_path(driver: Driver, namespace: str, source_id: str, target_id: str, max_hops: int = 4,
                  database: str | None = None) -> list[Entity]:
    """Entities on one shortest RELATED path (both ends included), or [] when none within max_hops.

    Among equally short paths the one with the lexicographically smallest id sequence is
    returned, so the answer does not depend on the planner.
    """
    if not 1 <= max_hops <= 6:
        raise BadInputError("maxHops must be between 1 and 6", field="maxHops", limit=6)
    source = get_entity(driver, namespace, source_id, database)
    get_entity(driver, namespace, target_id, database)
    if source_id == target_id:  # the path's one entity, as every path lists them (without the mention count)
        return [Entity.model_validate(source.model_dump(exclude={"mentions"}))]
    records, _, _ = driver.execute_query(
        "MATCH (a:Entity {namespace: $ns, id: $a}), (b:Entity {namespace: $ns, id: $b}) "
        f"MATCH p = ALL SHORTEST (a)-[:RELATED]-{{1,{int(max_hops)}}}(b) "
        "WHERE all(n IN nodes(p) WHERE n.namespace = $ns) "
        f"WITH p, [n IN nodes(p) | n.id] AS ids ORDER BY ids LIMIT 1 "
        f"RETURN [n IN nodes(p) | {_entity_map('n')}] AS path",
        ns=namespace, a=source_id, b=target_id, database_=database, routing_="r",
    )
    return [] if not records else [_entity(n) for n in records[0]["path"]]


def top_entities(driver: Driver, namespace: str, first: int = 20, database: str | None = None) -> list[Entity]:
    """Entities by global PageRank (as last written by the worker), then id."""
    check_first(first)
    records, _, _ = driver.execute_query(
        f"MATCH (e:Entity {{namespace: $ns}}) WHERE e.pagerank IS NOT NULL RETURN {_entity_map('e')} AS e "
        "ORDER BY e.pagerank DESC, e.id LIMIT $first",
        ns=namespace, first=first, database_=database, routing_="r",
    )
    return [_entity(r["e"]) for r in records]
