"""Multi-round recall and `ask`: retrieval rounds over `Memory.recall`, fused, and the reader on top.

Why it is built this way:

* **Every round is an ordinary recall**, logged to the packet log, so each round's packet has its
  fingerprint and `replay(fingerprint)` recomputes it like any other. Later rounds are pinned to
  round 1's store revision, policy version and projections_seq, so a write landing between rounds
  cannot make one answer mix two states of the store; the whole result is a function of round 1's
  revision (and, for IRCoT, of the reader's answers).
* **Two ways to make the next query.** The offline expansion (graph.recall.rounds: the question plus the
  subjects and bridge entities of the top items) needs no model; IRCoT's uses the reader's
  thought, which names what is still missing. Rounds stop early when the next query would add
  nothing, or (policy `ask_stop_when_answered`) once the reader answered with a valid citation.
* **Routed**: under a policy with a `router` (graph.recall.router), a question it finds neither
  multi-hop nor a comparison gets one round (two in the offline expansion when round 1 names a bridge
  another claim is about), and later rounds run the stages round 1's router chose (pinned from round
  1's packet), not a decision of their own on the expanded query. Graph expansion runs in every round
  as the policy has it: PPR and the rounds together find more than the rounds alone on the multi-hop
  sets, so neither `recall_rounds` nor `ask` leaves the second hop to the rounds (a caller running its
  own rounds may: `Memory.recall(later_rounds=True)`).
* **Bounded**: at most `ask_rounds` rounds (≤ limits.MAX_ASK_ROUNDS), one reader call per round;
  the reader sees the fused items of the rounds so far, at most k per round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from palimpsest.api.allowed_models import AllowedModels
from palimpsest.api.runtime import Runtime
from palimpsest.extraction.reader import Reader, ReaderOptions, Reading
from palimpsest.graph import policies
from palimpsest.graph.recall import rounds as rounds_q
from palimpsest.graph.recall import router as router_q
from palimpsest.schema import limits
from palimpsest.schema.ask import AskResult, FusedItem, MultiRoundRecall, ReaderCost, RecallRound, RoundOrigin
from palimpsest.schema.errors import BadInputError, LimitExceededError, UnavailableError
from palimpsest.schema.models import ContextPacket, Policy

if TYPE_CHECKING:
    from datetime import date, datetime



class Recalls(Protocol):
    """What the rounds need of a memory bound to a namespace: its recall, its store and whether its recalls
    are logged. `Memory` is one, and offers `recall_rounds` and `ask` by calling this module: naming the
    protocol here instead of `Memory` keeps the dependency one way (api.memory -> api.ask)."""

    rt: Runtime
    namespace: str
    log_packets: bool

    def recall(self, query: str, *, k: int | None = None, policy_version: str | None = None,
               as_of_revision: int | None = None, valid_at: datetime | date | str | None = None,
               projections_seq: int | None = None, explain: bool = False,
               pinned_route: Sequence[str] | None = None, later_rounds: bool = False) -> ContextPacket: ...


Expansion = Literal["thought", "offline"]
EXPANSIONS: tuple[str, ...] = ("thought", "offline")


def check_rounds(rounds: object, field: str = "rounds") -> int | None:
    if rounds is None:
        return None
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise BadInputError(f"{field} must be a positive integer", field=field)
    if rounds > limits.MAX_ASK_ROUNDS:
        raise LimitExceededError(f"{field} must be at most {limits.MAX_ASK_ROUNDS}", field=field,
                                 limit=limits.MAX_ASK_ROUNDS)
    return rounds


class Rounds:
    """The rounds of one question, all at round 1's revision, policy and projections_seq."""

    def __init__(self, mem: Recalls, question: str, *, k: int | None, policy_version: str | None,
                 as_of_revision: int | None, valid_at: datetime | date | str | None, explain: bool = False,
                 later_rounds: bool = False) -> None:
        self.mem, self.question, self.explain, self.later_rounds = mem, question, explain, later_rounds
        self.k, self.policy_version, self.as_of_revision, self.valid_at = k, policy_version, as_of_revision, valid_at
        self.rounds: list[RecallRound] = []
        self.policy: Policy | None = None
        self._expanded_from: list[str] = []  # ids whose subjects/entities an earlier round already added

    @property
    def packets(self) -> list[ContextPacket]:
        return [r.packet for r in self.rounds]

    def run(self, query: str, origin: RoundOrigin, added: list[str]) -> ContextPacket:
        """One round; round 1 fixes the revision, policy and projections_seq the later ones reuse."""
        first = self.rounds[0].packet if self.rounds else None
        if first is None:
            packet = self.mem.recall(query, k=self.k, policy_version=self.policy_version,
                                     as_of_revision=self.as_of_revision, valid_at=self.valid_at, explain=self.explain,
                                     later_rounds=self.later_rounds)
            self.policy, _ = policies.resolve_policy(self.mem.rt.driver, self.mem.namespace, packet.policy_version,
                                                     self.mem.rt.settings.database)
        else:
            # The router decided for the question: later rounds run the stages round 1 did.
            packet = self.mem.recall(query, k=first.k, policy_version=first.policy_version,
                                     as_of_revision=first.store_revision, valid_at=first.valid_at,
                                     projections_seq=first.projections_seq, pinned_route=first.stages,
                                     explain=self.explain)
        self.rounds.append(RecallRound(round=len(self.rounds) + 1, origin=origin, query=query, added_terms=added,
                                       packet=packet))
        return packet

    @property
    def one_hop(self) -> bool:
        """Did round 1's router read the question as one hop (`router:one-round`)? Then one more round at
        most, and only towards a bridge another claim is about (graph.recall.rounds.expansion_terms)."""
        return bool(self.rounds) and not router_q.allows_rounds(self.rounds[0].packet.stages)

    def offline_terms(self) -> list[str]:
        """The offline expansion of the last round's packet (graph.recall.rounds.expansion_terms)."""
        assert self.policy is not None
        packet = self.rounds[-1].packet
        top = [it.id for it in packet.items if it.id not in set(self._expanded_from)][:self.policy.expansion_items]
        one_hop = self.one_hop
        bridges = rounds_q.bridge_entities(self.mem.rt.driver, self.mem.namespace, top, packet.projections_seq,
                                           self.policy.ppr_max_degree, self.mem.rt.settings.database, about=one_hop)
        terms = rounds_q.expansion_terms(self.question, packet, bridges, self.policy, self._expanded_from,
                                         about_only=one_hop)
        self._expanded_from.extend(top)
        return terms

    def next_query(self, terms: list[str]) -> str | None:
        """The question plus `terms`, or None when that adds nothing or repeats an earlier round's query."""
        query = rounds_q.expanded_query(self.question, terms, limits.MAX_QUERY_CHARS)
        if query == self.question or query in {r.query for r in self.rounds}:
            return None
        return query

    def fused(self, k: int) -> list[FusedItem]:
        assert self.policy is not None
        return rounds_q.fuse(self.packets, self.policy, k)


