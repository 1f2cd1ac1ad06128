"""The sentence reranker's pure parts: how a claim is cut into sentences, and how the two orders fuse."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from palimpsest.graph.sentences import MAX_SENTENCES, best_sentence_cosines, fused_with_sentences, sentences


def test_a_labelled_turn_is_its_speakers_in_every_sentence() -> None:
    turn = "Melanie: Yep, Caroline. Taking care of ourselves is vital. I'm off to go swimming! Talk soon?"
    assert sentences(turn) == ["Melanie: Yep, Caroline.", "Melanie: Taking care of ourselves is vital.",
                               "Melanie: I'm off to go swimming!", "Melanie: Talk soon?"]
    assert sentences("Dr. Ada Brennan: Fine. Thanks.") == ["Dr. Ada Brennan: Fine.", "Dr. Ada Brennan: Thanks."]


def test_abbreviations_decimals_and_quotes_do_not_end_a_sentence_wrongly() -> None:
    text = 'He was born in Ulm, e.g. in the south. It is 3.5 km away. "Quoted." (Aside.) End'
    assert sentences(text) == ["He was born in Ulm, e.g. in the south.", "It is 3.5 km away.", '"Quoted."',
                               "(Aside.)", "End"]
    # Lowercase after a full stop is no new sentence; a lowercase phrase before a colon is no label.
    assert sentences("see p. 4 and cf. the note. Next one.") == ["see p. 4 and cf. the note.", "Next one."]
    assert sentences("Caroline said: hi. Bye.") == ["Caroline said: hi.", "Bye."]


def test_one_sentence_is_itself_and_a_long_text_is_bounded() -> None:
    assert sentences("  no   punctuation here ") == ["no punctuation here"]
    many = " ".join(f"Sentence {i}." for i in range(40))
    cut = sentences(many)
    assert len(cut) == MAX_SENTENCES and cut[-1].startswith(f"Sentence {MAX_SENTENCES - 1}.")
    assert cut[-1].endswith("Sentence 39.")


def _embed_axes(texts: Sequence[str]) -> list[list[float]]:
    """A toy embedder: a sentence mentioning "swim" points along x, anything else along y."""
    return [[1.0, 0.0] if "swim" in t else [0.0, 1.0] for t in texts]


def test_a_claim_scores_by_its_best_sentence() -> None:
    contents = ["Melanie: Hi! I'm off to swim. Bye!", "Melanie: Hi! Bye!"]
    assert best_sentence_cosines([1.0, 0.0], contents, _embed_axes) == [1.0, 0.0]
    assert best_sentence_cosines([1.0, 0.0], [], _embed_axes) == []


def test_fusion_is_one_for_first_on_both_and_keeps_fused_order_on_ties() -> None:
    scores = fused_with_sentences([0.9, 0.1, 0.5], weight=1.0, rrf_k=60)
    assert scores[0] == pytest.approx(1.0)
    assert scores[2] == scores[1]  # fused ranks 3 and 2, sentence ranks 2 and 3: at weight 1 a tie ...
    heavier = fused_with_sentences([0.9, 0.1, 0.5], weight=2.0, rrf_k=60)
    assert heavier[2] > heavier[1]  # ... which a heavier sentence weight breaks for the better sentence
    tied = fused_with_sentences([0.4, 0.4, 0.4], weight=1.0, rrf_k=60)
    assert tied[0] > tied[1] > tied[2]  # equal sentences share a rank: the fused order decides
    light = fused_with_sentences([0.1, 0.9], weight=0.01, rrf_k=60)
    assert light[0] > light[1]  # a light sentence weight leaves the fused order as it was


def test_without_an_embedder_the_stage_is_unavailable_and_the_fused_ranking_stands() -> None:
    from palimpsest.graph.recall.rerank import rerank
    from palimpsest.schema.models import Freshness, PacketItem, Policy

    fresh = Freshness(age_seconds=0, tau_seconds=1, decay=1, status="current", superseded=False, retracted=False)
    items = [PacketItem(id=f"c{i}", content=f"Melanie: turn {i}.", source="Melanie", claim_key=None, metadata={},
                        revision=1, recorded_at="2026-01-01T00:00:00Z", valid_from=None, valid_to=None, rank=i,
                        score=1 / i, relevance=1 / i, vector_similarity=0.5, matched_via=None, lexical_score=0.0,
                        freshness=fresh) for i in (1, 2)]
    policy = Policy(version="s", rerank="sentences")
    out = rerank("where?", items, policy, vector=[1.0, 0.0], embed=None)
    assert out.unavailable and not out.ran and out.items == items
    assert rerank("where?", items, policy, vector=[1.0, 0.0], embed=_embed_axes).ran


def test_stored_sentences_are_keyed_by_model_and_sentences_and_embedded_once() -> None:
    import numpy as np

    from palimpsest.graph.claims.sentence_vectors import embedded_sentences, known_first, sentence_key

    calls: list[list[str]] = []

    def embed(texts: Sequence[str]) -> list[list[float]]:
        calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    rows = embedded_sentences([("b", "A: One. Two."), ("a", "A: Two.")], "m", embed)
    assert calls == [["A: One.", "A: Two."]]  # each distinct sentence once, in sorted order
    assert [r.id for r in rows] == ["b", "a"]
    assert np.frombuffer(rows[0].vectors, dtype="<f4").tolist() == [7.0, 1.0, 7.0, 1.0]
    assert rows[0].key == sentence_key("m", ["A: One.", "A: Two."])
    assert len({sentence_key("m", ["A: One.", "A: Two."]), sentence_key("n", ["A: One.", "A: Two."]),
                sentence_key("m", ["A: One. A: Two."]), sentence_key("m", ["A: One.A: Two."])}) == 4
    calls.clear()
    texts = known_first({"A: One.": np.zeros(2, dtype=np.float32)}, embed)(["A: Two.", "A: One.", "A: Two."])
    assert calls == [["A: Two."]] and [list(map(float, t)) for t in texts] == [[7.0, 1.0], [0.0, 0.0], [7.0, 1.0]]
    calls.clear()
    assert len(known_first({"x": np.zeros(2)}, embed)(["x"])) == 1 and calls == []
