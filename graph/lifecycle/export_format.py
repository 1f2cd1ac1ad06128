"""The export file format (docs/EXPORT.md), in one place for the writer and the reader.

JSON Lines, one record per line. Line 1 is the header (format name, version, namespace, store
revision, embedding model, record counts); then the records, section by section in `KINDS` order,
each section in a total order. Node properties are copied as stored; the few values JSON has no
type for are tagged: a Neo4j DateTime is `{"$dt": "<ISO-8601 with nanoseconds and offset>"}`, an
embedding `{"f32": "<base64 of little-endian float32>"}` (the index stores float32, so this is exact
and a quarter of the size of decimal text). Reading refuses what it does not know, naming the line:
a reader that guessed would write a store that answers differently from the one exported.
"""

from __future__ import annotations

import base64
import json
import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import neo4j.time

from palimpsest.schema import limits
from palimpsest.schema.errors import BadInputError

FORMAT = "palimpsest-export"
VERSION = 1

# Sections, in file order. `rel` records come last so both ends of every relationship precede it.
KINDS = ("header", "store", "commit", "policy", "packet", "claim", "erased", "entity", "fact", "rel")
LABELS = {"commit": "Commit", "policy": "Policy", "packet": "PacketLog", "claim": "Claim", "erased": "ErasedClaim",
          "entity": "Entity", "fact": "Fact"}
# The property that identifies a node of each kind within its namespace.
KEYS = {"commit": "revision", "policy": "version", "packet": "fingerprint", "claim": "id", "erased": "id",
        "entity": "id", "fact": "id"}
# Every relationship the store writes, as (start label, type, end label); nothing else is exported or read.
RELATIONSHIPS = frozenset({
    ("Claim", "SUPERSEDES", "Claim"), ("Claim", "CONTRADICTS", "Claim"), ("Claim", "MENTIONS", "Entity"),
    ("Entity", "RELATED", "Entity"), ("Fact", "SUBJECT", "Entity"), ("Fact", "OBJECT", "Entity"),
    ("Fact", "SUPPORTED_BY", "Claim"), ("Fact", "SUPERSEDES", "Fact"), ("Fact", "CONTRADICTS", "Fact"),
})
RELATIONSHIP_STARTS = ("Claim", "Entity", "Fact")


class FormatError(BadInputError):
    """A line the reader cannot take: the message starts with `line N:`, `limit` is N, and `field` names the
    record's field at fault (`metadata_json`, `embedding`, …) or is `line` when the line as a whole is."""

    def __init__(self, line: int, why: str, *, name: str | None = None) -> None:
        where = f"line {line}: " + (f"field {name!r}: " if name else "")
        super().__init__(where + why, field=name or "line", limit=line)
        self.line = line


