"""API keys and namespace rights. Keys are configured hashed (sha256), never stored in clear.

Configuration, from the environment only:
  PALIMPSEST_API_KEYS_FILE  path to a JSON list, or
  PALIMPSEST_API_KEYS       the JSON list itself:
    [{"name": "agent-a", "sha256": "<hex of sha256(key)>", "namespaces": {"ops": ["read", "write"]}}]
With neither set the service runs in *local mode*: every caller may read and write every
namespace. That is for `make run` on a laptop (the server binds 127.0.0.1); never expose it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from schema.errors import ForbiddenError, UnauthenticatedError

Right = Literal["read", "write"]


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
    def __init__(self, entries: list[KeyEntry]) -> None:
        self.entries = entries

    @property
    def local_mode(self) -> bool:
        return not self.entries

    @classmethod
    def from_env(cls) -> KeyStore:
        path = os.environ.get("PALIMPSEST_API_KEYS_FILE")
        text = Path(path).read_text(encoding="utf-8") if path else os.environ.get("PALIMPSEST_API_KEYS", "")
        return cls.from_json(text) if text.strip() else cls([])

    @classmethod
    def from_json(cls, text: str) -> KeyStore:
        entries = []
        for raw in json.loads(text):
            digest = str(raw["sha256"]).lower()
            if len(digest) != 64:
                raise ValueError(f"API key {raw.get('name')!r}: sha256 must be 64 hex characters")
            grants = {str(ns): frozenset(str(r) for r in rights) for ns, rights in raw["namespaces"].items()}
            for rights in grants.values():
                if not rights <= {"read", "write"}:
                    raise ValueError(f"API key {raw.get('name')!r}: rights are 'read' and 'write'")
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
