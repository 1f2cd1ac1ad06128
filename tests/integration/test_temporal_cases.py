"""The cases of docs/TEMPORAL.md one by one, through the Python face on a real Neo4j, plus the
regressions that motivated them (keys ignoring world time, backfills hiding the present, two
current claims for one key after an inferred supersession was retracted)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from palimpsest.graph.claims import inferred

KEY = "india.president"
Q = "who is the president of India"


def at(year: int, month: int = 1) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def contents(memory: Any, **kw: Any) -> list[str]:
    packet = memory.recall(Q, k=5, **kw)
    return [it.content for it in packet.items if it.claim_key == KEY]


def test_succession_closes_the_old_window_and_keeps_it_for_past_instants(memory: Any) -> None:
    a = memory.ingest("The president of India is Pranab Mukherjee.", source="s", claim_key=KEY, valid_from="2012-07-25")
    b = memory.ingest("The president of India is Ram Nath Kovind.", source="s", claim_key=KEY, valid_from="2017-07-25")
    assert b.closes == a.id and b.supersedes is None
    assert contents(memory) == ["The president of India is Ram Nath Kovind."]
    assert contents(memory, valid_at=at(2014)) == ["The president of India is Pranab Mukherjee."]
    assert contents(memory, valid_at=at(2018)) == ["The president of India is Ram Nath Kovind."]
    # Before b was written the store believed a's window open: an as-of recall still says so.
    assert contents(memory, as_of_revision=a.revision, valid_at=at(2018)) == [
        "The president of India is Pranab Mukherjee."]
    assert memory.claim(a.id).valid_until == "2017-07-25T00:00:00Z"
    assert memory.claim(a.id).status == "current"
    then = memory.recall(Q, k=5, valid_at=at(2014)).items[0]
    assert (then.valid_to, then.valid_until) == (None, "2017-07-25T00:00:00Z")
    before = memory.recall(Q, k=5, valid_at=at(2014), as_of_revision=a.revision).items[0]
    assert before.valid_until is None
    entries = memory.history(KEY)
    assert [(e.kind, e.revision) for e in entries[0].events] == [("recorded", a.revision), ("closed", b.revision)]
    assert entries[0].events[1].valid_until == "2017-07-25T00:00:00Z" and entries[0].events[1].by == b.id
    assert memory.check().ok


def test_backfill_joins_the_history_without_hiding_the_present(memory: Any) -> None:
    b = memory.ingest("The president of India is Ram Nath Kovind.", source="s", claim_key=KEY, valid_from="2017-07-25")
    a = memory.ingest("The president of India is Pranab Mukherjee.", source="s", claim_key=KEY, valid_from="2012-07-25")
    assert a.supersedes is None and memory.claim(b.id).status == "current"
    assert contents(memory) == ["The president of India is Ram Nath Kovind."]
    assert contents(memory, valid_at=at(2014)) == ["The president of India is Pranab Mukherjee."]
    assert memory.claim(a.id).valid_until == "2017-07-25T00:00:00Z"
    assert memory.check().ok


def test_corrections_hide_the_old_version_at_every_world_time(memory: Any) -> None:
    old = memory.ingest("The president of India is Pratibha Patil.", source="s", claim_key=KEY, valid_from="2012-07-25")
    same_start = memory.ingest("The president of India is Pranab Mukherjee.", source="s", claim_key=KEY,
                               valid_from="2012-07-25")
    assert same_start.supersedes == old.id
    assert contents(memory, valid_at=at(2014)) == ["The president of India is Pranab Mukherjee."]
    later = memory.ingest("The president of India is Ram Nath Kovind.", source="s", claim_key=KEY,
                          valid_from="2017-07-25")
    # Said explicitly: the later claim's window [2017, …) overlaps both, so both are corrected.
    fixed = memory.ingest("The president of India is Ram Nath Kovind (corrected).", source="s", claim_key=KEY,
                          valid_from="2013-01-01", correction=True)
    hidden = {memory.claim(i).status for i in (same_start.id, later.id)}
    assert hidden == {"superseded"} and fixed.supersedes in (same_start.id, later.id)
    assert contents(memory, valid_at=at(2014)) == ["The president of India is Ram Nath Kovind (corrected)."]
    assert contents(memory, valid_at=at(2012, 9)) == []
    assert memory.check().ok


def test_a_claim_without_a_window_corrects_and_its_retraction_restores_both_axes(memory: Any) -> None:
    a = memory.ingest("The president of India is Pranab Mukherjee.", source="s", claim_key=KEY, valid_from="2012-07-25")
    b = memory.ingest("The president of India is Ram Nath Kovind.", source="s", claim_key=KEY, valid_from="2017-07-25")
    c = memory.ingest("The president of India is Droupadi Murmu.", source="s", claim_key=KEY)
    assert {memory.claim(a.id).status, memory.claim(b.id).status} == {"superseded"}
    assert contents(memory, valid_at=at(2014)) == ["The president of India is Droupadi Murmu."]
    memory.retract(c.id, "wrong key")
    assert contents(memory, valid_at=at(2014)) == ["The president of India is Pranab Mukherjee."]
    assert contents(memory) == ["The president of India is Ram Nath Kovind."]
    # Retracting b reopens a's window: a is the answer again after 2017.
    memory.retract(b.id, "wrong")
    assert contents(memory, valid_at=at(2018)) == ["The president of India is Pranab Mukherjee."]
    assert memory.claim(a.id).valid_until is None
    events = [(e.kind, e.revision) for e in memory.history(KEY)[0].events]
    # c hid a and b (so b no longer closed a), the retraction of c brought both back (b closes a
    # again), the retraction of b reopened a's window.
    assert events == [("recorded", 1), ("closed", 2), ("reopened", 3), ("superseded", 3), ("restored", 4),
                      ("closed", 4), ("reopened", 5)]
    assert memory.check().ok


def test_k1_n_k2_never_leaves_two_current_claims_for_one_key(memory: Any, driver: Any) -> None:
    """An inferred supersession of keyed K1 by un-keyed N, then K2 on the key, then retracting N:
    inference never crosses into a key's chain, and restoration never makes a second current claim."""
    k1 = memory.ingest("The staging cluster runs 8 nodes.", source="s", claim_key="staging.size")
    n = memory.ingest("The staging cluster now runs 10 nodes.", source="s")
    with driver.session() as session:
        wrote = session.execute_write(inferred.write_inferred, memory.namespace, [
            inferred.InferredWrite(n.id, k1.id, n.revision, 0.95, "value", "regression")])
    assert wrote == 0  # a keyed claim is never the older side of an inference
    k2 = memory.ingest("The staging cluster runs 12 nodes.", source="s", claim_key="staging.size")
    assert k2.supersedes == k1.id
    memory.retract(n.id, "regression")
    current = [e.claim.id for e in memory.history("staging.size") if e.claim.status == "current"]
    assert current == [k2.id]
    assert memory.check().ok