# ------------------------------------------------------------------------------------ values
def encode_value(value: Any) -> Any:
    """A stored property value as JSON: scalars and lists as they are, DateTime and bytes tagged."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, neo4j.time.DateTime):
        return {"$dt": value.iso_format()}
    if isinstance(value, bytes | bytearray):
        return {"$b64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, list | tuple):
        return [encode_value(v) for v in value]
    raise TypeError(f"a property of type {type(value).__name__} has no export encoding")


def decode_value(value: Any, line: int, name: str) -> Any:
    """The inverse of `encode_value`; FormatError for anything it would not have written.

    Stricter than JSON on purpose: Neo4j stores lists of one type only and no nested lists, and a
    NaN or infinity in a score or a vector makes rankings depend on the engine, so a reader that let
    them through would fail later as an untyped database error — or not at all, and answer wrongly."""
    if isinstance(value, list):
        items = [_decode_scalar(v, line, name, in_list=True) for v in value]
        if len({type(v) for v in items}) > 1:
            raise FormatError(line, "a list must hold values of one type", name=name)
        return items
    return _decode_scalar(value, line, name, in_list=False)


def _decode_scalar(value: Any, line: int, name: str, *, in_list: bool) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise FormatError(line, "not a finite number", name=name)
    if (value is None and not in_list) or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict) and set(value) == {"$dt"} and isinstance(value["$dt"], str):
        try:
            return neo4j.time.DateTime.from_iso_format(value["$dt"])
        except (ValueError, TypeError, OverflowError):
            raise FormatError(line, f"{value['$dt'][:64]!r} is not an ISO-8601 date-time", name=name) from None
    if isinstance(value, dict) and set(value) == {"$b64"} and isinstance(value["$b64"], str) and not in_list:
        try:
            return base64.b64decode(value["$b64"], validate=True)
        except ValueError:
            raise FormatError(line, "'$b64' is not base64", name=name) from None
    raise FormatError(line, "a value this format does not write" + (" (in a list)" if in_list else ""), name=name)


def encode_props(props: Mapping[str, Any], *, drop: Sequence[str] = ("namespace",)) -> dict[str, Any]:
    return {k: encode_value(props[k]) for k in sorted(props) if k not in drop}


def decode_props(raw: Any, line: int) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise FormatError(line, "'props' must be an object", name="props")
    if "namespace" in raw or "embedding" in raw:
        raise FormatError(line, "'props' must not carry 'namespace' or 'embedding' (they have places of their own)",
                          name="props")
    return {str(k): decode_value(v, line, str(k)) for k, v in raw.items()}


def encode_vector(vector: Sequence[float]) -> dict[str, Any]:
    """float32 bytes when every component is a float32 (what the vector index stores), else the floats."""
    packed = struct.pack(f"<{len(vector)}f", *vector)
    if list(struct.unpack(f"<{len(vector)}f", packed)) == [float(x) for x in vector]:
        return {"f32": base64.b64encode(packed).decode("ascii")}
    return {"f64": [float(x) for x in vector]}


def decode_vector(raw: Any, line: int, dimension: int) -> list[float]:
    """An embedding as the vector index will hold it: `dimension` finite numbers, not all zero (a cosine
    index cannot compare a zero vector), so no recall meets a vector it cannot score."""
    shape = "'embedding' must be {\"f32\": base64} or {\"f64\": [numbers]}"
    try:
        if isinstance(raw, dict) and set(raw) == {"f32"} and isinstance(raw["f32"], str):
            if len(raw["f32"]) > 4 * 4 * dimension:  # base64 of more than `dimension` floats: never decoded
                raise FormatError(line, f"the embedding has more than the header's {dimension} dimensions",
                                  name="embedding")
            data = base64.b64decode(raw["f32"], validate=True)
            vector = list(struct.unpack(f"<{len(data) // 4}f", data)) if len(data) % 4 == 0 else []
        elif isinstance(raw, dict) and set(raw) == {"f64"} and isinstance(raw["f64"], list):
            if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw["f64"]):
                raise ValueError("not numbers")
            vector = [float(x) for x in raw["f64"]]
        else:
            raise ValueError("not an encoded embedding")
    except (ValueError, TypeError, struct.error, OverflowError):
        raise FormatError(line, shape, name="embedding") from None
    if len(vector) != dimension:
        raise FormatError(line, f"the embedding has {len(vector)} dimensions, the header says {dimension}",
                          name="embedding")
    if not all(math.isfinite(x) for x in vector):
        raise FormatError(line, "the embedding holds a NaN or an infinity", name="embedding")
    if not any(vector):
        raise FormatError(line, "the embedding is all zeros: a cosine index cannot compare it", name="embedding")
    return vector


def dumps(record: Mapping[str, Any]) -> str:
    """One record as one line: compact, keys sorted, so the same store exports to the same bytes."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def loads(text: str, line: int) -> dict[str, Any]:
    """One line as a record. Lines are bounded (`limits.MAX_IMPORT_LINE_CHARS`) before they are parsed. Python's
    NaN/Infinity extensions to JSON parse (no export writes them), so that the value's own check refuses them
    naming its field."""
    if len(text) > limits.MAX_IMPORT_LINE_CHARS:
        raise FormatError(line, f"the line has {len(text)} characters, more than any record of this format "
                                f"({limits.MAX_IMPORT_LINE_CHARS})")
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise FormatError(line, f"not valid JSON ({str(exc)[:200]})") from None
    if not isinstance(record, dict):
        raise FormatError(line, "each line must be one JSON object")
    kind = record.get("kind")
    if kind not in KINDS:
        raise FormatError(line, f"unknown record kind {kind!r} (known: {', '.join(KINDS)})")
    return record


def check_header(record: Mapping[str, Any], line: int) -> None:
    """The first line must be a header of this format and version."""
    if record.get("kind") != "header" or record.get("format") != FORMAT:
        raise FormatError(line, f"not a {FORMAT} file: its first line must be the header")
    version = record.get("version")
    if version != VERSION:
        raise FormatError(line, f"format version {version!r} is not supported (this release reads version {VERSION})")
    for name, kind in (("namespace", str), ("store_revision", int), ("counts", dict), ("embedding", dict)):
        if not isinstance(record.get(name), kind) or isinstance(record.get(name), bool):
            raise FormatError(line, f"the header's {name!r} is missing or of the wrong type", name=name)
    embedding = record["embedding"]
    if not isinstance(embedding.get("model"), str) or not isinstance(embedding.get("dimension"), int):
        raise FormatError(line, "the header's 'embedding' must give 'model' and 'dimension'", name="embedding")
    counts = record["counts"]
    if not all(k in KINDS[2:] and isinstance(v, int) and not isinstance(v, bool) and v >= 0
               for k, v in counts.items()):
        raise FormatError(line, f"the header's 'counts' must map record kinds ({', '.join(KINDS[2:])}) to counts",
                          name="counts")


__all__ = [
    "FORMAT", "KEYS", "KINDS", "LABELS", "RELATIONSHIPS", "RELATIONSHIP_STARTS", "VERSION", "FormatError",
    "check_header", "decode_props", "decode_value", "decode_vector", "dumps", "encode_props", "encode_value",
    "encode_vector", "loads",
]
