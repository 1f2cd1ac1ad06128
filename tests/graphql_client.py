"""A GraphQL client over the real app with one API key: what a keyed caller of `/graphql` sees."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def keyed_graphql(runtime: Any, namespace: str, key: str,
                  rights: tuple[str, ...] = ("read", "write")) -> Iterator[Callable[[str], dict[str, Any]]]:
    """`gql(query) -> body` against an app whose only key is `key`, with `rights` in `namespace`.
    A body is an answer (200) or a request error (400); anything else fails the test."""
    from fastapi.testclient import TestClient

    from palimpsest.api.app import create_app
    from palimpsest.api.auth import KeyStore, hash_key

    keys = KeyStore.from_json(json.dumps([{"name": "a", "sha256": hash_key(key),
                                           "namespaces": {namespace: list(rights)}}]))
    with TestClient(create_app(runtime, keys=keys), base_url="http://localhost") as client:
        def gql(query: str) -> dict[str, Any]:
            resp = client.post("/graphql", json={"query": query}, headers={"Authorization": f"Bearer {key}"})
            assert resp.status_code in (200, 400), resp.text
            body: dict[str, Any] = resp.json()
            return body

        yield gql
