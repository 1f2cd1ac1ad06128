"""Export and import against a real Neo4j: a store moved through a file answers every recall, at every
past revision and world time, with the same fingerprint; bad files and non-empty targets write nothing.

The store has what makes as-of recall hard: supersessions (corrections, a succession that closes a
window, a backfill), a retraction, a contradiction found by the worker, an erasure, a change of the
default policy and logged packets. Export goes through the CLI (`palimpsest export -n NS`), and the
copy comes back through it (`palimpsest import -n NS < file`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from neo4j import Driver
from typer.testing import CliRunner

from benchmarks.export_import import content_view, reverse_ids, translate
from benchmarks.import_poisons import FORGED_TERMS, FORGED_WORDS, POISONS, Outage
from palimpsest.api.cli import app
from palimpsest.api.memory import Memory
from palimpsest.graph.lifecycle import importer
from palimpsest.graph.lifecycle.importer import remapped_id, staging_prefix
from palimpsest.graph.lifecycle.maintenance import drop_namespace
from palimpsest.graph.text import stored_terms
from palimpsest.schema.errors import BadInputError, ConflictError, ErasedError, UnavailableError

pytestmark = pytest.mark.integration

QUERIES = ("where does the payments service keep its data?", "can we deploy to production?",
           "how many replicas does the checkout service run?")
WORLD_TIMES = (None, "2021-06-01", "2023-06-01", "2025-06-01")


def _build(mem: Memory) -> list[str]:
    """The store; returns the fingerprints of the packets it logged."""
    mem.ingest("The payments API keeps its data on db-7.", "runbook", claim_key="payments.db",
               valid_from="2022-01-01")
    mem.ingest("The payments API moved its data to db-9.", "incident-142", claim_key="payments.db",
               valid_from="2024-01-01")  # succession: closes db-7's window at 2024
    mem.ingest("Before 2022 the payments API kept its data on db-5.", "archive", claim_key="payments.db",
               valid_to="2022-01-01")  # backfill
    mem.ingest_many([
        {"content": "Deploys to production are allowed on weekdays.", "source": "wiki", "claim_key": "deploy"},
        {"content": "The checkout service runs 8 replicas.", "source": "capacity"},
        {"content": "The checkout service runs 3 replicas.", "source": "dashboard"},
    ])
    mem.ingest("Production deploys are frozen until the end of the quarter.", "cab", claim_key="deploy")  # correction
    mem.register_policy({"version": "test-k2", "k": 2})
    mem.set_default_policy("test-k2")
    broken = mem.ingest("The on-call pager for payments is broken.", "pager")
    mem.retract(broken.id or "", "it was fixed the same day")
    leak = mem.ingest("The deploy pipeline token is tok-SECRET-991.", "chat")
    mem.run_projections()
    logged = Memory(mem.rt, mem.namespace, log_packets=True)
    fingerprints = [logged.recall(q).fingerprint for q in QUERIES]
    mem.erase([leak.id or ""], reason="a token was pasted")
    mem.run_projections()
    return fingerprints


def _recalls(mem: Memory, revision: int) -> dict[tuple[str, int, str | None], Any]:
    return {(q, r, t): mem.recall(q, as_of_revision=r, valid_at=t)
            for q in QUERIES for r in range(1, revision + 1) for t in WORLD_TIMES}


def _replays(mem: Memory, fingerprints: list[str]) -> list[bool | None]:
    """Each logged packet's replay verdict: recomputes to the same fingerprint, or not, or None (ERASED)."""
    out: list[bool | None] = []
    for fp in fingerprints:
        try:
            out.append(mem.replay(fp).matches)
        except ErasedError:
            out.append(None)
    return out


def _no_staging(driver: Driver) -> None:
    records, _, _ = driver.execute_query("MATCH (n) WHERE n.namespace STARTS WITH '~import-' RETURN count(n) AS n")
    assert records[0]["n"] == 0, "a failed import left its staging namespace behind"


