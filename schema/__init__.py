"""Pydantic models, typed errors, limits and the Neo4j schema migrations."""
