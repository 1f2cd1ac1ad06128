"""End to end over HTTP against the ASGI app and the real Neo4j: queries, mutations, errors, tenancy, limits."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from palimpsest.api import graphiql
from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.memory import Memory

pytestmark = pytest.mark.integration

KEY_A, KEY_B, KEY_RO = "key-a-secret", "key-b-secret", "key-readonly-secret"


@pytest.fixture
def tenants(namespace: str, runtime: Any) -> Iterator[tuple[str, str]]:
    other = namespace + "-b"
    yield namespace, other
    from tests.conftest import wipe_namespace

    wipe_namespace(runtime.driver, other)


@pytest.fixture
def client(runtime: Any, tenants: tuple[str, str]) -> Iterator[TestClient]:
    ns_a, ns_b = tenants
    keys = KeyStore.from_json(json.dumps([
        {"name": "a", "sha256": hash_key(KEY_A), "namespaces": {ns_a: ["read", "write", "admin"]}},
        {"name": "b", "sha256": hash_key(KEY_B), "namespaces": {ns_b: ["read", "write"]}},
        {"name": "ro", "sha256": hash_key(KEY_RO), "namespaces": {ns_a: ["read"]}},
    ]))
    with TestClient(create_app(runtime, keys=keys), base_url="http://localhost") as c:
        yield c


def gql(client: TestClient, query: str, key: str | None = KEY_A, **variables: Any) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    resp = client.post("/graphql", json={"query": query, "variables": variables}, headers=headers)
    assert resp.status_code in (200, 400), resp.text
    body: dict[str, Any] = resp.json()
    return body


def codes(body: dict[str, Any]) -> list[str]:
    return [e.get("extensions", {}).get("code") for e in body.get("errors") or []]


INGEST = """mutation($input: ClaimInput!) { ingest(input: $input) { revision items { ok id supersedes duplicate } } }"""
RECALL = """query($q: String!, $k: Int, $asOf: Int) { recall(query: $q, k: $k, asOfRevision: $asOf) {
  storeRevision policyVersion fingerprint servedAt projectionsSeq referenceTime
  items { id content rank score supersedes freshness { decay status } supersededClaim { id content status } }
  hidden { superseded retracted } completeness { itemsTruncated } edges { kind } contradictions { itemId }
  beliefs { id } } }"""


def test_ingest_recall_and_nested_loader(client: TestClient) -> None:
    first = gql(client, INGEST, input={"content": "VPN gateway is vpn-1", "source": "net", "claimKey": "vpn"})
    assert not first.get("errors"), first
    second = gql(client, INGEST, input={"content": "VPN gateway is vpn-2", "source": "net", "claimKey": "vpn"})
    old_id = first["data"]["ingest"]["items"][0]["id"]
    assert second["data"]["ingest"]["items"][0]["supersedes"] == old_id
    packet = gql(client, RECALL, q="which VPN gateway do we use?")["data"]["recall"]
    item = packet["items"][0]
    assert item["content"] == "VPN gateway is vpn-2" and packet["hidden"]["superseded"] == 1
    assert item["supersededClaim"] == {"id": old_id, "content": "VPN gateway is vpn-1", "status": "superseded"}
    assert packet["storeRevision"] == 2 and len(packet["fingerprint"]) == 64
    again = gql(client, RECALL, q="which VPN gateway do we use?")["data"]["recall"]
    assert again["fingerprint"] == packet["fingerprint"]
    as_of = gql(client, RECALL, q="which VPN gateway do we use?", asOf=1)["data"]["recall"]
    assert as_of["items"][0]["content"] == "VPN gateway is vpn-1"


def test_nested_claims_cost_one_round_trip(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(4):
        for v in (1, 2):
            gql(client, INGEST, input={"content": f"Shard {i} primary is node-{i}-{v}", "source": "db",
                                       "claimKey": f"shard{i}"})
    calls: list[int] = []
    real = Memory.claims_by_ids

    def counting(self: Memory, ids: Any) -> Any:
        calls.append(len(list(ids)))
        return real(self, ids)

    monkeypatch.setattr(Memory, "claims_by_ids", counting)
    packet = gql(client, RECALL, q="shard primary node", k=4)["data"]["recall"]
    assert len(packet["items"]) == 4 and all(i["supersededClaim"] for i in packet["items"])
    assert calls == [4]


def test_ingest_many_history_claims_retract_stats(client: TestClient) -> None:
    res = gql(client, """mutation($in: [ClaimInput!]!) { ingestMany(inputs: $in) {
        revision items { index ok id error } } }""", **{"in": [
        {"content": "Contract term is 12 months", "source": "legal", "claimKey": "term"},
        {"content": "", "source": "legal"},
        {"content": "Contract term is 24 months", "source": "legal", "claimKey": "term"},
    ]})["data"]["ingestMany"]
    assert [i["ok"] for i in res["items"]] == [True, False, True]
    assert res["items"][1]["error"]["field"] == "content"
    ids = [res["items"][0]["id"], res["items"][2]["id"]]
    hist = gql(client, """{ history(claimKey: "term") { claim { id status } events { kind revision } } }""")
    assert [h["claim"]["id"] for h in hist["data"]["history"]] == ids
    page1 = gql(client, """{ claims(first: 1) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }""")
    conn = page1["data"]["claims"]
    assert conn["pageInfo"]["hasNextPage"] and conn["edges"][0]["node"]["id"] == ids[0]
    page2 = gql(client, """query($a: String) { claims(first: 5, after: $a, filter: {status: "current"}) {
        edges { node { id status } } pageInfo { hasNextPage } } }""", a=conn["pageInfo"]["endCursor"])
    assert [e["node"]["id"] for e in page2["data"]["claims"]["edges"]] == [ids[1]]
    ret = gql(client, """mutation($id: String!) { retract(id: $id, reason: "drafting error") { revision restored } }""",
              id=ids[1])
    assert ret["data"]["retract"]["restored"] == ids[0]
    one = gql(client, """query($id: String!) { claim(id: $id) { status content } }""", id=ids[0])
    assert one["data"]["claim"]["status"] == "current"
    stats = gql(client, "{ stats { revision projectionsSeq claimsByStatus { status count } } }")["data"]["stats"]
    assert {s["status"]: s["count"] for s in stats["claimsByStatus"]} == {"current": 1, "retracted": 1}


def test_policies_and_replay(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    # The app's settings are read when it is built; a live app is reconfigured through app.state.settings.
    monkeypatch.setattr(client.app.state, "settings", replace(client.app.state.settings, log_packets=True))
    reg = gql(client, """mutation { registerPolicy(input: {version: "p2", k: 3}) { version k maxK } }""")
    assert reg["data"]["registerPolicy"] == {"version": "p2", "k": 3, "maxK": 50}
    clash = gql(client, """mutation { registerPolicy(input: {version: "p2", k: 4}) { version } }""")
    assert codes(clash) == ["CONFLICT"]
    assert [p["version"] for p in gql(client, "{ policies { version } }")["data"]["policies"]] == ["default-v1", "p2"]
    graph = gql(client, """mutation { registerPolicy(input: {version: "g1", graphExpansion: "ppr", graphWeight: 0.5,
        pprSeeds: 4, pprMaxDegree: 20, pprProtectTop: 1}) { graphExpansion graphWeight pprSeeds pprMaxDegree
        pprProtectTop } }""")["data"]["registerPolicy"]
    assert graph == {"graphExpansion": "ppr", "graphWeight": 0.5, "pprSeeds": 4, "pprMaxDegree": 20, "pprProtectTop": 1}
    bad = gql(client, """mutation { registerPolicy(input: {version: "g2", pprMaxDegree: 0}) { version } }""")
    assert codes(bad) == ["BAD_INPUT"]
    gql(client, INGEST, input={"content": "Standup is at 9:30", "source": "team"})
    fp = gql(client, RECALL, q="when is standup?")["data"]["recall"]["fingerprint"]
    gql(client, INGEST, input={"content": "Retro is on Fridays", "source": "team"})
    rep = gql(client, """query($f: String!) { replay(fingerprint: $f) { matches recomputedFingerprint
        packet { fingerprint } } }""", f=fp)["data"]["replay"]
    assert rep["matches"] and rep["packet"]["fingerprint"] == fp == rep["recomputedFingerprint"]


def test_error_codes_name_the_field(client: TestClient) -> None:
    bad = gql(client, INGEST, input={"content": "x", "source": "s", "tau": -1})
    assert codes(bad) == ["BAD_INPUT"] and bad["errors"][0]["extensions"]["field"] == "tau"
    gql(client, INGEST, input={"content": "something", "source": "s"})
    big_k = gql(client, RECALL, q="x", k=500)
    assert codes(big_k) == ["LIMIT_EXCEEDED"] and big_k["errors"][0]["extensions"]["limit"] == 50
    missing = gql(client, """{ claim(id: "nope") { id } }""")
    assert codes(missing) == ["NOT_FOUND"]
    assert "MATCH" not in json.dumps(missing) and "Traceback" not in json.dumps(missing)


def test_tenancy_every_way_in(client: TestClient, tenants: tuple[str, str]) -> None:
    _, ns_b = tenants
    b_claim = gql(client, INGEST, key=KEY_B, input={"content": "B's secret roadmap", "source": "b"})
    b_id = b_claim["data"]["ingest"]["items"][0]["id"]
    gql(client, INGEST, key=KEY_A, input={"content": "A's public note", "source": "a"})
    attempts = [
        ("recall", """query($ns: String) { recall(query: "roadmap", namespace: $ns) { items { id } } }"""),
        ("claims", """query($ns: String) { claims(namespace: $ns) { edges { node { id } } } }"""),
        ("history", """query($ns: String) { history(claimKey: "x", namespace: $ns) { claim { id } } }"""),
        ("stats", """query($ns: String) { stats(namespace: $ns) { revision } }"""),
        ("policies", """query($ns: String) { policies(namespace: $ns) { version } }"""),
        ("claim", 'query($ns: String) { claim(id: "' + b_id + '", namespace: $ns) { id } }'),
        ("ingest", 'mutation($ns: String) { ingest(input: {content: "x", source: "y"}, namespace: $ns) { revision } }'),
        ("retract", 'mutation($ns: String) { retract(id: "' + b_id + '", reason: "r", namespace: $ns) { revision } }'),
    ]
    for name, query in attempts:
        assert codes(gql(client, query, key=KEY_A, ns=ns_b)) == ["FORBIDDEN"], name
    # An id from B looked up in A's own namespace is simply not there.
    assert codes(gql(client, """query($id: String!) { claim(id: $id) { id } }""", key=KEY_A, id=b_id)) == ["NOT_FOUND"]
    # A's recall never shows B's claims.
    items = gql(client, """{ recall(query: "secret roadmap") { items { content } } }""", key=KEY_A)
    assert all("B's" not in i["content"] for i in items["data"]["recall"]["items"])
    # Read-only key cannot write; no key and a wrong key are unauthenticated.
    assert codes(gql(client, INGEST, key=KEY_RO, input={"content": "x", "source": "y"})) == ["FORBIDDEN"]
    assert codes(gql(client, "{ stats { revision } }", key=None)) == ["UNAUTHENTICATED"]
    assert codes(gql(client, "{ stats { revision } }", key="wrong")) == ["UNAUTHENTICATED"]
    assert gql(client, "{ stats { revision } }", key=KEY_RO)["data"]["stats"]["revision"] >= 1


def test_limits_depth_aliases_fields_and_body(client: TestClient) -> None:
    gql(client, INGEST, input={"content": "limit probe", "source": "s"})
    aliases = " ".join(f"a{i}: stats {{ revision }}" for i in range(25))
    assert "aliases" in json.dumps(gql(client, "{ " + aliases + " }"))
    fine = "{ recall(query: \"x\") { " + " ".join(f"f{i}: storeRevision" for i in range(19)) + " } }"
    assert not gql(client, fine).get("errors")
    wide = "{ stats { " + " revision" * 450 + " } }"
    assert codes(gql(client, wide)) == ["LIMIT_EXCEEDED"]
    huge = {"query": "{ stats { revision } }", "variables": {"pad": "x" * (3 * 1024 * 1024)}}
    resp = client.post("/graphql", content=json.dumps(huge), headers={
        "Authorization": f"Bearer {KEY_A}", "content-type": "application/json"})
    assert resp.status_code == 413 and resp.json()["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"


def test_internal_errors_are_masked(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: Memory) -> Any:
        raise RuntimeError("MATCH (secret:Cypher) password=hunter2")

    monkeypatch.setattr(Memory, "stats", boom)
    body = gql(client, "{ stats { revision } }")
    assert body["errors"][0]["message"] == "Internal error." and "hunter2" not in json.dumps(body)
    assert codes(body) == ["INTERNAL"]
    # A real outage (nothing listening) answering UNAVAILABLE is tests/reliability/test_graphql_hostile.py's.


def test_metrics_health_and_request_id(client: TestClient) -> None:
    gql(client, INGEST, input={"content": "metrics probe", "source": "s"})
    gql(client, RECALL, q="probe")
    resp = client.get("/health", headers={"x-request-id": "abc123"})
    assert resp.headers["x-request-id"] == "abc123"
    assert resp.json()["worker"]["max_lag_revisions"] >= 0
    text = client.get("/metrics", headers={"Authorization": f"Bearer {KEY_A}"}).text
    assert "palimpsest_recall_seconds_count 1.0" in text
    assert 'palimpsest_ingested_claims_total{namespace=' in text
    assert "namespace=" not in client.get("/metrics").text  # tenant names only for a key (tests/reliability)
    assert "palimpsest_http_request_seconds_bucket" in text and "palimpsest_worker_lag_revisions" in text


def test_graphiql_page_loads_only_pinned_files_from_this_server(client: TestClient) -> None:
    """No CDN, no undeclared globals (strawberry's page used js-cookie's `Cookies`), every file checked.

    tests/browser runs the page in Chromium; this checks what it references, file by file.
    """
    resp = client.get("/graphql", headers={"accept": "text/html"})
    assert resp.status_code == 200, f"GraphiQL's files are missing (run make install): {resp.text[:200]}"
    page = resp.text
    assert "http://" not in page and "https://" not in page and "unpkg" not in page
    assert "Cookies" not in page
    refs = re.findall(r'(?:src|href)="([^"]+)" integrity="(sha384-[^"]+)"', page)
    assert sorted(url for url, _ in refs) == sorted(f"{graphiql.ASSET_PREFIX}/{name}" for name in graphiql.FILES)
    for url, sri in refs:
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert "sha384-" + base64.b64encode(hashlib.sha384(asset.content).digest()).decode() == sri, url
    assert 'namespace: \\"demo\\"' in page  # docs/GRAPHQL.md's first query opens as the first tab
    assert client.get(f"{graphiql.ASSET_PREFIX}/.complete").status_code == 404  # only the pinned names
    root = client.get("/", follow_redirects=False)
    assert root.status_code == 307 and root.headers["location"] == "/graphql"
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404  # CDN pages


def test_neo4j_browser_style_is_served_for_remote_style_commands(client: TestClient) -> None:
    grass = client.get("/neo4j-browser.grass", headers={"origin": "http://127.0.0.1:7474"})
    assert grass.status_code == 200 and grass.headers["access-control-allow-origin"] == "*"
    assert "node.Claim {\n  caption: '{content}';" in grass.text and "caption: '{name}'" in grass.text
    preflight = client.options("/neo4j-browser.grass", headers={"origin": "http://127.0.0.1:7474",
                                                                 "access-control-request-method": "GET"})
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-private-network"] == "true"


def _plant_contradiction(runtime: Any, ns: str, a: str, b: str, revision: int) -> None:
    """Write an edge the way the background worker does, to test the read side on its own: in the
    transaction that moves the Store's projections stamp, which is what subscribers watch."""
    runtime.driver.execute_query(
        "MATCH (x:Claim {namespace: $ns, id: $a}), (y:Claim {namespace: $ns, id: $b}), (s:Store {namespace: $ns}) "
        "CREATE (x)-[:CONTRADICTS {score: 0.9, method: 'heuristic', detected_at: datetime(), revision: $rev}]->(y) "
        "SET s.projections_at = datetime.transaction()",
        ns=ns, a=a, b=b, rev=revision)