def test_export_then_import_answers_every_past_recall_with_the_same_fingerprint(
        runtime: Any, namespace: str, driver: Driver, neo4j: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    mem = Memory(runtime, namespace)
    logged = _build(mem)
    revision = mem.stats().revision
    assert mem.check().ok
    before = _recalls(mem, revision)
    replayed = _replays(mem, logged)
    contradictions = {c.item_id for p in before.values() for c in p.contradictions}
    assert contradictions, "the worker should have found the replicas contradiction"

    runner = CliRunner()
    exported = runner.invoke(app, ["export", "-n", namespace])
    assert exported.exit_code == 0, exported.output
    lines = exported.stdout.splitlines()
    header = json.loads(lines[0])
    assert header["kind"] == "header" and header["version"] == 1 and header["store_revision"] == revision
    assert len(lines) == 2 + sum(header["counts"].values())
    assert "SECRET-991" not in exported.stdout
    again = list(mem.export_lines())
    assert again[1:] == lines[1:], "the same store must export to the same records in the same order"
    path = tmp_path / "ns.jsonl"
    path.write_text(exported.stdout, encoding="utf-8")

    # Non-empty target: refused without remap, and nothing written.
    refused = runner.invoke(app, ["import", "-n", namespace], input=exported.stdout)
    assert refused.exit_code == 1 and "CONFLICT" in refused.output
    assert mem.stats().revision == revision

    drop_namespace(driver, namespace)
    _bad_files_write_nothing(Memory(runtime, namespace), lines, driver)

    imported = runner.invoke(app, ["import", "-n", namespace, "--json"], input=exported.stdout)
    assert imported.exit_code == 0, imported.output
    result = json.loads(imported.stdout)
    assert result["mode"] == "copy" and result["revision"] == revision
    assert mem.check().ok
    after = _recalls(mem, revision)
    differ = [k for k in before if after[k].fingerprint != before[k].fingerprint]
    assert differ == [], differ[:3]
    assert list(mem.export_lines())[1:] == lines[1:]
    # Logged packets came along: replay answers as in the source — ERASED for the one that held the
    # erased claim, and the same verdict for the others.
    assert _replays(mem, logged) == replayed and None in replayed


def _bad_files_write_nothing(target: Memory, lines: list[str], driver: Driver) -> None:
    header = json.loads(lines[0])
    cases: dict[str, tuple[list[str], str]] = {
        "wrong version": ([json.dumps(header | {"version": 99}), *lines[1:]], "line 1"),
        "not an export": (['{"content": "a claim", "source": "x"}', *lines[1:]], "line 1"),
        "malformed line": ([*lines[:7], "{not json", *lines[8:]], "line 8"),
        "bad claim": ([*lines[:-1], '{"kind": "claim", "props": {"id": "x"}}'], f"line {len(lines)}"),
        "cut short": (lines[:-3], f"line {len(lines) - 3}"),
    }
    for name, (bad, where) in cases.items():
        with pytest.raises(BadInputError) as refused:
            target.import_lines(bad)
        assert refused.value.message.startswith(where), (name, refused.value.message)
        assert target.settings().revision == 0, name  # nothing there
        _no_staging(driver)


def test_remap_gives_fresh_ids_and_merges_after_a_non_empty_namespace(runtime: Any, namespace: str,
                                                                      driver: Driver) -> None:
    mem = Memory(runtime, namespace)
    _build(mem)
    revision = mem.stats().revision
    before = _recalls(mem, revision)
    lines = list(mem.export_lines())
    copy_ns, merged_ns = namespace + "-copy", namespace + "-merged"
    try:
        # Next to the source in one database: ids are database-wide, so a copy is refused, a remap is not.
        copy = Memory(runtime, copy_ns)
        with pytest.raises(ConflictError) as taken:
            copy.import_lines(lines)
        assert "remap" in taken.value.message
        _no_staging(driver)
        result = copy.import_lines(lines, remap=True)
        assert result.mode == "remap" and result.revision == revision and not result.skipped.get("claim")
        assert copy.check().ok
        ours = {c.id for c, _ in copy.claims(first=100)[0]}
        assert not ours & {c.id for c, _ in mem.claims(first=100)[0]}
        drop_namespace(driver, namespace)  # alone with these texts, as the source was when it was measured
        back = reverse_ids(lines, copy_ns)
        after = _recalls(copy, revision)
        assert all(content_view(after[k]) == content_view(before[k]) for k in before)
        same = sum(translate(after[k], back, namespace).compute_fingerprint() == before[k].fingerprint for k in before)
        assert same == len(before)

        # Merge: appended after a namespace's own history, revisions shifted past it.
        merged = Memory(runtime, merged_ns)
        own = merged.ingest("The staging database is pg-2.", "wiki", claim_key="staging.db")
        result = merged.import_lines(lines, remap=True)
        assert result.mode == "merge" and result.revision_offset == 1 and result.revision == revision + 1
        assert result.skipped.get("entity", 0) > 0  # derived data is re-derived by the target's worker
        assert merged.claim(own.id or "").status == "current"
        assert merged.recall("where does the payments service keep its data?", k=1).items[0].content == \
            "The payments API moved its data to db-9."
        assert merged.check().ok
        merged.run_projections()
        assert merged.check().ok
        with pytest.raises(ConflictError):  # the same file twice: its ids map the same way
            merged.import_lines(lines, remap=True)
        clash = Memory(runtime, namespace + "-clash")
        clash.ingest("The payments API keeps its data on db-1.", "x", claim_key="payments.db")
        with pytest.raises(ConflictError) as keyed:
            clash.import_lines(lines, remap=True)
        assert "payments.db" in keyed.value.message
        _no_staging(driver)
    finally:
        for ns in (copy_ns, merged_ns, namespace + "-clash"):
            drop_namespace(driver, ns)


def test_the_purge_path_export_drop_import_carries_no_erased_text(runtime: Any, namespace: str,
                                                                  driver: Driver) -> None:
    """docs/OPERATIONS.md, "What an erase leaves on disk": the namespace exported after an erasure, and
    imported into a fresh database (here: a fresh namespace), holds neither the erased text nor the
    bytes of its vector."""
    from palimpsest.graph.lifecycle import export_format

    mem = Memory(runtime, namespace, log_packets=True)
    mem.ingest("The Zorbulax Q. Quentavian account number is 7731-PERIWINKLE.", "crm", metadata={"customer": 81})
    mem.ingest("Zorbulax Quentavian prefers email.", "crm")
    secret_id = mem.recall("what is the Zorbulax Q. Quentavian account number?", k=2).items[0].id
    records, _, _ = driver.execute_query("MATCH (c:Claim {id: $id}) RETURN c.embedding AS e", id=secret_id)
    vector_bytes = export_format.encode_vector([float(x) for x in records[0]["e"]])
    mem.run_projections()
    mem.erase(metadata={"customer": 81.0}, reason="customer 81 asked")

    exported = list(mem.export_lines())
    text = "\n".join(exported)
    for needle in ("periwinkle", "7731", "q. quentavian", "account number"):
        assert needle not in text.lower(), needle
    assert json.dumps(vector_bytes)[1:-1] not in text
    copy_ns = f"{namespace}-purged"
    try:
        Memory(runtime, copy_ns).import_lines(exported, remap=True)
        found, _, _ = driver.execute_query(
            "MATCH (n) WHERE n.namespace = $ns UNWIND keys(n) AS k WITH n[k] AS v WHERE v IS :: STRING "
            "AND toLower(v) CONTAINS 'periwinkle' RETURN count(*) AS n", ns=copy_ns)
        assert found[0]["n"] == 0
        assert Memory(runtime, copy_ns).check().ok
    finally:
        drop_namespace(driver, copy_ns)


def test_a_stalled_export_releases_the_write_lock(memory: Memory) -> None:
    import threading
    import time

    from palimpsest.graph.lifecycle.export import ExportTimeoutError

    memory.ingest("The export bound is tested here", "test")
    lines = memory.export_lines(lock_seconds=1.5)
    assert json.loads(next(lines))["kind"] == "header"  # the lock is taken
    time.sleep(3.5)  # the consumer stalls past the bound
    wrote: list[Any] = []
    writer = threading.Thread(target=lambda: wrote.append(memory.ingest("written while the export stalled", "t")))
    writer.start()
    writer.join(20)
    assert wrote and wrote[0].ok, "a writer still waits on the stalled export's lock"
    with pytest.raises(ExportTimeoutError) as ended:
        next(lines)
    assert ended.value.code == "TIMEOUT" and ended.value.field == "lock_seconds"
    with pytest.raises(BadInputError):
        next(memory.export_lines(lock_seconds=0))


# ------------------------------------------------------------------------ poisoned files
# Each case (benchmarks/import_poisons.py) takes a real export and edits one record, as an attacker would:
# the import must refuse it with BAD_INPUT naming the line and the field, and write nothing (no target
# node, no staging left).
@pytest.fixture(scope="module")
def source(runtime: Any, driver: Driver) -> Iterator[list[str]]:
    """The export of one real store, shared by the poisoning cases (each imports into its own namespace)."""
    ns = f"t-src-{uuid.uuid4().hex[:10]}"
    mem = Memory(runtime, ns)
    _build(mem)
    yield list(mem.export_lines())
    drop_namespace(driver, ns)


def _nothing_written(driver: Driver, target: str) -> None:
    records, _, _ = driver.execute_query(
        "MATCH (n) WHERE n.namespace = $ns OR n.namespace STARTS WITH $staging RETURN count(n) AS n",
        ns=target, staging=staging_prefix(target))
    assert records[0]["n"] == 0, f"the refused import left {records[0]['n']} nodes"


@pytest.mark.parametrize("case", sorted(POISONS))
def test_a_poisoned_file_is_refused_naming_the_line_and_field(case: str, source: list[str], runtime: Any,
                                                              namespace: str, driver: Driver) -> None:
    lines = source
    edit, field = POISONS[case]
    bad, line = edit(lines)
    target = Memory(runtime, namespace)
    with pytest.raises(BadInputError) as refused:
        target.import_lines(bad, remap=True)
    error = refused.value
    assert (error.code, error.field, error.limit) == ("BAD_INPUT", field, line), error.to_dict()
    assert error.message.startswith(f"line {line}: "), error.message
    _nothing_written(driver, namespace)


def test_the_cli_names_a_poisoned_line_in_one_line(source: list[str], namespace: str, neo4j: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    lines = source
    bad, line = POISONS["NaN in a vector"][0](lines)
    result = CliRunner().invoke(app, ["import", "-n", namespace, "--remap"], input="\n".join(bad) + "\n")
    assert result.exit_code == 1 and (result.exception is None or isinstance(result.exception, SystemExit))
    errors = [text for text in result.output.splitlines() if "error:" in text]
    assert len(errors) == 1 and f"BAD_INPUT: line {line}: field 'embedding'" in errors[0], result.output
    assert "Traceback" not in result.output


def test_forged_terms_are_recomputed_from_the_content(source: list[str], runtime: Any, namespace: str,
                                                      driver: Driver) -> None:
    """A claim's stored term analysis decides what a query matches lexically: a file listing the words of
    unrelated queries must not make them match. The import derives it from the content, as ingest does."""
    lines = source
    bad, line = FORGED_TERMS(lines)
    old_id = json.loads(bad[line - 1])["props"]["id"]
    target = Memory(runtime, namespace)
    result = target.import_lines(bad, remap=True)
    assert result.mode == "remap"
    records, _, _ = driver.execute_query("MATCH (c:Claim {namespace: $ns, id: $id}) RETURN c.content AS content, "
                                         "c.terms AS terms, c.names AS names, c.terms_v AS v",
                                         ns=namespace, id=remapped_id(namespace, "claim", old_id))
    stored = records[0]
    assert {"terms": stored["terms"], "names": stored["names"], "terms_v": stored["v"]} == \
        stored_terms(stored["content"])
    assert not set(FORGED_WORDS) & set(stored["terms"])
    assert target.check().ok
    packet = target.recall(" ".join(FORGED_WORDS))
    assert all(not item.lexical_score for item in packet.items), \
        [(item.content, item.lexical_score) for item in packet.items]
    assert target.recall("where does the payments service keep its data?", k=1).items[0].content == \
        "The payments API moved its data to db-9."


def test_an_import_cut_by_an_outage_is_retried_into_the_empty_namespace(
        source: list[str], runtime: Any, embedder: Any, namespace: str, driver: Driver,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The database goes away after every record is staged and checked, before the switch-in: nothing is
    switched in, the cleanup cannot run either, and the error says so. The retry clears the leftover
    staging and imports into the still-empty namespace."""
    lines = source
    outage = Outage(driver)
    finish = importer._Importer.finish

    def finish_then_outage(self: Any, last_line: int) -> None:
        finish(self, last_line)
        outage.down = True

    monkeypatch.setattr(importer._Importer, "finish", finish_then_outage)
    with pytest.raises(UnavailableError) as cut:
        importer.import_records(cast(Driver, outage), namespace, lines, remap=True,
                                embedding_model=embedder.model_name, embedding_dimension=embedder.dimension)
    assert "retrying is safe" in cut.value.message and f"the next import into {namespace!r}" in cut.value.message
    monkeypatch.undo()
    left, _, _ = driver.execute_query("MATCH (n) WHERE n.namespace STARTS WITH $p RETURN count(n) AS n",
                                      p=staging_prefix(namespace))
    assert left[0]["n"] > 0, "the outage should have left the staging behind (the cleanup could not run)"
    target = Memory(runtime, namespace)
    assert target.settings().revision == 0

    result = target.import_lines(lines, remap=True)
    assert result.mode == "remap" and result.cleared_staging == left[0]["n"]
    again, _, _ = driver.execute_query("MATCH (n) WHERE n.namespace STARTS WITH $p RETURN count(n) AS n",
                                       p=staging_prefix(namespace))
    assert again[0]["n"] == 0
    assert target.check().ok
    assert target.recall("where does the payments service keep its data?", k=1).items[0].content == \
        "The payments API moved its data to db-9."
