"""`palimpsest check`: verify a namespace's invariants from what is stored, and say what was found.

Each check re-derives a guarantee from the raw graph rather than trusting the code that wrote it:

* `one_per_key_and_instant` — at every revision where a key changed and every world instant where a
  window starts or ends, at most one version of the key is visible (docs/TEMPORAL.md). Visibility
  is piecewise constant between those points, so checking them checks every instant.
* `world_ends` — each live keyed claim's stored end (`valid_until`, `vis_until`) is the one its
  key's timeline implies now (graph.claims.temporal), and the active succession edges are its pairs.
* `linear_chains` — a hidden claim is hidden by exactly one active supersession, a current one by
  none; corrections point from a later write to an earlier one.
* `visibility_lists` — `vis_from`/`vis_to`/`vis_until` have equal lengths, ordered disjoint intervals.
* `no_cross_namespace` — no relationship joins this namespace to another.
* `gapless_revisions` — one Commit per revision 1..R.
* `projections_behind_revision` — projections_seq ≤ revision.
* `tombstones` — an erased claim (graph.lifecycle.erase) is a tombstone and nothing more: only `TOMBSTONE_FIELDS`,
  no relationship, no Claim of the same id, an `erase` Commit at its erasure's revision, and no
  logged packet that still holds its id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from neo4j import Driver

from palimpsest.graph.claims import temporal
from palimpsest.graph.claims.revisions import optional_datetime
from palimpsest.graph.claims.visibility import OPEN, current_at, from_micros, hidden_reason, micros
from palimpsest.schema.errors import NotFoundError
from palimpsest.schema.models import CheckReport, CheckViolation

# Violations listed per check; the count is always exact.
_MAX_LISTED = 20


@dataclass(frozen=True)
class StoredClaim:
    """A claim's visibility-relevant properties, as stored."""

    id: str
    claim_key: str | None
    revision: int
    pos: int
    status: str
    vis_from: tuple[int, ...]
    vis_to: tuple[int, ...]
    vis_until: tuple[int, ...] | None
    retracted_at_revision: int | None
    valid_from: datetime | None
    valid_to: datetime | None
    valid_until: datetime | None
    correction: bool

    def hidden(self, revision: int, valid_at: datetime | None) -> str | None:
        return hidden_reason(
            recorded_revision=self.revision, vis_from=self.vis_from, vis_to=self.vis_to,
            retracted_at_revision=self.retracted_at_revision, valid_from=self.valid_from, valid_to=self.valid_to,
            revision=revision, valid_at=valid_at, vis_until=self.vis_until,
        )


def stored_claims(driver: Driver, namespace: str, database: str | None = None) -> list[StoredClaim]:
    """Every claim of the namespace with what visibility needs, in write order."""
    records, _, _ = driver.execute_query(
        "MATCH (c:Claim {namespace: $ns}) RETURN c.id AS id, c.claim_key AS key, c.revision AS revision, "
        "coalesce(c.batch_index, 0) AS pos, c.status AS status, c.vis_from AS vf, c.vis_to AS vt, "
        "c.vis_until AS vu, c.retracted_at_revision AS rr, c.valid_from AS valid_from, c.valid_to AS valid_to, "
        "c.valid_until AS valid_until, coalesce(c.correction, false) AS correction "
        "ORDER BY c.revision, pos, c.id",
        ns=namespace, database_=database, routing_="r",
    )
    return [StoredClaim(
        str(r["id"]), r["key"], int(r["revision"]), int(r["pos"]), str(r["status"]), tuple(r["vf"] or ()),
        tuple(r["vt"] or ()), None if r["vu"] is None else tuple(r["vu"]),
        r["rr"], optional_datetime(r["valid_from"]), optional_datetime(r["valid_to"]),
        optional_datetime(r["valid_until"]), bool(r["correction"]),
    ) for r in records]


def visible_ids(claims: Iterable[StoredClaim], revision: int, valid_at: datetime | None) -> set[str]:
    """What recall's visibility filter admits at (revision, valid_at), over every claim at once."""
    return {c.id for c in claims if c.hidden(revision, valid_at) is None}


class _Found:
    def __init__(self) -> None:
        self.checked: dict[str, int] = {}
        self.violations: list[CheckViolation] = []
        self.counts: dict[str, int] = {}

    def count(self, check: str, n: int = 1) -> None:
        self.checked[check] = self.checked.get(check, 0) + n

    def bad(self, check: str, detail: str) -> None:
        self.counts[check] = self.counts.get(check, 0) + 1
        if self.counts[check] <= _MAX_LISTED:
            self.violations.append(CheckViolation(check=check, detail=detail))


def _instants(versions: Sequence[StoredClaim]) -> list[datetime]:
    """Every instant where a window of these versions starts or ends, and one before them all."""
    points: set[int] = set()
    for v in versions:
        for value in (v.valid_from, v.valid_to):
            if value is not None:
                points.add(micros(value))
        points.update(u for u in (v.vis_until or ()) if u < OPEN)
    ordered = sorted(points)
    instants = [from_micros(p) for p in ([ordered[0] - 1] if ordered else [0]) + ordered]
    return [t for t in instants if t is not None]


