"""What a client sees when it gets something wrong, over HTTP against the real store.

Every error carries `extensions.code` — parse and validation errors too — and, where one field is
at fault, `extensions.field` spelled as the client spelled it (`asOfRevision`, `validTo`, a JSON
argument's own keys verbatim), in nested inputs as at the top. An empty namespace is BAD_INPUT; an
omitted one is the key's only namespace (else `default`); no read ever creates a namespace. A
client's mistake is one JSON line in the server's log, not a traceback.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from graphql import GraphQLError

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.graphql_schema import log_errors
from palimpsest.api.observability import JsonFormatter

pytestmark = pytest.mark.integration

NS = "$NS"
ING = 'mutation { ingest(namespace: "$NS", input: {content: "a", source: "s"__EXTRA__}) { revision } }'

# (name, query, variables, code, field, words the message must hold)
CASES: list[tuple[str, str, dict[str, Any] | None, str, str | None, str]] = [
    ("syntax", '{ stats(namespace: "$NS") { revision ', None, "BAD_INPUT", None, "Syntax Error"),
    ("unknown-field", '{ stats(namespace: "$NS") { nope } }', None, "BAD_INPUT", "nope", "nope"),
    ("unknown-argument", '{ stats(namespace: "$NS", nope: 1) { revision } }', None, "BAD_INPUT", "nope", "nope"),
    ("missing-argument", '{ recall(namespace: "$NS") { storeRevision } }', None, "BAD_INPUT", "query", "required"),
    ("missing-input-field", 'mutation { ingest(namespace: "$NS", input: {content: "x"}) { revision } }', None,
     "BAD_INPUT", "source", "source"),
    ("unknown-input-field", ING.replace("__EXTRA__", ", nope: 1"), None, "BAD_INPUT", "nope", "nope"),
    ("variable-missing-field", 'mutation($i: ClaimInput!) { ingest(namespace: "$NS", input: $i) { revision } }',
     {"i": {"content": "x"}}, "BAD_INPUT", "source", "source"),
    ("variable-nested-type", 'mutation($i: [ClaimInput!]!) { ingestMany(namespace: "$NS", inputs: $i) { revision } }',
     {"i": [{"content": "x", "source": "s"}, {"content": "x", "source": "s", "tau": "fast"}]}, "BAD_INPUT", "tau",
     "tau"),
    ("aliases", "{ " + " ".join(f'a{i}: stats(namespace: "$NS") {{ revision }}' for i in range(21)) + " }", None,
     "LIMIT_EXCEEDED", None, "aliases"),
    ("empty-namespace", '{ stats(namespace: "") { revision } }', None, "BAD_INPUT", "namespace", "namespace"),
    ("empty-namespace-write", 'mutation { ingest(namespace: "", input: {content: "a", source: "s"}) { revision } }',
     None, "BAD_INPUT", "namespace", "namespace"),
    ("as-of-revision", '{ recall(query: "x", asOfRevision: -1, namespace: "$NS") { storeRevision } }', None,
     "BAD_INPUT", "asOfRevision", "asOfRevision must"),
    ("valid-at", '{ recall(query: "x", validAt: "soon", namespace: "$NS") { storeRevision } }', None,
     "BAD_INPUT", "validAt", "validAt is not"),
    ("filter", '{ claims(namespace: "$NS", filter: {recordedAfter: "x"}) { edges { cursor } } }', None,
     "BAD_INPUT", "filter.recordedAfter", "filter.recordedAfter"),
    ("whitespace-content", 'mutation { ingest(namespace: "$NS", input: {content: "   ", source: "s"}) { revision } }',
     None, "BAD_INPUT", "content", "content must not be empty or only whitespace"),
    ("window", ING.replace("__EXTRA__", ', validFrom: "2020", validTo: "2019"'), None, "BAD_INPUT", "validTo",
     "validTo must be after validFrom"),
    ("claim-key", ING.replace("__EXTRA__", ', claimKey: ""'), None, "BAD_INPUT", "claimKey", "claimKey must"),
    ("policy-knob", 'mutation { registerPolicy(namespace: "$NS", input: {version: "p1", maxK: 0}) { version } }', None,
     "BAD_INPUT", "maxK", "maxK:"),
    ("policy-json-keys-verbatim", 'mutation { registerPolicy(namespace: "$NS", input: {version: "p1", '
     'contradiction: {max_pairs_per_claim: 0}}) { version } }', None, "BAD_INPUT",
     "contradiction.max_pairs_per_claim", "contradiction.max_pairs_per_claim"),
    ("policy-model", 'mutation { registerPolicy(namespace: "$NS", input: {version: "p1", embeddingModel: "x"}) '
     '{ version } }', None, "BAD_INPUT", "embeddingModel", "embeddingModel"),
    ("set-default", 'mutation { setDefaultPolicy(namespace: "$NS", version: "nope") { defaultPolicy } }', None,
     "NOT_FOUND", "version", "nope"),
]

READS = [
    '{ recall(query: "x", namespace: "$NS") { storeRevision } }',
    '{ history(claimKey: "k", namespace: "$NS") { claim { id } } }',
    '{ stats(namespace: "$NS") { revision } }',
    '{ settings(namespace: "$NS") { defaultPolicy } }',
    '{ policies(namespace: "$NS") { version } }',
    '{ policy(version: "default-v1", namespace: "$NS") { version } }',
    '{ claims(namespace: "$NS") { edges { cursor } } }',
    '{ claim(id: "nope", namespace: "$NS") { id } }',
    '{ contradictions(namespace: "$NS") { score } }',
    '{ inferredLinks(namespace: "$NS") { newerId } }',
    '{ topEntities(namespace: "$NS") { id } }',
    '{ entity(name: "x", namespace: "$NS") { id } }',
    '{ replay(fingerprint: "nope", namespace: "$NS") { matches } }',
]


@pytest.fixture(scope="module")
def client(runtime: Any) -> Iterator[TestClient]:
    with TestClient(create_app(runtime, keys=KeyStore([])), base_url="http://localhost") as c:
        yield c


def post(client: TestClient, query: str, namespace: str, variables: dict[str, Any] | None = None,
         headers: dict[str, str] | None = None) -> dict[str, Any]:
    resp = client.post("/graphql", json={"query": query.replace(NS, namespace), "variables": variables or {}},
                       headers=headers or {})
    assert resp.status_code < 500, resp.text
    body: dict[str, Any] = resp.json()
    return body


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_every_error_is_coded_and_names_the_field_as_sent(
        client: TestClient, namespace: str, case: tuple[str, str, dict[str, Any] | None, str, str | None, str]) -> None:
    name, query, variables, code, field, words = case
    errors = post(client, query, namespace, variables).get("errors") or []
    assert errors, f"{name}: no error"
    ext = errors[0].get("extensions") or {}
    assert (ext.get("code"), ext.get("field")) == (code, field), (name, errors)
    assert words in errors[0]["message"], (name, errors[0]["message"])
    if code == "LIMIT_EXCEEDED":
        assert isinstance(ext.get("limit"), int), errors


def test_ingest_many_items_name_their_fields_in_camel_case(client: TestClient, namespace: str) -> None:
    body = post(client, 'mutation { ingestMany(namespace: "$NS", inputs: [{content: "ok", source: "s"}, '
                        '{content: "a", source: "s", validFrom: "soon"}, {content: "a", source: "s", '
                        'idempotencyKey: ""}]) { items { ok error } } }', namespace)
    items = body["data"]["ingestMany"]["items"]
    assert [i["ok"] for i in items] == [True, False, False]
    assert [(i["error"]["code"], i["error"]["field"]) for i in items[1:]] == [
        ("BAD_INPUT", "validFrom"), ("BAD_INPUT", "idempotencyKey")]
    assert items[1]["error"]["message"].startswith("validFrom is not")
    assert "_" not in items[2]["error"]["message"].split(" ")[0]


def test_reads_of_an_unknown_namespace_never_create_it(client: TestClient, namespace: str, runtime: Any) -> None:
    for query in READS:
        body = post(client, query, namespace)
        for error in body.get("errors") or []:
            assert error["extensions"]["code"] in {"NOT_FOUND", "BAD_INPUT"}, (query, error)
    records, _, _ = runtime.driver.execute_query(
        "MATCH (n) WHERE n.namespace = $ns RETURN count(n) AS n", ns=namespace)
    assert records[0]["n"] == 0, "a read wrote to the namespace"
    stats = post(client, '{ stats(namespace: "$NS") { revision } }', namespace)
    assert stats["errors"][0]["extensions"] == {"code": "NOT_FOUND", "field": "namespace"}


def test_an_omitted_namespace_is_the_keys_only_one(runtime: Any, namespace: str) -> None:
    keys = KeyStore.from_json(json.dumps([{"name": "a", "sha256": hash_key("k-a"),
                                           "namespaces": {namespace: ["read", "write"]}}]))
    headers = {"Authorization": "Bearer k-a"}
    with TestClient(create_app(runtime, keys=keys), base_url="http://localhost") as c:
        wrote = post(c, 'mutation { ingest(input: {content: "a", source: "s"}) { revision } }', namespace,
                     headers=headers)
        assert wrote.get("data", {}).get("ingest", {}).get("revision") == 1, wrote
        stats = post(c, "{ stats { namespace revision } }", namespace, headers=headers)
        assert stats["data"]["stats"] == {"namespace": namespace, "revision": 1}
        empty = post(c, '{ stats(namespace: "") { revision } }', namespace, headers=headers)
        assert empty["errors"][0]["extensions"] == {"code": "BAD_INPUT", "field": "namespace"}


@pytest.fixture
def service_log() -> Iterator[io.StringIO]:
    """What the service's JSON log (and strawberry's own logger, which must stay silent) receive."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    loggers = [logging.getLogger("palimpsest"), logging.getLogger("strawberry.execution")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
    try:
        yield out
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)


