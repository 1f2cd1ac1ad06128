"""API keys and namespace rights. Keys are configured hashed (sha256), never stored in clear.

Configuration, from the environment (read by palimpsest.settings):
  PALIMPSEST_API_KEYS_FILE  path to a JSON list, or
  PALIMPSEST_API_KEYS       the JSON list itself:
    [{"name": "agent-a", "sha256": "<hex of sha256(key)>", "namespaces": {"ops": ["read", "write"]}}]
Rights: `read`, `write`, `erase` and `admin`. Erasing (removing claims' content for good, api.memory.Memory.erase)
is its own right, granted apart from `write`: an agent that may write memory should not, by that
alone, be able to destroy the audit trail. An erase's dry run lists what is stored (ids, sources, keys),
so it needs `read` as well. `admin` is what changes what a namespace's readers get or what the server
spends on them — registering a policy, setting the namespace's default, undoing an inferred supersession:
a policy decides every reader's ranking and which models every recall and the worker call, so a key
that may only write claims must not be able to choose it.
With neither set the service runs in *local mode*: every caller may read and write every
namespace. That is for `make run` on a laptop (the server binds 127.0.0.1); never expose it.

  PALIMPSEST_METRICS_KEY_SHA256  sha256 hex of an operations key: presented on GET /metrics it
                                 shows every namespace's series (an API key shows the namespaces
                                 it may read; no key, only series without a namespace, unless in
                                 local mode with no metrics key set).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Literal

from palimpsest.schema.errors import BadInputError, ForbiddenError, UnauthenticatedError
from palimpsest.settings import Settings

Right = Literal["read", "write", "erase", "admin"]
RIGHTS: frozenset[str] = frozenset({"read", "write", "erase", "admin"})


@dataclass(frozen=True)
class Principal:
    name: str
    grants: dict[str, frozenset[str]] = field(default_factory=dict)
    local: bool = False

    def require(self, namespace: str, right: Right) -> None:
        if self.local:
            return
        if right not in self.grants.get(namespace, frozenset()):
            # The same answer whether the namespace exists or not: no probing other tenants.
            raise ForbiddenError(f"this key has no {right} access to namespace {namespace!r}", field="namespace")

    def default_namespace(self) -> str:
        if not self.local and len(self.grants) == 1:
            return next(iter(self.grants))
        return "default"

    def readable(self) -> list[str] | None:
        """Namespaces this caller may read; None means all (local mode)."""
        return None if self.local else sorted(ns for ns, r in self.grants.items() if "read" in r)


LOCAL = Principal(name="local", local=True)


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass(frozen=True)
class KeyEntry:
    name: str
    sha256: str
    grants: dict[str, frozenset[str]]


class KeyStore:
    def __init__(self, entries: list[KeyEntry], *, metrics_sha256: str | None = None) -> None:
        self.entries = entries
        if metrics_sha256 is not None and len(metrics_sha256) != 64:
            raise ValueError("PALIMPSEST_METRICS_KEY_SHA256 must be 64 hex characters")
        self.metrics_sha256 = metrics_sha256.lower() if metrics_sha256 else None

    @property
    def local_mode(self) -> bool:
        return not self.entries

    @classmethod
    def from_env(cls, settings: Settings | None = None) -> KeyStore:
        """The keys `settings` configure (by default the environment's, read now): the file
        PALIMPSEST_API_KEYS_FILE names, else PALIMPSEST_API_KEYS; a malformed list is a BadInputError
        naming the variable it came from."""
        cfg = settings or Settings.from_env()
        source = "PALIMPSEST_API_KEYS_FILE" if cfg.api_keys_file is not None else "PALIMPSEST_API_KEYS"
        text = cfg.api_keys_file.read_text(encoding="utf-8") if cfg.api_keys_file is not None else cfg.api_keys or ""
        try:
            entries = cls.from_json(text).entries if text.strip() else []
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise BadInputError(f"{source}: not a valid list of API keys ({detail})", field=source) from exc
        return cls(entries, metrics_sha256=cfg.metrics_key_sha256)

    @classmethod
    def from_json(cls, text: str) -> KeyStore:
        listed = json.loads(text)
        if not isinstance(listed, list):  # a dict or a string would iterate to no keys: local mode, open to all
            raise ValueError("API keys must be a JSON list of {name, sha256, namespaces}")
        entries = []
        for raw in listed:
            digest = str(raw["sha256"]).lower()
            if len(digest) != 64:
                raise ValueError(f"API key {raw.get('name')!r}: sha256 must be 64 hex characters")
            grants = {str(ns): frozenset(str(r) for r in rights) for ns, rights in raw["namespaces"].items()}
            for rights in grants.values():
                if not rights <= RIGHTS:
                    raise ValueError(f"API key {raw.get('name')!r}: rights are 'read', 'write', 'erase' and 'admin'")
            entries.append(KeyEntry(str(raw["name"]), digest, grants))
        return cls(entries)

    def authenticate(self, raw_key: str | None) -> Principal:
        if self.local_mode:
            return LOCAL
        if not raw_key:
            raise UnauthenticatedError("an API key is required (Authorization: Bearer <key> or X-API-Key)")
        digest = hash_key(raw_key)
        found = None
        for entry in self.entries:  # compare every entry in constant time each
            if hmac.compare_digest(entry.sha256, digest):
                found = entry
        if found is None:
            raise UnauthenticatedError("the API key is not valid")
        return Principal(found.name, dict(found.grants))

    def metrics_namespaces(self, raw_key: str | None) -> list[str] | None:
        """Whose series GET /metrics shows this caller: None for all, else the namespaces it may read.

        All for the metrics key, and in local mode while no metrics key is set; a valid API key
        sees the namespaces it may read; anyone else sees none (series without a namespace only).
        """
        if self.metrics_sha256 is not None:
            if raw_key and hmac.compare_digest(self.metrics_sha256, hash_key(raw_key)):
                return None
            if self.local_mode:
                return []
        try:
            return self.authenticate(raw_key).readable()
        except UnauthenticatedError:
            return []