def _check_keys(claims: Sequence[StoredClaim], found: _Found) -> None:
    by_key: dict[str, list[StoredClaim]] = {}
    for c in claims:
        if c.claim_key is not None:
            by_key.setdefault(c.claim_key, []).append(c)
    for key in sorted(by_key):
        versions = by_key[key]
        revisions = sorted({r for v in versions for r in (v.revision, *v.vis_from, *v.vis_to) if r < OPEN})
        for rev in revisions:
            standing = [v for v in versions if v.hidden(rev, None) is None]
            if len(standing) < 2:
                found.count("one_per_key_and_instant")
                continue
            for t in _instants(standing):
                found.count("one_per_key_and_instant")
                seen = sorted(v.id for v in standing if v.hidden(rev, t) is None)
                if len(seen) > 1:
                    found.bad("one_per_key_and_instant", f"key {key!r} at revision {rev}, {t.isoformat()}: {seen}")
        live = [temporal.Version(v.id, (v.revision, v.pos), v.valid_from, v.valid_to, v.correction)
                for v in versions if v.status == "current"]
        ends = temporal.effective_ends(live)
        for v in versions:
            if v.status != "current":
                continue
            found.count("world_ends")
            stored = v.vis_until[-1] if v.vis_until else micros(v.valid_to)
            if stored != ends[v.id] or micros(v.valid_until) != ends[v.id]:
                found.bad("world_ends", f"claim {v.id} (key {key!r}) ends at {stored}, its timeline says {ends[v.id]}")


def _check_lists(claims: Sequence[StoredClaim], found: _Found) -> None:
    for c in claims:
        found.count("visibility_lists")
        n = len(c.vis_from)
        ok = n == len(c.vis_to) and (c.vis_until is None or len(c.vis_until) == n) and n >= 1
        ok = ok and all(c.vis_from[i] <= c.vis_to[i] for i in range(n))
        ok = ok and all(c.vis_to[i] <= c.vis_from[i + 1] for i in range(n - 1)) and c.vis_from[0] == c.revision
        live_now = n >= 1 and c.vis_to[-1] == OPEN
        ok = ok and live_now == (c.status == "current")
        if not ok:
            found.bad("visibility_lists", f"claim {c.id}: vis_from={list(c.vis_from)} vis_to={list(c.vis_to)} "
                                          f"status={c.status}")


def _check_edges(driver: Driver, namespace: str, claims: Sequence[StoredClaim], database: str | None,
                 found: _Found) -> None:
    order = {c.id: (c.revision, c.pos) for c in claims}
    status = {c.id: c.status for c in claims}
    records, _, _ = driver.execute_query(
        "MATCH (n:Claim {namespace: $ns})-[s:SUPERSEDES]->(o:Claim {namespace: $ns}) "
        "WHERE s.undone_at_revision IS NULL "
        "RETURN n.id AS n, o.id AS o, coalesce(s.kind, s.reason) AS kind ORDER BY o, n",
        ns=namespace, database_=database, routing_="r",
    )
    hiding: dict[str, list[str]] = {}
    successions: dict[str, set[tuple[str, str]]] = {}
    key_of = {c.id: c.claim_key for c in claims}
    for r in records:
        if r["kind"] == "succession":
            successions.setdefault(str(key_of.get(r["o"])), set()).add((r["n"], r["o"]))
            continue
        hiding.setdefault(r["o"], []).append(r["n"])
        if r["kind"] == "correction" and order.get(r["n"], (0, 0)) <= order.get(r["o"], (0, 0)):
            found.bad("linear_chains", f"correction {r['n']} -> {r['o']} points to a later write")
    for c in claims:
        found.count("linear_chains")
        by = hiding.get(c.id, [])
        if c.status == "superseded" and len(by) != 1:
            found.bad("linear_chains", f"superseded claim {c.id} is hidden by {len(by)} active supersessions")
        if c.status == "current" and by:
            found.bad("linear_chains", f"current claim {c.id} has active supersessions from {sorted(by)}")
    by_key: dict[str, list[temporal.Version]] = {}
    for c in claims:
        if c.claim_key is not None and status[c.id] == "current":
            by_key.setdefault(c.claim_key, []).append(
                temporal.Version(c.id, (c.revision, c.pos), c.valid_from, c.valid_to, c.correction))
    for key in sorted(set(by_key) | set(successions)):
        live = by_key.get(key, [])
        wanted = temporal.successions(live, temporal.effective_ends(live))
        found.count("world_ends")
        if wanted != successions.get(key, set()):
            found.bad("world_ends", f"key {key!r}: succession edges {sorted(successions.get(key, set()))}, "
                                    f"timeline pairs {sorted(wanted)}")


