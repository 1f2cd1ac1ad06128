"""Erasure against a real Neo4j: the text and the vector are nowhere afterwards, what the claim had
superseded is back, what was derived from it is gone or re-fused, logged packets answer ERASED, and
`palimpsest check` stays clean.

"Nowhere" is checked the hard way: every property of every node of the namespace and of every
relationship touching one, read with Cypher, and the shared vector and fulltext indexes queried
directly with the erased claim's own vector and words.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from neo4j import Driver

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore, hash_key
from palimpsest.api.memory import Memory
from palimpsest.graph.claims import index as claim_index
from palimpsest.graph.claims import inferred
from palimpsest.graph.claims.check import TOMBSTONE_FIELDS
from palimpsest.graph.knowledge.entities import EntityBatch, write_entity_batch
from palimpsest.graph.knowledge.facts import FactWrite, write_fact_batch
from palimpsest.graph.projections import commit_batch
from palimpsest.schema.errors import ErasedError, NotFoundError

pytestmark = pytest.mark.integration

SECRET = "Vantablack vault code is 4417-QUIZZICAL"
OLD = "Vantablack vault code is 1200-ALPHA"


def _everything(driver: Driver, ns: str) -> list[tuple[str, str, Any]]:
    """(where, property, value) for every property of every node of the namespace, and of every
    relationship with an end in it."""
    nodes, _, _ = driver.execute_query(
        "MATCH (n) WHERE n.namespace = $ns RETURN labels(n) AS l, properties(n) AS p", ns=ns)
    rels, _, _ = driver.execute_query(
        "MATCH (n)-[r]-() WHERE n.namespace = $ns RETURN DISTINCT type(r) AS t, properties(r) AS p", ns=ns)
    out = [(str(r["l"]), k, v) for r in nodes for k, v in dict(r["p"]).items()]
    out += [(str(r["t"]), k, v) for r in rels for k, v in dict(r["p"]).items()]
    return out


def _text_anywhere(driver: Driver, ns: str, needle: str) -> list[tuple[str, str]]:
    """Every text property (or text in a list) that contains `needle`, case-insensitively."""
    def texts(value: Any) -> list[str]:
        return [value] if isinstance(value, str) else [t for v in value for t in texts(v)] \
            if isinstance(value, list) else []

    return [(where, k) for where, k, v in _everything(driver, ns) if any(needle.lower() in t.lower() for t in texts(v))]


def _vector_anywhere(driver: Driver, ns: str, vector: list[float]) -> list[tuple[str, str]]:
    def same(v: Any) -> bool:
        return isinstance(v, list) and len(v) == len(vector) and all(
            abs(a - b) < 1e-6 for a, b in zip(v, vector, strict=True))

    return [(where, k) for where, k, v in _everything(driver, ns) if same(v)]


def _embedding(driver: Driver, claim_id: str) -> list[float]:
    records, _, _ = driver.execute_query("MATCH (c:Claim {id: $id}) RETURN c.embedding AS e", id=claim_id)
    return [float(x) for x in records[0]["e"]]


def _revision(memory: Memory) -> int:
    return memory.stats().revision


def _write_facts(driver: Driver, ns: str, facts: list[FactWrite]) -> None:
    with driver.session() as session:
        session.execute_write(write_fact_batch, ns, facts)


def _entities(driver: Driver, ns: str, *names: str) -> dict[str, str]:
    ids = {name: f"ent-{ns}-{name.lower().replace(' ', '-')}" for name in names}
    batch = EntityBatch(new_entities=[{"id": eid, "name": name, "canonical": name.lower(), "type": "thing",
                                       "revision": 1, "embedding": None} for name, eid in ids.items()])
    with driver.session() as session:
        session.execute_write(write_entity_batch, ns, batch)
    return ids


def test_erase_leaves_no_text_or_vector_and_restores_what_it_superseded(runtime: Any, namespace: str,
                                                                        driver: Driver) -> None:
    mem = Memory(runtime, namespace, log_packets=True)
    old = mem.ingest(OLD, "vault-log", claim_key="vault.code")
    other = mem.ingest("Vantablack vault is audited by Priya every Friday", "audit")
    secret = mem.ingest(SECRET, "vault-log", claim_key="vault.code", metadata={"ticket": "INC-77 quizzical"})
    mem.ingest("Vantablack vault code is 9999-BRAVO", "rumour")  # a contradiction for the worker
    mem.run_projections()
    # Facts the way the worker writes them: one only the secret supports, one it shares with `other`.
    ents = _entities(driver, namespace, "Vantablack Vault", "Quizzical Code", "Priya")
    _write_facts(driver, namespace, [
        FactWrite(secret.id or "", secret.revision or 0, ents["Vantablack Vault"], "Vantablack Vault", "has_code",
                  "Quizzical Code", ents["Quizzical Code"], ents["Quizzical Code"], None, None, 0.9),
        FactWrite(secret.id or "", secret.revision or 0, ents["Vantablack Vault"], "Vantablack Vault", "audited_by",
                  "Priya", ents["Priya"], ents["Priya"], None, None, 0.5),
        FactWrite(other.id or "", other.revision or 0, ents["Vantablack Vault"], "Vantablack Vault", "audited_by",
                  "Priya", ents["Priya"], ents["Priya"], None, None, 0.6),
    ])
    with driver.session() as session:  # the worker would link the secret to the code entity too
        session.execute_write(write_entity_batch, namespace, EntityBatch(mentions=[
            {"claim": secret.id, "entity": ents["Quizzical Code"], "revision": secret.revision}]))
    packet = mem.recall("what is the Vantablack vault code?", k=3)
    assert secret.id in {it.id for it in packet.items}
    contradictions, _, _ = driver.execute_query(
        "MATCH (:Claim {id: $id})-[r:CONTRADICTS]-() RETURN count(r) AS n", id=secret.id)
    assert contradictions[0]["n"] >= 1, "the worker should have found the contradiction"
    vector = _embedding(driver, secret.id or "")
    assert _text_anywhere(driver, namespace, "quizzical") and _vector_anywhere(driver, namespace, vector)
    assert claim_index.ensure(driver, namespace, minimum=0)  # its own indexes, as a large namespace has
    before = _revision(mem)

    result = mem.erase([secret.id or ""], reason="leaked secret")

    assert result.revisions == [before + 1] and result.restored == [old.id]
    assert result.facts_removed == 1 and result.supports_removed == 2 and result.packets_erased == 1
    assert result.contradictions_removed >= 1 and result.entities_removed >= 1  # the code entities
    # Nowhere in the namespace: not in a node property, not in a relationship property.
    assert _text_anywhere(driver, namespace, "quizzical") == []
    assert _text_anywhere(driver, namespace, "4417-") == []
    assert _vector_anywhere(driver, namespace, vector) == []
    # Nor in the namespace's own indexes (made before the erase), asked directly with its vector and words.
    suffix = claim_index.index_suffix(namespace)
    hits, _, _ = driver.execute_query(
        "CALL db.index.vector.queryNodes($index, 200, $v) YIELD node, score "
        "RETURN node.id AS id, node.namespace AS ns, score", index=claim_index.vector_index_name(suffix), v=vector)
    assert hits and secret.id not in {h["id"] for h in hits}
    assert not [h for h in hits if h["ns"] == namespace and h["score"] > 0.9999]
    text_index = claim_index.text_index_name(suffix)
    for index, words in ((text_index, "quizzical"), (text_index, "4417")):
        found, _, _ = driver.execute_query(
            "CALL db.index.fulltext.queryNodes($index, $q) YIELD node RETURN node.namespace AS ns",
            index=index, q=words)
        assert not [f for f in found if f["ns"] == namespace], (index, words)
    # The tombstone, and only that.
    stones, _, _ = driver.execute_query("MATCH (e:ErasedClaim {namespace: $ns}) RETURN properties(e) AS p, "
                                        "COUNT { (e)--() } AS rels", ns=namespace)
    assert len(stones) == 1 and set(stones[0]["p"]) == TOMBSTONE_FIELDS and stones[0]["rels"] == 0
    assert stones[0]["p"]["revision"] == secret.revision and stones[0]["p"]["erased_at_revision"] == before + 1
    commits, _, _ = driver.execute_query("MATCH (k:Commit {namespace: $ns, revision: $r}) RETURN k.kind AS kind",
                                         ns=namespace, r=before + 1)
    assert commits[0]["kind"] == "erase"
    # What it had superseded is back, from the erasure's revision on; as of before, neither shows.
    assert mem.claim(old.id or "").status == "current"
    assert old.id in {it.id for it in mem.recall("what is the Vantablack vault code?", k=3).items}
    as_of = mem.recall("what is the Vantablack vault code?", k=3, as_of_revision=before)
    assert secret.id not in {it.id for it in as_of.items} and old.id not in {it.id for it in as_of.items}
    # The shared fact keeps its other support, re-fused; the one only the secret held is gone.
    facts, _, _ = driver.execute_query(
        "MATCH (f:Fact {namespace: $ns}) RETURN f.predicate AS p, f.confidence AS c, f.supports AS n", ns=namespace)
    assert [(f["p"], f["c"], f["n"]) for f in facts] == [("audited_by", 0.6, 1)]
    # Replay answers that it was erased, never the content; the claim itself too.
    with pytest.raises(ErasedError) as replayed:
        mem.replay(packet.fingerprint)
    assert replayed.value.code == "ERASED" and "4417" not in replayed.value.message
    with pytest.raises(ErasedError):
        mem.claim(secret.id or "")
    # Erasing it again is a no-op that says so; the store still holds every invariant.
    again = mem.erase([secret.id or ""], reason="twice")
    assert again.already_erased == [secret.id] and again.revisions == []
    report = mem.check()
    assert report.ok, report.violations
    assert report.checked["tombstones"] == 1
    # The restored claim is a subject for the worker again, which runs clean over the tombstone.
    mem.run_projections()
    assert mem.check().ok


def test_erase_by_source_and_metadata_batched_with_a_dry_run(memory: Memory, driver: Driver) -> None:
    keep = memory.ingest_many([{"content": f"kept note {i}", "source": "ops"} for i in range(3)])
    doomed = memory.ingest_many([{"content": f"customer 81 said thing {i}", "source": "crm-import",
                                  "metadata": {"customer": 81, "tier": "gold"}} for i in range(5)])
    other = memory.ingest("customer 82 said hello", "crm-import", metadata={"customer": 82, "tier": "gold"})
    before = memory.stats().revision

    dry = memory.erase(source="crm-import", reason="customer request", dry_run=True)
    assert dry.dry_run and dry.matched == 6 and dry.revisions == []
    assert [c.id for c in dry.claims] == [*doomed.ids, other.id]  # write order
    assert memory.stats().revision == before and memory.stats().claims_by_status == {"current": 9}

    with pytest.raises(NotFoundError):
        memory.erase(["no-such-claim"], reason="x")
    done = memory.erase(metadata={"customer": 81, "tier": "gold"}, reason="customer 81 asked", batch_size=2)
    assert done.matched == 5 and done.revisions == [before + 1, before + 2, before + 3]
    assert sorted(c.id for c in done.claims) == sorted(str(i) for i in doomed.ids)
    assert memory.stats().claims_by_status == {"current": 4}
    assert memory.claim(other.id or "").status == "current" and all(
        memory.claim(str(i)).status == "current" for i in keep.ids)
    assert _text_anywhere(driver, memory.namespace, "said thing") == []
    report = memory.check()
    assert report.ok and report.checked["tombstones"] == 5


def test_erasing_versions_of_a_key_keeps_one_timeline(memory: Memory) -> None:
    v1 = memory.ingest("The office is in Leeds", "hr", claim_key="office", valid_from="2020-01-01")
    v2 = memory.ingest("The office is in York", "hr", claim_key="office", valid_from="2022-01-01")  # closes v1
    v3 = memory.ingest("The office is in Hull", "hr", claim_key="office")  # a correction: hides both
    assert memory.claim(v1.id or "").status == memory.claim(v2.id or "").status == "superseded"
    # The middle version goes: v3 still corrects v1, so v1 stays hidden, by v3 now.
    memory.erase([v2.id or ""], reason="wrong office")
    assert memory.claim(v1.id or "").status == "superseded"
    assert memory.check().ok
    # The correction goes too: v1 is back with its window open again.
    memory.erase([v3.id or ""], reason="wrong office")
    restored = memory.claim(v1.id or "")
    assert restored.status == "current" and restored.valid_until is None
    assert [e.claim.id for e in memory.history("office")] == [v1.id]
    assert memory.check().ok


def test_erasing_a_closing_version_and_its_successor_in_one_batch(memory: Memory) -> None:
    v1 = memory.ingest("The build runs on Jenkins", "ci", claim_key="ci", valid_from="2020-01-01")
    v2 = memory.ingest("The build runs on Buildkite", "ci", claim_key="ci", valid_from="2022-01-01")
    v3 = memory.ingest("The build runs on GitHub Actions", "ci", claim_key="ci", valid_from="2024-01-01")
    assert memory.claim(v1.id or "").valid_until == "2022-01-01T00:00:00Z"
    result = memory.erase([v2.id or "", v3.id or ""], reason="test")
    assert len(result.revisions) == 1
    back = memory.claim(v1.id or "")
    assert back.status == "current" and back.valid_until is None
    assert memory.recall("where does the build run?", k=1, valid_at="2025-01-01").items[0].id == v1.id
    assert memory.check().ok


def test_an_inferred_chain_keeps_hiding_the_oldest_when_the_middle_is_erased(memory: Memory, driver: Driver) -> None:
    oldest = memory.ingest("A Team seat costs $12 a month", "pricing")
    middle = memory.ingest("A Team seat costs $14 a month", "pricing")
    newest = memory.ingest("A Team seat costs $16 a month", "pricing")
    for newer, older in ((middle, oldest), (newest, middle)):
        with driver.session() as session:
            session.execute_write(inferred.write_inferred, memory.namespace, [inferred.InferredWrite(
                newer.id or "", older.id or "", newer.revision or 0, 0.9, "value", "the price changed")])
    assert memory.claim(oldest.id or "").status == memory.claim(middle.id or "").status == "superseded"
    memory.erase([middle.id or ""], reason="test")
    # As after retracting the middle: the newest still replaces the oldest, now directly.
    assert memory.claim(oldest.id or "").status == "superseded"
    links = memory.inferred_links([oldest.id or ""])
    assert [(link.newer_id, link.older_id) for link in links] == [(newest.id, oldest.id)]
    assert _text_anywhere(driver, memory.namespace, "$14") == []
    assert memory.check().ok
    memory.erase([newest.id or ""], reason="test")
    assert memory.claim(oldest.id or "").status == "current"
    assert memory.check().ok


def test_a_worker_batch_computed_before_an_erasure_does_not_bring_it_back(memory: Memory, driver: Driver) -> None:
    claim = memory.ingest("Zanzibar-7 is the codename of the merger", "deals")
    memory.erase([claim.id or ""], reason="test")
    seq = memory.stats().projections_seq
    commit_batch(driver, memory.namespace, seq, seq, [], entities=EntityBatch(
        new_entities=[{"id": "ent-zanzibar", "name": "Zanzibar-7", "canonical": "zanzibar 7", "type": "code",
                       "revision": claim.revision, "embedding": None}],
        mentions=[{"claim": claim.id, "entity": "ent-zanzibar", "revision": claim.revision}]))
    assert _text_anywhere(driver, memory.namespace, "zanzibar") == []
    assert memory.check().ok


KEY_WRITER, KEY_ERASER, KEY_ERASE_ONLY = "writer-secret-key", "eraser-secret-key", "erase-only-secret-key"


@pytest.fixture
def client(runtime: Any, namespace: str) -> Iterator[TestClient]:
    keys = KeyStore.from_json(json.dumps([
        {"name": "writer", "sha256": hash_key(KEY_WRITER), "namespaces": {namespace: ["read", "write"]}},
        {"name": "eraser", "sha256": hash_key(KEY_ERASER), "namespaces": {namespace: ["read", "erase"]}},
        {"name": "erase-only", "sha256": hash_key(KEY_ERASE_ONLY), "namespaces": {namespace: ["erase"]}},
    ]))
    with TestClient(create_app(runtime, keys=keys), base_url="http://localhost") as c:
        yield c


ERASE = """mutation($ids: [String!], $meta: JSON, $dry: Boolean!) {
  erase(ids: $ids, metadata: $meta, reason: "asked", dryRun: $dry) {
    dryRun matched revisions restored claims { id status source } } }"""


def test_erase_is_a_right_of_its_own(client: TestClient, memory: Memory) -> None:
    claim = memory.ingest("Ledger export runs at 02:00", "ops", metadata={"owner": "ana"})

    def gql(key: str, **variables: Any) -> dict[str, Any]:
        resp = client.post("/graphql", json={"query": ERASE, "variables": variables},
                           headers={"Authorization": f"Bearer {key}"})
        body: dict[str, Any] = resp.json()
        return body

    refused = gql(KEY_WRITER, ids=[claim.id], dry=False)
    assert [e["extensions"]["code"] for e in refused["errors"]] == ["FORBIDDEN"]
    assert memory.claim(claim.id or "").status == "current"
    bad = gql(KEY_ERASER, meta="owner=ana", dry=True)
    assert [e["extensions"]["code"] for e in bad["errors"]] == ["BAD_INPUT"]
    dry = gql(KEY_ERASER, meta={"owner": "ana"}, dry=True)["data"]["erase"]
    assert dry == {"dryRun": True, "matched": 1, "revisions": [], "restored": [],
                   "claims": [{"id": claim.id, "status": "current", "source": "ops"}]}
    # A dry run lists what is stored (ids, sources, keys): without the read right it is refused.
    blind = gql(KEY_ERASE_ONLY, meta={"owner": "ana"}, dry=True)
    assert [e["extensions"]["code"] for e in blind["errors"]] == ["FORBIDDEN"] and blind["data"] is None
    assert "ops" not in json.dumps(blind)
    done = gql(KEY_ERASE_ONLY, ids=[claim.id], dry=False)["data"]["erase"]
    assert done["matched"] == 1 and len(done["revisions"]) == 1
    assert memory.check().ok


def test_the_cli_erases_by_metadata_with_a_dry_run_first(memory: Memory, neo4j: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from palimpsest.api.cli import app

    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    doomed = memory.ingest("Ticket 55 mentions a home address", "helpdesk", metadata={"ticket": 55})
    kept = memory.ingest("Ticket 56 is about a printer", "helpdesk", metadata={"ticket": 56})
    runner = CliRunner()
    base = ["erase", "-n", memory.namespace, "--metadata", "ticket=55", "--reason", "data request", "--json"]
    dry = runner.invoke(app, [*base, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert [c["id"] for c in json.loads(dry.stdout)["claims"]] == [doomed.id]
    assert memory.claim(doomed.id or "").status == "current"
    done = runner.invoke(app, base)
    assert done.exit_code == 0, done.output
    assert len(json.loads(done.stdout)["revisions"]) == 1
    assert memory.claim(kept.id or "").status == "current"
    with pytest.raises(ErasedError):
        memory.claim(doomed.id or "")
    refused = runner.invoke(app, ["erase", "-n", memory.namespace, "--reason", "no selector"])
    assert refused.exit_code == 1 and "BAD_INPUT" in refused.output


# ------------------------------------------------------------------------------------ issue 45
def _entity_rows(driver: Driver, ns: str) -> list[dict[str, Any]]:
    rows, _, _ = driver.execute_query(
        "MATCH (e:Entity {namespace: $ns}) RETURN e.id AS id, e.name AS name, e.canonical AS canonical, "
        "e.aliases AS aliases, e.embedding IS NOT NULL AS embedded ORDER BY id", ns=ns)
    return [dict(r) for r in rows]


def test_an_entity_is_renamed_from_the_claims_left(runtime: Any, memory: Memory, driver: Driver) -> None:
    doomed = memory.ingest("Zorbulax Q. Quentavian approved the Orlov budget", "board")
    kept = memory.ingest("Zorbulax Quentavian signed the lease", "board")
    odd = memory.ingest("Minutes: BRISKET-HALVORSEN attended", "board")
    doomed_too = memory.ingest("Brisket J. Halvorsen chaired the Orlov meeting", "board")
    vector = [float(x) for x in runtime.embedder.embed(["Zorbulax Q. Quentavian"])[0]]
    # As the worker leaves them: named by the first claim (with the initial), the later spelling an
    # alias; the second entity's only stored spelling is the erased claim's.
    zorb, brisket = "ent-zorbulax", "ent-brisket"
    with driver.session() as session:
        session.execute_write(write_entity_batch, memory.namespace, EntityBatch(
            new_entities=[{"id": zorb, "name": "Zorbulax Q. Quentavian", "canonical": "zorbulax q quentavian",
                           "type": "person", "revision": doomed.revision, "embedding": vector},
                          {"id": brisket, "name": "Brisket J. Halvorsen", "canonical": "brisket j halvorsen",
                           "type": "person", "revision": doomed_too.revision, "embedding": vector}],
            aliases=[{"id": zorb, "alias": "Zorbulax Quentavian"}, {"id": brisket, "alias": "Brisket Halvorsen"}],
            mentions=[{"claim": doomed.id, "entity": zorb, "revision": doomed.revision},
                      {"claim": kept.id, "entity": zorb, "revision": kept.revision},
                      {"claim": doomed_too.id, "entity": brisket, "revision": doomed_too.revision},
                      {"claim": odd.id, "entity": brisket, "revision": odd.revision}]))

    memory.erase([doomed.id or "", doomed_too.id or ""], reason="asked")

    rows = {r["id"]: r for r in _entity_rows(driver, memory.namespace)}
    assert rows[zorb] | {"id": zorb} == {"id": zorb, "name": "Zorbulax Quentavian", "canonical": "zorbulax quentavian",
                                         "aliases": [], "embedded": False}
    # No stored spelling survives: the remaining claim's own spelling names it.
    assert rows[brisket]["name"] == "BRISKET-HALVORSEN" and rows[brisket]["canonical"] == "brisket halvorsen"
    assert rows[brisket]["aliases"] == [] and not rows[brisket]["embedded"]
    for needle in ("q. quentavian", "q quentavian", "j. halvorsen", "j halvorsen", "orlov"):
        assert _text_anywhere(driver, memory.namespace, needle) == [], needle
    assert _vector_anywhere(driver, memory.namespace, vector) == []
    exported = "\n".join(memory.export_lines()).lower()
    assert "q. quentavian" not in exported and "q quentavian" not in exported and "halvorsen" in exported
    assert memory.entity(zorb).name == "Zorbulax Quentavian"
    assert memory.check().ok


def test_erase_by_metadata_matches_any_json_spelling(memory: Memory, driver: Driver) -> None:
    plain = memory.ingest("customer 81 called about the invoice", "crm", metadata={"customer": 81})
    imported = memory.ingest("customer 81 asked for a refund", "crm", metadata={"customer": 81, "tier": "gold"})
    as_float = memory.ingest("customer 82 moved house", "crm", metadata={"customer": 82})
    boolean = memory.ingest("flag holder", "crm", metadata={"customer": True})
    # As another encoder spelt them (an import): spaces, key order, a float for an integer.
    for cid, text in ((imported.id, '{ "tier" : "gold",  "customer" : 81 }'), (as_float.id, '{"customer": 82.0}')):
        driver.execute_query("MATCH (c:Claim {namespace: $ns, id: $id}) SET c.metadata_json = $j",
                             ns=memory.namespace, id=cid, j=text)

    dry = memory.erase(metadata={"customer": 81.0}, reason="x", dry_run=True)
    assert [c.id for c in dry.claims] == [plain.id, imported.id]
    assert [c.id for c in memory.erase(metadata={"customer": 82}, reason="x", dry_run=True).claims] == [as_float.id]
    assert [c.id for c in memory.erase(metadata={"customer": 1}, reason="x", dry_run=True).claims] == []
    assert [c.id for c in memory.erase(metadata={"customer": True}, reason="x", dry_run=True).claims] == [boolean.id]
    done = memory.erase(metadata={"customer": 81}, reason="customer 81 asked")
    assert done.matched == 2 and _text_anywhere(driver, memory.namespace, "refund") == []


def test_a_logged_packet_whose_query_quotes_the_erased_text_goes(runtime: Any, namespace: str,
                                                               driver: Driver) -> None:
    mem = Memory(runtime, namespace, log_packets=True)
    mem.ingest("The Hyperion vault opens at noon", "ops")
    asked_before = mem.recall("is 4417-QUIZZICAL the Hyperion vault code?", k=1)  # before the secret existed
    secret = mem.ingest(SECRET, "vault-log")
    quoted = mem.recall(f"{SECRET.lower()}?", k=1)
    unrelated = mem.recall("when does the Hyperion vault open?", k=1)
    assert secret.id not in {it.id for it in asked_before.items}

    result = mem.erase([secret.id or ""], reason="leaked secret")

    assert result.packets_erased >= 2
    for packet in (asked_before, quoted):
        with pytest.raises(ErasedError) as replayed:
            mem.replay(packet.fingerprint)
        assert secret.id in replayed.value.message and "4417" not in replayed.value.message
    assert mem.replay(unrelated.fingerprint).packet.query == unrelated.query
    assert _text_anywhere(driver, namespace, "quizzical") == []
    assert mem.check().ok


def test_an_interrupted_erase_says_what_it_committed(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from palimpsest.graph.db.errors import RETRY_SAFE
    from palimpsest.graph.lifecycle import erase as erase_q
    from palimpsest.schema.errors import UnavailableError

    claims = memory.ingest_many([{"content": f"bulk note {i}", "source": "bulk"} for i in range(5)])
    real, calls = erase_q.erase_batch, []

    def outage_on_third(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[2])
        if len(calls) == 3:  # the database goes away between the second and the third batch
            raise UnavailableError(f"the database is unavailable (ServiceUnavailable): {RETRY_SAFE}")
        return real(*args, **kwargs)

    monkeypatch.setattr(erase_q, "erase_batch", outage_on_third)
    with pytest.raises(UnavailableError) as stopped:
        memory.erase(source="bulk", reason="asked", batch_size=2)
    message = stopped.value.message
    assert "nothing was committed" not in message
    assert "batch 3 of 3" in message and "2 batch(es) had committed" in message and "4 claim(s)" in message
    assert memory.stats().claims_by_status == {"current": 1}
    monkeypatch.setattr(erase_q, "erase_batch", real)
    rest = memory.erase(source="bulk", reason="asked")
    assert [c.id for c in rest.claims] == [claims.ids[4]] and len(rest.revisions) == 1
    assert memory.check().ok


def test_an_erase_empties_this_process_caches_of_text(runtime: Any, memory: Memory) -> None:
    from palimpsest.graph import text

    secret = memory.ingest(SECRET, "vault-log")
    memory.recall("Vantablack vault code 4417-QUIZZICAL", k=1)
    # The embedder's query cache (text → vector) and the memoised analyses hold the text now.
    assert "Vantablack vault code 4417-QUIZZICAL" in runtime.embedder._cache
    assert text._analysed.cache_info().currsize > 0
    memory.erase([secret.id or ""], reason="leaked")
    assert "Vantablack vault code 4417-QUIZZICAL" not in runtime.embedder._cache
    assert not runtime.embedder._text_cache and text._analysed.cache_info().currsize == 0
    assert runtime.mentions is None or memory.namespace not in runtime.mentions._graphs
