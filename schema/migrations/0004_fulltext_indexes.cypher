// Lexical candidates for hybrid recall, and name lookup for entities.
CREATE FULLTEXT INDEX claim_content IF NOT EXISTS FOR (c:Claim) ON EACH [c.content];
CREATE FULLTEXT INDEX entity_names IF NOT EXISTS FOR (e:Entity) ON EACH [e.name, e.canonical];
