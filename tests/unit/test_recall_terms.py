"""Lexical evidence of recall: identifier terms, head-word phrases and the sibling rule."""

from __future__ import annotations

from palimpsest.graph.recall import identifiers, names_sibling, terms


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
    assert names_sibling(asked, identifiers("The checkout-gateway service keeps p99 under 750 ms."))
    assert not names_sibling(asked, identifiers("checkout-scheduler calls checkout-gateway for payment."))
    assert not names_sibling(asked, identifiers("A latency budget applies to every service."))  # names nothing
    assert not names_sibling(asked, identifiers("The ledger-api keeps p99 under 750 ms."))  # unrelated, not a sibling


def test_inflections_of_one_name_are_not_siblings_and_two_asked_names_are_not_either() -> None:
    asked = identifiers("What is the auto-renewal period?")
    assert not names_sibling(asked, identifiers("The contract auto-renews yearly."))
    both = identifiers("Compare Sterling Holdings and Sterling Systems")
    assert not names_sibling(both, identifiers("Sterling Systems is rated BB+."))
    assert names_sibling(identifiers("Rating of Sterling Holdings?"), identifiers("Sterling Systems is rated BB+."))



def _stems(text: str) -> frozenset[str]:
    from palimpsest.graph.text import stemmed

    return stemmed(frozenset(terms(text)))


def test_stems_join_inflections_of_a_word_and_nothing_else() -> None:
    asked = _stems("Where has Melanie camped?")
    assert "camp" in asked and asked & _stems("We went camping at the beach")
    assert _stems("What did Caroline research?") & _stems("Researching adoption agencies")
    assert _stems("The staging cluster runs 12 nodes") >= {"node", "cluster", "run"}
    assert not _stems("the campus library") & asked  # a stem is a word's own, not any prefix
    assert {"class", "bus"} <= _stems("a class of bus")  # not plurals
    assert "~ravi alvarez" in _stems("We asked Ravi Alvarez")  # names stay whole
    assert "camped" in terms("Where has Melanie camped?")  # recall's terms themselves are not stemmed


def test_stemming_is_the_same_from_every_thread() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from palimpsest.graph.text import stem

    words = [f"{w}{suffix}" for w in ("camp", "paint", "research", "walk", "talk") for suffix in ("", "ed", "ing", "s")]
    expected = [stem(w) for w in words]
    stem.cache_clear()
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(stem, words * 50))
    assert got == expected * 50


def test_a_text_query_searches_stems_as_prefixes_only_under_stems() -> None:
    from palimpsest.graph.text import TextQuery, lucene_query

    words = TextQuery.of("Where has Melanie camped with Ravi Alvarez?")
    assert words.lucene == lucene_query("Where has Melanie camped with Ravi Alvarez?") == "alvarez camped melanie ravi"
    assert words.tokens == ("alvarez", "camped", "melanie", "ravi") and words.prefixes == ()
    assert words.share(frozenset({"melanie", "camping"})) == 1 / len(words.exact)
    stems = TextQuery.of("Where has Melanie camped with Ravi Alvarez? Go!", stems=True)
    assert stems.prefixes == ("alvarez", "camp", "melani", "ravi")
    assert stems.lucene == "alvarez camped go melanie ravi alvarez* camp* melani* ravi*"
    assert "camp[a-z0-9]*" in stems.tokens
    assert stems.exact == ("go", "~ravi alvarez")  # a name whole, a stem shorter than three whole
    present = frozenset({"melanie", "camping", "~ravi alvarez"})
    assert stems.hits(present) == 3 and stems.share(present) == 3 / 6
    assert stems.hits(frozenset({"~ravi alvarez jr"})) == 0  # names never match as prefixes