def recall_rounds(mem: Recalls, query: str, *, rounds: int | None = None, k: int | None = None,
                  policy_version: str | None = None, as_of_revision: int | None = None,
                  valid_at: datetime | date | str | None = None, explain: bool = False) -> MultiRoundRecall:
    """Recall with offline expansion rounds (no model): round 1 with the query, each later round with
    the query expanded by what the round before found, fused (graph.recall.rounds.fuse) to the first k. With
    `explain`, every round's packet explains itself (Memory.recall)."""
    wanted = check_rounds(rounds)
    # The router keeps graph expansion in the rounds of a question it reads as multi-hop: with PPR's ties
    # broken by content, PPR and the rounds together find at least what the rounds find alone on every
    # multi-hop set measured (docs/research-log.md, "PPR repeats"), so `later_rounds` is not passed.
    state = Rounds(mem, query, k=k, policy_version=policy_version, as_of_revision=as_of_revision, valid_at=valid_at,
                   explain=explain)
    first = state.run(query.strip(), "question", [])
    state.question = first.query
    assert state.policy is not None
    total = wanted if wanted is not None else max(2, state.policy.ask_rounds)
    if state.one_hop:
        total = min(total, 2)
    while len(state.rounds) < total:
        terms = state.offline_terms()
        nxt = state.next_query(terms)
        if nxt is None:
            break
        state.run(nxt, "expansion", terms)
    return MultiRoundRecall(namespace=mem.namespace, query=first.query, policy_version=first.policy_version,
                            k=first.k, store_revision=first.store_revision, rounds=state.rounds,
                            items=state.fused(first.k))


