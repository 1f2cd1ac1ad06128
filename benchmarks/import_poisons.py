"""Poisoned export files: a real export with one record edited as an attacker would edit it.

Each entry of `POISONS` maps a case to (edit, field): `edit(lines)` returns the poisoned file and the
line it changed, and `field` is what the import's BAD_INPUT must name (docs/EXPORT.md, "What import
checks"). `FORGED_TERMS` is the one edit an import accepts — and must neutralise: it recomputes the
term analysis from the content. The cases expect an export of a store with a registered policy
that became the default, a supersession, an erasure and a keyless current claim written before the
last revision (tests/integration/test_export_import.py `_build`; `python -m benchmarks.reliability
--only import-poisoning` builds one too).

Used by tests/integration/test_export_import.py and the `import-poisoning` scenario of
benchmarks/reliability.py, which also share `Outage`, the database going away mid-import.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Edit = Callable[[list[str]], tuple[list[str], int]]


def dump(record: dict[str, Any]) -> str:
    """One record as the exporter writes it (compact, keys sorted)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def first(lines: list[str], test: Callable[[dict[str, Any]], bool]) -> int:
    return next(i for i, text in enumerate(lines) if test(json.loads(text)))


def edit(lines: list[str], test: Callable[[dict[str, Any]], bool],
         change: Callable[[dict[str, Any]], Any]) -> tuple[list[str], int]:
    """The file with the first record passing `test` changed by `change` (in place); its line number."""
    at = first(lines, test)
    record = json.loads(lines[at])
    change(record)
    return [*lines[:at], dump(record), *lines[at + 1:]], at + 1


