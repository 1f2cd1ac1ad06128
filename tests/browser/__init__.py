"""Browser tests: GraphiQL and Neo4j Browser in headless Chromium."""
