"""The faces: the in-process Memory, the HTTP/GraphQL app, the CLI."""
