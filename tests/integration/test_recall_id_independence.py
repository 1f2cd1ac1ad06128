"""The same writes answer alike in any namespace: recall depends on what a store holds, not on its ids.

A claim id is a random uuid. Recall's orders used to end in it, so wherever candidates tie — the text
answer is cut on the share of query terms a claim holds, and hundreds of claims share the share at the
cut — the ids a write happened to draw chose which candidates a recall weighed; the same claims written
twice answered with different packets (graph.claims.order). Here one seeded corpus, full of such ties, is
written into two namespaces, once below the size at which a namespace gets its own indexes and once
above it, and every recall, as one round and as two and with graph expansion, must rank the same
contents with the same scores.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from palimpsest.api.memory import Memory
from palimpsest.api.worker import ProjectionWorker, WorkerConfig
from palimpsest.graph.claims import index as claim_index
from palimpsest.schema.models import ClaimInput, Policy
from tests.conftest import wipe_namespace

_PEOPLE = ["Ada Brennan", "Tomas Okafor", "Lena Marsh", "Ravi Castell", "Ines Duarte", "Oskar Lind"]
_PLACES = ["the harbour", "the old mill", "Kestrel Ridge", "the market hall", "Fenwick Bay", "the north quay"]
_THINGS = ["the ledger", "a survey", "the boat repairs", "the lantern festival", "a pottery class", "the choir"]
_VERBS = ["organised", "visited", "wrote about", "paid for", "cancelled", "photographed", "joined"]
_QUERIES = [
    "Who organised the lantern festival at the harbour?",
    "What did Ada Brennan write about?",
    "the ledger at the old mill",
    "Which survey was cancelled at Kestrel Ridge?",
    "pottery class in Fenwick Bay",
    "Who photographed the choir?",
]


def _corpus(n: int, seed: int) -> list[ClaimInput]:
    """`n` claims from a small vocabulary: most share one or two words with any query, so the text
    answer's cut falls inside long runs of claims holding the same share of its terms."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = (f"{rng.choice(_PEOPLE)} {rng.choice(_VERBS)} {rng.choice(_THINGS)} at {rng.choice(_PLACES)}"
                f" in week {i % 40}.")
        out.append(ClaimInput(content=text, source=rng.choice(["notes", "mail", "chat"])))
    return out


def _ranked(packet: Any) -> list[tuple[str, float, float]]:
    return [(it.content, it.score, it.lexical_score) for it in packet.items]


@pytest.mark.parametrize("size", [claim_index.EXACT_LIMIT - 56, claim_index.EXACT_LIMIT + 144])
def test_the_same_writes_recall_the_same_packets_under_other_ids(runtime: Any, size: int) -> None:
    corpus = _corpus(size, seed=size)
    spaces = [f"t-ids-{n}-{random.Random().getrandbits(40):010x}" for n in range(2)]
    try:
        mems = [Memory(runtime, ns) for ns in spaces]
        for mem in mems:
            mem.ingest_many(corpus)  # one call: one revision, one recorded_at, so freshness ties too
            assert claim_index.ensure(runtime.driver, mem.namespace) == (size >= claim_index.EXACT_LIMIT)
            ProjectionWorker(runtime, WorkerConfig(entity_embeddings=False), detectors=[]).run_once(mem.namespace)
            mem.register_policy(Policy(version="wide", sibling_penalty=1.0))
            mem.register_policy(Policy(version="ppr", sibling_penalty=1.0, graph_expansion="ppr"))
            # every person and place is then a hub: a seed keeps only some of the claims naming it
            mem.register_policy(Policy(version="hubs", sibling_penalty=1.0, graph_expansion="ppr", ppr_max_degree=20))
        a, b = mems
        ids = [{it.id for it in m.recall(_QUERIES[0], k=20).items} for m in mems]
        assert not ids[0] & ids[1]  # the two stores share no id: only their contents can agree
        for query in _QUERIES:
            for k in (5, 20):
                pa, pb = a.recall(query, k=k), b.recall(query, k=k)
                assert _ranked(pa) == _ranked(pb), query
                assert pa.completeness == pb.completeness
            # Graph expansion: seeds tie on specificity (every person is named alike often), and claims a
            # seed reaches alike score alike (graph.knowledge.ppr.top_claims).
            pa, pb = (m.recall(query, k=10, policy_version="ppr") for m in mems)
            assert "ppr" in pa.stages
            assert _ranked(pa) == _ranked(pb), query
            ha, hb = (m.recall(query, k=10, policy_version="hubs") for m in mems)
            assert _ranked(ha) == _ranked(hb), query
            ra, rb = (m.recall_rounds(query, k=10, rounds=2, policy_version="wide") for m in mems)
            assert [(it.content, it.score) for it in ra.items] == [(it.content, it.score) for it in rb.items], query
            assert [r.query for r in ra.rounds] == [r.query for r in rb.rounds]
    finally:
        for ns in spaces:
            wipe_namespace(runtime.driver, ns)
