"""Entity (and fact) extraction: normalisation, a multi-pattern matcher, the offline and LLM
extractors behind one interface, and resolution."""

from palimpsest.extraction.entities.extractor import ExtractorOptions, Mention, propose
from palimpsest.extraction.entities.extractors import (
    ExtractedFact,
    Extraction,
    Extractor,
    OfflineExtractor,
    ResolvedFact,
    normalize_predicate,
    resolve_facts,
)
from palimpsest.extraction.entities.job import (
    ClaimText,
    EntityJobResult,
    EntityVectors,
    KnownEntity,
    LinkResult,
    Neighbour,
    NewEntity,
    backfill_links,
    build_matcher,
    entity_id,
    exact_cosine,
    link_and_propose,
    resolve,
)
from palimpsest.extraction.entities.llm import LlmExtractor, LlmExtractorOptions
from palimpsest.extraction.entities.matcher import EntityMatcher, Match
from palimpsest.extraction.entities.normalize import canonical, code_signature, is_value, query_phrases

__all__ = [
    "ClaimText", "EntityJobResult", "EntityMatcher", "EntityVectors", "ExtractedFact", "Extraction", "Extractor",
    "ExtractorOptions", "KnownEntity", "LinkResult", "LlmExtractor", "LlmExtractorOptions", "Match", "Mention",
    "Neighbour", "NewEntity", "OfflineExtractor", "ResolvedFact", "backfill_links", "build_matcher", "canonical",
    "code_signature", "entity_id", "exact_cosine", "is_value", "link_and_propose", "normalize_predicate", "propose",
    "query_phrases", "resolve", "resolve_facts",
]
