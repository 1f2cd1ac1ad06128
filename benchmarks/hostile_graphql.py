"""The hostile GraphQL corpus (issue 13), as data: documents and variables, and the code each must get.

Each case is one GraphQL request `(name, query, variables, code)`: `code` is the
`extensions.code` that must appear among the response's errors (every other error must carry a
code too, and none may be `INTERNAL`). `__NS__` in a query or a variable stands for the caller's
namespace (`bind`). The cases need no data: each is refused before it could read any — by the
limits (api/graphql_limits.py), by GraphQL validation, or by the input checks of `Memory`.

`fragment_chain(n)` is the document of issue 13 that froze the server (every fragment spreads the
next one twice); `MAX_REFUSAL_S` is how long its refusal may take.

Used by tests/reliability/test_graphql_hostile.py (in-process) and meant for the reliability
benchmark (against `palimpsest serve`). Bodies the HTTP layer refuses are in benchmarks/hostile_http.py.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

NS = "__NS__"
MAX_REFUSAL_S = 0.1  # the issue's bar for the n=30 chain; tests allow more on a loaded machine


@dataclass(frozen=True)
class Case:
    name: str
    query: str
    variables: dict[str, Any] = field(default_factory=dict)
    code: str = "BAD_INPUT"


def fragment_chain(n: int, namespace: str = NS) -> str:
    """`stats { ...F0 }` with Fi = `revision ...F(i+1) ...F(i+1)`: 2^n spreads if expanded naively."""
    frags = [f"fragment F{i} on StoreStats {{ revision ...F{i + 1} ...F{i + 1} }}" for i in range(n)]
    frags.append(f"fragment F{n} on StoreStats {{ revision }}")
    return f'query {{ stats(namespace: "{namespace}") {{ ...F0 }} }}\n' + "\n".join(frags)


def _cursor(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


def _nested(depth: int) -> str:
    return "{ topEntities(first: 1, namespace: \"" + NS + "\") { " + "neighbors(first: 1) { " * depth + "id" + \
        " }" * depth + " } }"


_RECALL_AT = 'query($at: String) { recall(query: "x", validAt: $at, namespace: "' + NS + '") { storeRevision } }'
_INGEST = ('mutation($i: ClaimInput!) { ingest(input: $i, namespace: "' + NS + '") { revision } }')
_CLAIMS_AFTER = 'query($a: String) { claims(after: $a, namespace: "' + NS + '") { edges { cursor } } }'

CASES: list[Case] = [
    # --- limits: refused before validation, linear in the document ----------------------------------
    Case("fragment-chain-16", fragment_chain(16), code="LIMIT_EXCEEDED"),
    Case("fragment-chain-21", fragment_chain(21), code="LIMIT_EXCEEDED"),
    Case("fragment-chain-30", fragment_chain(30), code="LIMIT_EXCEEDED"),
    Case("fragment-chain-300", fragment_chain(300), code="LIMIT_EXCEEDED"),
    Case("depth-12", _nested(11), code="LIMIT_EXCEEDED"),
    Case("aliases-25", "{ " + " ".join(f'a{i}: stats(namespace: "{NS}") {{ revision }}' for i in range(25)) + " }",
         code="LIMIT_EXCEEDED"),
    Case("fields-450", '{ stats(namespace: "' + NS + '") { ' + " revision" * 450 + " } }", code="LIMIT_EXCEEDED"),
    Case("tokens-6000", '{ stats(namespace: "' + NS + '") { ' + " __typename" * 6000 + " } }",
         code="LIMIT_EXCEEDED"),
    Case("parser-nesting", "{ " + "a { " * 400 + "b" + " }" * 400 + " }", code="LIMIT_EXCEEDED"),
    Case("repeated-field-399", '{ stats(namespace: "' + NS + '") { ' + " revision" * 398 + " } }",
         code="LIMIT_EXCEEDED"),
    Case("fan-out-literal", '{ topEntities(first: 1000, namespace: "' + NS + '") { neighbors(first: 1000) '
         "{ neighbors { id } } } }", code="LIMIT_EXCEEDED"),
    Case("fan-out-variables", 'query($n: Int!) { topEntities(first: $n, namespace: "' + NS + '") { '
         "neighbors(first: $n) { facts(first: $n) { id } } } }", {"n": 1000}, code="LIMIT_EXCEEDED"),
    Case("fan-out-defaults", 'query($n: Int! = 1000) { topEntities(first: $n, namespace: "' + NS + '") { '
         "neighbors(first: $n) { id name } } }", code="LIMIT_EXCEEDED"),
    Case("too-many-validation-errors", "{ " + " ".join(f"x{i}" for i in range(150)) + " }", code="LIMIT_EXCEEDED"),
    # --- the document itself --------------------------------------------------------------------------
    Case("syntax", '{ stats(namespace: "' + NS + '") { revision '),
    Case("unknown-field", '{ stats(namespace: "' + NS + '") { nope } }'),
    Case("missing-argument", '{ recall(namespace: "' + NS + '") { storeRevision } }'),
    Case("variable-type", 'query($k: Int) { recall(query: "x", k: $k, namespace: "' + NS + '") { storeRevision } }',
         {"k": "many"}),
    Case("variable-int-overflow", 'query($k: Int) { recall(query: "x", k: $k, namespace: "' + NS + '") '
         "{ storeRevision } }", {"k": 2**40}),
    Case("undefined-fragment", '{ stats(namespace: "' + NS + '") { ...Nope } }'),
    Case("fragment-cycle", '{ stats(namespace: "' + NS + '") { ...A } } fragment A on StoreStats { revision ...B } '
         "fragment B on StoreStats { ...A }"),
    # --- lone surrogates, which ingest already refused (pydantic) ------------------------------------
    Case("surrogate-recall-query", 'query($q: String!) { recall(query: $q, namespace: "' + NS + '") '
         "{ storeRevision } }", {"q": "where is \ud800 the db?"}),
    Case("surrogate-policy-version", 'query($p: String) { recall(query: "x", policyVersion: $p, namespace: "' + NS
         + '") { storeRevision } }', {"p": "v\ud800"}),
    Case("surrogate-policy", 'query($v: String!) { policy(version: $v, namespace: "' + NS + '") { version } }',
         {"v": "\ud800"}),
    Case("surrogate-retract-reason", 'mutation($r: String!) { retract(id: "nope", reason: $r, namespace: "' + NS
         + '") { revision } }', {"r": "typo \ud800"}),
    Case("surrogate-claims-filter", 'query($s: String) { claims(filter: {source: $s}, namespace: "' + NS + '") '
         "{ edges { cursor } } }", {"s": "\udfff"}),
    Case("surrogate-history", 'query($k: String!) { history(claimKey: $k, namespace: "' + NS + '") '
         "{ claim { id } } }", {"k": "key\ud800"}),
    Case("surrogate-ingest", _INGEST, {"i": {"content": "x\ud800", "source": "s"}}),
    # --- forged cursors ---------------------------------------------------------------------------------
    Case("cursor-garbage", _CLAIMS_AFTER, {"a": "not a cursor!"}),
    Case("cursor-nested", _CLAIMS_AFTER, {"a": _cursor(json.loads("[" * 50 + "]" * 50))}),
    Case("cursor-deep-nested", _CLAIMS_AFTER, {"a": base64.urlsafe_b64encode(b"[" * 100_000 + b"]" * 100_000)
                                                .decode()}),
    Case("cursor-huge-int", _CLAIMS_AFTER, {"a": _cursor([2**70, 0, "x"])}),
    Case("cursor-float-inf", _CLAIMS_AFTER, {"a": base64.urlsafe_b64encode(b'[1e999, 0, "x"]').decode()}),
    Case("cursor-bool", _CLAIMS_AFTER, {"a": _cursor([True, False, "x"])}),
    Case("cursor-object", _CLAIMS_AFTER, {"a": _cursor({"revision": 1})}),
    Case("cursor-not-utf8", _CLAIMS_AFTER, {"a": base64.urlsafe_b64encode(b"\xff\xfe\x00").decode()}),
    Case("cursor-surrogate", _CLAIMS_AFTER, {"a": "\ud800"}),
    # --- dates that overflow once converted to UTC -------------------------------------------------------
    Case("valid-at-min-overflow", _RECALL_AT, {"at": "0001-01-01T00:00:00+14:00"}),
    Case("valid-at-max-overflow", _RECALL_AT, {"at": "9999-12-31T23:59:59-14:00"}),
    Case("valid-from-overflow", _INGEST, {"i": {"content": "x", "source": "s",
                                                "validFrom": "0001-01-01T00:00:00+14:00"}}),
    Case("valid-to-overflow", _INGEST, {"i": {"content": "x", "source": "s", "validTo": "9999-12-31T23:59:59-14:00"}}),
    Case("filter-valid-at-overflow", 'query($at: String) { claims(filter: {validAt: $at}, namespace: "' + NS + '") '
         "{ edges { cursor } } }", {"at": "0001-01-01T00:00:00+14:00"}),
    # --- policies ---------------------------------------------------------------------------------------
    Case("policy-unserved-embedding-model", 'mutation { registerPolicy(namespace: "' + NS + '", input: '
         '{version: "hostile-emb", embeddingModel: "text-embedding-3-large"}) { version } }'),
]


def bind(value: Any, namespace: str) -> Any:
    """`value` (a query or variables) with `__NS__` replaced by `namespace`, recursively."""
    if isinstance(value, str):
        return value.replace(NS, namespace)
    if isinstance(value, dict):
        return {k: bind(v, namespace) for k, v in value.items()}
    if isinstance(value, list):
        return [bind(v, namespace) for v in value]
    return value


def cases(namespace: str) -> Iterator[Case]:
    """Every case with the namespace filled in."""
    for case in CASES:
        yield Case(case.name, bind(case.query, namespace), bind(case.variables, namespace), case.code)
