"""The offline entity extractor: normalisation, matching, proposals, resolution — pure, no Neo4j."""

from __future__ import annotations

import itertools

from palimpsest.extraction.entities import (
    ClaimText,
    EntityMatcher,
    EntityVectors,
    ExtractorOptions,
    KnownEntity,
    Neighbour,
    backfill_links,
    build_matcher,
    canonical,
    code_signature,
    entity_id,
    exact_cosine,
    is_value,
    link_and_propose,
    propose,
    query_phrases,
    resolve,
)


def test_canonical_forms_and_code_signatures() -> None:
    assert canonical("Checkout-API") == canonical("checkout api") == canonical("The checkout_API") == "checkout api"
    assert canonical("Beyoncé") == "beyoncé"  # accents distinguish names
    assert code_signature("db-7") == ("7",) and code_signature("DB 9") == ("9",)
    assert code_signature("Q1 review") == ("q1",) != code_signature("Q2 review")
    assert is_value("March 2020") and is_value("1,200") and is_value("1990s") and not is_value("db-7")


def test_matcher_respects_token_boundaries_and_prefers_longest() -> None:
    m = EntityMatcher([("e1", "db-7"), ("e2", "Bank of America"), ("e3", "America"), ("e4", "api")])
    found = m.find("db-77 is not DB 7; Bank of America and America; rapid api")
    assert [(x.entity_id, x.key) for x in found] == [
        ("e1", "db 7"), ("e2", "bank of america"), ("e3", "america"), ("e4", "api")]


def test_matcher_ties_go_to_the_smaller_id_whatever_the_order() -> None:
    a = EntityMatcher([("e9", "Mercury"), ("e1", "mercury")])
    b = EntityMatcher([("e1", "mercury"), ("e9", "Mercury")])
    assert [x.entity_id for x in a.find("Mercury rising")] == [x.entity_id for x in b.find("Mercury rising")] == ["e1"]


def test_proposals_cover_declared_names_identifiers_and_skip_values() -> None:
    text = ("In 2019 Ravi Alvarez moved checkout-api to db-7 at the Bank of America in March 2020. "
            "A well-known long-term fix. Then Paris was calm.")
    got = {(m.canonical, m.kind) for m in propose(text, {"subject": "Payments Team", "title": "Lilu (mythology)"})}
    assert got == {("payments team", "declared"), ("lilu", "declared"), ("ravi alvarez", "name"),
                   ("checkout api", "identifier"), ("db 7", "identifier"), ("bank of america", "name")}
    singles = {m.canonical for m in propose(text, {}, ExtractorOptions(single_names=True))}
    assert "paris" in singles and "then" not in singles and "ravi" not in singles


def test_resolution_links_known_merges_near_duplicates_but_never_across_codes() -> None:
    known = [KnownEntity("ent-db7", "db-7", ()), KnownEntity("ent-nw", "Northwind Traders", ())]
    claims = [ClaimText("c1", "db-9 replaced db-7 for Northwind Traders Inc.", {}, 5),
              ClaimText("c2", "Northwind Traders Inc renewed; db-9 is slow.", {}, 6)]
    linked = link_and_propose(claims, build_matcher(known))
    assert {"ent-db7", "ent-nw"} <= linked.links["c1"]
    unresolved = {p.mention.canonical for p in linked.unresolved}
    assert unresolved == {"db 9", "northwind traders inc"}
    # The embedding model thinks db-9 is db-7 (cosine 0.99): the code signature forbids the merge.
    neighbours = {"db 9": [Neighbour("ent-db7", "db-7", 0.99)],
                  "northwind traders inc": [Neighbour("ent-nw", "Northwind Traders", 0.95)]}
    result = resolve("ns", claims, linked, neighbours=neighbours, threshold=0.92)
    assert [e.canonical for e in result.new_entities] == ["db 9"]
    assert result.new_entities[0].id == entity_id("ns", "db 9")
    assert result.aliases == {"ent-nw": ["Northwind Traders Inc"]}
    assert ("c2", entity_id("ns", "db 9"), 6) in result.mentions
    assert ("c1", "ent-nw", 5) in result.mentions


