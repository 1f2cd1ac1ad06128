"""Lexical evidence of recall: identifier terms, head-word phrases and the sibling rule."""

from __future__ import annotations

from graph.recall import identifiers, names_sibling, terms


def test_a_name_keeps_its_head_word_so_two_contracts_of_one_pair_differ() -> None:
    reseller = set(terms("Per the Acme–Keystone reseller contract, damages may not exceed $750,000."))
    supply = set(terms("The Acme–Keystone supply contract limits liability."))
    assert "~acme–keystone reseller" in reseller and "~acme–keystone supply" in supply
    assert "~acme–keystone" in reseller & supply


def test_prose_compounds_get_no_head_word_and_stopwords_end_a_name() -> None:
    assert not any(t.startswith("~long-term ") for t in terms("the long-term debt of Sterling Holdings"))
    assert not any(t.startswith("~acme–keystone ") for t in terms("Acme–Keystone is the pair"))


def test_names_are_identifiers_but_head_word_phrases_are_not() -> None:
    assert identifiers("Ask Clara Novak about db-7 and the Acme–Keystone reseller contract") == {
        "~ask clara novak", "~db-7", "~acme–keystone"}


def test_a_claim_naming_a_sibling_and_not_the_asked_name_is_flagged() -> None:
    asked = identifiers("How fast must checkout-scheduler answer?")
    assert names_sibling(asked, "The checkout-gateway service keeps p99 under 750 ms.")
    assert not names_sibling(asked, "checkout-scheduler calls checkout-gateway for payment.")
    assert not names_sibling(asked, "A latency budget applies to every service.")  # names nothing
    assert not names_sibling(asked, "The ledger-api keeps p99 under 750 ms.")  # unrelated, not a sibling


def test_inflections_of_one_name_are_not_siblings_and_two_asked_names_are_not_either() -> None:
    assert not names_sibling(identifiers("What is the auto-renewal period?"), "The contract auto-renews yearly.")
    both = identifiers("Compare Sterling Holdings and Sterling Systems")
    assert not names_sibling(both, "Sterling Systems is rated BB+.")
    assert names_sibling(identifiers("Rating of Sterling Holdings?"), "Sterling Systems is rated BB+.")


def _row(cid: str, content: str) -> dict[str, object]:
    return {"id": cid, "content": content, "source": "s", "claim_key": None, "metadata_json": None,
            "revision": 1, "recorded_at": "2026-01-01T00:00:00Z", "valid_from": None, "valid_to": None, "tau": None}


def test_ppr_reorders_and_fills_below_the_protected_top() -> None:
    from graph.recall import _rank
    from schema.models import Policy

    rows = [_row("a", "Ravi Alvarez takes warfarin"), _row("b", "Ravi Alvarez is allergic to penicillin"),
            _row("c", "The clinic moved to Harbour Street"), _row("d", "Warfarin interacts with aspirin")]
    sims = {"a": 0.95, "b": 0.9, "c": 0.6, "d": 0.7}
    graph = {"c": 1.0, "d": 0.2}  # PPR strongly favours a bridge claim with little direct match
    query = "What does Ravi Alvarez take?"
    plain, _, _ = _rank(rows, sims, query, Policy(version="p"), None, limit=4)
    off, _, _ = _rank(rows, sims, query, Policy(version="p", graph_expansion="ppr", graph_weight=3.0,
                                             ppr_protect_top=0), None, None, graph, limit=4)
    on, total, _ = _rank(rows, sims, query, Policy(version="p", graph_expansion="ppr", graph_weight=3.0,
                                                ppr_protect_top=2), None, None, graph, limit=4)
    assert off[0].id == "c"  # unprotected, the bridge takes rank 1
    assert [i.id for i in on][:2] == [i.id for i in plain][:2]  # protected: direct hits keep ranks 1-2
    assert [i.id for i in on][2] == "c" and [i.rank for i in on] == [1, 2, 3, 4] and total == 4
