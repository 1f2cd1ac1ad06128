"""The models this server may call or load: the operator's allow-lists, and their checks.

A model costs money (a paid provider), reaches a port (a local `ollama`), or loads files (a
CrossEncoder from a directory), and sees the claims it is sent; so which one runs is the operator's
choice, never a caller's. The lists come from the settings (`PALIMPSEST_ALLOWED_LLM_MODELS`,
`PALIMPSEST_ALLOWED_RERANK_MODELS`, `PALIMPSEST_ALLOWED_NLI_MODELS`; the embedder is
`PALIMPSEST_EMBEDDING_MODEL` itself, and a policy may only name that one) and are checked twice:

* when a policy is registered or a caller names a model (`ask`'s `llm_model`): anything unlisted is a
  BadInputError naming the field and what is allowed, before any model is called;
* when a stored policy is used: a policy registered before the operator narrowed a list must not call
  what the list no longer holds, so the recall treats that stage as unavailable (and says so in the
  packet, as for a model that fails to load) and the worker runs the offline stage instead.

A name that looks like a path, or names something on the server's disk, is refused like any other
unlisted name (with a message that says why): only the operator may point the server at its files.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from palimpsest.schema.errors import BadInputError
from palimpsest.schema.models import ContradictionSettings, PacketItem, Policy
from palimpsest.schema.rerank import RerankScorer, RerankUnavailableError
from palimpsest.settings import Settings

Kind = Literal["llm", "rerank", "nli"]

VARIABLES: dict[Kind, str] = {"llm": "PALIMPSEST_ALLOWED_LLM_MODELS", "rerank": "PALIMPSEST_ALLOWED_RERANK_MODELS",
                              "nli": "PALIMPSEST_ALLOWED_NLI_MODELS"}


def looks_like_path(name: str) -> bool:
    """A name the server could read as a place on its disk: absolute, home- or dot-relative, with a
    backslash, or something that exists where the server runs."""
    if name.startswith(("/", "~", ".")) or "\\" in name or (len(name) > 1 and name[1] == ":"):
        return True
    try:
        return os.path.exists(name)
    except (OSError, ValueError):
        return True


@dataclass(frozen=True)
class AllowedModels:
    """The operator's allow-lists. The default allows no model at all: what the project ships and
    runs offline (the embedder, the offline stages) needs none of them, and nothing paid is called
    unless the operator lists it."""

    llm: frozenset[str] = frozenset()
    rerank: frozenset[str] = frozenset()
    nli: frozenset[str] = frozenset()

    @classmethod
    def from_settings(cls, settings: Settings) -> AllowedModels:
        return cls(llm=frozenset(settings.allowed_llm_models), rerank=frozenset(settings.allowed_rerank_models),
                   nli=frozenset(settings.allowed_nli_models))

    def admitting(self, kind: Kind, *names: str | None) -> AllowedModels:
        """These lists with `names` (None skipped) added to `kind`'s: what a run the operator starts with a
        model on its own command line (a benchmark's `--llm-model`, `--rerank-model`) may call."""
        return replace(self, **{kind: getattr(self, kind) | {n for n in names if n}})

    def allows(self, kind: Kind, name: str) -> bool:
        return name in getattr(self, kind)

    def check(self, kind: Kind, name: str, field: str) -> None:
        """Refuse `name` for `field` unless the operator listed it (BadInputError naming both)."""
        if self.allows(kind, name):
            return
        listed = sorted(getattr(self, kind))
        allowed = ", ".join(repr(n) for n in listed) if listed else "none"
        why = " (a caller never names a path on the server's disk)" if looks_like_path(name) else ""
        raise BadInputError(f"{field} {name!r} is not a model this server allows{why}; allowed: {allowed} "
                            f"(the operator's {VARIABLES[kind]})", field=field)

    def check_policy(self, policy: Policy) -> None:
        """Every model `policy` would have the server call or load must be listed (registration time)."""
        for kind, name, field in policy_models(policy):
            self.check(kind, name, field)

    def unlisted(self, policy: Policy) -> list[str]:
        """The fields of `policy` naming a model the lists do not hold now (use time)."""
        return [field for kind, name, field in policy_models(policy) if not self.allows(kind, name)]

    def for_worker(self, policy: Policy) -> tuple[Policy, list[str]]:
        """`policy` with every stage whose model is not listed now turned to its offline form (extractor
        and inference judge `offline`, contradiction detectors without `nli`/`llm`), and a note for each."""
        bad = set(self.unlisted(policy))
        if not bad:
            return policy, []
        update: dict[str, object] = {}
        if "extractor_model" in bad and policy.extractor == "llm":
            update["extractor"] = "offline"
        if "inferred_llm_model" in bad and policy.inferred_judge == "llm":
            update["inferred_judge"] = "offline"
        gone = {"nli"} if "contradiction.nli_model" in bad else set()
        gone |= {"llm"} if "contradiction.llm_model" in bad else set()
        if gone:
            kept = tuple(d for d in policy.contradiction.detectors if d not in gone) or ("heuristic",)
            update["contradiction"] = ContradictionSettings.model_validate(
                {**policy.contradiction.model_dump(), "detectors": kept})
        notes = [f"policy {policy.version!r}: {field} is not on the server's allow-list; that stage runs offline"
                 for field in sorted(bad)]
        return policy.model_copy(update=update), notes

    def guard_scorer(self, scorer: RerankScorer) -> RerankScorer:
        """`scorer`, refusing (RerankUnavailableError: the packet says the reranker was unavailable) a
        model not listed now, before it loads or calls anything."""

        def guarded(method: str, model: str, query: str, items: Sequence[PacketItem]) -> list[float]:
            kind: Kind = "llm" if method == "llm" else "rerank"
            if not self.allows(kind, model):
                raise RerankUnavailableError(f"rerank_model {model!r} is not on the server's allow-list "
                                             f"({VARIABLES[kind]})")
            return scorer(method, model, query, items)

        return guarded


def policy_models(policy: Policy) -> list[tuple[Kind, str, str]]:
    """(kind, name, field) of every model `policy` has the server call or load. A model field whose stage
    is off still counts when set (it would run the day the stage is turned on elsewhere); the NLI model
    counts only with the `nli` detector, since every policy carries a default name for it."""
    found: list[tuple[Kind, str, str]] = []
    for name, field in ((policy.reader_model, "reader_model"), (policy.router_model, "router_model"),
                        (policy.extractor_model, "extractor_model"),
                        (policy.inferred_llm_model, "inferred_llm_model"),
                        (policy.contradiction.llm_model, "contradiction.llm_model")):
        if name:
            found.append(("llm", name, field))
    if policy.rerank_model and policy.rerank != "sentences":
        found.append(("llm" if policy.rerank == "llm" else "rerank", policy.rerank_model, "rerank_model"))
    if "nli" in policy.contradiction.detectors:
        found.append(("nli", policy.contradiction.nli_model, "contradiction.nli_model"))
    return found


__all__ = ["VARIABLES", "AllowedModels", "looks_like_path", "policy_models"]
