"""What each record of an export file must be before an import takes it (docs/EXPORT.md, "What import checks").

An import writes records as they are, so whatever a record holds, recall, the background worker and
`check` meet later — in every namespace the file is imported into. A value they cannot read turns
every recall into an internal error; a value they read wrongly (a forged term list, a vector of NaNs,
a tombstone that still holds its text) answers wrongly without failing at all. So each record is held,
field by field, to what the store's own writes produce:

* the caps ingest applies (schema.limits: content, source, keys, metadata) and a bound on every other
  value (text, lists, bytes), so no file can make a namespace heavier than writes could;
* JSON fields parse (`metadata_json` to an object, a policy's body to a valid `Policy` with its
  stored hash), revisions lie inside the store's history, windows and visibility lists are
  well-formed, and the default-policy history names policies the file holds;
* a tombstone holds the tombstone fields and nothing else;
* what is derived from a claim's content — `content_hash` and recall's term analysis (`terms`, `names`,
  `terms_v`, graph.text.stored_terms) — is computed here from the content, never taken from the
  file; sentence vectors stored under the key recall would compute must have the shape it reads.

Every refusal is a `FormatError` (BAD_INPUT) naming the line and the field. Checks that need more
than one record (the Commit log, supersession cycles, `check` over the staged claims) are in
graph.lifecycle.importer.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from typing import Any

import neo4j.time
import numpy as np
from pydantic import ValidationError

from palimpsest.graph.claims.sentence_vectors import sentence_key
from palimpsest.graph.claims.visibility import OPEN
from palimpsest.graph.lifecycle.export_format import FormatError
from palimpsest.graph.sentences import sentences
from palimpsest.graph.text import stored_terms
from palimpsest.schema import limits
from palimpsest.schema.models import DEFAULT_POLICY, Policy

STATUSES = frozenset({"current", "superseded", "retracted"})
# Ids as the store mints them (hex, `ent-`/`fact-` prefixes) and as older builds did (uuids): no
# spaces, quotes or separators, so an id is safe wherever it is written or matched (packet text included).
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")
# What an erased claim keeps (graph.claims.check.TOMBSTONE_FIELDS without `namespace`, the file's own).
TOMBSTONE_FIELDS = frozenset({"id", "revision", "erased_at_revision", "erased_at", "reason"})
# Text fields with a cap of their own; every other text property is bounded by MAX_IMPORT_TEXT_CHARS.
_TEXT_CAPS = {
    "claim": {"content": limits.MAX_CONTENT_CHARS, "source": limits.MAX_SOURCE_CHARS,
              "claim_key": limits.MAX_CLAIM_KEY_CHARS, "idempotency_key": limits.MAX_IDEMPOTENCY_KEY_CHARS},
    "packet": {"packet_json": limits.MAX_PACKET_JSON_CHARS, "query": limits.MAX_QUERY_CHARS},
    "erased": {"reason": limits.MAX_REASON_CHARS},
}
# The only byte-array property the store writes (graph.claims.sentence_vectors).
_BYTES = {"claim": frozenset({"sentence_vectors"})}
# Lists bounded by the store revision rather than by MAX_IMPORT_LIST_ITEMS.
_VISIBILITY = ("vis_from", "vis_to", "vis_until")


def _bad(line: int, name: str, why: str) -> FormatError:
    return FormatError(line, why, name=name)


def bounded(kind: str, props: Mapping[str, Any], line: int) -> None:
    """Every value of a record within its bound: text by its cap, lists by count, bytes only where the
    store writes bytes (their size is checked with their meaning)."""
    caps = _TEXT_CAPS.get(kind, {})
    for name, value in props.items():
        if isinstance(value, str):
            cap = caps.get(name, limits.MAX_IMPORT_TEXT_CHARS)
            if len(value) > cap:
                raise _bad(line, name, f"{len(value)} characters, more than {cap}")
        elif isinstance(value, bytes) and name not in _BYTES.get(kind, ()):
            raise _bad(line, name, f"a {kind} record holds no byte arrays")
        elif isinstance(value, list):
            if name in _VISIBILITY and kind == "claim":
                continue
            if len(value) > limits.MAX_IMPORT_LIST_ITEMS:
                raise _bad(line, name, f"{len(value)} items, more than {limits.MAX_IMPORT_LIST_ITEMS}")
            for item in value:
                if isinstance(item, str) and len(item) > limits.MAX_IMPORT_TEXT_CHARS:
                    raise _bad(line, name, f"an item of more than {limits.MAX_IMPORT_TEXT_CHARS} characters")


def _int(props: Mapping[str, Any], name: str, line: int, *, low: int, high: int, required: bool = True) -> int | None:
    value = props.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise _bad(line, name, f"must be an integer from {low} to {high}, not {_show(value)}")
    return value


def _text(props: Mapping[str, Any], name: str, line: int, *, required: bool = True) -> str | None:
    value = props.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _bad(line, name, f"must be non-empty text, not {_show(value)}")
    return value


def _datetime(props: Mapping[str, Any], name: str, line: int, *, required: bool = True) -> None:
    value = props.get(name)
    if value is None and not required:
        return
    if not isinstance(value, neo4j.time.DateTime) or value.tzinfo is None:
        raise _bad(line, name, f"must be a date-time with an offset ({{\"$dt\": …}}), not {_show(value)}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_object(props: Mapping[str, Any], name: str, line: int) -> dict[str, Any] | None:
    value = props.get(name)
    if value is None:
        return None
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise _bad(line, name, "must be a JSON object as text")
    return parsed


# ------------------------------------------------------------------------------------ per kind
def store(props: Mapping[str, Any], line: int, header_revision: int) -> None:
    """The Store node: its revision the header's, the worker's cursor inside it, and a default-policy
    history of parallel lists (revisions ascending inside the history, versions well-formed); that the
    versions are registered is checked once the policies are read (`policy_history`)."""
    bounded("store", props, line)
    revision = _int(props, "revision", line, low=0, high=OPEN - 1)
    if revision != header_revision:
        raise _bad(line, "revision", f"{revision}, but the header's store_revision is {header_revision}")
    assert revision is not None
    _int(props, "projections_seq", line, low=0, high=revision, required=False)
    _int(props, "claims", line, low=0, high=OPEN - 1, required=False)
    revisions, versions = props.get("policy_revisions"), props.get("policy_versions")
    if revisions is None and versions is None:
        if props.get("default_policy") not in (None, DEFAULT_POLICY.version):
            raise _bad(line, "default_policy", "names a policy the default-policy history does not")
        return
    if not (isinstance(revisions, list) and isinstance(versions, list) and len(revisions) == len(versions)):
        raise _bad(line, "policy_revisions", "'policy_revisions' and 'policy_versions' must be lists of one length")
    if not all(isinstance(r, int) and not isinstance(r, bool) and 1 <= r <= revision for r in revisions) \
            or any(a >= b for a, b in itertools.pairwise(revisions)):
        raise _bad(line, "policy_revisions", f"must be ascending revisions from 1 to {revision}")
    if not all(isinstance(v, str) and limits.POLICY_VERSION_RE.match(v) for v in versions):
        raise _bad(line, "policy_versions", "must be policy versions")
    if versions and props.get("default_policy") not in (None, versions[-1]):
        raise _bad(line, "default_policy", f"{_show(props.get('default_policy'))}, but the history ends with "
                                           f"{versions[-1]!r}")


def policy_history(store_props: Mapping[str, Any], policies: set[str], line: int) -> None:
    """Every default the store ever had is a policy of the file (or the built-in one): recall resolves the
    default in effect at a revision by name."""
    for version in store_props.get("policy_versions") or ():
        if version != DEFAULT_POLICY.version and version not in policies:
            raise _bad(line, "policy_versions", f"names policy {version!r}, which the file does not hold")


def commit(props: Mapping[str, Any], line: int, expected: int) -> None:
    """One per revision, in order from 1: the log `check` reads as gapless."""
    bounded("commit", props, line)
    revision = props.get("revision")
    if revision != expected:
        raise _bad(line, "revision", f"{_show(revision)}, but the Commit log must go 1, 2, … without gaps "
                                     f"(expected {expected})")
    _text(props, "kind", line)
    _datetime(props, "at", line, required=False)
    _int(props, "items", line, low=0, high=OPEN - 1, required=False)
    _int(props, "claims", line, low=0, high=OPEN - 1, required=False)


def policy(props: Mapping[str, Any], line: int) -> None:
    """A policy's body must be a valid `Policy` of the record's version, stored with its own hash: recall
    loads it by version and re-checks the hash."""
    bounded("policy", props, line)
    version = _text(props, "version", line)
    body = props.get("content_json")
    if not isinstance(body, str):
        raise _bad(line, "content_json", "must be the policy's fields as JSON text")
    try:
        parsed = Policy.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise _bad(line, "content_json", f"not a valid policy ({where}: {first.get('msg', 'invalid')})") from None
    if parsed.version != version:
        raise _bad(line, "content_json", f"holds version {parsed.version!r}, the record is {version!r}")
    if props.get("content_hash") != parsed.content_hash():
        raise _bad(line, "content_hash", "is not the hash of the policy's content")
    _datetime(props, "created_at", line, required=False)


def packet(props: Mapping[str, Any], line: int) -> None:
    bounded("packet", props, line)
    _text(props, "fingerprint", line)
    _json_object(props, "packet_json", line)
    _int(props, "store_revision", line, low=0, high=OPEN - 1, required=False)


def claim(props: dict[str, Any], line: int, *, store_revision: int, model: str, dimension: int) -> None:
    """A claim as a write leaves it; derived fields are recomputed from its content in place."""
    bounded("claim", props, line)
    claim_id = _text(props, "id", line)
    if not ID_RE.match(str(claim_id)):
        raise _bad(line, "id", f"{_show(claim_id)} is not shaped like a claim id")
    content = _text(props, "content", line)
    assert content is not None
    _text(props, "source", line)
    for name in ("claim_key", "idempotency_key", "input_hash", "search_subject", "sentence_key"):
        _text(props, name, line, required=False)
    if props.get("status") not in STATUSES:
        raise _bad(line, "status", f"must be one of {sorted(STATUSES)}, not {_show(props.get('status'))}")
    revision = _int(props, "revision", line, low=1, high=store_revision)
    assert revision is not None
    _int(props, "batch_index", line, low=0, high=limits.MAX_BATCH_ITEMS, required=False)
    for name in ("superseded_at_revision", "retracted_at_revision"):
        _int(props, name, line, low=revision, high=store_revision, required=False)
    if props.get("status") == "retracted" and props.get("retracted_at_revision") is None:
        raise _bad(line, "retracted_at_revision", "a retracted claim needs the revision it was retracted at")
    tau = props.get("tau")
    if tau is not None and not (isinstance(tau, int | float) and not isinstance(tau, bool)
                                and 0 < tau <= limits.MAX_TAU_SECONDS):
        raise _bad(line, "tau", f"must be a number of seconds in (0, {limits.MAX_TAU_SECONDS:g}]")
    if props.get("correction") not in (None, True, False):
        raise _bad(line, "correction", "must be true or false")
    _datetime(props, "recorded_at", line)
    for name in ("valid_from", "valid_to", "valid_until"):
        _datetime(props, name, line, required=False)
    valid_from, valid_to = props.get("valid_from"), props.get("valid_to")
    if valid_from is not None and valid_to is not None and valid_to <= valid_from:
        raise _bad(line, "valid_to", "must be after valid_from")
    metadata = props.get("metadata_json")
    _json_object(props, "metadata_json", line)
    if isinstance(metadata, str) and len(metadata.encode()) > limits.MAX_METADATA_BYTES:
        raise _bad(line, "metadata_json", f"more than {limits.MAX_METADATA_BYTES} bytes")
    _visibility(props, line, revision, store_revision)
    _sentence_vectors(props, line, content, model, dimension)
    # Derived from the content, as every write derives them: a file cannot choose what a query matches.
    props.update(stored_terms(content))


def _visibility(props: Mapping[str, Any], line: int, revision: int, store_revision: int) -> None:
    """Per-store-interval visibility (docs/TEMPORAL.md): ordered, disjoint intervals of revisions inside the
    store's history, from the claim's own revision, open at the end exactly when the claim is current."""
    vis_from, vis_to, vis_until = props.get("vis_from"), props.get("vis_to"), props.get("vis_until")
    for name, value in (("vis_from", vis_from), ("vis_to", vis_to), ("vis_until", vis_until)):
        if value is None and name == "vis_until":
            continue
        if not (isinstance(value, list) and value and len(value) <= 2 * store_revision + 1
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise _bad(line, name, f"must be a list of 1 to {2 * store_revision + 1} integers")
    assert isinstance(vis_from, list) and isinstance(vis_to, list)
    if len(vis_from) != len(vis_to) or (isinstance(vis_until, list) and len(vis_until) != len(vis_from)):
        raise _bad(line, "vis_to", "the visibility lists must have one length")
    inside = all(1 <= v <= store_revision for v in vis_from) and all(
        1 <= v <= store_revision or v == OPEN for v in vis_to)
    ordered = vis_from[0] == revision and all(a <= b for a, b in zip(vis_from, vis_to, strict=True)) and all(
        vis_to[i] <= vis_from[i + 1] for i in range(len(vis_from) - 1))
    if not (inside and ordered):
        raise _bad(line, "vis_from", f"not ordered intervals of revisions from the claim's own ({revision}) to the "
                                     f"store's ({store_revision})")
    if (vis_to[-1] == OPEN) != (props.get("status") == "current"):
        raise _bad(line, "vis_to", "a claim is visible now (its last interval open) exactly when it is current")


def _sentence_vectors(props: Mapping[str, Any], line: int, content: str, model: str, dimension: int) -> None:
    """Stored sentence rows come with their key; rows under the key recall computes (the only ones it
    reads) are one finite `dimension`-row per sentence of the content; rows under another key are
    never read, and need only be rows."""
    key, vectors = props.get("sentence_key"), props.get("sentence_vectors")
    if (key is None) != (vectors is None):
        raise _bad(line, "sentence_vectors", "'sentence_key' and 'sentence_vectors' come together")
    if vectors is None:
        return
    if not isinstance(vectors, bytes):
        raise _bad(line, "sentence_vectors", "must be bytes ({\"$b64\": …})")
    units = sentences(content)
    row = 4 * dimension
    wanted = len(units) * row if key == sentence_key(model, units) else None
    if (wanted is not None and len(vectors) != wanted) or len(vectors) % row \
            or len(vectors) > max(len(content), 1) * row:
        raise _bad(line, "sentence_vectors", f"{len(vectors)} bytes: not one float32 row of {dimension} per "
                                             f"sentence of the content ({len(units)})")
    if not np.isfinite(np.frombuffer(vectors, dtype="<f4")).all():
        raise _bad(line, "sentence_vectors", "holds a NaN or an infinity")


def erased(props: Mapping[str, Any], line: int, *, store_revision: int, erase_commits: set[int]) -> None:
    """A tombstone is an id, its revisions, when and why — the content, source and vectors are gone."""
    extra = sorted(set(props) - TOMBSTONE_FIELDS)
    if extra:
        raise _bad(line, extra[0], f"an erased claim keeps only {sorted(TOMBSTONE_FIELDS)}; this one keeps {extra}")
    bounded("erased", props, line)
    tomb_id = _text(props, "id", line)
    if not ID_RE.match(str(tomb_id)):
        raise _bad(line, "id", f"{_show(tomb_id)} is not shaped like a claim id")
    at = _int(props, "erased_at_revision", line, low=1, high=store_revision)
    _int(props, "revision", line, low=1, high=at or 1)
    _datetime(props, "erased_at", line, required=False)
    _text(props, "reason", line, required=False)
    if at not in erase_commits:
        raise _bad(line, "erased_at_revision", f"revision {at} is not an 'erase' commit of the file")


def entity(props: Mapping[str, Any], line: int) -> None:
    bounded("entity", props, line)
    entity_id = _text(props, "id", line)
    if not ID_RE.match(str(entity_id)):
        raise _bad(line, "id", f"{_show(entity_id)} is not shaped like an entity id")


def fact(props: Mapping[str, Any], line: int, entities: set[str]) -> None:
    bounded("fact", props, line)
    fact_id = _text(props, "id", line)
    if not ID_RE.match(str(fact_id)):
        raise _bad(line, "id", f"{_show(fact_id)} is not shaped like a fact id")
    subject = props.get("subject_id")
    if subject is not None and subject not in entities:
        raise _bad(line, "subject_id", f"entity {_show(subject)} is not in the file")


__all__ = ["ID_RE", "STATUSES", "TOMBSTONE_FIELDS", "bounded", "claim", "commit", "entity", "erased", "fact",
           "packet", "policy", "policy_history", "store"]
