"""The in-memory entity graph's numpy walk and PPR against a plain reference of the same semantics.

graph.knowledge.mention_graph answers on numbered nodes (claims and entities numbered by sorted id, adjacency
in numpy). The reference below is the walk written out over Python dicts, as the neighbourhood
statement reads: an entity's first max_degree claims by (claim revision desc, content hash, claim id),
edges of revision ≤ seq only, a hub (more than max_degree claims) not expanded. On random graphs with ids of
mixed lengths, parallel edges at two revisions, backfilled edges and graphs built in two catch-ups,
every answer must be the reference's, and PPR on numbers must be graph.knowledge.ppr.rank's on ids. (The
integration test compares the same functions with the statements on a real Neo4j.)
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from palimpsest.graph.knowledge import mention_graph, ppr

Edge = tuple[str, int, str, str, int, str]


def _random_edges(rng: random.Random) -> list[Edge]:
    claims = {f"c{rng.randint(0, 10 ** rng.randint(1, 4))}": rng.randint(1, 12) for _ in range(rng.randint(5, 60))}
    entities = [f"e{i}" * rng.randint(1, 3) for i in range(rng.randint(2, 15))] + ["hub"]
    edges: set[Edge] = set()
    for claim, revision in claims.items():
        # content hashes in another order than the ids, some shared (equal contents), some missing ("")
        digest = rng.choice(["", "0f", "7a", "7a", "c3", "e9"])
        for entity in rng.sample(entities, rng.randint(1, min(4, len(entities)))):
            written = rng.randint(revision, 12) if rng.random() < 0.2 else revision
            edges.add((claim, revision, entity, f"name {entity[:2]}", written, digest))
            if rng.random() < 0.05:  # a second MENTIONS relationship of the same pair, later
                edges.add((claim, revision, entity, f"name {entity[:2]}", min(12, written + 1), digest))
    return sorted(edges)


def _claims_of(edges: list[Edge], entity: str, seq: int, limit: int) -> list[str]:
    ordered = sorted((-cr, h, c, r) for c, cr, e, _, r, h in edges if e == entity)
    return [c for _, _, c, r in ordered if r <= seq][:limit]


def _reference_neighbourhood(edges: list[Edge], seq: int, seeds: list[str], degree: int) -> list[tuple[str, str]]:
    near_claims = {c for s in set(seeds) for c in _claims_of(edges, s, seq, degree)}
    near: dict[str, set[str]] = {}
    for c, _, e, _, r, _ in edges:
        if c in near_claims and r <= seq:
            near.setdefault(e, set()).add(c)
    pairs: set[tuple[str, str]] = set()
    for entity, claims in near.items():
        bounded = _claims_of(edges, entity, seq, degree + 1)
        pairs.update((c, entity) for c in (claims if len(bounded) > degree else bounded))
    return sorted(pairs)


def _built(edges: list[Edge], rng: random.Random) -> mention_graph.MentionGraph:
    """The graph at seq 12, read whole or caught up from an earlier seq (as MentionCache does)."""
    if rng.random() < 0.5:
        return mention_graph.empty("life").with_edges(12, edges)
    cut = rng.randint(0, 11)
    early = mention_graph.empty("life").with_edges(cut, [e for e in edges if e[4] <= cut])
    return early.with_edges(12, [e for e in edges if e[4] > cut])


@pytest.mark.parametrize("seed", range(40))
def test_the_numbered_walk_answers_as_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    edges = _random_edges(rng)
    graph = _built(edges, rng)
    assert graph.edge_table() == sorted({(c, cr, e, r) for c, cr, e, _, r, _ in edges})
    entities = sorted({e for _, _, e, _, _, _ in edges} | {"absent"})
    claims = sorted({c for c, _, _, _, _, _ in edges})
    for _ in range(10):
        seq, degree = rng.randint(0, 12), rng.randint(1, 6)
        seeds = rng.sample(entities, rng.randint(1, 4))
        pairs = _reference_neighbourhood(edges, seq, seeds, degree)
        assert mention_graph.neighbourhood(graph, seq, seeds, degree) == pairs
        assert mention_graph.seed_facts(graph, seq, entities, degree)[0] == {
            e: n for e in entities if (n := len(_claims_of(edges, e, seq, degree + 1)))}
        some = [*rng.sample(claims, min(len(claims), 5)), "nobody"]
        named, by_claim = mention_graph.linked(graph, seq, ["name e1", "name hu", "none"], some)
        assert named == sorted({e for _, _, e, n, r, _ in edges if n in {"name e1", "name hu"} and r <= seq})
        assert by_claim == {c: es for c in some
                            if (es := [e for cc, _, e, _, r, _ in sorted(edges, key=lambda x: (x[0], x[2], x[4]))
                                       if cc == c and r <= seq])}
        for damping, limit in ((0.5, 2), (0.85, 1000)):
            assert mention_graph.top_ranked(graph, seq, seeds, degree, damping=damping, limit=limit) == \
                ppr.top_claims(ppr.rank(pairs, seeds, damping=damping), limit)


def test_ids_longer_than_any_held_are_kept_whole_on_catch_up() -> None:
    graph = mention_graph.empty("life").with_edges(1, [("c1", 1, "e1", "x", 1, "h1")])
    longer = graph.with_edges(2, [("claim-with-a-long-id", 2, "entity-long", "y", 2, "h2")])
    assert longer.edge_table() == [("c1", 1, "e1", 1), ("claim-with-a-long-id", 2, "entity-long", 2)]
    assert longer.has_claim("claim-with-a-long-id") and not longer.has_claim("claim-with")
    assert mention_graph.neighbourhood(longer, 2, ["entity-long"], 5) == [("claim-with-a-long-id", "entity-long")]


def test_top_numbered_keeps_ties_by_id_at_the_cut() -> None:
    # scores that are equal once rounded to 9 decimals but not before: the cut takes them by id
    claims = np.array([0, 1, 2, 3])
    scores = np.array([0.3000000001, 0.3000000004, 0.2, 0.3000000002])
    names = np.array(["d", "c", "b", "a"])
    assert ppr.top_numbered(claims, scores, names, 2) == ppr.top_claims(
        {str(names[i]): round(float(s), 9) for i, s in enumerate(scores)}, 2)


def test_the_cut_keeps_a_whole_tie() -> None:
    # claims a seed reaches alike score alike; a cut through the tie would choose them by their random ids
    scores = {"z": 0.5, "y": 0.3, "b": 0.3, "a": 0.3, "c": 0.1}
    assert list(ppr.top_claims(scores, 1)) == ["z"]
    assert list(ppr.top_claims(scores, 2)) == ["z", "a", "b", "y"]
    assert list(ppr.top_claims(scores, 4)) == ["z", "a", "b", "y"]
    assert list(ppr.top_claims(scores, 9)) == ["z", "a", "b", "y", "c"]
    assert ppr.top_claims(scores, 0) == {}


def test_entities_are_named_by_their_canonical_form() -> None:
    edges = [("c1", 1, "e2", "harbour", 1, "h1"), ("c2", 1, "e1", "ada", 1, "h2")]
    graph = mention_graph.empty("life").with_edges(1, edges)
    assert mention_graph.seed_facts(graph, 1, ["e1", "e2", "e9"], 5) == ({"e1": 1, "e2": 1},
                                                                         {"e1": "ada", "e2": "harbour"})
