"""One date parser on every face: ingest and recall dates mean the same on Python and GraphQL, and
numbers are never read as Unix seconds (nothing lands in 1970 by accident)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore
from palimpsest.api.memory import Memory
from palimpsest.schema.errors import BadInputError, NotFoundError

pytestmark = pytest.mark.integration

NUMERIC = ["20170725", 1500000000, "1500000000"]


@pytest.fixture
def client(runtime: Any) -> Iterator[TestClient]:
    with TestClient(create_app(runtime, keys=KeyStore([])), base_url="http://localhost") as c:  # local mode
        yield c


def gql(client: TestClient, query: str, **variables: Any) -> dict[str, Any]:
    resp = client.post("/graphql", json={"query": query, "variables": variables})
    assert resp.status_code in (200, 400), resp.text
    body: dict[str, Any] = resp.json()
    return body


def nothing_in_1970(memory: Memory) -> None:
    with memory.rt.driver.session(database=memory.rt.settings.database) as s:
        rows = s.run("MATCH (c:Claim {namespace: $ns}) WHERE c.valid_from.year = 1970 OR c.valid_to.year = 1970 "
                     "RETURN count(c) AS n", ns=memory.namespace).single()
    assert rows is not None and rows["n"] == 0


def test_python_ingest_reads_years_months_and_dates_as_utc_starts(memory: Memory) -> None:
    year = memory.ingest("Project Orion started", source="wiki", valid_from="2017", valid_to="2019-07")
    assert year.ok and year.id
    stored = memory.claim(year.id)
    assert (stored.valid_from, stored.valid_to) == ("2017-01-01T00:00:00Z", "2019-07-01T00:00:00Z")
    day = memory.ingest("Project Vega started", source="wiki", valid_from=date(2014, 1, 1),
                        valid_to="2015-06-30T22:00:00-02:00")
    assert day.id
    assert (memory.claim(day.id).valid_from, memory.claim(day.id).valid_to) == ("2014-01-01T00:00:00Z",
                                                                                "2015-07-01T00:00:00Z")
    nothing_in_1970(memory)


@pytest.mark.parametrize("field", ["valid_from", "valid_to"])
@pytest.mark.parametrize("value", NUMERIC)
def test_python_ingest_refuses_numbers_naming_the_field(memory: Memory, field: str, value: Any) -> None:
    with pytest.raises(BadInputError) as exc:
        memory.ingest("Project Lyra started", source="wiki", **{field: value})
    assert exc.value.code == "BAD_INPUT" and exc.value.field == field and "Unix" in exc.value.message
    batch = memory.ingest_many([{"content": "Project Lyra started", "source": "wiki", field: value},
                                {"content": "Project Lyra exists", "source": "wiki"}])
    error = batch.items[0].error
    assert error is not None and (error["code"], error["field"]) == ("BAD_INPUT", field)
    assert batch.items[1].ok  # the bad item fails alone
    assert memory.stats().claims_by_status == {"current": 1}
    nothing_in_1970(memory)


def _two_ceos(memory: Memory) -> None:
    memory.ingest("The CEO of Initech is Alice", source="press", valid_from="2010", valid_to="2015")
    memory.ingest("The CEO of Initech is Bob", source="press", valid_from="2015-01-01")


def test_python_recall_valid_at_takes_plain_dates_and_years(memory: Memory) -> None:
    _two_ceos(memory)
    for when in ("2014-01-01", "2014", "2014-06", date(2014, 1, 1), "2014-01-01T00:00:00+00:00"):
        packet = memory.recall("who is the CEO of Initech?", valid_at=when)
        assert [i.content for i in packet.items] == ["The CEO of Initech is Alice"], when
    assert memory.recall("who is the CEO of Initech?", valid_at="2014-01-01").valid_at == "2014-01-01T00:00:00Z"
    later = memory.recall("who is the CEO of Initech?", valid_at="2015")
    assert [i.content for i in later.items] == ["The CEO of Initech is Bob"]
    for bad in (*NUMERIC, "2014-01-01T00:00:00", "0001-01-01T00:00:00+14:00"):
        with pytest.raises(BadInputError) as exc:
            memory.recall("who is the CEO of Initech?", valid_at=bad)
        assert exc.value.field == "valid_at"
    with pytest.raises(BadInputError) as since:
        memory.contradictions(since="1500000000")
    assert since.value.field == "since"
    assert memory.contradictions(since="2014") == []


INGEST = """mutation($input: ClaimInput!, $ns: String) { ingest(input: $input, namespace: $ns) {
  items { ok id } } }"""
CLAIM = """query($id: String!, $ns: String) { claim(id: $id, namespace: $ns) { validFrom validTo } }"""


def test_graphql_ingest_year_is_stored_as_its_first_instant(client: TestClient, namespace: str) -> None:
    res = gql(client, INGEST, ns=namespace, input={"content": "Project Orion started", "source": "wiki",
                                                   "validFrom": "2017", "validTo": "2017-07-25"})
    assert not res.get("errors"), res
    cid = res["data"]["ingest"]["items"][0]["id"]
    got = gql(client, CLAIM, id=cid, ns=namespace)["data"]["claim"]
    assert got == {"validFrom": "2017-01-01T00:00:00Z", "validTo": "2017-07-25T00:00:00Z"}


@pytest.mark.parametrize(("key", "value"), [("validFrom", "20170725"), ("validFrom", "1500000000"),
                                            ("validTo", "1500000000"), ("validTo", "2017-07-25T10:00:00")])
def test_graphql_ingest_refuses_numeric_strings_with_the_camel_case_field(
        client: TestClient, memory: Memory, namespace: str, key: str, value: str) -> None:
    res = gql(client, INGEST, ns=namespace, input={"content": "Project Lyra started", "source": "wiki", key: value})
    (err,) = res["errors"]
    assert err["extensions"]["code"] == "BAD_INPUT" and err["extensions"]["field"] == key
    assert err["message"].startswith(key + " ")
    many = gql(client, """mutation($in: [ClaimInput!]!, $ns: String) { ingestMany(inputs: $in, namespace: $ns) {
        items { ok error } } }""", ns=namespace, **{"in": [
        {"content": "Project Lyra started", "source": "wiki", key: value},
        {"content": "Project Lyra exists", "source": "wiki"}]})["data"]["ingestMany"]
    assert [i["ok"] for i in many["items"]] == [False, True]
    assert (many["items"][0]["error"]["code"], many["items"][0]["error"]["field"]) == ("BAD_INPUT", key)
    assert memory.stats().claims_by_status == {"current": 1}
    nothing_in_1970(memory)


def test_graphql_ingest_refuses_a_bare_number_before_it_reaches_the_store(client: TestClient, memory: Memory,
                                                                         namespace: str) -> None:
    """`validFrom` is a String: the GraphQL type system refuses the integer 1500000000 outright."""
    res = gql(client, INGEST, ns=namespace, input={"content": "Project Lyra started", "source": "wiki",
                                                   "validFrom": 1500000000})
    assert res.get("errors") and not res.get("data")
    assert "validFrom" in res["errors"][0]["message"]
    with pytest.raises(NotFoundError):  # nothing was written: the namespace has no store yet
        memory.stats()


RECALL = """query($q: String!, $at: String, $ns: String) { recall(query: $q, validAt: $at, namespace: $ns) {
  validAt items { content } } }"""


def test_graphql_recall_claims_and_contradictions_take_plain_dates(client: TestClient, memory: Memory,
                                                                  namespace: str) -> None:
    _two_ceos(memory)
    res = gql(client, RECALL, q="who is the CEO of Initech?", at="2014-01-01", ns=namespace)
    assert not res.get("errors"), res
    assert res["data"]["recall"] == {"validAt": "2014-01-01T00:00:00Z",
                                     "items": [{"content": "The CEO of Initech is Alice"}]}
    year = gql(client, RECALL, q="who is the CEO of Initech?", at="2015", ns=namespace)["data"]["recall"]
    assert year["items"] == [{"content": "The CEO of Initech is Bob"}]
    for bad in ("20140101", "1500000000", "2014-01-01T00:00:00"):
        err = gql(client, RECALL, q="who is the CEO of Initech?", at=bad, ns=namespace)["errors"][0]
        assert (err["extensions"]["code"], err["extensions"]["field"]) == ("BAD_INPUT", "validAt")
        assert err["message"].startswith("validAt ")
    claims = """query($f: ClaimFilterInput, $ns: String) { claims(filter: $f, namespace: $ns) {
        edges { node { content } } } }"""
    page = gql(client, claims, f={"validAt": "2014"}, ns=namespace)
    assert [e["node"]["content"] for e in page["data"]["claims"]["edges"]] == ["The CEO of Initech is Alice"]
    bad_filter = gql(client, claims, f={"validAt": "20140101"}, ns=namespace)["errors"][0]
    assert (bad_filter["extensions"]["code"], bad_filter["extensions"]["field"]) == ("BAD_INPUT", "filter.validAt")
    contra = """query($s: String, $ns: String) { contradictions(since: $s, namespace: $ns) { score } }"""
    assert gql(client, contra, s="2014-01", ns=namespace)["data"]["contradictions"] == []
    bad_since = gql(client, contra, s="1500000000", ns=namespace)["errors"][0]
    assert (bad_since["extensions"]["code"], bad_since["extensions"]["field"]) == ("BAD_INPUT", "since")


def test_cli_jsonl_and_valid_at_use_the_same_parser(tmp_path: Path, memory: Memory, namespace: str, neo4j: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from palimpsest.api.cli import app

    monkeypatch.setenv("NEO4J_URI", neo4j.uri)
    data = tmp_path / "claims.jsonl"
    data.write_text("\n".join(json.dumps(line) for line in [
        {"content": "The CEO of Initech is Alice", "source": "press", "valid_from": "2010", "valid_to": "2015"},
        {"content": "The CEO of Initech is Bob", "source": "press", "valid_from": "2015-01-01"},
        {"content": "The CEO of Initech is Eve", "source": "press", "valid_from": "20170725"},
        {"content": "The CEO of Initech is Mallory", "source": "press", "valid_from": 1500000000},
    ]))
    runner = CliRunner()
    res = runner.invoke(app, ["ingest", str(data), "-n", namespace])
    assert res.exit_code == 2, res.output
    assert "ingested 2 of 4" in res.output and "line 3: valid_from" in res.output and "line 4: valid_from" in res.output
    res = runner.invoke(app, ["recall", "who is the CEO of Initech?", "-n", namespace, "--json", "--valid-at", "2014"])
    assert res.exit_code == 0, res.output
    packet = json.loads(res.stdout)
    assert packet["valid_at"] == "2014-01-01T00:00:00Z"
    assert [i["content"] for i in packet["items"]] == ["The CEO of Initech is Alice"]
    res = runner.invoke(app, ["recall", "who is the CEO?", "-n", namespace, "--valid-at", "1500000000"])
    # Refused as a usage error (exit 2) before anything connects, naming the option.
    assert res.exit_code == 2 and "--valid-at" in res.output and "timestamps" in res.output, res.output
    nothing_in_1970(memory)


def test_mcp_remember_and_recall_use_the_same_parser(memory: Memory) -> None:
    from mcp import Client

    from palimpsest.api.mcp_server import build_mcp

    async def scenario() -> dict[str, Any]:
        async with Client(build_mcp(memory)) as client:
            alice = await client.call_tool("remember", {"content": "The CEO of Initech is Alice", "source": "press",
                                                        "valid_from": "2010", "valid_to": "2015"})
            await client.call_tool("remember", {"content": "The CEO of Initech is Bob", "source": "press",
                                                "valid_from": "2015-01-01"})
            digits = await client.call_tool("remember", {"content": "The CEO is Eve", "source": "press",
                                                         "valid_from": "20170725"})
            number = await client.call_tool("remember", {"content": "The CEO is Mallory", "source": "press",
                                                          "valid_from": 1500000000})
            then = await client.call_tool("recall", {"query": "who is the CEO of Initech?", "valid_at": "2014-01-01"})
            bad_at = await client.call_tool("recall", {"query": "who is the CEO?", "valid_at": "1500000000"})
            return {"alice": alice, "digits": digits, "number": number, "then": then, "bad_at": bad_at}

    out = anyio.run(scenario)
    stored = memory.claim(out["alice"].structured_content["id"])
    assert (stored.valid_from, stored.valid_to) == ("2010-01-01T00:00:00Z", "2015-01-01T00:00:00Z")
    assert out["digits"].is_error and "BAD_INPUT (valid_from)" in out["digits"].content[0].text
    assert out["number"].is_error  # a bare number is not a string: refused before Memory is called
    assert [i["content"] for i in out["then"].structured_content["items"]] == ["The CEO of Initech is Alice"]
    assert out["bad_at"].is_error and "BAD_INPUT (valid_at)" in out["bad_at"].content[0].text
    assert memory.stats().claims_by_status == {"current": 2}
    nothing_in_1970(memory)
