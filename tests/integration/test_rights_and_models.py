"""Who may change what a namespace's readers get or what the server spends, and which models it may call.

A policy decides every reader's ranking (a `minRelevance` of 1.0 empties every packet) and which models
every recall and the worker call; so registering one, making one the default and undoing an inference
need the `admin` right, not `write`. Models are the operator's: a policy or a caller naming one the
operator did not allow (or a path on the server's disk) is refused before anything is called.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key

pytestmark = pytest.mark.integration

ADMIN, WRITER, READER = "rights-admin", "rights-writer", "rights-reader"


@pytest.fixture
def client(runtime: Any, namespace: str) -> Iterator[TestClient]:
    keys = KeyStore.from_json(json.dumps([
        {"name": "admin", "sha256": hash_key(ADMIN), "namespaces": {namespace: ["read", "admin"]}},
        {"name": "writer", "sha256": hash_key(WRITER), "namespaces": {namespace: ["read", "write"]}},
        {"name": "reader", "sha256": hash_key(READER), "namespaces": {namespace: ["read"]}},
    ]))
    with TestClient(create_app(runtime, keys=keys)) as c:
        yield c


def gql(client: TestClient, query: str, key: str, **variables: Any) -> dict[str, Any]:
    resp = client.post("/graphql", json={"query": query, "variables": variables},
                       headers={"Authorization": f"Bearer {key}"})
    body: dict[str, Any] = resp.json()
    return body


def codes(body: dict[str, Any]) -> list[str | None]:
    return [e.get("extensions", {}).get("code") for e in body.get("errors") or []]


REGISTER = """mutation($p: PolicyInput!) { registerPolicy(input: $p) { version } }"""
SET_DEFAULT = """mutation($v: String!) { setDefaultPolicy(version: $v) { defaultPolicy } }"""
RECALL = """query($q: String!) { recall(query: $q) { policyVersion items { id } } }"""


def test_a_writer_cannot_register_a_policy_or_make_it_the_default(client: TestClient) -> None:
    gql(client, """mutation { ingest(input: {content: "Standup is at 9:30", source: "team"}) { revision } }""",
        WRITER)
    silent = {"version": "silent", "minRelevance": 1.0}
    assert codes(gql(client, REGISTER, WRITER, p=silent)) == ["FORBIDDEN"]
    assert codes(gql(client, REGISTER, READER, p=silent)) == ["FORBIDDEN"]
    assert gql(client, REGISTER, ADMIN, p=silent)["data"]["registerPolicy"] == {"version": "silent"}
    assert codes(gql(client, SET_DEFAULT, WRITER, v="silent")) == ["FORBIDDEN"]
    packet = gql(client, RECALL, READER, q="when is standup?")["data"]["recall"]
    assert packet["policyVersion"] == "default-v1" and packet["items"], "the readers' recall is unchanged"
    assert gql(client, SET_DEFAULT, ADMIN, v="silent")["data"]["setDefaultPolicy"] == {"defaultPolicy": "silent"}
