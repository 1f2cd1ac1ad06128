"""Process-wide wiring: one driver, one embedder, a migrated schema — built from the settings.

This is the composition root the faces share (api → graph, extraction → schema); the settings
come from `palimpsest.settings` (the one module that reads the environment) and nothing below
`api` sees them except as arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType

from neo4j import Driver

from palimpsest.api.allowed_models import AllowedModels
from palimpsest.extraction.embeddings import Embedder, shared_embedder
from palimpsest.extraction.reader import ReaderOptions
from palimpsest.graph.db.connection import Neo4jSettings, ServerInfo, guard, open_driver, server_info
from palimpsest.graph.knowledge.mention_graph import MentionCache
from palimpsest.schema.migrate import migrate
from palimpsest.settings import DEFAULT_MENTION_CACHE_EDGES, Settings

__all__ = ["DEFAULT_MENTION_CACHE_EDGES", "Runtime", "mention_cache_edges"]


def mention_cache_edges(settings: Settings | None = None) -> int:
    """PALIMPSEST_MENTION_CACHE_EDGES: how many MENTIONS edges a process holds in memory in all
    (`settings`, or the environment's when none is given)."""
    return (settings or Settings.from_env()).mention_cache_edges


@dataclass
class Runtime:
    settings: Neo4jSettings
    driver: Driver
    embedder: Embedder
    schema_version: int
    _info: ServerInfo | None = field(default=None, repr=False)
    # How `ask` reaches its reader (rate limit, timeout, provider plumbing; never a key — litellm reads
    # the provider's own environment variable). The model itself is policy or the caller's.
    reader: ReaderOptions = field(default_factory=ReaderOptions)
    # The namespaces' entity graphs held for graph expansion (graph.knowledge.mention_graph), at most this many
    # MENTIONS edges in all (PALIMPSEST_MENTION_CACHE_EDGES; 0 turns it off): an accelerator, packets
    # are the same without it.
    mentions: MentionCache | None = None
    # The models this process may call or load (api.allowed_models): the operator's allow-lists from the
    # settings; by default none, so a runtime built without settings calls no model a policy names.
    models: AllowedModels = field(default_factory=AllowedModels)

    def __post_init__(self) -> None:
        # Every face reaches Neo4j through the guard (graph.db.errors, graph.db.deadline), whoever built the driver.
        self.driver = guard(self.driver, self.settings)
        if self.mentions is None:
            self.mentions = MentionCache(mention_cache_edges(), self.driver, self.settings.database)

    @classmethod
    def from_env(cls, settings: Settings | None = None) -> Runtime:
        """Driver, migrated schema and embedder from `settings` (by default read from the environment now).

        The embedder is lazy: torch and the model load on the first embed, so a face that only reads
        (history, check, policy) never pays for them. The server warms it at start-up instead
        (`palimpsest serve`), so its first request does not either.
        """
        config = settings or Settings.from_env()
        neo4j = config.neo4j()
        embedder = shared_embedder(config.embedding_model, lazy=True)
        driver = open_driver(neo4j)
        try:
            version = migrate(driver, embedding_dimension=embedder.dimension,
                              embedding_model=embedder.model_name, database=neo4j.database)
        except Exception:
            driver.close()
            raise
        return cls(neo4j, driver, embedder, version,
                   mentions=MentionCache(config.mention_cache_edges, driver, neo4j.database),
                   models=AllowedModels.from_settings(config))

    def info(self) -> ServerInfo:
        if self._info is None:
            self._info = server_info(self.driver, self.settings.database)
        return self._info

    def close(self) -> None:
        if self.mentions is not None:
            self.mentions.close()
        self.driver.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
