"""The knowledge graph: entities, facts, mentions, Personalized PageRank and GDS."""