def _check_store(driver: Driver, namespace: str, database: str | None, found: _Found) -> int:
    records, _, _ = driver.execute_query(
        "MATCH (s:Store {namespace: $ns}) "
        "RETURN s.revision AS rev, coalesce(s.projections_seq, 0) AS seq, "
        "COLLECT { MATCH (k:Commit {namespace: $ns}) RETURN k.revision ORDER BY k.revision } AS commits, "
        "COUNT { MATCH (a:Claim {namespace: $ns})--(b) WHERE b.namespace IS NULL OR b.namespace <> $ns } "
        "+ COUNT { MATCH (a:Entity {namespace: $ns})--(b) WHERE b.namespace IS NULL OR b.namespace <> $ns } "
        "+ COUNT { MATCH (a:Fact {namespace: $ns})--(b) WHERE b.namespace IS NULL OR b.namespace <> $ns } "
        "AS crossing",
        ns=namespace, database_=database, routing_="r",
    )
    if not records:
        raise NotFoundError(f"unknown namespace {namespace!r}", field="namespace")
    rec = records[0]
    revision, seq = int(rec["rev"]), int(rec["seq"])
    found.count("gapless_revisions")
    if list(rec["commits"]) != list(range(1, revision + 1)):
        found.bad("gapless_revisions", f"commits {len(rec['commits'])} for revisions 1..{revision}")
    found.count("projections_behind_revision")
    if seq > revision:
        found.bad("projections_behind_revision", f"projections_seq {seq} > revision {revision}")
    found.count("no_cross_namespace")
    if int(rec["crossing"]):
        found.bad("no_cross_namespace", f"{rec['crossing']} relationships leave the namespace")
    return revision


def _check_claims(driver: Driver, namespace: str, database: str | None, found: _Found) -> list[StoredClaim]:
    claims = stored_claims(driver, namespace, database)
    _check_lists(claims, found)
    _check_keys(claims, found)
    _check_edges(driver, namespace, claims, database, found)
    _check_tombstones(driver, namespace, database, found)
    return claims


def claim_violations(driver: Driver, namespace: str, database: str | None = None) -> list[CheckViolation]:
    """The checks of claims, their edges and tombstones, without the Store's (gapless Commit log, the
    worker's cursor): for nodes that have no Store yet — an import's staging namespace
    (graph.lifecycle.importer), held to what `check` will find once it is switched in."""
    found = _Found()
    _check_claims(driver, namespace, database, found)
    return found.violations


TOMBSTONE_FIELDS = frozenset({"id", "namespace", "revision", "erased_at_revision", "erased_at", "reason"})


def _check_tombstones(driver: Driver, namespace: str, database: str | None, found: _Found) -> None:
    records, _, _ = driver.execute_query(
        "MATCH (e:ErasedClaim {namespace: $ns}) "
        "RETURN e.id AS id, keys(e) AS keys, e.revision AS revision, e.erased_at_revision AS at, "
        "COUNT { (e)--() } AS rels, EXISTS { MATCH (:Claim {id: e.id}) } AS claim, "
        "EXISTS { MATCH (k:Commit {namespace: $ns, revision: e.erased_at_revision}) WHERE k.kind = 'erase' } "
        "AS committed ORDER BY at, id",
        ns=namespace, database_=database, routing_="r",
    )
    for r in records:
        found.count("tombstones")
        extra = sorted(set(r["keys"]) - TOMBSTONE_FIELDS)
        problems = [f"keeps {extra}"] if extra else []
        problems += ["has relationships"] if int(r["rels"]) else []
        problems += ["is still a claim too"] if r["claim"] else []
        problems += [] if r["committed"] else [f"has no erase commit at revision {r['at']}"]
        if r["revision"] is None or r["at"] is None or int(r["revision"]) > int(r["at"]):
            problems.append(f"revision {r['revision']} after its erasure at {r['at']}")
        if problems:
            found.bad("tombstones", f"erased claim {r['id']}: " + ", ".join(problems))
    ids = [str(r["id"]) for r in records]
    if not ids:
        return
    leaks, _, _ = driver.execute_query(
        "MATCH (p:PacketLog {namespace: $ns}) WHERE p.packet_json IS NOT NULL "
        "AND any(id IN $ids WHERE p.packet_json CONTAINS id) RETURN p.fingerprint AS fp ORDER BY fp",
        ns=namespace, ids=ids, database_=database, routing_="r",
    )
    for leak in leaks:
        found.bad("tombstones", f"logged packet {leak['fp']} still holds an erased claim")


def check(driver: Driver, namespace: str, database: str | None = None) -> CheckReport:
    """Run every check over the namespace; a report with no violations means every invariant holds."""
    found = _Found()
    revision = _check_store(driver, namespace, database, found)
    claims = _check_claims(driver, namespace, database, found)
    return CheckReport(namespace=namespace, revision=revision, claims=len(claims),
                       checked=dict(sorted(found.checked.items())), violations=found.violations,
                       violation_counts=dict(sorted(found.counts.items())))


__all__ = ["TOMBSTONE_FIELDS", "StoredClaim", "check", "claim_violations", "current_at", "stored_claims", "visible_ids"]
