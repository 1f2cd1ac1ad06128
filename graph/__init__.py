"""Everything that talks to Neo4j: the store, recall, temporal queries and the local server."""
