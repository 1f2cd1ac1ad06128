"""The analysis a claim stores when written is recall's analysis of its text, and its version moves with it.

Recall trusts `Claim.terms` / `Claim.names` only when `Claim.terms_v` equals TERMS_VERSION; if the
analysis changed without the version, old claims would be scored by another analysis than new ones.
The digest below is of the analysis of a fixed corpus: a change to `terms` or `identifiers` fails it
until TERMS_VERSION is bumped and the digest recorded for the new version.
"""

from __future__ import annotations

import hashlib
import json
import random

from palimpsest.graph.recall.rows import ClaimRow
from palimpsest.graph.text import TERMS_VERSION, identifiers, stored_terms, term_set

CORPUS = [
    "The staging cluster now runs 12 nodes.",
    "Ask Clara Novak about db-7 and the Acme–Keystone reseller contract",
    "checkout-scheduler calls checkout-gateway for payment; p99 is 300ms in Q3.",
    "Gate change: BA117 now boards at gate B32 (was B30), v2.3 of the app shows it.",
    "Marco took a week off, so his leave balance is down to 10 days.",
    "The Lakeside Rowing Club squad trains on Tuesdays and Thursdays at 06:30.",
    "It is what it is: any of them can do it now, currently or still.",
    "",
]
# TERMS_VERSION -> sha256 of the analysis of CORPUS (first 16 hex digits).
DIGESTS = {1: "f9b80e03b9590559"}


def _digest() -> str:
    analysis = [stored_terms(text) for text in CORPUS]
    return hashlib.sha256(json.dumps(analysis, sort_keys=True).encode()).hexdigest()[:16]


def test_the_analysis_digest_is_the_one_recorded_for_its_version() -> None:
    assert TERMS_VERSION in DIGESTS, "record the digest of the new analysis for the new TERMS_VERSION"
    assert _digest() == DIGESTS[TERMS_VERSION], (
        "the analysis of recall's terms changed: bump graph.text.TERMS_VERSION and record the new digest")


def test_stored_terms_are_the_analysis_of_the_text() -> None:
    rng = random.Random(5)
    words = [w for text in CORPUS for w in text.split()]
    for _ in range(300):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 20)))
        stored = stored_terms(text)
        assert stored["terms"] == sorted(term_set(text))
        assert stored["names"] == sorted(identifiers(text))
        assert stored["terms_v"] == TERMS_VERSION


def _row(content: str, **stored: object) -> ClaimRow:
    return ClaimRow.from_record({"id": "c", "content": content, "claim_key": None, "revision": 1, "valid_from": None,
                                 "valid_to": None, "vis_from": [1], "vis_to": [0], "retracted_at_revision": None,
                                 **stored})


def test_a_row_reads_its_stored_analysis_and_analyses_its_content_without_one() -> None:
    text = CORPUS[1]
    with_stored = _row("(not analysed)", terms=["acme", "~db-7"], names=["~db-7"])
    assert with_stored.term_set() == {"acme", "~db-7"} and with_stored.identifiers() == {"~db-7"}
    without = _row(text)  # no current stored analysis (an older claim, or another version)
    assert without.term_set() == term_set(text) and without.identifiers() == identifiers(text)