def test_resolution_is_deterministic_and_within_batch_near_duplicates_merge() -> None:
    claims = [ClaimText("c2", "Acme Rockets Ltd shipped.", {}, 2), ClaimText("c1", "Acme Rockets shipped.", {}, 1)]
    linked = link_and_propose(claims, build_matcher([]))
    vectors = {"acme rockets": [1.0, 0.0], "acme rockets ltd": [0.99, 0.05]}
    r1 = resolve("ns", claims, linked, vectors=vectors, threshold=0.95)
    r2 = resolve("ns", list(reversed(claims)), link_and_propose(list(reversed(claims)), build_matcher([])),
                 vectors=vectors, threshold=0.95)
    assert r1 == r2
    assert [e.canonical for e in r1.new_entities] == ["acme rockets"]  # first by revision wins
    assert r1.aliases == {entity_id("ns", "acme rockets"): ["Acme Rockets Ltd"]}


def test_backfill_links_older_claims_at_the_introducing_revision() -> None:
    claims = [ClaimText("c9", "x", {"subject": "Harrow Lake"}, 9)]
    result = resolve("ns", claims, link_and_propose(claims, build_matcher([])))
    links = backfill_links([("c1", "we swam in harrow lake"), ("c2", "harrow lakes")], result.new_entities)
    assert links == [("c1", entity_id("ns", "harrow lake"), 9)]


def test_query_phrases_are_canonical_ngrams_without_values() -> None:
    phrases = query_phrases("Where was Lena Vogt born in 1990?")
    assert "lena vogt" in phrases and "vogt" in phrases and "1990" not in phrases
    assert phrases == sorted(phrases)


def test_find_all_keeps_overlapping_names_and_possessives_end_a_name() -> None:
    m = EntityMatcher([("e2", "Bank of America"), ("e3", "America"), ("e5", "Bank of America Tower")])
    assert [x.entity_id for x in m.find_all("the Bank of America Tower")] == ["e2", "e5", "e3"]
    assert [x.entity_id for x in m.find("the Bank of America Tower")] == ["e5"]
    got = {x.canonical for x in propose("James Petrova's report reached Orion Freight's CEO Lena Vogt.")}
    assert got == {"james petrova", "orion freight", "ceo lena vogt"}


def test_exact_cosine_and_entity_vectors_find_every_candidate() -> None:
    a, b = [0.6, 0.8, 0.0], [0.6, 0.79, 0.05]
    assert exact_cosine(a, b) == exact_cosine(list(a), list(b)) == round(exact_cosine(a, b), 6)
    index = EntityVectors()
    for i in range(50):  # many near names: an approximate top-k would stop at k
        index.add(f"e{i}", f"name {i}", f"Name {i}", [1.0, i / 1000.0, 0.0])
    found = index.candidates([1.0, 0.0, 0.0], 0.99)
    assert len(found) == 50 and all(cos >= 0.99 for cos, _, _ in found)
    assert index.candidates([0.0, 1.0, 0.0], 0.5) == []


Entities = set[tuple[str, str, str, tuple[str, ...]]]


