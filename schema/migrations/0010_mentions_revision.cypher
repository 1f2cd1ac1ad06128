// The revision of each MENTIONS edge (graph.entities writes it): a process holding a namespace's entity
// graph in memory (graph.mention_graph) catches up by reading only the edges written since.
CREATE INDEX mentions_revision IF NOT EXISTS FOR ()-[m:MENTIONS]-() ON (m.revision);
