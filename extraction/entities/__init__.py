"""Offline entity extraction: normalisation, a multi-pattern matcher, mention proposals and resolution."""

from extraction.entities.extractor import ExtractorOptions, Mention, propose
from extraction.entities.job import (
    ClaimText,
    EntityJobResult,
    KnownEntity,
    LinkResult,
    Neighbour,
    NewEntity,
    backfill_links,
    build_matcher,
    entity_id,
    link_and_propose,
    resolve,
)
from extraction.entities.matcher import EntityMatcher, Match
from extraction.entities.normalize import canonical, code_signature, is_value, query_phrases

__all__ = [
    "ClaimText", "EntityJobResult", "EntityMatcher", "ExtractorOptions", "KnownEntity", "LinkResult", "Match",
    "Mention", "Neighbour", "NewEntity", "backfill_links", "build_matcher", "canonical", "code_signature",
    "entity_id", "is_value", "link_and_propose", "propose", "query_phrases", "resolve",
]
