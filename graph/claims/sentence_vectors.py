"""Sentence vectors stored with their claims: what `rerank: sentences` reads instead of embedding again.

Why: the sentence reranker (graph.sentences) matches the query against each sentence of the
claims at the head of the fused ranking. A process embeds a claim's sentences the first time a recall
reads them and keeps them in an LRU, so the first recalls over a namespace pay one embedding per
sentence of the head (p50 about 150 ms on LoCoMo on two cores against about 30 ms without the stage),
and so does every other process serving it. The background worker embeds them once instead, when it
projects the claim, and stores them on it; recall reads them in its ranking transaction and embeds only
what is not stored.

A packet does not depend on which path gave a vector: both are the embedder's `embed_stable` rows
(a text's bits do not depend on the other texts of the call), float32 numbers kept as float32 bytes,
so a stored row is the row recall would have computed, bit for bit. A stored row is read only when the
claim's `sentence_key` — a hash of the embedding model and of the sentences as `sentences()` cuts the
content now — is the key recall computes, so a change of the splitter or of the model makes recall
embed again rather than read vectors of other texts.

Where: `Claim.sentence_key` (text) and `Claim.sentence_vectors` (bytes: the sentences' float32 rows,
little-endian, in sentence order). Erasure deletes the claim node and both with it (graph.lifecycle.erase).

Claims projected before the worker kept sentences (the namespace chose the stage later, or the data came
from an older build) are brought up to date by `backfill_batch`, a bounded batch per worker pass, from
`Store.sentence_cursor` (the first revision the backfill has not finished; the database's, not exported)
up to `projections_seq` — the claims after it get theirs when they are projected. The backfill looks for
claims without vectors only: vectors under a stale key (a build that cuts sentences differently) are
passed over by recall, which embeds those claims itself, until something clears them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from neo4j import Driver, ManagedTransaction

from palimpsest.graph.sentences import sentences

# The embedder's stable rows for texts (extraction.embeddings.Embedder.embed_stable): float32 values.
EmbedStable = Callable[[Sequence[str]], Sequence[Sequence[float]]]

_WRITE = (
    "UNWIND $rows AS row MATCH (c:Claim {namespace: $ns, id: row.id}) WHERE c.content = row.content "
    "SET c.sentence_key = row.key, c.sentence_vectors = row.vectors RETURN count(c) AS n"
)
_MISSING = (
    "MATCH (c:Claim {namespace: $ns}) WHERE c.revision >= $after AND c.revision <= $upto "
    "AND c.sentence_key IS NULL "
    "RETURN c.id AS id, c.content AS content, c.revision AS revision ORDER BY c.revision, c.id LIMIT $batch"
)
_READ = (
    "UNWIND $ids AS id MATCH (c:Claim {namespace: $ns, id: id}) WHERE c.sentence_key IS NOT NULL "
    "RETURN c.id AS id, c.sentence_key AS key, c.sentence_vectors AS vectors"
)


@dataclass(frozen=True)
class ClaimSentences:
    """One claim's sentence vectors as stored: its id, the content they were cut from, key and rows."""

    id: str
    content: str
    key: str
    vectors: bytes


def sentence_key(model: str, units: Sequence[str]) -> str:
    """The key of a claim's sentence vectors: the model that embedded them and the sentences themselves."""
    digest = hashlib.sha256(model.encode())
    for unit in units:
        digest.update(b"\x1f" + unit.encode())
    return digest.hexdigest()[:32]


def embedded_sentences(claims: Sequence[tuple[str, str]], model: str, embed: EmbedStable) -> list[ClaimSentences]:
    """Each (id, content) with its sentences embedded: one `embed` call for the distinct sentences of all
    of them, in sorted order; the claims in the order given."""
    units = [sentences(content) for _, content in claims]
    distinct = sorted({u for group in units for u in group})
    if not distinct:
        return []
    rows = dict(zip(distinct, embed(distinct), strict=True))
    return [ClaimSentences(cid, content, sentence_key(model, group),
                           np.asarray([rows[u] for u in group], dtype="<f4").tobytes())
            for (cid, content), group in zip(claims, units, strict=True)]


