"""One interface for the entity (and fact) extractors, so a namespace's policy can choose one.

Every extractor turns a batch of claims into the same `Extraction`: a `LinkResult` (claims
linked to entities the namespace already knows, plus proposals for new names) and, if it can,
facts naming their subject and object by canonical key. What happens next does not depend on
which extractor ran: `job.resolve` applies the one set of resolution rules (exact canonical
match, embedding near-duplicates only between names with equal code signatures, deterministic
ids), and `resolve_facts` maps the facts' names onto the entity ids that resolution chose. So an
LLM can never merge "db-7" into "db-9" either: it only proposes names.

* `OfflineExtractor` — the deterministic matcher/proposer of `job.link_and_propose`; it yields
  no facts, because reading a (subject, predicate, object) triple out of free text without a
  model would be guesswork, and a wrong fact can supersede a right one.
* `LlmExtractor` (in `extraction.entities.llm`) — a chat model via litellm + instructor.

Like the rest of `extraction`, nothing here touches Neo4j.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from palimpsest.extraction.entities.extractor import ExtractorOptions
from palimpsest.extraction.entities.job import ClaimText, EntityJobResult, KnownEntity, LinkResult, link_and_propose
from palimpsest.extraction.entities.matcher import EntityMatcher
from palimpsest.extraction.entities.normalize import canonical, is_value, word_list

PRONOUNS = frozenset(word_list(
    "i me my mine we us our ours you your yours he him his she her hers it its they them their theirs "
    "this that these those who whom whose which someone somebody something one"
))
_PREDICATE_RE = re.compile(r"[^\w]+")
MAX_PREDICATE_CHARS = 64
MAX_OBJECT_CHARS = 300


def normalize_predicate(predicate: str) -> str:
    """"Works At", "works-at" and "works_at" are one predicate: casefolded snake_case, so that
    supersession compares like with like."""
    return _PREDICATE_RE.sub("_", predicate.strip().casefold()).strip("_")[:MAX_PREDICATE_CHARS]


def is_pronoun(name: str) -> bool:
    return canonical(name) in PRONOUNS


def literal_key(value: str) -> str:
    """The comparison key of a literal object ("Berlin " and "berlin" state the same value)."""
    return canonical(value) or value.strip().casefold()


@dataclass(frozen=True)
class ExtractedFact:
    """A (subject, predicate, object) triple one claim states, names not yet resolved to ids."""

    claim_id: str
    revision: int
    subject: str              # surface form as stated (pronouns already resolved by the extractor)
    subject_key: str          # its canonical form
    predicate: str            # normalised (`normalize_predicate`)
    object: str
    object_key: str           # canonical form (entity objects) or `literal_key` (values)
    object_is_entity: bool
    valid_from: datetime | None
    valid_to: datetime | None
    confidence: float         # how strongly this one claim supports the fact, in (0, 1]
    single_valued: bool       # a new object for (subject, predicate) replaces the old one


@dataclass
class Extraction:
    """What an extractor made of one batch, and what it cost.

    `failed_claims` are claims the extractor could not read (a provider error, an unanswered
    claim); they still get the offline extractor's links, so they are never left unlinked.
    `dropped` explains every fact the extractor's answer held but that failed validation: one
    bad item is dropped alone, the rest of its batch is kept.
    """

    linked: LinkResult
    facts: list[ExtractedFact] = field(default_factory=list)
    calls: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0   # calls whose cost litellm could not price (unknown or local model)
    failed_claims: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@runtime_checkable
class Extractor(Protocol):
    """Claims in, links/proposals/facts out; `name` is the policy's `extractor` value."""

    name: str

    def extract(self, claims: Sequence[ClaimText], matcher: EntityMatcher) -> Extraction: ...


class OfflineExtractor:
    """The deterministic extractor behind the `Extractor` interface (entities only)."""

    name = "offline"

    def __init__(self, options: ExtractorOptions | None = None) -> None:
        self.options = options or ExtractorOptions()

    def extract(self, claims: Sequence[ClaimText], matcher: EntityMatcher) -> Extraction:
        return Extraction(link_and_propose(claims, matcher, self.options))


@dataclass(frozen=True)
class ResolvedFact:
    """An extracted fact whose subject (and entity object) are entity ids chosen by resolution."""

    claim_id: str
    revision: int
    subject_id: str
    subject: str              # the entity's name
    predicate: str
    object: str               # the entity's name, or the literal value
    object_key: str           # the entity id, or the literal's key: equal keys are the same object
    object_id: str | None
    valid_from: datetime | None
    valid_to: datetime | None
    confidence: float
    single_valued: bool


def resolve_facts(facts: Sequence[ExtractedFact], matcher: EntityMatcher, known: Sequence[KnownEntity],
                  result: EntityJobResult) -> tuple[list[ResolvedFact], list[str]]:
    """Map each fact's names onto the entities `job.resolve` decided (known, aliased or new).

    A subject that resolves to no entity drops the fact (reason returned). An object is an entity
    whenever its name resolves to one — also when the extractor called it a value, so "Acme" stated
    once as an entity and once as a string is one object, not a change of object that would
    supersede the fact; an object that resolves to none is kept as a literal, since the value is
    still what was stated. Values (numbers, dates) are never entities.
    """
    names = {e.id: e.name for e in known} | {e.id: e.name for e in result.new_entities}
    by_key: dict[str, str] = {e.canonical: e.id for e in result.new_entities}
    for eid, aliases in result.aliases.items():
        for alias in aliases:
            by_key.setdefault(canonical(alias), eid)

    def entity_for(key: str) -> str | None:
        return matcher.owner(key) or by_key.get(key)

    out: list[ResolvedFact] = []
    dropped: list[str] = []
    for f in facts:
        sid = entity_for(f.subject_key)
        if sid is None:
            dropped.append(f"claim {f.claim_id}: fact subject {f.subject!r} is not an entity")
            continue
        oid = None if is_value(f.object) else entity_for(f.object_key)
        out.append(ResolvedFact(
            f.claim_id, f.revision, sid, names.get(sid, f.subject), f.predicate,
            names.get(oid, f.object) if oid else f.object, oid or literal_key(f.object), oid,
            f.valid_from, f.valid_to, f.confidence, f.single_valued,
        ))
    return out, dropped
