"""Policies live in Neo4j, per namespace, and never change once registered.

A packet names the policy version it was computed with; if that version's knobs could change,
the same fingerprint would mean two different things. So registering a known version with other
content is refused, and the same content is accepted again (idempotent).

Each namespace also stores its **default policy** — the one every recall without a version and
every worker pass use, whichever process runs them (`default-v1`, built in, until one is set).
Setting it is a write like any other: it bumps the store revision (a `settings` Commit) and is
kept on the Store node as `default_policy` plus the history of changes (`policy_revisions`,
`policy_versions`), so the default *in effect at revision R* is known: an as-of recall and the
worker (which projects claims in revision order) use that one, not whatever is current when they run.
"""

from __future__ import annotations

import json
import threading

from neo4j import Driver, ManagedTransaction
from neo4j.exceptions import ConstraintError

from palimpsest.graph.claims.revisions import bump, default_policy_at, policy_changes, store_state
from palimpsest.schema.errors import ConflictError, NotFoundError
from palimpsest.schema.models import DEFAULT_POLICY, NamespaceSettings, Policy


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
            json=json.dumps(policy.stored_body(), sort_keys=True), database_=database,
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
        for dkey in [k for k in _DEFAULTS if k[2] == namespace]:
            del _DEFAULTS[dkey]


# ---------------------------------------------------------------------- the namespace's default
def set_default_policy(driver: Driver, namespace: str, version: str,
                       database: str | None = None) -> NamespaceSettings:
    """Make `version` (registered in this namespace, or the built-in `default-v1`) the namespace's
    default, at a new store revision. Setting the version already in effect writes nothing."""
    with driver.session(database=database) as session:
        current = session.execute_read(_settings_tx, namespace)
        if current.default_policy == version:
            return current
        settings = session.execute_write(_set_default_tx, namespace, version)
    remember_default(driver, namespace, version, database)
    return settings


def _set_default_tx(tx: ManagedTransaction, namespace: str, version: str) -> NamespaceSettings:
    if version != DEFAULT_POLICY.version and tx.run(
        "MATCH (p:Policy {namespace: $ns, version: $v}) RETURN p.version AS v", ns=namespace, v=version,
    ).single() is None:
        raise NotFoundError(f"unknown policy version {version!r} in namespace {namespace!r}; register it first",
                            field="version")
    rev = bump(tx, namespace, "settings", 1).number  # takes the Store's write lock until commit
    tx.run(
        "MATCH (s:Store {namespace: $ns}) MATCH (c:Commit {namespace: $ns, revision: $rev}) "
        "SET s.default_policy = $v, s.policy_revisions = coalesce(s.policy_revisions, []) + $rev, "
        "s.policy_versions = coalesce(s.policy_versions, []) + $v, c.default_policy = $v",
        ns=namespace, rev=rev, v=version,
    )
    return NamespaceSettings(namespace=namespace, default_policy=version, revision=rev, changed_at_revision=rev)


def _settings_tx(tx: ManagedTransaction, namespace: str) -> NamespaceSettings:
    state = store_state(tx, namespace)
    if state is None:
        return NamespaceSettings(namespace=namespace, default_policy=DEFAULT_POLICY.version, revision=0)
    last = state.policy_changes[-1] if state.policy_changes else None
    return NamespaceSettings(namespace=namespace, default_policy=state.default_policy_at(state.revision),
                             revision=state.revision, changed_at_revision=last[0] if last else None)


def namespace_settings(driver: Driver, namespace: str, database: str | None = None) -> NamespaceSettings:
    """The namespace's settings now (the built-in defaults at revision 0 for a namespace never written)."""
    with driver.session(database=database, default_access_mode="READ") as session:
        return session.execute_read(_settings_tx, namespace)


def default_policy_version(driver: Driver, namespace: str, database: str | None = None,
                           at_revision: int | None = None) -> str:
    """The default policy version in effect now (or at `at_revision`), read from the store. Uncached."""
    records, _, _ = driver.execute_query(
        "MATCH (s:Store {namespace: $ns}) RETURN s.revision AS r, s.policy_revisions AS pr, s.policy_versions AS pv",
        ns=namespace, database_=database, routing_="r",
    )
    if not records:
        return DEFAULT_POLICY.version
    row = records[0]
    return default_policy_at(policy_changes(row["pr"], row["pv"]), int(row["r"]) if at_revision is None
                             else at_revision)


# The default as last seen by this process, per namespace: only a *guess* for recall, which checks
# it against the Store inside its own read transaction (graph.recall, `check_default`) and retries
# with the version it found there. So another process changing the default costs one retry here,
# never a packet computed with a stale default. The worker does not use this cache.
_DEFAULTS: dict[tuple[int, str | None, str], str] = {}


def cached_default(driver: Driver, namespace: str, database: str | None = None) -> str | None:
    with _CACHE_LOCK:
        return _DEFAULTS.get((id(driver), database, namespace))


def remember_default(driver: Driver, namespace: str, version: str, database: str | None = None) -> None:
    with _CACHE_LOCK:
        if len(_DEFAULTS) >= _CACHE_MAX:
            _DEFAULTS.clear()
        _DEFAULTS[(id(driver), database, namespace)] = version


def list_policies(driver: Driver, namespace: str, database: str | None = None) -> list[Policy]:
    records, _, _ = driver.execute_query(
        "MATCH (p:Policy {namespace: $ns}) RETURN p.content_json AS j ORDER BY p.version",
        ns=namespace, database_=database, routing_="r",
    )
    found = [Policy.model_validate_json(r["j"]) for r in records]
    if all(p.version != DEFAULT_POLICY.version for p in found):
        found.append(DEFAULT_POLICY)
    return sorted(found, key=lambda p: p.version)
