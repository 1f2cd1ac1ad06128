"""How recall breaks a tie between two claims: by what they say, and only then by their ids.

A claim id is a random uuid. An order that falls to the id when two claims score alike therefore
depends on the ids the writes happened to draw: the same claims written into two namespaces — a
benchmark and its rerun, an import that gives the claims new ids, a tenant rebuilt from its log —
admitted different candidates to a recall (the text answer is cut on the share of query terms, and
hundreds of claims share the boundary share) and so answered with different packets. Every claim
stores `content_hash`, the SHA-256 of its content, from its first write; ordering claims that tie by
it makes recall a function of what the store holds, and it favours no speaker or spelling (content
in alphabetical order would put every "Anna: …" before every "Ben: …"). The id stays the last key:
claims that say the same thing are still put in one total order.

Cypher orders by the stored `node.content_hash`; Python by `content_hash` of the row's content: the
same hex string (graph.claims.store writes it, graph.lifecycle.importer computes it again for every claim it imports).
"""

from __future__ import annotations

import functools
import hashlib


@functools.lru_cache(maxsize=1 << 16)
def content_hash(content: str) -> str:
    """SHA-256 of a claim's content as hex: what `Claim.content_hash` stores (memoised: the same claims
    come back recall after recall)."""
    return hashlib.sha256(content.encode()).hexdigest()


def tie_key(content: str, claim_id: str) -> tuple[str, str]:
    """The end of every order over claims: content first, id last."""
    return content_hash(content), claim_id


__all__ = ["content_hash", "tie_key"]