def _run_in_batches(claims: list[ClaimText], vectors: dict[str, list[float]], cuts: list[int],
                    threshold: float = 0.95) -> tuple[Entities, set[tuple[str, str, int]]]:
    """What the worker does, batch by batch, without the store: returns (entities, mentions)."""
    entities: dict[str, tuple[str, str, list[str]]] = {}   # id -> (canonical, name, aliases)
    mentions: dict[tuple[str, str], int] = {}
    index = EntityVectors()
    done: list[ClaimText] = []
    bounds = [0, *cuts, len(claims)]
    for lo, hi in itertools.pairwise(bounds):
        batch = claims[lo:hi]
        known = [KnownEntity(eid, name, tuple(aliases)) for eid, (_, name, aliases) in entities.items()]
        linked = link_and_propose(batch, build_matcher(known))
        result = resolve("ns", batch, linked, vectors=vectors, index=index, threshold=threshold)
        found = list(result.mentions) + backfill_links([(c.id, c.content) for c in done], result.new_entities,
                                                       result.introduced)
        for e in result.new_entities:
            entities[e.id] = (e.canonical, e.name, [])
            if e.canonical in vectors:
                index.add(e.id, e.canonical, e.name, vectors[e.canonical])
        for eid, aliases in result.aliases.items():
            entities[eid][2].extend(aliases)
        for cid, eid, rev in found:
            mentions.setdefault((cid, eid), rev)
        done.extend(batch)
    names = {eid: canonical for eid, (canonical, _, _) in entities.items()}
    return ({(canonical, name, eid, tuple(aliases)) for eid, (canonical, name, aliases) in entities.items()},
            {(cid, names[eid], rev) for (cid, eid), rev in mentions.items()})


def test_resolution_does_not_depend_on_batch_boundaries() -> None:
    claims = [ClaimText("c1", "Orion Freight opened a depot in Harbor Bank Tower.", {}, 1),
              ClaimText("c2", "An audit of the harbor bank's vault was led by Lena Vogt.", {}, 2),
              ClaimText("c3", "The kestrel labs readers failed; Kestrel Laboratories paid.", {}, 3, position=0),
              ClaimText("c4", "Harbor Bank hired Lena Vogts.", {}, 3, position=1),
              ClaimText("c5", "Kestrel Labs met Orion Freight Co and db-7 clusters.", {}, 4),
              ClaimText("c6", "db-9 clusters replaced db-7 clusters.", {}, 5)]
    vectors = {"orion freight": [1.0, 0.0, 0.0, 0.0], "orion freight co": [0.98, 0.1, 0.0, 0.0],
               "harbor bank tower": [0.0, 1.0, 0.0, 0.0], "harbor bank": [0.0, 0.9, 0.4, 0.0],
               "lena vogt": [0.0, 0.0, 1.0, 0.0], "lena vogts": [0.0, 0.05, 0.99, 0.0],
               "kestrel laboratories": [0.0, 0.0, 0.0, 1.0], "kestrel labs": [0.0, 0.0, 0.1, 0.99],
               "db 7": [0.5, 0.5, 0.5, 0.5], "db 9": [0.5, 0.5, 0.5, 0.5]}  # equal vectors, different codes
    one = _run_in_batches(claims, vectors, [])
    for cuts in ([1], [2], [3], [2, 4], [1, 2, 3, 4, 5]):
        assert _run_in_batches(claims, vectors, cuts) == one, cuts
    entities, mentions = one
    assert {e[0] for e in entities} == {"orion freight", "harbor bank tower", "harbor bank", "lena vogt",
                                        "kestrel laboratories", "db 7", "db 9"}
    assert ("c1", "harbor bank", 3) in mentions      # nested in an older name, linked from its revision
    assert ("c2", "harbor bank", 3) in mentions      # lower case and possessive, in an older claim
    assert ("c3", "kestrel laboratories", 3) in mentions


def test_a_name_ends_with_its_sentence_and_a_greeting_is_no_part_of_it() -> None:
    got = {m.surface for m in propose("He studied under Johann Strauss II. He later met Koji Kondo. Alabama. "
                                      "Today the Key West line opened.")}
    assert got == {"Johann Strauss II", "Koji Kondo", "Key West"}
    # Abbreviations and initials do not end a sentence.
    kept = {m.surface for m in propose("Mt. Baker Ski Area hired George W. Jenkins, then U.S. Steel Corp. did too.")}
    assert kept == {"Mt. Baker Ski Area", "George W. Jenkins", "U.S. Steel Corp"}
    # A vocative: the greeting goes, a one-word name is no proposal; a two-word one stays.
    assert {m.surface for m in propose("Thanks Mel! Hey Caroline, Wow Amy Ellis Nutt. I agree")} == {"Amy Ellis Nutt"}
