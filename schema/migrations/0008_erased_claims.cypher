// Tombstones of erased claims (graph/erase.py): a node of its own label keeps only id, namespace,
// revision, erased_at, erased_at_revision and reason, outside every Claim index. Ids stay unique, and
// replay and `check` find a namespace's tombstones by namespace and id.
CREATE CONSTRAINT erased_claim_id IF NOT EXISTS FOR (c:ErasedClaim) REQUIRE c.id IS UNIQUE;
CREATE INDEX erased_claim_namespace IF NOT EXISTS FOR (c:ErasedClaim) ON (c.namespace);
