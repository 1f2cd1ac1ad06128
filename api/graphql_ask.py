"""GraphQL types of multi-round recall and `ask`, derived from schema/ask.py like the others.

Kept apart from api/graphql_types.py because each round nests a whole packet: the packets go
through `packet_to_gql`, which gives their items the namespace their lazy fields load from.
"""

from __future__ import annotations

import strawberry.experimental.pydantic as sp
from strawberry.scalars import JSON

from palimpsest.api.graphql_types import ContextPacket, packet_to_gql
from palimpsest.schema import ask as a


@sp.type(model=a.RecallRound, all_fields=True,
         description="One retrieval round: the query it ran, the terms it added, its replayable packet.")
class RecallRound:
    origin: str
    packet: ContextPacket


@sp.type(model=a.FusedItem, all_fields=True,
         description="A claim of the fused ranking, with its rank in each round (null: not returned there).")
class FusedItem:
    metadata: JSON
    round_ranks: list[int | None]


@sp.type(model=a.MultiRoundRecall, all_fields=True,
         description="Recall in rounds (the offline second round): each round's packet and their fusion.")
class MultiRoundRecall:
    rounds: list[RecallRound]
    items: list[FusedItem]


@sp.type(model=a.ReaderCost, all_fields=True, description="Tokens and USD the reader's calls cost.")
class ReaderCost:
    pass


@sp.type(model=a.AskResult, all_fields=True,
         description="An answer from memory with the claim ids it rests on, or notInMemory.")
class AskResult:
    rounds: list[RecallRound]
    items: list[FusedItem]
    cost: ReaderCost


def _rounds(rounds: list[a.RecallRound]) -> list[RecallRound]:
    return [RecallRound(round=r.round, origin=r.origin, query=r.query, added_terms=list(r.added_terms),
                        packet=packet_to_gql(r.packet)) for r in rounds]


def _items(items: list[a.FusedItem]) -> list[FusedItem]:
    return [FusedItem.from_pydantic(it) for it in items]


def rounds_to_gql(res: a.MultiRoundRecall) -> MultiRoundRecall:
    return MultiRoundRecall(namespace=res.namespace, query=res.query, policy_version=res.policy_version, k=res.k,
                            store_revision=res.store_revision, rounds=_rounds(res.rounds), items=_items(res.items))


def ask_to_gql(res: a.AskResult) -> AskResult:
    return AskResult(namespace=res.namespace, question=res.question, answer=res.answer, thought=res.thought,
                     not_in_memory=res.not_in_memory, cited_ids=list(res.cited_ids),
                     dropped_citations=res.dropped_citations, model=res.model, policy_version=res.policy_version,
                     store_revision=res.store_revision, rounds=_rounds(res.rounds), items=_items(res.items),
                     cost=ReaderCost.from_pydantic(res.cost))


__all__ = ["AskResult", "FusedItem", "MultiRoundRecall", "ReaderCost", "RecallRound", "ask_to_gql",
           "rounds_to_gql"]