def test_a_client_error_logs_one_json_line(client: TestClient, namespace: str, service_log: io.StringIO) -> None:
    post(client, '{ recall(query: "x", asOfRevision: -1, namespace: "$NS") { storeRevision } }', namespace)
    post(client, '{ stats(namespace: "$NS") { nope } }', namespace)
    lines = [json.loads(line) for line in service_log.getvalue().splitlines() if '"graphql error"' in line]
    assert len(lines) == 2, service_log.getvalue()
    first, second = lines
    assert (first["level"], first["code"], first["field"], first["path"]) == ("info", "BAD_INPUT", "asOfRevision",
                                                                            "recall")
    assert (second["code"], second["field"]) == ("BAD_INPUT", "nope")
    assert "Traceback" not in service_log.getvalue() and "traceback" not in first


def test_an_internal_error_logs_its_traceback_in_one_line(service_log: io.StringIO) -> None:
    try:
        raise RuntimeError("a bug deep down")
    except RuntimeError as exc:
        error = GraphQLError("a bug deep down", path=["stats"], original_error=exc)
    log_errors([error])
    lines = service_log.getvalue().splitlines()
    assert len(lines) == 1, lines
    line = json.loads(lines[0])
    assert (line["level"], line["code"], line["message"], line["detail"]) == (
        "error", "INTERNAL", "Internal error.", "a bug deep down")
    assert "Traceback" in line["traceback"] and "test_an_internal_error" in line["traceback"]