def ask(mem: Recalls, question: str, *, llm_model: str | None = None, rounds: int | None = None,
        expansion: str | None = None, k: int | None = None, policy_version: str | None = None,
        as_of_revision: int | None = None, valid_at: datetime | date | str | None = None,
        options: ReaderOptions | None = None, explain: bool = False,
        models: AllowedModels | None = None) -> AskResult:
    """Answer `question` from memory (module docstring): rounds of recall, the reader on their fused
    items after each, and the answer with the claim ids it rests on.

    `models` is the operator's allow-list (by default none allowed): a caller's `llm_model` not on it is
    refused before any recall runs (BadInputError); a policy's `reader_model` not on it any more (the
    list changed after the policy was registered) makes the reader unavailable (UnavailableError)."""
    allowed = models if models is not None else AllowedModels()
    if not isinstance(question, str) or not question.strip():
        raise BadInputError("question must not be empty", field="question")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInputError("question must be valid Unicode text (it holds a lone surrogate)",
                            field="question") from None
    if len(question) > limits.MAX_QUERY_CHARS:
        raise LimitExceededError(f"question must be at most {limits.MAX_QUERY_CHARS} characters",
                                 field="question", limit=limits.MAX_QUERY_CHARS)
    wanted = check_rounds(rounds)
    if expansion is not None and expansion not in EXPANSIONS:
        raise BadInputError(f"expansion must be one of {', '.join(EXPANSIONS)}", field="expansion")
    if llm_model is not None and (not isinstance(llm_model, str) or not llm_model.strip()
                                  or len(llm_model) > 200):
        raise BadInputError("llm_model must be a litellm model name of 1-200 characters", field="llm_model")
    if llm_model is not None:
        allowed.check("llm", llm_model.strip(), "llm_model")
    state = Rounds(mem, question, k=k, policy_version=policy_version, as_of_revision=as_of_revision,
                   valid_at=valid_at, explain=explain)
    first = state.run(question.strip(), "question", [])
    state.question = first.query
    policy = state.policy
    assert policy is not None
    model = (llm_model or "").strip() or policy.reader_model
    if not model:
        raise BadInputError(f"no reader model: policy {policy.version!r} has no reader_model; pass llm_model",
                            field="llm_model")
    if not allowed.allows("llm", model):
        raise UnavailableError(f"policy {policy.version!r}: its reader_model is not on the server's allow-list "
                               "(PALIMPSEST_ALLOWED_LLM_MODELS); pass an allowed llm_model", field="llm_model")
    total = wanted if wanted is not None else policy.ask_rounds
    how = expansion or policy.ask_expansion
    if state.one_hop:  # the reader's thought cannot be checked for a bridge: one round
        total = min(total, 2) if how == "offline" else 1
    reader = Reader(model, options)
    cost = ReaderCost()
    thoughts: list[str] = []
    reading: Reading | None = None
    while True:
        if how == "offline":  # retrieval rounds first, one reading of their fusion at the end
            if len(state.rounds) < total:
                terms = state.offline_terms()
                nxt = state.next_query(terms)
                if nxt is not None:
                    state.run(nxt, "expansion", terms)
                    continue
            reading = reader.read(state.question, state.fused(first.k * len(state.rounds)), [], cost)
            break
        reading = reader.read(state.question, state.fused(first.k * len(state.rounds)), thoughts, cost)
        answered = not reading.not_in_memory
        if len(state.rounds) >= total or (answered and policy.ask_stop_when_answered) or not reading.thought:
            break
        nxt = state.next_query([reading.thought])
        if nxt is None:
            break
        thoughts.append(reading.thought)
        state.run(nxt, "thought", [reading.thought])
    items = state.fused(first.k * len(state.rounds))
    return AskResult(namespace=mem.namespace, question=state.question, answer=reading.answer,
                     thought=reading.thought, not_in_memory=reading.not_in_memory, cited_ids=reading.cited_ids,
                     dropped_citations=reading.dropped_citations, model=model, policy_version=first.policy_version,
                     store_revision=first.store_revision, rounds=state.rounds, items=items, cost=cost)


__all__ = ["EXPANSIONS", "Rounds", "ask", "check_rounds", "recall_rounds"]