def write_sentence_vectors(tx: ManagedTransaction, namespace: str, rows: Sequence[ClaimSentences]) -> int:
    """Store each claim's vectors on it, if it still holds the content they were cut from (a claim erased
    meanwhile is gone and gets none). How many claims took theirs."""
    if not rows:
        return 0
    params = [{"id": r.id, "content": r.content, "key": r.key, "vectors": r.vectors} for r in rows]
    record = tx.run(_WRITE, ns=namespace, rows=params).single(strict=True)
    return int(record["n"])


def backfill_batch(driver: Driver, namespace: str, model: str, embed: EmbedStable, *, batch: int = 500,
                   database: str | None = None) -> int:
    """Embed and store the sentences of up to `batch` projected claims that have none, from the Store's
    cursor on; how many were stored. When fewer were missing, the cursor moves to `projections_seq` and
    the next call reads only what was projected since (a claim the projections stored vectors for is
    never embedded twice). The cursor is the first revision the next call reads: a pass reads past what
    earlier ones did only within that revision."""
    records, _, _ = driver.execute_query(
        "MATCH (s:Store {namespace: $ns}) RETURN coalesce(s.sentence_cursor, 0) AS after, "
        "coalesce(s.projections_seq, 0) AS upto", ns=namespace, database_=database, routing_="r")
    if not records or int(records[0]["after"]) > int(records[0]["upto"]):
        return 0
    after, upto = int(records[0]["after"]), int(records[0]["upto"])
    missing, _, _ = driver.execute_query(_MISSING, ns=namespace, after=after, upto=upto, batch=batch,
                                         database_=database, routing_="r")
    rows = embedded_sentences([(str(r["id"]), str(r["content"])) for r in missing], model, embed)
    complete = len(missing) < batch
    reached = upto + 1 if complete else int(missing[-1]["revision"])
    with driver.session(database=database) as session:
        return session.execute_write(_backfill_tx, namespace, rows, after, reached)


def _backfill_tx(tx: ManagedTransaction, namespace: str, rows: list[ClaimSentences], after: int, reached: int) -> int:
    written = write_sentence_vectors(tx, namespace, rows)
    # Only forward, and only from where this pass started: two workers backfilling at once both finish.
    tx.run("MATCH (s:Store {namespace: $ns}) WHERE coalesce(s.sentence_cursor, 0) = $after "
           "SET s.sentence_cursor = $reached", ns=namespace, after=after, reached=reached).consume()
    return written


def stored_sentence_vectors(tx: ManagedTransaction, namespace: str, claims: Sequence[tuple[str, str]],
                            model: str) -> dict[str, Any]:
    """The stored float32 rows of the given (id, content) claims' sentences, by sentence text — only of
    claims whose stored key is the one `model` and today's splitter give their content."""
    wanted = dict(claims)
    if not wanted:
        return {}
    known: dict[str, Any] = {}
    for record in tx.run(_READ, ns=namespace, ids=sorted(wanted)):
        cid = str(record["id"])
        units = sentences(wanted[cid])
        if record["key"] != sentence_key(model, units) or not isinstance(record["vectors"], bytes | bytearray):
            continue
        matrix = np.frombuffer(bytes(record["vectors"]), dtype="<f4")
        if matrix.size == 0 or matrix.size % len(units):
            continue
        known.update(zip(units, matrix.reshape(len(units), -1).astype(np.float32), strict=True))
    return known


def known_first(known: Mapping[str, Any], embed: Callable[[Sequence[str]], Sequence[Any]]
                ) -> Callable[[Sequence[str]], list[Any]]:
    """`embed` that answers the texts in `known` from it and embeds only the others (in one call)."""
    def embed_texts(texts: Sequence[str]) -> list[Any]:
        missing = sorted({t for t in texts if t not in known})
        fresh = dict(zip(missing, embed(missing), strict=True)) if missing else {}
        return [known[t] if t in known else fresh[t] for t in texts]

    return embed_texts


__all__ = ["ClaimSentences", "EmbedStable", "backfill_batch", "embedded_sentences", "known_first", "sentence_key",
           "stored_sentence_vectors", "write_sentence_vectors"]
