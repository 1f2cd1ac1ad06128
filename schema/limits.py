"""Every size, depth and batch bound in one place, so faces and docs quote the same numbers."""

from __future__ import annotations

import re

MAX_CONTENT_CHARS = 8_000
MAX_SOURCE_CHARS = 512
MAX_CLAIM_KEY_CHARS = 256
MAX_IDEMPOTENCY_KEY_CHARS = 128
MAX_METADATA_BYTES = 16_384
MAX_BATCH_ITEMS = 1_000
MAX_QUERY_CHARS = 2_000
MAX_REASON_CHARS = 1_000
MAX_TAU_SECONDS = 100 * 365 * 24 * 3600.0
MAX_K_CEILING = 200
MAX_CANDIDATES = 5_000
MAX_RERANK_TOP = 200  # candidates a reranker rescores per recall (a model call each, or one long prompt)
MAX_FACT_TOP = 200  # facts the triple match keeps per recall (each brings its supporting claims)
MAX_FACT_BEAM = 32  # paths the fact beam search keeps per hop (each hop reads that many entities' facts)
MAX_HISTORY = 1_000
MAX_PAGE = 100
# Retrieval rounds of one `ask` / multi-round recall: each round is a recall (and, for ask, a reader
# call), so a policy cannot make one question cost more than this many of each.
MAX_ASK_ROUNDS = 4
# A pinned route is one earlier packet's `stages` (a handful), applied as recorded by the next recall.
MAX_PINNED_STAGES = 64
# Import (graph.lifecycle.importer): what one line of an export file, and each value in it, may hold. A
# record's own fields have the caps above (content, source, keys, metadata); these bound everything else.
MAX_IMPORT_LINE_CHARS = 24 * 1024 * 1024  # a logged packet of MAX_K_CEILING long claims, escaped twice
MAX_PACKET_JSON_CHARS = 8 * 1024 * 1024
MAX_IMPORT_TEXT_CHARS = 16_384  # any other text property (names, reasons, hashes, policy bodies)
MAX_IMPORT_LIST_ITEMS = 10_000  # any list property but the visibility lists (bounded by the store revision)

# Use with `fullmatch`: `$` also matches before a trailing newline, so `match` would take "t2\n".
NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
POLICY_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
