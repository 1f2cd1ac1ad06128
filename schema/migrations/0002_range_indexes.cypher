// Lookups every write and recall makes: by namespace, by key within a namespace, by status and revision.
CREATE INDEX claim_namespace IF NOT EXISTS FOR (c:Claim) ON (c.namespace);
CREATE INDEX claim_ns_key IF NOT EXISTS FOR (c:Claim) ON (c.namespace, c.claim_key);
CREATE INDEX claim_status IF NOT EXISTS FOR (c:Claim) ON (c.status);
CREATE INDEX claim_revision IF NOT EXISTS FOR (c:Claim) ON (c.namespace, c.revision);
CREATE INDEX entity_namespace IF NOT EXISTS FOR (e:Entity) ON (e.namespace);
CREATE INDEX fact_namespace IF NOT EXISTS FOR (f:Fact) ON (f.namespace);
CREATE INDEX fact_status IF NOT EXISTS FOR (f:Fact) ON (f.status);
CREATE INDEX fact_revision IF NOT EXISTS FOR (f:Fact) ON (f.namespace, f.revision);
