"""Policies live in Neo4j, per namespace, and never change once registered.

A packet names the policy version it was computed with; if that version's knobs could change,
the same fingerprint would mean two different things. So registering a known version with other
content is refused, and the same content is accepted again (idempotent).
"""

from __future__ import annotations

import json
import threading

from neo4j import Driver
from neo4j.exceptions import ConstraintError

from schema.errors import ConflictError, NotFoundError
from schema.models import DEFAULT_POLICY, Policy


def register_policy(driver: Driver, namespace: str, policy: Policy, database: str | None = None) -> Policy:
    if policy.version == DEFAULT_POLICY.version:
        return _same_or_conflict(DEFAULT_POLICY, policy)
    existing = _load(driver, namespace, policy.version, database)
    if existing is not None:
        return _same_or_conflict(existing, policy)
    try:
        driver.execute_query(
            "CREATE (p:Policy {namespace: $ns, version: $version, content_json: $json, content_hash: $hash, "
            "created_at: datetime()})",
            ns=namespace, version=policy.version, hash=policy.content_hash(),
            json=json.dumps(policy.model_dump(mode="json"), sort_keys=True), database_=database,
        )
    except ConstraintError:  # a concurrent registration won; compare with what it wrote
        winner = _load(driver, namespace, policy.version, database)
        if winner is None:
            raise
        return _same_or_conflict(winner, policy)
    return policy


def _same_or_conflict(existing: Policy, policy: Policy) -> Policy:
    if existing.content_hash() != policy.content_hash():
        raise ConflictError(
            f"policy {policy.version!r} is already registered with different content; "
            "policies are immutable, register a new version", field="version",
        )
    return existing


def _load(driver: Driver, namespace: str, version: str, database: str | None) -> Policy | None:
    stored = _stored(driver, namespace, version, database)
    return None if stored is None else stored[0]


def _stored(driver: Driver, namespace: str, version: str, database: str | None) -> tuple[Policy, str] | None:
    """The registered policy and the content hash stored with it (what recall re-checks)."""
    records, _, _ = driver.execute_query(
        "MATCH (p:Policy {namespace: $ns, version: $v}) RETURN p.content_json AS j, p.content_hash AS h",
        ns=namespace, v=version, database_=database, routing_="r",
    )
    return (Policy.model_validate_json(records[0]["j"]), str(records[0]["h"])) if records else None


def get_policy(driver: Driver, namespace: str, version: str | None, database: str | None = None) -> Policy:
    """The default version exists everywhere; any other must have been registered. Uncached."""
    return _lookup(driver, namespace, version or DEFAULT_POLICY.version, database)[0]


def _lookup(driver: Driver, namespace: str, wanted: str, database: str | None) -> tuple[Policy, str | None]:
    stored = _stored(driver, namespace, wanted, database)
    if stored is not None:
        return stored
    if wanted == DEFAULT_POLICY.version:
        return DEFAULT_POLICY, None
    raise NotFoundError(f"unknown policy version {wanted!r} in namespace {namespace!r}", field="policy_version")


# Policies are immutable, so a resolved one can be reused; recall re-checks the stored hash inside
# its own transaction (a namespace can be dropped and a version re-registered), so a stale entry
# costs one retry, never a wrong packet.
_CACHE: dict[tuple[int, str | None, str, str], tuple[Policy, str | None]] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 4096


def resolve_policy(driver: Driver, namespace: str, version: str | None,
                   database: str | None = None) -> tuple[Policy, str | None]:
    """The policy and its stored content hash (None for the built-in default, which is never stored)."""
    wanted = version or DEFAULT_POLICY.version
    key = (id(driver), database, namespace, wanted)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    found = _lookup(driver, namespace, wanted, database)
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = found
    return found


def forget_policy(driver: Driver, namespace: str, version: str | None, database: str | None = None) -> None:
    with _CACHE_LOCK:
        _CACHE.pop((id(driver), database, namespace, version or DEFAULT_POLICY.version), None)


def forget_namespace(namespace: str) -> None:
    with _CACHE_LOCK:
        for key in [k for k in _CACHE if k[2] == namespace]:
            del _CACHE[key]


def list_policies(driver: Driver, namespace: str, database: str | None = None) -> list[Policy]:
    records, _, _ = driver.execute_query(
        "MATCH (p:Policy {namespace: $ns}) RETURN p.content_json AS j ORDER BY p.version",
        ns=namespace, database_=database, routing_="r",
    )
    found = [Policy.model_validate_json(r["j"]) for r in records]
    if all(p.version != DEFAULT_POLICY.version for p in found):
        found.append(DEFAULT_POLICY)
    return sorted(found, key=lambda p: p.version)
