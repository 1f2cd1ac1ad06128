"""Rules of erasure that need no database: which names are valid, which metadata values are equal,
and how a text spells a name."""

from __future__ import annotations

import pytest
import typer

from palimpsest.api.cli import _check_namespace
from palimpsest.api.memory import validate_namespace
from palimpsest.extraction.entities.normalize import surface_of
from palimpsest.graph.claims.index import namespace_label
from palimpsest.graph.lifecycle.erase import Selector, canonical_value, metadata_matches
from palimpsest.schema.errors import BadInputError


@pytest.mark.parametrize("name", ["t2\n", "t2\n\n", "\nt2", "t2 ", "t2\r", "", "-t2", "a" * 65])
def test_a_namespace_is_the_whole_string(name: str) -> None:
    with pytest.raises(BadInputError) as refused:
        validate_namespace(name)
    assert refused.value.code == "BAD_INPUT" and refused.value.field == "namespace"
    with pytest.raises(ValueError):
        namespace_label(name)
    with pytest.raises(typer.BadParameter):
        _check_namespace(name)


def test_good_namespaces_still_pass() -> None:
    for name in ("t2", "ops.eu-1", "A_b", "a" * 64):
        assert validate_namespace(name) == name and namespace_label(name) == "NS_" + name


@pytest.mark.parametrize(("stored", "wanted"), [
    ('{"customer":81}', {"customer": 81}),
    ('{ "customer" : 81.0 }', {"customer": 81}),
    ('{"customer":8.1e1,"tier":"gold"}', {"customer": 81.0, "tier": "gold"}),
    ('{"tier": "gold", "customer": 82}', {"customer": 82.0}),
    ('{"who":{"b":2,"a":1}}', {"who": {"a": 1.0, "b": 2}}),
    ('{"name":"caf\\u00e9"}', {"name": "café"}),
])
def test_metadata_values_match_whatever_their_json_spelling(stored: str, wanted: dict[str, object]) -> None:
    assert metadata_matches(stored, wanted)


@pytest.mark.parametrize(("stored", "wanted"), [
    ('{"flag":true}', {"flag": 1}),
    ('{"flag":1}', {"flag": True}),
    ('{"n":0}', {"n": False}),
    ('{"customer":"81"}', {"customer": 81}),
    ('{"customer":81.5}', {"customer": 81}),
    ('{"big":1e300}', {"big": 10 ** 300}),
    ('{"xs":[1,2]}', {"xs": [2, 1]}),
    ('{"name":"Cafe"}', {"name": "cafe"}),
    ("not json", {"a": 1}),
    ("[1]", {"a": 1}),
])
def test_metadata_values_that_differ_do_not_match(stored: str, wanted: dict[str, object]) -> None:
    assert not metadata_matches(stored, wanted)


def test_a_metadata_value_must_be_json() -> None:
    assert canonical_value(81) == canonical_value(81.0) != canonical_value(True)
    with pytest.raises(BadInputError) as refused:
        Selector(metadata={"when": object()})
    assert refused.value.field == "metadata"


def test_a_text_spells_a_name_its_own_way() -> None:
    assert surface_of("Met ZORBULAX-QUENTAVIAN at noon", ["zorbulax quentavian"]) == "ZORBULAX-QUENTAVIAN"
    assert surface_of("The Acme Keystone deal", ["acme", "acme keystone"]) == "Acme Keystone"
    assert surface_of("nothing here", ["acme"]) is None
