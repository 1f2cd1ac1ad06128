"""Issue 13: the `contradictions` subscription through a real uvicorn (`palimpsest serve`'s settings)
over a real socket with graphql-transport-ws — not Starlette's in-process client. Before the
`websockets` dependency, uvicorn answered the upgrade "400 Unsupported upgrade request".
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.worker import run_once
from tests.reliability.conftest import serving

pytestmark = pytest.mark.integration

KEY = "ws-socket-key"
INGEST = "mutation($i: ClaimInput!) { ingest(input: $i) { revision } }"
SUBSCRIBE = """subscription($after: Int!) { contradictions(afterRevision: $after) {
  claim { content } other { content } method revision } }"""


def test_contradictions_subscription_over_a_real_socket(runtime: Any, namespace: str) -> None:
    keys = KeyStore.from_json(json.dumps([{"name": "ws", "sha256": hash_key(KEY),
                                           "namespaces": {namespace: ["read", "write"]}}]))
    auth = {"Authorization": f"Bearer {KEY}"}
    with serving(create_app(runtime, keys=keys)) as port, \
            connect(f"ws://127.0.0.1:{port}/graphql", subprotocols=["graphql-transport-ws"],
                    additional_headers=auth, open_timeout=10) as ws:
        assert ws.subprotocol == "graphql-transport-ws"
        ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(ws.recv(timeout=10))["type"] == "connection_ack"
        ws.send(json.dumps({"id": "c1", "type": "subscribe",
                            "payload": {"query": SUBSCRIBE, "variables": {"after": 0}}}))

        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=auth, timeout=30) as http:
            for text, source in (("The checkout-api service is healthy", "monitor"),
                                 ("The checkout-api service is down", "pager")):
                body = http.post("/graphql", json={"query": INGEST, "variables": {
                    "i": {"content": text, "source": source}}}).json()
                assert body.get("errors") is None, body
        report = run_once(runtime, namespace)  # the worker finds the contradiction (heuristic detector)
        assert report.caught_up, report.as_dict()

        message = json.loads(ws.recv(timeout=20))
        assert message["type"] == "next" and message["id"] == "c1", message
        event = message["payload"]["data"]["contradictions"]
        assert {event["claim"]["content"], event["other"]["content"]} == {
            "The checkout-api service is healthy", "The checkout-api service is down"}
        assert event["revision"] == 2
        ws.send(json.dumps({"id": "c1", "type": "complete"}))
