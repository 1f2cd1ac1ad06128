// Entity lookups by canonical name: query-to-entity linking in recall and `find_entities`.
CREATE INDEX entity_ns_canonical IF NOT EXISTS FOR (e:Entity) ON (e.namespace, e.canonical);
