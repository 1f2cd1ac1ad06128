"""Each namespace searches only its own claims: exact search while it is small, its own indexes after.

Neo4j 5's vector and fulltext indexes are per label. One index over every `:Claim` made a tenant's
packet depend on other tenants' writes: the vector index answers a global top-N that is filtered to
the namespace afterwards (a crowd of similar claims elsewhere pushes the namespace's own out of the
fetch), and Lucene's BM25 statistics (IDF, average length) span every document in the index. So:

* every claim carries, from its first write, a label of its namespace (`namespace_label`), set by
  every statement that creates or moves a claim (graph.claims.store, graph.lifecycle.importer);
* while a namespace has fewer than `EXACT_LIMIT` claims it has no index: its searches read all of
  its claims and score them exactly (`vector_hits`, `text_hits`) — a few hundred rows cost less
  than an index per tenant, and exact answers cannot depend on anyone else;
* at `EXACT_LIMIT` claims (`ensure`, called after every write and by the worker) it gets a vector
  and a fulltext index on its own label; the Store node records their suffix (`claim_indexes`)
  once both are online, and from then on every search of the namespace uses them.

Neither answer can depend on another namespace: the exact scan reads only the namespace's claims,
and an index on the namespace's label holds only its claims (its HNSW graph and its Lucene
statistics are the namespace's own). The vector index is built without quantisation, so its scores
are the float cosines the recall cut orders by, not 8-bit approximations of them.

The price is two indexes per namespace above the limit; a database with many thousands of large
tenants would want Neo4j 2026's in-index filtering instead (docs/TENANCY.md says why it was not
chosen).
"""

from __future__ import annotations

import hashlib
import logging

from neo4j import Driver
from neo4j.exceptions import ClientError, DriverError, Neo4jError

from palimpsest.schema.limits import NAMESPACE_RE

# Below this many claims a namespace is searched exactly (measured: docs/TENANCY.md).
EXACT_LIMIT = 256
INDEX_TIMEOUT_S = 300
_log = logging.getLogger(__name__)


def namespace_label(namespace: str) -> str:
    """The label every claim of `namespace` carries. Namespaces are `[A-Za-z0-9_.-]` (schema.limits),
    so the label needs no escaping beyond backticks; writes bind it as a parameter (`SET c:$($label)`)."""
    if not NAMESPACE_RE.fullmatch(namespace):
        raise ValueError(f"not a namespace: {namespace!r}")
    return "NS_" + namespace


def index_suffix(namespace: str) -> str:
    """A stable, case-safe suffix for the namespace's index names (index names are shared by the
    whole database; two namespaces differing only in case must not collide)."""
    return hashlib.sha256(namespace.encode()).hexdigest()[:24]


def vector_index_name(suffix: str) -> str:
    return f"claim_vec_{suffix}"


def text_index_name(suffix: str) -> str:
    return f"claim_text_{suffix}"


# The exact branch's namespace, as a row only when the namespace has no indexes. Not a WHERE (nor a
# CASE): the planner moved that condition after the seek of every claim of the namespace (PROFILE: 3,000
# index hits per search of a 3,000-claim namespace that had its own index; ~40 ms at 100k claims). An
# aggregation is a barrier it does not push predicates through, so the seek gets no row to start from.
_ONLY_WITHOUT_INDEXES = ("WITH {scope}, collect(CASE WHEN {store}.claim_indexes IS NULL THEN {store}.namespace END) "
                         "AS exact UNWIND exact AS exact_ns ")


def vector_hits(store: str, vector: str, fetch: str, uses: tuple[str, ...] = ()) -> str:
    """Cypher for "the namespace's claims nearest to a vector": `store` is the bound Store node,
    `vector` and `fetch` Cypher expressions over it, the parameters and the variables in `uses`.
    Yields `node`, `score` on the index's (1 + cos) / 2 scale, at most `fetch` rows. Exactly one
    branch runs: the namespace's own index, or an exact scan of its claims. The scores are the same
    function in both: `vector.similarity.cosine` is already on the index's scale, and an un-quantised
    index scores bit for bit like it (tests/integration/test_tenant_isolation.py), so the index decides
    only which rows come back — neighbour thresholds mean the same below and above the limit."""
    scope = ", ".join((store, *uses))
    return (
        f"CALL ({scope}) {{ WITH {scope} WHERE {store}.claim_indexes IS NOT NULL "
        f"CALL db.index.vector.queryNodes('claim_vec_' + {store}.claim_indexes, {fetch}, {vector}) "
        "YIELD node, score RETURN node, score "
        "UNION ALL "
        + _ONLY_WITHOUT_INDEXES.format(scope=scope, store=store) +
        "MATCH (node:Claim {namespace: exact_ns}) WHERE node.embedding IS NOT NULL "
        f"WITH {scope}, node, vector.similarity.cosine(node.embedding, {vector}) AS score "
        # (LIMIT takes no variables; a slice does.)
        f"ORDER BY score DESC, node.content_hash, node.id WITH {scope}, collect([node, score]) AS ranked "
        f"UNWIND ranked[..{fetch}] AS hit RETURN hit[0] AS node, hit[1] AS score }} "
    )


