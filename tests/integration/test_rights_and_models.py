"""Who may change what a namespace's readers get or what the server spends, and which models it may call.

A policy decides every reader's ranking (a `minRelevance` of 1.0 empties every packet) and which models
every recall and the worker call; so registering one, making one the default and undoing an inference
need the `admin` right, not `write`. Models are the operator's: a policy or a caller naming one the
operator did not allow (or a path on the server's disk) is refused before anything is called.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from palimpsest.api.allowed_models import AllowedModels
from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.memory import Memory
from palimpsest.api.worker import ProjectionWorker
from palimpsest.extraction.llm_client import import_litellm
from palimpsest.schema.errors import UnavailableError

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


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every model litellm is asked to call in this test (each call then fails as a provider would)."""
    litellm = import_litellm()
    called: list[str] = []

    def completion(*args: Any, **kwargs: Any) -> Any:
        called.append(str(kwargs.get("model")))
        raise RuntimeError("connection refused by 127.0.0.1:11434 (account acme-prod)")

    monkeypatch.setattr(litellm, "completion", completion)
    return called


@pytest.mark.parametrize(("policy", "field"), [
    ({"rerank": "llm", "rerankModel": "openai/o1-pro"}, "rerankModel"),
    ({"router": "llm", "routerModel": "openai/o1-pro"}, "routerModel"),
    ({"extractor": "llm", "extractorModel": "openai/o1-pro"}, "extractorModel"),
    ({"inferredJudge": "llm", "inferredLlmModel": "openai/o1-pro"}, "inferredLlmModel"),
    ({"readerModel": "ollama/llama3"}, "readerModel"),
    ({"contradiction": {"detectors": ["nli"], "nli_model": "some/nli"}}, "contradiction.nli_model"),
])
def test_a_policy_naming_a_model_the_operator_did_not_allow_is_refused(
        client: TestClient, calls: list[str], policy: dict[str, Any], field: str) -> None:
    body = gql(client, REGISTER, ADMIN, p={"version": "spender", **policy})
    assert codes(body) == ["BAD_INPUT"]
    error = body["errors"][0]
    assert error["extensions"]["field"] == field
    assert "allowed:" in error["message"] and "PALIMPSEST_ALLOWED_" in error["message"]
    assert [p["version"] for p in gql(client, "{ policies { version } }", ADMIN)["data"]["policies"]] == ["default-v1"]
    assert calls == []


def test_a_rerank_model_on_the_servers_disk_is_refused(client: TestClient, tmp_path: Path) -> None:
    for name in (str(tmp_path), "./models/ranker", "~/ranker"):
        body = gql(client, REGISTER, ADMIN, p={"version": "disk", "rerank": "cross-encoder", "rerankModel": name})
        assert codes(body) == ["BAD_INPUT"] and body["errors"][0]["extensions"]["field"] == "rerankModel"
        assert "path on the server's disk" in body["errors"][0]["message"]


ASK = """query($m: String) { ask(question: "when is standup?", llmModel: $m, k: 2) { answer model } }"""


@pytest.mark.parametrize("model", ["openai/gpt-4-32k", "ollama/llama3", "/etc/passwd"])
def test_a_reader_cannot_choose_the_model_ask_calls(client: TestClient, calls: list[str], model: str) -> None:
    gql(client, """mutation { ingest(input: {content: "Standup is at 9:30", source: "team"}) { revision } }""",
        WRITER)
    body = gql(client, ASK, READER, m=model)
    assert codes(body) == ["BAD_INPUT"] and body["errors"][0]["extensions"]["field"] == "llmModel"
    assert "'gpt-4o-mini'" in body["errors"][0]["message"]  # the names the operator allows
    assert calls == []


def test_a_providers_error_text_stays_in_the_server_log(client: TestClient, calls: list[str],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    gql(client, """mutation { ingest(input: {content: "Standup is at 9:30", source: "team"}) { revision } }""",
        WRITER)
    body = gql(client, ASK, READER, m="gpt-4o-mini")
    assert calls and codes(body) == ["UNAVAILABLE"]
    assert "11434" not in body["errors"][0]["message"] and "acme" not in body["errors"][0]["message"]
    assert "11434" in caplog.text


def test_a_stored_policy_cannot_call_a_model_the_operator_no_longer_allows(
        memory: Memory, calls: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    memory.ingest_many([{"content": "Standup is at 9:30", "source": "team"},
                        {"content": "Retro is on Fridays at 4pm", "source": "team"}])
    memory.register_policy({"version": "models", "rerank": "llm", "rerank_model": "gpt-4o-mini",
                            "router": "llm", "router_model": "gpt-4o-mini", "reader_model": "gpt-4o-mini",
                            "extractor": "llm", "extractor_model": "gpt-4o-mini",
                            "inferred_judge": "llm", "inferred_llm_model": "gpt-4o-mini"})
    memory.set_default_policy("models")
    monkeypatch.setattr(memory.rt, "models", AllowedModels())  # the operator empties the list afterwards
    packet = memory.recall("when is standup?")
    assert packet.policy_version == "models" and packet.items
    assert packet.completeness.rerank_unavailable and "router:llm-unavailable" in packet.stages
    with pytest.raises(UnavailableError) as refused:
        memory.ask("when is standup?")
    assert refused.value.field == "llm_model"
    report = ProjectionWorker(memory.rt).run_once(memory.namespace)
    assert report.caught_up and report.extractor == "offline" and report.extraction_calls == 0
    assert any("extractor_model" in p for p in report.problems)
    assert calls == []
