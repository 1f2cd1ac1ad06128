"""Tenancy over every root field of the schema, derived from the schema itself: a field added later is
attacked without anyone remembering to list it.

For every query, mutation and subscription field, a call with the smallest valid arguments is sent
with tenant A's key against tenant B's namespace (FORBIDDEN), with no key (UNAUTHENTICATED) and
with a key of a third tenant that has no grants at all (FORBIDDEN). B's store revision must not
move, and no answer may contain B's text. Subscriptions go over a real socket.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    GraphQLType,
    Undefined,
    get_named_type,
)
from websockets.sync.client import connect
from websockets.typing import Subprotocol

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.graphql_schema import schema
from tests.conftest import wipe_namespace
from tests.reliability.conftest import serving

pytestmark = pytest.mark.integration

KEY_A, KEY_B, KEY_NONE = "tenancy-key-a", "tenancy-key-b", "tenancy-key-none"
SECRET = "B's secret launch date is the ninth of March"
SCALARS = {"String": '"x"', "ID": '"x"', "Int": "1", "Float": "1.0", "Boolean": "false"}


def literal(kind: GraphQLType) -> str:
    """The smallest valid GraphQL literal of `kind` (required input fields only)."""
    if isinstance(kind, GraphQLNonNull):
        return literal(kind.of_type)
    if isinstance(kind, GraphQLList):
        return "[" + literal(kind.of_type) + "]"
    if isinstance(kind, GraphQLEnumType):
        return str(next(iter(kind.values)))
    if isinstance(kind, GraphQLInputObjectType):
        required = {n: f for n, f in kind.fields.items()
                    if isinstance(f.type, GraphQLNonNull) and f.default_value is Undefined}
        return "{" + ", ".join(f"{n}: {literal(f.type)}" for n, f in sorted(required.items())) + "}"
    if isinstance(kind, GraphQLScalarType):
        return SCALARS.get(kind.name, '"x"')
    raise TypeError(f"no literal for {kind}")


def call(operation: str, name: str, field: GraphQLField) -> str:
    """`operation($ns: String) { name(required args…, namespace: $ns) { __typename } }`."""
    args = [f"{a}: {literal(arg.type)}" for a, arg in sorted(field.args.items())
            if a != "namespace" and isinstance(arg.type, GraphQLNonNull) and arg.default_value is Undefined]
    args.append("namespace: $ns")
    selection = "" if isinstance(get_named_type(field.type), GraphQLScalarType) else " { __typename }"
    return f"{operation}($ns: String) {{ {name}({', '.join(args)}){selection} }}"


def root_fields() -> list[tuple[str, str, GraphQLField]]:
    gql = schema._schema
    roots = [("query", gql.query_type), ("mutation", gql.mutation_type), ("subscription", gql.subscription_type)]
    return [(op, name, field) for op, kind in roots if kind is not None for name, field in sorted(kind.fields.items())]


FIELDS = root_fields()


@pytest.fixture(scope="module")
def tenants(driver: Any) -> Iterator[tuple[str, str]]:
    ns = (f"tn-{uuid.uuid4().hex[:10]}-a", f"tn-{uuid.uuid4().hex[:10]}-b")
    yield ns
    for name in ns:
        wipe_namespace(driver, name)


@pytest.fixture(scope="module")
def app(runtime: Any, tenants: tuple[str, str]) -> Any:
    ns_a, ns_b = tenants
    keys = KeyStore.from_json(json.dumps([
        {"name": "a", "sha256": hash_key(KEY_A), "namespaces": {ns_a: ["read", "write"]}},
        {"name": "b", "sha256": hash_key(KEY_B), "namespaces": {ns_b: ["read", "write"]}},
        {"name": "none", "sha256": hash_key(KEY_NONE), "namespaces": {}},
    ]))
    return create_app(runtime, keys=keys)


@pytest.fixture(scope="module")
def client(app: Any, tenants: tuple[str, str]) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://localhost") as c:
        body = post(c, 'mutation($ns: String) { ingest(input: {content: "' + SECRET + '", source: "b"}, '
                       'namespace: $ns) { revision } }', KEY_B, tenants[1])
        assert body["data"]["ingest"]["revision"] >= 1
        yield c


def post(client: TestClient, query: str, key: str | None, ns: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    resp = client.post("/graphql", json={"query": query, "variables": {"ns": ns}}, headers=headers)
    assert resp.status_code < 500, resp.text
    return resp.json()  # type: ignore[no-any-return]


def codes(body: dict[str, Any]) -> list[str | None]:
    return [e.get("extensions", {}).get("code") for e in body.get("errors") or []]


def b_revision(client: TestClient, ns_b: str) -> int:
    body = post(client, "query($ns: String) { stats(namespace: $ns) { revision } }", KEY_B, ns_b)
    return int(body["data"]["stats"]["revision"])


def test_every_root_field_takes_a_namespace() -> None:
    """The attack below covers a field only through its namespace argument: none may lack one."""
    assert [name for _, name, field in FIELDS if "namespace" not in field.args] == []
    assert len(FIELDS) >= 20


@pytest.mark.parametrize(("operation", "name", "field"), [f for f in FIELDS if f[0] != "subscription"],
                         ids=[f"{op}.{name}" for op, name, _ in FIELDS if op != "subscription"])
def test_another_tenants_namespace_is_refused(client: TestClient, tenants: tuple[str, str],
                                             operation: str, name: str, field: GraphQLField) -> None:
    _, ns_b = tenants
    query = call(operation, name, field)
    before = b_revision(client, ns_b)
    for key, expected in ((KEY_A, "FORBIDDEN"), (KEY_NONE, "FORBIDDEN"), (None, "UNAUTHENTICATED")):
        body = post(client, query, key, ns_b)
        assert codes(body) == [expected], (query, key, body)
        assert body.get("data") in (None, {}) or all(v is None for v in (body.get("data") or {}).values())
        assert SECRET not in json.dumps(body)
    assert b_revision(client, ns_b) == before, f"{name} changed B's store"


@pytest.mark.parametrize(("operation", "name", "field"), [f for f in FIELDS if f[0] == "subscription"],
                         ids=[f"{op}.{name}" for op, name, _ in FIELDS if op == "subscription"])
def test_subscriptions_refuse_another_tenant_over_a_socket(app: Any, client: TestClient, tenants: tuple[str, str],
                                                           operation: str, name: str, field: GraphQLField) -> None:
    _, ns_b = tenants
    query = call(operation, name, field)
    with serving(app) as port:
        for key, expected in ((KEY_A, "FORBIDDEN"), (KEY_NONE, "FORBIDDEN"), (None, "UNAUTHENTICATED")):
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            with connect(f"ws://127.0.0.1:{port}/graphql", subprotocols=[Subprotocol("graphql-transport-ws")],
                         additional_headers=headers, open_timeout=10) as ws:
                ws.send(json.dumps({"type": "connection_init"}))
                assert json.loads(ws.recv(timeout=10))["type"] == "connection_ack"
                ws.send(json.dumps({"id": "s1", "type": "subscribe",
                                    "payload": {"query": query, "variables": {"ns": ns_b}}}))
                answer = json.loads(ws.recv(timeout=10))
                raw = json.dumps(answer)
                assert SECRET not in raw
                if answer["type"] == "next":
                    errors = answer["payload"].get("errors") or []
                else:
                    assert answer["type"] == "error", answer
                    errors = answer["payload"]
                assert [e.get("extensions", {}).get("code") for e in errors] == [expected], (key, answer)


BAD_ARGUMENTS = [
    "query($ns: String) { entity(namespace: $ns) { id } }",
    'query($ns: String) { topEntities(by: "NAME", namespace: $ns) { id } }',
    'query($ns: String) { claims(filter: {status: "bogus"}, namespace: $ns) { edges { cursor } } }',
    'query($ns: String) { recall(query: "x", k: 100000, namespace: $ns) { storeRevision } }',
    'query($ns: String) { claims(first: -1, after: "forged", namespace: $ns) { edges { cursor } } }',
    'mutation($ns: String) { ingestMany(inputs: [], namespace: $ns) { revision } }',
    'mutation($ns: String) { retract(id: "", reason: "", namespace: $ns) { revision } }',
]


@pytest.mark.parametrize("query", BAD_ARGUMENTS)
def test_refusal_comes_before_argument_checks(client: TestClient, tenants: tuple[str, str], query: str) -> None:
    """A caller without rights learns nothing from argument errors: FORBIDDEN, whatever else is wrong."""
    assert codes(post(client, query, KEY_A, tenants[1])) == ["FORBIDDEN"]
