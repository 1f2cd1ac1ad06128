"""Every environment variable Palimpsest reads, read in one place, typed and checked.

Settings used to be read wherever they were used, some when a module was imported, so a typo in a
value surfaced (or not) deep inside a request, a test that set a variable had to do it before the
import, and no one list said what could be configured. Here, after starlette's `Config`, each
variable is one field of `Settings`, with its type, its default and the check that turns a bad value
into a `BadInputError` naming the variable and what it accepts. The README's configuration table
lists exactly these variables (a unit test holds the two together).

`Settings.from_env()` is called by the composition roots — `Runtime.from_env`, `create_app`, the
CLI's commands — when they build what they serve, never at import, so a variable set before that
(by an operator, or a test with monkeypatch) is the one used. Layers below `api` never read the
environment: they take their part of the settings as arguments (`Settings.neo4j()` for the driver,
`Settings.local_server()` for the launcher). Nothing here writes the environment.

An empty value means the same as an unset one, for every variable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from palimpsest.schema.errors import BadInputError

if TYPE_CHECKING:
    from palimpsest.graph.db.connection import Neo4jSettings
    from palimpsest.graph.db.local_server import ServerConfig
    from palimpsest.graph.recall.packet_log import Retention

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"  # extraction.embeddings.DEFAULT_MODEL (a test keeps them equal)
DEFAULT_MENTION_CACHE_EDGES = 2_000_000
DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024
DEFAULT_PACKET_LOG_MAX = 10_000  # graph.recall.packet_log.Retention's defaults (a test keeps them equal)
DEFAULT_PACKET_LOG_TTL_S = 30 * 24 * 3600.0

Parser = Callable[[str, str], Any]


def _bad(key: str, allowed: str, raw: str | None = None) -> BadInputError:
    shown = "" if raw is None else f", got {raw!r}"
    return BadInputError(f"{key} must be {allowed}{shown}", field=key)


def _text(key: str, raw: str) -> str:
    return raw


def _path(key: str, raw: str) -> Path:
    return Path(raw)


def _whole(minimum: int, maximum: int | None = None) -> Parser:
    def parse(key: str, raw: str) -> int:
        allowed = f"a whole number ≥ {minimum}" if maximum is None else f"a whole number {minimum}-{maximum}"
        try:
            value = int(raw.strip())
        except ValueError:
            raise _bad(key, allowed, raw) from None
        if value < minimum or (maximum is not None and value > maximum):
            raise _bad(key, allowed, raw)
        return value

    return parse


def _seconds(key: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise _bad(key, "a positive number of seconds", raw) from None
    if not 0 < value < float("inf"):  # also refuses nan
        raise _bad(key, "a positive number of seconds", raw)
    return value


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _flag(key: str, raw: str) -> bool:
    low = raw.strip().lower()
    if low not in _TRUE | _FALSE:
        raise _bad(key, "1, true, yes or on (or 0, false, no, off)", raw)
    return low in _TRUE


_URI_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def _neo4j_uri(key: str, raw: str) -> str:
    scheme, sep, rest = raw.partition("://")
    if not sep or scheme not in _URI_SCHEMES or not rest:
        raise _bad(key, "a Neo4j URI: " + ", ".join(f"{s}://" for s in _URI_SCHEMES) + " then host[:port]", raw)
    return raw


def _http_url(key: str, raw: str) -> str:
    if not re.match(r"https?://[^/\s]", raw):
        raise _bad(key, "an http:// or https:// URL", raw)
    return raw


def _jvm_size(key: str, raw: str) -> str:
    # Passed to the JVM as -Xms/-Xmx: digits and an optional unit, as the JVM accepts them.
    if not re.fullmatch(r"[1-9][0-9]*[kKmMgGtT]?", raw):
        raise _bad(key, "a memory size such as 512m or 2g", raw)
    return raw


def _store_size(key: str, raw: str) -> str:
    # Written to neo4j.conf as server.memory.pagecache.size: a byte size with Neo4j's units.
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?\s*([kKmMgGtT](i?[bB])?|[bB])?", raw):
        raise _bad(key, "a memory size such as 512m or 2g", raw)
    return raw


def _sha256(key: str, raw: str) -> str:
    value = raw.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", value):
        raise _bad(key, "a sha256 digest: 64 hex characters")  # not echoed: it names an operations key
    return value


def _names(key: str, raw: str) -> tuple[str, ...]:
    # An allow-list: comma-separated names, each without spaces or control characters, in the order given.
    names = tuple(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))
    for name in names:
        if len(name) > 500 or any(ch.isspace() or not ch.isprintable() for ch in name):
            raise _bad(key, "comma-separated model names (each at most 500 characters, no spaces)", raw)
    return names


_HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*|[0-9a-f:.]*:[0-9a-f:.]*")


def _hosts(key: str, raw: str) -> tuple[str, ...]:
    # Host names without a port (any port is accepted): "memory.lan, devbox". IPv6 without brackets.
    names = tuple(n.strip().lower().rstrip(".") for n in raw.split(",") if n.strip())
    for name in names:
        bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
        if not _HOST_NAME.fullmatch(bare):
            raise _bad(key, "host names separated by commas, without ports (such as memory.lan,devbox)", raw)
    return tuple(n[1:-1] if n.startswith("[") and n.endswith("]") else n for n in names)


def _var(name: str, parse: Parser) -> dict[str, Any]:
    return {"env": name, "parse": parse}


def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "palimpsest"


@dataclass(frozen=True)
class Settings:
    """What an operator configures, one field per environment variable (the README's table says what
    each means). Build it with `from_env`; tests build it directly or with `from_env(a_mapping)`."""

    # Neo4j: where it is and who connects. `neo4j_uri` None means the local launcher's bolt port.
    neo4j_uri: str | None = field(default=None, metadata=_var("NEO4J_URI", _neo4j_uri))
    neo4j_user: str = field(default="neo4j", metadata=_var("NEO4J_USER", _text))
    neo4j_password: str | None = field(default=None, repr=False, metadata=_var("NEO4J_PASSWORD", _text))
    neo4j_database: str | None = field(default=None, metadata=_var("NEO4J_DATABASE", _text))
    neo4j_http_url: str | None = field(default=None, metadata=_var("NEO4J_HTTP_URL", _http_url))
    # How long the driver waits (graph.db.connection).
    neo4j_retry_s: float = field(default=2.0, metadata=_var("PALIMPSEST_NEO4J_RETRY_S", _seconds))
    neo4j_connect_timeout_s: float = field(default=5.0, metadata=_var("PALIMPSEST_NEO4J_CONNECT_TIMEOUT_S", _seconds))
    neo4j_acquire_timeout_s: float = field(default=10.0, metadata=_var("PALIMPSEST_NEO4J_ACQUIRE_TIMEOUT_S", _seconds))
    # The local launcher (graph.db.local_server) and the cache it shares with GraphiQL's files.
    cache_dir: Path = field(default_factory=_default_cache_dir, metadata=_var("PALIMPSEST_CACHE_DIR", _path))
    neo4j_bolt_port: int = field(default=7687, metadata=_var("PALIMPSEST_NEO4J_BOLT_PORT", _whole(1, 65535)))
    neo4j_http_port: int = field(default=7474, metadata=_var("PALIMPSEST_NEO4J_HTTP_PORT", _whole(1, 65535)))
    neo4j_heap: str = field(default="1g", metadata=_var("PALIMPSEST_NEO4J_HEAP", _jvm_size))
    neo4j_pagecache: str = field(default="512m", metadata=_var("PALIMPSEST_NEO4J_PAGECACHE", _store_size))
    # Who may call (api.auth): a file of hashed keys, or the same JSON inline.
    api_keys_file: Path | None = field(default=None, metadata=_var("PALIMPSEST_API_KEYS_FILE", _path))
    api_keys: str | None = field(default=None, repr=False, metadata=_var("PALIMPSEST_API_KEYS", _text))
    metrics_key_sha256: str | None = field(default=None, repr=False,
                                           metadata=_var("PALIMPSEST_METRICS_KEY_SHA256", _sha256))
    # The HTTP face (api.app, api.body_guard).
    max_body_bytes: int = field(default=DEFAULT_MAX_BODY_BYTES, metadata=_var("PALIMPSEST_MAX_BODY_BYTES", _whole(1)))
    body_chunk_timeout_s: float = field(default=10.0, metadata=_var("PALIMPSEST_BODY_CHUNK_TIMEOUT_S", _seconds))
    body_timeout_s: float = field(default=30.0, metadata=_var("PALIMPSEST_BODY_TIMEOUT_S", _seconds))
    request_timeout_s: float = field(default=30.0, metadata=_var("PALIMPSEST_REQUEST_TIMEOUT_S", _seconds))
    subscription_poll_s: float = field(default=1.0, metadata=_var("PALIMPSEST_SUBSCRIPTION_POLL_S", _seconds))
    log_packets: bool = field(default=False, metadata=_var("PALIMPSEST_LOG_PACKETS", _flag))
    # Recall and embeddings (api.runtime).
    mention_cache_edges: int = field(default=DEFAULT_MENTION_CACHE_EDGES,
                                     metadata=_var("PALIMPSEST_MENTION_CACHE_EDGES", _whole(0)))
    embedding_model: str = field(default=DEFAULT_EMBEDDING_MODEL, metadata=_var("PALIMPSEST_EMBEDDING_MODEL", _text))
    # What reads may write and hold (graph.recall.packet_log, api.subscriptions), and which Host names
    # local mode answers (api.host_guard).
    packet_log_max: int = field(default=DEFAULT_PACKET_LOG_MAX, metadata=_var("PALIMPSEST_PACKET_LOG_MAX", _whole(1)))
    packet_log_ttl_s: float = field(default=DEFAULT_PACKET_LOG_TTL_S,
                                    metadata=_var("PALIMPSEST_PACKET_LOG_TTL_S", _seconds))
    max_subscriptions: int = field(default=256, metadata=_var("PALIMPSEST_MAX_SUBSCRIPTIONS", _whole(0)))
    max_subscriptions_per_key: int = field(default=16, metadata=_var("PALIMPSEST_MAX_SUBSCRIPTIONS_PER_KEY",
                                                                     _whole(0)))
    local_allowed_hosts: tuple[str, ...] = field(default=(), metadata=_var("PALIMPSEST_LOCAL_ALLOWED_HOSTS", _hosts))
    # The models the server may call or load, the operator's alone (api.allowed_models): a policy or a
    # caller naming another is refused. Empty by default: nothing the project ships offline needs one.
    allowed_llm_models: tuple[str, ...] = field(default=(), metadata=_var("PALIMPSEST_ALLOWED_LLM_MODELS", _names))
    allowed_rerank_models: tuple[str, ...] = field(default=(),
                                                   metadata=_var("PALIMPSEST_ALLOWED_RERANK_MODELS", _names))
    allowed_nli_models: tuple[str, ...] = field(default=(), metadata=_var("PALIMPSEST_ALLOWED_NLI_MODELS", _names))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings `environ` (the process environment by default) gives; unset and empty
        variables keep their defaults. Raises BadInputError, `field` = the variable, on a bad value."""
        env = os.environ if environ is None else environ
        given: dict[str, Any] = {}
        for f in fields(cls):
            name, parse = f.metadata["env"], f.metadata["parse"]
            raw = env.get(name)
            if raw is not None and raw.strip() != "":
                given[f.name] = parse(name, raw)
        return cls(**given)

    @classmethod
    def variables(cls) -> dict[str, str]:
        """Environment variable → field name, in declaration order (the README's table, the tests)."""
        return {f.metadata["env"]: f.name for f in fields(cls)}

    @property
    def bolt_uri(self) -> str:
        """Where the driver connects: NEO4J_URI, or the local launcher's bolt port on loopback."""
        return self.neo4j_uri or f"bolt://127.0.0.1:{self.neo4j_bolt_port}"

    def neo4j(self) -> Neo4jSettings:
        """The driver's part (graph.db.connection), which never reads the environment itself."""
        from palimpsest.graph.db.connection import Neo4jSettings

        return Neo4jSettings(uri=self.bolt_uri, user=self.neo4j_user, password=self.neo4j_password,
                             database=self.neo4j_database, retry_s=self.neo4j_retry_s,
                             connect_s=self.neo4j_connect_timeout_s, acquire_s=self.neo4j_acquire_timeout_s)

    def local_server(self) -> ServerConfig:
        """The local launcher's part (graph.db.local_server)."""
        from palimpsest.graph.db.local_server import ServerConfig

        return ServerConfig(cache_dir=self.cache_dir, bolt_port=self.neo4j_bolt_port, http_port=self.neo4j_http_port,
                            heap=self.neo4j_heap, pagecache=self.neo4j_pagecache, password=self.neo4j_password)

    def packet_retention(self) -> Retention:
        """What the packet log keeps per namespace (graph.recall.packet_log)."""
        from palimpsest.graph.recall.packet_log import Retention

        return Retention(max_packets=self.packet_log_max, ttl_s=self.packet_log_ttl_s)
