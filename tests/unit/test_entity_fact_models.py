"""The entity graph's typed results: the one conversion from a fact record, and the GraphQL types derived
from the models (schema.models Entity / EntityDetail / EntityNeighbour / Fact). No database: the record is
what the driver hands `graph.knowledge.facts` for `_FACT_FIELDS`, built here with the driver's own types."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone
from typing import Any

import pytest
from neo4j.time import DateTime
from pydantic import ValidationError

from palimpsest.api import graphql_types as t
from palimpsest.graph.knowledge.facts import _fact
from palimpsest.schema import models as m


def _record(**changes: Any) -> dict[str, Any]:
    f = {"id": "fact-1", "subject": "Mara Quint", "subject_id": "ent-mara", "predicate": "lives_in",
         "object": "Berlin", "object_id": "ent-berlin", "valid_from": None,
         "valid_to": None, "recorded_at": None, "revision": 7, "confidence": 0.8, "status": "superseded",
         "superseded_at_revision": 9, "superseded_by": "fact-2"}
    return {"f": f | changes, "supported_by": ("claim-a", "claim-b")}


def test_a_fact_record_becomes_a_fact_with_iso_times() -> None:
    record = _record(valid_from=DateTime(2026, 2, 1, 0, 0, 0, tzinfo=UTC),
                     recorded_at=DateTime(2026, 2, 3, 13, 30, 0, tzinfo=timezone(timedelta(hours=2))),
                     valid_to="2026-03-01T00:00:00Z[UTC]")  # hot reads may hand Cypher's toString instead
    fact = _fact(record)
    assert type(fact) is m.Fact
    assert (fact.valid_from, fact.valid_to, fact.recorded_at) == (
        "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-02-03T11:30:00Z")
    assert fact.supported_by == ["claim-a", "claim-b"]
    assert (fact.status, fact.superseded_by, fact.superseded_at_revision) == ("superseded", "fact-2", 9)


def test_a_fact_record_with_an_unknown_status_is_refused() -> None:
    with pytest.raises(ValidationError, match="status"):
        _fact(_record(status="retracted"))


def test_graphql_entity_carries_a_weight_only_for_a_neighbour() -> None:
    base = {"id": "ent-1", "name": "Checkout-API", "canonical": "checkout api", "aliases": ["checkout"]}
    plain = t.entity_to_gql(m.Entity(**base), "ns-a")
    neighbour = t.entity_to_gql(m.EntityNeighbour(**base, weight=2.0), "ns-a")
    detail = t.entity_to_gql(m.EntityDetail(**base, pagerank=0.4, mentions=3), "ns-b")
    assert (plain.id, plain.name, plain.canonical, plain.aliases, plain.type, plain.pagerank, plain.weight) == (
        "ent-1", "Checkout-API", "checkout api", ["checkout"], None, None, None)
    assert neighbour.weight == 2.0 and detail.weight is None and detail.pagerank == 0.4
    assert not hasattr(detail, "mentions")  # not a GraphQL field
    # the namespace rides along for the neighbours and facts the entity loads
    assert [vars(e)["_namespace"] for e in (plain, neighbour, detail)] == ["ns-a", "ns-a", "ns-b"]


def test_graphql_fact_is_the_model_field_for_field() -> None:
    fact = _fact(_record())
    out = t.Fact.from_pydantic(fact)
    assert {name: getattr(out, name) for name in m.Fact.model_fields} == fact.model_dump()