def test_restoration_defers_to_a_later_version_that_would_correct(memory: Any) -> None:
    """K1 corrected by K2 (no windows); K3 written; retracting K2 must not bring K1 back beside K3."""
    k1 = memory.ingest("Deploys are allowed on weekdays.", source="s", claim_key="deploy.window")
    k2 = memory.ingest("Deploys are frozen.", source="s", claim_key="deploy.window")
    k3 = memory.ingest("Deploys are allowed on Tuesdays.", source="s", claim_key="deploy.window")
    memory.retract(k2.id, "mistake")
    statuses = {e.claim.id: e.claim.status for e in memory.history("deploy.window")}
    assert statuses == {k1.id: "superseded", k2.id: "retracted", k3.id: "current"}
    memory.retract(k3.id, "mistake")
    statuses = {e.claim.id: e.claim.status for e in memory.history("deploy.window")}
    assert statuses[k1.id] == "current"
    assert memory.check().ok


def test_check_reports_a_broken_invariant(memory: Any, driver: Any) -> None:
    a = memory.ingest("Deploys are allowed on weekdays.", source="s", claim_key="deploy.window")
    memory.ingest("Deploys are frozen.", source="s", claim_key="deploy.window")
    assert memory.check().ok
    # Damage the store by hand: bring the old version back without undoing its supersession.
    driver.execute_query("MATCH (c:Claim {namespace: $ns, id: $id}) SET c.status = 'current', "
                         "c.vis_to = c.vis_to[..-1] + [4611686018427387904]", ns=memory.namespace, id=a.id)
    report = memory.check()
    assert not report.ok
    assert report.violation_counts.get("one_per_key_and_instant", 0) >= 1
    assert report.violation_counts.get("linear_chains", 0) >= 1


def test_check_command_reports_on_the_namespace(memory: Any) -> None:
    from typer.testing import CliRunner

    from palimpsest.api.cli import app

    memory.ingest("Deploys are allowed on weekdays.", source="s", claim_key="deploy.window")
    result = CliRunner().invoke(app, ["check", "-n", memory.namespace, "--json"])
    assert result.exit_code == 0, result.output
    assert '"violation_counts":{}' in result.output and '"claims":1' in result.output