def text_hits(store: str, lucene: str, fetch: str | None, uses: tuple[str, ...] = ()) -> str:
    """The namespace's claims matching a Lucene query: its own fulltext index, or — while it has none —
    every one of its claims (score null), for the caller to judge; `fetch` None means no limit."""
    options = "" if fetch is None else f", {{limit: {fetch}}}"
    scope = ", ".join((store, *uses))
    return (
        f"CALL ({scope}) {{ WITH {scope} WHERE {store}.claim_indexes IS NOT NULL "
        f"CALL db.index.fulltext.queryNodes('claim_text_' + {store}.claim_indexes, {lucene}{options}) "
        "YIELD node, score RETURN node, score "
        "UNION ALL "
        + _ONLY_WITHOUT_INDEXES.format(scope=scope, store=store) +
        "MATCH (node:Claim {namespace: exact_ns}) RETURN node, null AS score } "
    )


def ensure(driver: Driver, namespace: str, database: str | None = None, *, minimum: int = EXACT_LIMIT) -> bool:
    """Give `namespace` its own indexes once it holds `minimum` claims; True when it has them.

    Idempotent and safe to race: index creation is `IF NOT EXISTS`, an equivalent index created by a
    concurrent caller is accepted, and the Store is marked only after both indexes are online."""
    records, _, _ = driver.execute_query(
        "MATCH (s:Store {namespace: $ns}) OPTIONAL MATCH (m:SchemaMeta {id: 'schema'}) "
        "RETURN s.claims AS claims, s.claim_indexes AS ready, m.embedding_dimension AS dim",
        ns=namespace, database_=database, routing_="r",
    )
    if not records:
        return False
    record = records[0]
    suffix = index_suffix(namespace)
    if record["ready"] == suffix:
        return True
    if int(record["claims"] or 0) < minimum or record["dim"] is None:
        return False
    label, dim = namespace_label(namespace), int(record["dim"])
    vector, text = vector_index_name(suffix), text_index_name(suffix)
    # DDL takes no parameters: the label is a validated namespace, the names are hex, dim an int.
    statements = (
        f"CREATE VECTOR INDEX {vector} IF NOT EXISTS FOR (c:`{label}`) ON c.embedding OPTIONS {{indexConfig: "
        f"{{`vector.dimensions`: {dim}, `vector.similarity_function`: 'cosine', "
        "`vector.quantization.enabled`: false}}",
        f"CREATE FULLTEXT INDEX {text} IF NOT EXISTS FOR (c:`{label}`) ON EACH [c.content]",
    )
    for statement in statements:
        try:
            driver.execute_query(statement, database_=database)
        except ClientError as exc:  # a concurrent caller created it between our check and ours
            if "EquivalentSchemaRule" not in (exc.code or "") and "already exists" not in str(exc):
                raise
    for name in (vector, text):
        driver.execute_query("CALL db.awaitIndex($name, $t)", name=name, t=INDEX_TIMEOUT_S, database_=database)
    driver.execute_query("MATCH (s:Store {namespace: $ns}) SET s.claim_indexes = $suffix",
                         ns=namespace, suffix=suffix, database_=database)
    return True


def ensure_quietly(driver: Driver, namespace: str, database: str | None = None) -> None:
    """`ensure` after a committed write: its failure must not turn a stored write into an error (the
    namespace stays on exact search, and the next write or the worker's next pass tries again)."""
    try:
        ensure(driver, namespace, database)
    except (Neo4jError, DriverError) as exc:
        _log.warning("claim indexes for namespace %r not created yet: %s", namespace, exc)


def unindexed(driver: Driver, database: str | None = None) -> list[str]:
    """Namespaces past the exact-search limit without their indexes (a database upgraded from shared
    indexes, or a failed `ensure`): the worker's pass gives them theirs."""
    records, _, _ = driver.execute_query(
        "MATCH (s:Store) WHERE s.claims >= $limit AND s.claim_indexes IS NULL RETURN s.namespace AS ns ORDER BY ns",
        limit=EXACT_LIMIT, database_=database, routing_="r")
    return [str(r["ns"]) for r in records if NAMESPACE_RE.fullmatch(str(r["ns"]))]


def drop(driver: Driver, namespace: str, database: str | None = None) -> None:
    """Drop the namespace's indexes (with the namespace itself: graph.lifecycle.maintenance)."""
    suffix = index_suffix(namespace)
    for name in (vector_index_name(suffix), text_index_name(suffix)):
        driver.execute_query(f"DROP INDEX {name} IF EXISTS", database_=database)  # hex name
