// No read path asks these database-wide indexes: entity linking matches by (namespace, canonical), fact
// retrieval scores a namespace's own facts by exact cosine (graph/recall/fact_source.py), and an index
// spanning every namespace would make one tenant's answers depend on another's writes. Kept, they cost
// every entity and fact write an index update, disk, and a copy of erased names to clean.
DROP INDEX entity_embedding IF EXISTS;
DROP INDEX fact_embedding IF EXISTS;
DROP INDEX entity_names IF EXISTS
