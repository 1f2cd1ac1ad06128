"""The connection: the driver, request deadlines, driver errors, and the local Neo4j server."""
