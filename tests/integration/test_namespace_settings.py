"""Namespace settings in Neo4j: the default policy a namespace chose is what every worker and every
recall without a version use, whichever process runs them.

The contract: `default-v1` until one is set; setting one is a write at a new store revision (an
unregistered version is NOT_FOUND, naming the field); a worker built as `palimpsest serve` builds
it (a default WorkerConfig) applies the namespace's default — as of the revisions it projects, so a
lagging worker does what a prompt one would have; a recall without a version uses the default in
effect at the revision it serves, and sees a change made through another driver (another process)
at once; the config's `policy_version` still overrides, for tests and benchmarks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from neo4j import Driver, GraphDatabase
from typer.testing import CliRunner

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.cli import app as cli_app
from palimpsest.api.memory import Memory
from palimpsest.api.worker import ProjectionWorker, WorkerConfig
from palimpsest.graph import policies
from palimpsest.graph.claims.revisions import store_state
from palimpsest.schema.errors import NotFoundError
from palimpsest.schema.models import DEFAULT_POLICY, Policy

pytestmark = pytest.mark.integration

INFER = Policy(version="infer-default-v1", inferred_supersession=True)
OLD = "Ravi Alvarez's warfarin dose is 5 mg daily."
NEW = "The prescriber adjusted Ravi Alvarez's warfarin to 7.5 mg daily."
QUERY = "What warfarin dose does Ravi Alvarez take?"


def revision(driver: Driver, ns: str) -> int:
    with driver.session() as session:
        state = session.execute_read(store_state, ns)
    assert state is not None
    return state.revision


def inferred_edges(driver: Driver, ns: str) -> list[tuple[str, str]]:
    records, _, _ = driver.execute_query(
        "MATCH (n:Claim {namespace: $ns})-[s:SUPERSEDES {reason: 'inferred'}]->(o:Claim) "
        "RETURN n.id AS newer, o.id AS older", ns=ns)
    return [(r["newer"], r["older"]) for r in records]


def serve_worker(memory: Memory) -> ProjectionWorker:
    """What `palimpsest serve` and `palimpsest worker` build: no policy override."""
    return ProjectionWorker(memory.rt, WorkerConfig(pagerank=False))


def test_default_is_builtin_until_set_and_setting_is_a_write(memory: Memory, driver: Driver) -> None:
    ns = memory.namespace
    assert memory.settings().model_dump() == {"namespace": ns, "default_policy": "default-v1", "revision": 0,
                                              "changed_at_revision": None}
    memory.ingest(OLD, "ehr")
    assert memory.recall(QUERY).policy_version == "default-v1"

    with pytest.raises(NotFoundError) as err:
        memory.set_default_policy("never-registered")
    assert err.value.field == "version" and revision(driver, ns) == 1  # refused: nothing written

    memory.register_policy(INFER)
    settings = memory.set_default_policy(INFER.version)
    assert settings.default_policy == INFER.version and settings.revision == settings.changed_at_revision == 2
    assert revision(driver, ns) == 2 and memory.settings() == settings
    records, _, _ = driver.execute_query(
        "MATCH (c:Commit {namespace: $ns, revision: 2}) RETURN c.kind AS kind, c.default_policy AS v", ns=ns)
    assert (records[0]["kind"], records[0]["v"]) == ("settings", INFER.version)
    assert memory.policy() == INFER  # Memory.policy() without a version: the namespace's default

    # Setting what is already in effect writes nothing; setting the built-in default back is a change.
    assert memory.set_default_policy(INFER.version) == settings and revision(driver, ns) == 2
    back = memory.set_default_policy("default-v1")
    assert back.revision == 3 and back.default_policy == "default-v1"
    assert memory.recall(QUERY).policy_version == "default-v1"


def test_a_default_worker_applies_the_namespace_policy(memory: Memory, driver: Driver) -> None:
    ns = memory.namespace
    memory.register_policy(INFER)
    memory.set_default_policy(INFER.version)
    worker = serve_worker(memory)
    old = memory.ingest(OLD, "ehr").id
    first = worker.run_once(ns)
    assert first.policy_version == INFER.version and first.policy_versions == [INFER.version]
    new = memory.ingest(NEW, "ehr").id
    report = worker.run_once(ns)
    assert report.policy_version == INFER.version and report.caught_up
    assert report.inferred_supersessions == 1 and inferred_edges(driver, ns) == [(new, old)]

    packet = memory.recall(QUERY, k=5)
    assert packet.policy_version == INFER.version
    assert [it.id for it in packet.items] == [new] and packet.hidden.inferred == 1
    # The same through the module-level helper the other faces use (a default-config worker per runtime).
    assert memory.run_projections().policy_version == INFER.version


def test_a_lagging_worker_projects_each_claim_under_the_default_of_its_revision(memory: Memory,
                                                                               driver: Driver) -> None:
    ns = memory.namespace
    memory.register_policy(INFER)
    old = memory.ingest(OLD, "ehr").id                        # r1, under default-v1
    memory.ingest(NEW, "ehr")                                  # r2, under default-v1
    changed = memory.set_default_policy(INFER.version).revision  # r3
    newest = memory.ingest("Ravi Alvarez's warfarin dose is 10 mg daily.", "ehr").id  # r4, under INFER
    report = serve_worker(memory).run_once(ns)                # reaches all of them only now
    assert changed == 3 and report.caught_up and report.batches >= 2  # a batch never spans r3
    assert report.policy_versions == ["default-v1", INFER.version] and report.policy_version == INFER.version
    # r2 was not judged (inference was off at its revision); r4 was, against what was current then.
    assert [newer for newer, _ in inferred_edges(driver, ns)] == [newest]
    assert old not in [it.id for it in memory.recall(QUERY, k=5).items]


def test_the_config_override_still_wins_when_set(memory: Memory, driver: Driver) -> None:
    ns = memory.namespace
    memory.register_policy(INFER)
    memory.set_default_policy(INFER.version)
    memory.ingest(OLD, "ehr")
    pinned = ProjectionWorker(memory.rt, WorkerConfig(policy_version="default-v1", pagerank=False))
    assert pinned.run_once(ns).policy_version == "default-v1"
    memory.ingest(NEW, "ehr")
    report = ProjectionWorker(memory.rt, WorkerConfig(policy_version="not-here", pagerank=False)).run_once(ns)
    # An override the namespace never registered falls back to the namespace's default, with a note.
    assert report.policy_version == INFER.version and any("not-here" in p for p in report.problems)
    assert report.inferred_supersessions == 1


def test_recall_uses_the_default_at_the_revision_served(memory: Memory) -> None:
    memory.ingest(OLD, "ehr")                                   # r1
    memory.register_policy(Policy(version="two", k=2))
    memory.set_default_policy("two")                            # r2
    memory.ingest(NEW, "ehr")                                   # r3
    now = memory.recall(QUERY)
    assert (now.policy_version, now.k) == ("two", 2)
    before = memory.recall(QUERY, as_of_revision=1)
    assert (before.policy_version, before.k) == ("default-v1", DEFAULT_POLICY.k)
    assert memory.recall(QUERY, as_of_revision=2).policy_version == "two"
    assert memory.recall(QUERY, policy_version="default-v1").policy_version == "default-v1"  # explicit wins
    assert memory.recall(QUERY, as_of_revision=1).fingerprint == before.fingerprint


def test_a_change_made_by_another_process_is_seen_by_the_next_recall(memory: Memory, neo4j: Any) -> None:
    ns = memory.namespace
    memory.ingest(OLD, "ehr")
    memory.register_policy(Policy(version="three", k=3))
    memory.register_policy(Policy(version="big", k=60, max_k=100))
    assert memory.recall(QUERY).policy_version == "default-v1"  # this process now caches default-v1
    with GraphDatabase.driver(neo4j.uri, auth=neo4j.auth) as other:  # another process: another driver
        policies.set_default_policy(other, ns, "three")
        assert memory.recall(QUERY).policy_version == "three"
        assert policies.cached_default(memory.rt.driver, ns) == "three"
        policies.set_default_policy(other, ns, "big")
        # k=60 exceeds the stale guess's max_k (50); the real default allows it.
        packet = memory.recall(QUERY, k=60)
    assert (packet.policy_version, packet.k) == ("big", 60)
    worker = serve_worker(memory)
    assert worker.run_once(ns).policy_version == "big"


# ------------------------------------------------------------------------------------ faces
KEY_RW, KEY_RO = "settings-rw-secret", "settings-ro-secret"


@pytest.fixture
def client(runtime: Any, namespace: str) -> Iterator[TestClient]:
    keys = KeyStore.from_json(json.dumps([
        {"name": "rw", "sha256": hash_key(KEY_RW), "namespaces": {namespace: ["read", "write", "admin"]}},
        {"name": "ro", "sha256": hash_key(KEY_RO), "namespaces": {namespace: ["read", "write"]}},
    ]))
    with TestClient(create_app(runtime, keys=keys), base_url="http://localhost") as c:
        yield c


def gql(client: TestClient, query: str, key: str = KEY_RW, **variables: Any) -> dict[str, Any]:
    resp = client.post("/graphql", json={"query": query, "variables": variables},
                       headers={"Authorization": f"Bearer {key}"})
    assert resp.status_code in (200, 400), resp.text
    body: dict[str, Any] = resp.json()
    return body


def codes(body: dict[str, Any]) -> list[str]:
    return [e.get("extensions", {}).get("code") for e in body.get("errors") or []]


SET = """mutation($v: String!) { setDefaultPolicy(version: $v) { namespace defaultPolicy revision
  changedAtRevision } }"""
SETTINGS = "{ settings { namespace defaultPolicy revision changedAtRevision } }"


def test_graphql_set_default_policy_and_settings(client: TestClient, namespace: str) -> None:
    assert gql(client, SETTINGS)["data"]["settings"] == {"namespace": namespace, "defaultPolicy": "default-v1",
                                                         "revision": 0, "changedAtRevision": None}
    missing = gql(client, SET, v="nope")
    assert codes(missing) == ["NOT_FOUND"] and missing["errors"][0]["extensions"]["field"] == "version"
    gql(client, """mutation { registerPolicy(input: {version: "g-two", k: 2}) { version } }""")
    assert codes(gql(client, SET, key=KEY_RO, v="g-two")) == ["FORBIDDEN"]  # needs the admin right, not write
    done = gql(client, SET, v="g-two")["data"]["setDefaultPolicy"]
    assert done == {"namespace": namespace, "defaultPolicy": "g-two", "revision": 1, "changedAtRevision": 1}
    assert gql(client, SETTINGS, key=KEY_RO)["data"]["settings"] == done  # reading needs only read
    gql(client, """mutation { ingest(input: {content: "Standup is at 9:30", source: "team"}) { revision } }""")
    packet = gql(client, """{ recall(query: "when is standup?") { policyVersion k storeRevision } }""")
    assert packet["data"]["recall"] == {"policyVersion": "g-two", "k": 2, "storeRevision": 2}


def test_cli_policy_default(namespace: str, neo4j: Any, monkeypatch: pytest.MonkeyPatch, memory: Memory) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    memory.register_policy(Policy(version="cli-two", k=2))
    runner = CliRunner()
    res = runner.invoke(cli_app, ["policy", "default", "-n", namespace])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["default_policy"] == "default-v1"
    res = runner.invoke(cli_app, ["policy", "default", "nope", "-n", namespace])
    assert res.exit_code == 1 and "nope" in res.output
    res = runner.invoke(cli_app, ["policy", "default", "cli-two", "-n", namespace])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"namespace": namespace, "default_policy": "cli-two", "revision": 1,
                                      "changed_at_revision": 1}
    assert memory.settings().default_policy == "cli-two"