def _is(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda record: record["kind"] == kind


def _props(**values: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda record: record["props"].update(values)


def _f64(vector: list[Any]) -> Callable[[dict[str, Any]], Any]:
    return lambda record: record.update(embedding={"f64": vector})


def _claim_edit(change: Callable[[dict[str, Any]], Any]) -> Edit:
    return lambda lines: edit(lines, _is("claim"), change)


def _reverse_supersedes(lines: list[str]) -> tuple[list[str], int]:
    """A second edge back along a supersession: a cycle, announced in the header's counts."""
    at = first(lines, lambda r: r["kind"] == "rel" and r["type"] == "SUPERSEDES" and r["from"][0] == "Claim")
    forward = json.loads(lines[at])
    header = json.loads(lines[0])
    header["counts"]["rel"] += 1
    return [dump(header), *lines[1:], dump(forward | {"from": forward["to"], "to": forward["from"]})], len(lines) + 1


def _superseded_without_edge(lines: list[str]) -> tuple[list[str], int]:
    """A current keyless claim made superseded: every field well-formed, but nothing supersedes it."""
    revision = int(json.loads(lines[0])["store_revision"])

    def wanted(r: dict[str, Any]) -> bool:
        return r["kind"] == "claim" and r["props"]["status"] == "current" and "claim_key" not in r["props"] \
            and r["props"]["revision"] < revision

    def change(r: dict[str, Any]) -> None:
        props = r["props"]
        props.update(status="superseded", superseded_at_revision=props["revision"] + 1,
                     vis_to=[props["revision"] + 1])

    return edit(lines, wanted, change)


def _policy_history(**values: Any) -> Edit:
    return lambda lines: edit(lines, _is("store"), lambda r: r["props"].update(
        {k: v(r["props"]) if callable(v) else v for k, v in values.items()}))


def _dimension(lines: list[str]) -> int:
    return int(json.loads(lines[0])["embedding"]["dimension"])


def _vector_edit(make: Callable[[int], list[Any]]) -> Edit:
    return lambda lines: edit(lines, _is("claim"), _f64(make(_dimension(lines))))


POISONS: dict[str, tuple[Edit, str]] = {
    "embedding of the wrong length in f64": (_vector_edit(lambda n: [0.1] * (n - 1)), "embedding"),
    "NaN in a vector": (_vector_edit(lambda n: [float("nan")] + [0.1] * (n - 1)), "embedding"),
    "infinity in a vector": (_vector_edit(lambda n: [1e400] + [0.1] * (n - 1)), "embedding"),
    "a vector of booleans": (_vector_edit(lambda n: [True] * n), "embedding"),
    "metadata_json that is not JSON": (_claim_edit(_props(metadata_json="{not json")), "metadata_json"),
    "metadata_json that is not an object": (_claim_edit(_props(metadata_json="[1, 2]")), "metadata_json"),
    "a policy whose content is not JSON": (
        lambda lines: edit(lines, _is("policy"), _props(content_json="{k: 2")), "content_json"),
    "a policy that is not a valid Policy": (
        lambda lines: edit(lines, _is("policy"), lambda r: r["props"].update(
            content_json=json.dumps({"version": r["props"]["version"], "k": -1}))), "content_json"),
    "policy_revisions and policy_versions of other lengths": (
        _policy_history(policy_versions=lambda p: [*p["policy_versions"], p["policy_versions"][-1]]),
        "policy_revisions"),
    "a default-policy history naming no policy of the file": (
        _policy_history(policy_versions=lambda p: ["nowhere-v9"] * len(p["policy_versions"]),
                        default_policy="nowhere-v9"), "policy_versions"),
    "a SUPERSEDES cycle": (_reverse_supersedes, "SUPERSEDES"),
    "projections_seq far above the revision": (
        lambda lines: edit(lines, _is("store"), _props(projections_seq=10**9)), "projections_seq"),
    "a tombstone that still carries content": (
        lambda lines: edit(lines, _is("erased"), _props(content="The deploy pipeline token is tok-SECRET-991.")),
        "content"),
    "3 MB of content": (_claim_edit(_props(content="x " * 1_500_000)), "content"),
    "a 30 MB line ($b64)": (
        _claim_edit(_props(sentence_key="k" * 32, sentence_vectors={"$b64": "AAAA" * 7_500_000})), "line"),
    "a 1 MB byte array the store never writes": (_claim_edit(_props(blob={"$b64": "AAAA" * 250_000})), "blob"),
    "sentence vectors of another shape": (
        _claim_edit(_props(sentence_key="k" * 32, sentence_vectors={"$b64": "AAAA"})), "sentence_vectors"),
    "a list of mixed types": (_claim_edit(_props(source=[1, "a"])), "source"),
    "a nested list": (_claim_edit(_props(tags=[[1, 2]])), "tags"),
    "an untagged object": (_claim_edit(_props(source={"a": 1})), "source"),
    "a revision after the store's": (_claim_edit(_props(revision=10**6)), "revision"),
    "a Commit log with a gap": (lambda lines: edit(lines, _is("commit"), _props(revision=2)), "revision"),
    "a superseded claim nothing supersedes (check's linear_chains)": (_superseded_without_edge, "linear_chains"),
}

# Words of no claim of the store, listed as a claim's terms: imported as they are, unrelated queries made
# of them would match that claim at lexical 1.0.
FORGED_WORDS = ("zebra", "quantum", "saxophone")
FORGED_TERMS: Edit = _claim_edit(_props(terms=[*FORGED_WORDS, "~zebra"], names=["Zebra Quantum"]))

__all__ = ["FORGED_TERMS", "FORGED_WORDS", "POISONS", "Edit", "dump", "edit", "first"]


class Outage:
    """A driver whose database goes away when told: from then on every session and query fails as the real
    driver fails when the server is unreachable (ServiceUnavailable) — the import's own cleanup included."""

    def __init__(self, driver: Any) -> None:
        self.driver, self.down = driver, False

    def _gone(self) -> None:
        if self.down:
            from neo4j.exceptions import ServiceUnavailable

            raise ServiceUnavailable("Couldn't connect to the database (it went away)")

    def session(self, **kwargs: Any) -> Any:
        self._gone()
        return self.driver.session(**kwargs)

    def execute_query(self, *args: Any, **kwargs: Any) -> Any:
        self._gone()
        return self.driver.execute_query(*args, **kwargs)
