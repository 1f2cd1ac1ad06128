"""Fuzz the GraphQL arguments: whatever a client sends, no 500, no uncoded resolver error, no leak."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from palimpsest.api.app import create_app

pytestmark = pytest.mark.integration

text = st.one_of(st.none(), st.text(max_size=300), st.sampled_from(["", " ", "default", "2026-01-01T00:00:00Z",
                                                                     "x" * 9000, "\x00", "' OR 1=1 //"]))
ints = st.one_of(st.none(), st.integers(min_value=-(2**40), max_value=2**40))
floats = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False))  # JSON has no inf/nan


@pytest.fixture(scope="module")
def client(runtime: Any) -> Iterator[TestClient]:
    from palimpsest.api.auth import KeyStore

    with TestClient(create_app(runtime, keys=KeyStore([])), base_url="http://localhost") as c:
        yield c


def check(client: TestClient, query: str, variables: dict[str, Any]) -> None:
    resp = client.post("/graphql", json={"query": query, "variables": variables})
    assert resp.status_code < 500, resp.text
    body = resp.json()
    dumped = json.dumps(body)
    assert "Traceback" not in dumped and "MATCH (" not in dumped
    for err in body.get("errors") or []:
        # Every error carries a stable code; INTERNAL is the masked bug, which no input may cause.
        code = (err.get("extensions") or {}).get("code")
        assert code and code != "INTERNAL", err


FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(q=text, k=ints, rev=ints, at=text, pol=text, ns=text)
def test_recall_arguments(client: TestClient, q: Any, k: Any, rev: Any, at: Any, pol: Any, ns: Any) -> None:
    check(client, """query($q: String!, $k: Int, $rev: Int, $at: String, $pol: String, $ns: String) {
        recall(query: $q, k: $k, asOfRevision: $rev, validAt: $at, policyVersion: $pol, namespace: $ns) {
        fingerprint items { id } } }""", {"q": q, "k": k, "rev": rev, "at": at, "pol": pol, "ns": ns})


@FUZZ
@given(content=text, source=text, key=text, tau=floats, vf=text, vt=text, meta=st.one_of(
    st.none(), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3), st.just("not-an-object")))
def test_ingest_arguments(client: TestClient, content: Any, source: Any, key: Any, tau: Any, vf: Any, vt: Any,
                          meta: Any) -> None:
    check(client, """mutation($i: [ClaimInput!]!) { ingestMany(inputs: $i, namespace: "fuzz-ingest") {
        revision items { ok error } } }""", {"i": [{"content": content, "source": source, "claimKey": key,
                                                    "tau": tau, "validFrom": vf, "validTo": vt, "metadata": meta}]})


@FUZZ
@given(first=ints, after=text, status=text, at=text, key=text)
def test_claims_arguments(client: TestClient, first: Any, after: Any, status: Any, at: Any, key: Any) -> None:
    check(client, """query($first: Int!, $after: String, $f: ClaimFilterInput) {
        claims(first: $first, after: $after, filter: $f, namespace: "fuzz-ingest") { edges { cursor } } }""",
          {"first": first, "after": after, "f": {"status": status, "validAt": at, "claimKey": key}})


def teardown_module() -> None:
    from neo4j import GraphDatabase

    from tests.conftest import _HANDLE, wipe_namespace

    if _HANDLE is not None:
        with GraphDatabase.driver(_HANDLE.uri, auth=_HANDLE.auth) as drv:
            wipe_namespace(drv, "fuzz-ingest")