def test_contradictions_query_and_subscription(client: TestClient, runtime: Any, tenants: tuple[str, str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client.app.state, "settings", replace(client.app.state.settings, subscription_poll_s=0.1))
    ns_a, ns_b = tenants
    ids = []
    for text in ("The API is healthy", "The API is down", "Deploys are allowed", "Deploys are prohibited"):
        ids.append(gql(client, INGEST, input={"content": text, "source": "ops"})["data"]["ingest"]["items"][0]["id"])
    _plant_contradiction(runtime, ns_a, ids[1], ids[0], 2)
    listed = gql(client, "{ contradictions { claim { id } other { id content } method revision } }")
    assert listed["data"]["contradictions"] == [
        {"claim": {"id": ids[1]}, "other": {"id": ids[0], "content": "The API is healthy"}, "method": "heuristic",
         "revision": 2}]
    headers = {"Authorization": f"Bearer {KEY_A}"}
    with client.websocket_connect("/graphql", subprotocols=["graphql-transport-ws"], headers=headers) as ws:
        ws.send_json({"type": "connection_init"})
        assert ws.receive_json()["type"] == "connection_ack"
        ws.send_json({"id": "1", "type": "subscribe", "payload": {
            "query": "subscription { contradictions { claim { content } other { content } revision } }"}})
        first = ws.receive_json()
        assert first["type"] == "next" and first["payload"]["data"]["contradictions"]["revision"] == 2
        _plant_contradiction(runtime, ns_a, ids[3], ids[2], 4)
        second = ws.receive_json()
        assert second["payload"]["data"]["contradictions"]["claim"]["content"] == "Deploys are prohibited"
        ws.send_json({"id": "1", "type": "complete"})
    with client.websocket_connect("/graphql", subprotocols=["graphql-transport-ws"], headers=headers) as ws:
        ws.send_json({"type": "connection_init"})
        ws.receive_json()
        ws.send_json({"id": "2", "type": "subscribe", "payload": {
            "query": "subscription($ns: String) { contradictions(namespace: $ns) { revision } }",
            "variables": {"ns": ns_b}}})
        denied = ws.receive_json()
        assert denied["type"] in {"next", "error"}
        errors = denied["payload"]["errors"] if denied["type"] == "next" else denied["payload"]
        assert errors[0]["extensions"]["code"] == "FORBIDDEN"


def test_database_down_is_unavailable_for_real(embedder: Any) -> None:
    """A driver pointed at a port where no Neo4j listens: the API answers UNAVAILABLE and /health 503."""
    import socket

    from neo4j import GraphDatabase

    from palimpsest.api.runtime import Runtime
    from palimpsest.graph.db.connection import Neo4jSettings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = f"bolt://127.0.0.1:{port}"
    drv = GraphDatabase.driver(uri, connection_timeout=1, connection_acquisition_timeout=2)
    rt = Runtime(Neo4jSettings(uri=uri), drv, embedder, schema_version=0)
    try:
        with TestClient(create_app(rt, keys=KeyStore([])), base_url="http://localhost") as c:
            body = c.post("/graphql", json={"query": "{ stats { revision } }"}).json()
            assert codes(body) == ["UNAVAILABLE"]
            assert c.get("/health").status_code == 503
    finally:
        drv.close()


def test_in_process_worker_surfaces_contradictions_in_packets(runtime: Any, namespace: str) -> None:
    import time

    with TestClient(create_app(runtime, keys=KeyStore([]), worker=True), base_url="http://localhost") as c:
        def q(query: str, **variables: Any) -> dict[str, Any]:
            body: dict[str, Any] = c.post("/graphql", json={"query": query, "variables": variables}).json()
            return body

        q(INGEST.replace("ingest(input: $input)", "ingest(input: $input, namespace: $ns)").replace(
            "($input: ClaimInput!)", "($input: ClaimInput!, $ns: String)"),
          input={"content": "The checkout-api service is healthy", "source": "monitor"}, ns=namespace)
        q(INGEST.replace("ingest(input: $input)", "ingest(input: $input, namespace: $ns)").replace(
            "($input: ClaimInput!)", "($input: ClaimInput!, $ns: String)"),
          input={"content": "The checkout-api service is down", "source": "pager"}, ns=namespace)
        deadline = time.monotonic() + 120
        stats: dict[str, Any] = {}
        while time.monotonic() < deadline:
            stats = q("query($ns: String) { stats(namespace: $ns) { revision projectionsSeq } }", ns=namespace)
            if stats["data"]["stats"]["projectionsSeq"] == stats["data"]["stats"]["revision"]:
                break
            time.sleep(0.2)
        worker = c.app.state.worker  # type: ignore[attr-defined]
        from palimpsest.graph.projections import pending_namespaces

        assert stats["data"]["stats"]["projectionsSeq"] == 2, (
            f"worker passes={worker.passes} errors={worker.errors} last_error={worker.last_error} "
            f"pending={pending_namespaces(runtime.driver)}")
        packet = q("""query($ns: String) { recall(query: "is checkout-api up?", namespace: $ns) {
            projectionsSeq items { id content } contradictions { itemId other { content } method } } }""",
                   ns=namespace)["data"]["recall"]
        assert packet["projectionsSeq"] == 2
        others = {c["other"]["content"] for c in packet["contradictions"]}
        assert others == {"The checkout-api service is healthy", "The checkout-api service is down"}


def test_entity_graph_fields(client: TestClient, runtime: Any, tenants: tuple[str, str]) -> None:
    ns_a, ns_b = tenants
    for text in ("checkout-api calls payments-db for every order.",
                 "payments-db replicates to ledger-store nightly.",
                 "checkout-api and search-api share the edge cache."):
        gql(client, INGEST, input={"content": text, "source": "arch"})
    mem = Memory(runtime, ns_a)
    mem.run_projections()
    mem.refresh_pagerank(force=True)
    top = gql(client, "{ topEntities(first: 10) { id name pagerank } }")["data"]["topEntities"]
    names = [e["name"] for e in top]
    assert "payments-db" in names and all(e["pagerank"] is not None for e in top)
    assert [(e["id"], e["name"], e["pagerank"]) for e in top] == [
        (e.id, e.name, e.pagerank) for e in mem.top_entities(10)]
    by_name = gql(client, """{ entity(name: "checkout-api") { id name canonical aliases type weight
        neighbors(first: 5) { id name weight } } }""")
    ent = by_name["data"]["entity"]
    assert {n["name"] for n in ent["neighbors"]} >= {"payments-db", "search-api"}
    # The GraphQL entity is the Memory one field for field; only a neighbour has a weight.
    detail = mem.entity(ent["id"])
    assert (ent["name"], ent["canonical"], ent["aliases"], ent["type"], ent["weight"]) == (
        detail.name, detail.canonical, detail.aliases, detail.type, None)
    assert [(n["id"], n["weight"]) for n in ent["neighbors"]] == [
        (n.id, n.weight) for n in mem.entity_neighbours(ent["id"], first=5)]
    by_id = gql(client, """query($id: String!) { entity(id: $id) { id name } }""", id=ent["id"])
    assert by_id["data"]["entity"] == {"id": ent["id"], "name": "checkout-api"}
    ledger = next(e for e in top if e["name"] == "ledger-store")
    path = gql(client, """query($a: String!, $b: String!) { path(from: $a, to: $b, maxHops: 3) { id name weight } }""",
               a=ent["id"], b=ledger["id"])["data"]["path"]
    assert [p["name"] for p in path] == ["checkout-api", "payments-db", "ledger-store"]
    assert [p["id"] for p in path] == [e.id for e in mem.entity_path(ent["id"], ledger["id"], 3)]
    assert all(p["weight"] is None for p in path)
    assert codes(gql(client, """query($ns: String) { topEntities(namespace: $ns) { id } }""", ns=ns_b)) == [
        "FORBIDDEN"]
    assert codes(gql(client, "{ entity { id } }")) == ["BAD_INPUT"]
