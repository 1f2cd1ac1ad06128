// Identity: every node kind has a unique id; one Store and one Policy version per namespace.
CREATE CONSTRAINT claim_id IF NOT EXISTS FOR (c:Claim) REQUIRE c.id IS UNIQUE;
CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE;
CREATE CONSTRAINT fact_id IF NOT EXISTS FOR (f:Fact) REQUIRE f.id IS UNIQUE;
CREATE CONSTRAINT store_namespace IF NOT EXISTS FOR (s:Store) REQUIRE s.namespace IS UNIQUE;
CREATE CONSTRAINT policy_version IF NOT EXISTS FOR (p:Policy) REQUIRE (p.namespace, p.version) IS UNIQUE;
CREATE CONSTRAINT packet_fingerprint IF NOT EXISTS FOR (p:PacketLog) REQUIRE (p.namespace, p.fingerprint) IS UNIQUE;
CREATE CONSTRAINT claim_idempotency IF NOT EXISTS FOR (c:Claim) REQUIRE (c.namespace, c.idempotency_key) IS UNIQUE;
CREATE CONSTRAINT commit_revision IF NOT EXISTS FOR (c:Commit) REQUIRE (c.namespace, c.revision) IS UNIQUE;
