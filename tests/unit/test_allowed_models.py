"""The operator's model allow-lists: how they are read from the settings and what they refuse."""

from __future__ import annotations

import pytest

from palimpsest.api.allowed_models import AllowedModels, looks_like_path, policy_models
from palimpsest.schema.errors import BadInputError
from palimpsest.schema.models import DEFAULT_POLICY, Policy
from palimpsest.settings import Settings


def test_lists_are_comma_separated_trimmed_and_deduplicated() -> None:
    cfg = Settings.from_env({"PALIMPSEST_ALLOWED_LLM_MODELS": " gpt-4o-mini, openai/gpt-4o ,,gpt-4o-mini ",
                             "PALIMPSEST_ALLOWED_RERANK_MODELS": "cross-encoder/ms-marco-MiniLM-L-6-v2",
                             "PALIMPSEST_ALLOWED_NLI_MODELS": ""})
    assert cfg.allowed_llm_models == ("gpt-4o-mini", "openai/gpt-4o")
    assert cfg.allowed_rerank_models == ("cross-encoder/ms-marco-MiniLM-L-6-v2",) and cfg.allowed_nli_models == ()
    models = AllowedModels.from_settings(cfg)
    assert models.allows("llm", "openai/gpt-4o") and not models.allows("rerank", "openai/gpt-4o")


def test_defaults_allow_no_model() -> None:
    assert Settings().allowed_llm_models == Settings().allowed_rerank_models == Settings().allowed_nli_models == ()
    assert AllowedModels.from_settings(Settings()) == AllowedModels()
    assert policy_models(DEFAULT_POLICY) == []  # the shipped default policy needs none


@pytest.mark.parametrize("raw", ["gpt 4", "a,b\tc", "x" * 501])
def test_a_malformed_list_names_the_variable(raw: str) -> None:
    with pytest.raises(BadInputError) as exc:
        Settings.from_env({"PALIMPSEST_ALLOWED_LLM_MODELS": raw})
    assert exc.value.field == "PALIMPSEST_ALLOWED_LLM_MODELS"


def test_an_unlisted_model_is_refused_naming_the_field_and_the_allowed_names() -> None:
    models = AllowedModels(llm=frozenset({"gpt-4o-mini"}))
    models.check("llm", "gpt-4o-mini", "llm_model")
    with pytest.raises(BadInputError) as exc:
        models.check("llm", "openai/o1-pro", "llm_model")
    assert exc.value.field == "llm_model" and "'gpt-4o-mini'" in exc.value.message
    with pytest.raises(BadInputError) as path:
        models.check("rerank", "/srv/models/ranker", "rerank_model")
    assert "path on the server's disk" in path.value.message and "allowed: none" in path.value.message
    AllowedModels(rerank=frozenset({"/srv/models/ranker"})).check("rerank", "/srv/models/ranker", "rerank_model")


def test_paths_are_recognised(tmp_path: object) -> None:
    assert all(looks_like_path(n) for n in ("/a", "~/a", "./a", "..", "C:\\m", str(tmp_path)))
    assert not any(looks_like_path(n) for n in ("gpt-4o-mini", "openai/o1-pro", "cross-encoder/nli-MiniLM2-L6-H768"))


def test_the_worker_runs_unlisted_stages_offline() -> None:
    policy = Policy.model_validate({"version": "p", "extractor": "llm", "extractor_model": "m",
                                    "inferred_judge": "llm", "inferred_llm_model": "m",
                                    "contradiction": {"detectors": ["nli", "llm"], "llm_model": "m"}})
    kept, notes = AllowedModels().for_worker(policy)
    assert (kept.extractor, kept.inferred_judge, kept.contradiction.detectors) == ("offline", "offline", ("heuristic",))
    assert kept.version == "p" and len(notes) == 4
    assert AllowedModels(llm=frozenset({"m"}), nli=frozenset({policy.contradiction.nli_model})).for_worker(policy) \
        == (policy, [])


def test_admitting_adds_names_of_one_kind_and_skips_none() -> None:
    base = AllowedModels(llm=frozenset({"a"}))
    wider = base.admitting("llm", "b", None).admitting("rerank", None)
    assert wider.llm == {"a", "b"} and wider.rerank == frozenset() and wider.nli == frozenset()
    assert base.llm == {"a"}  # the lists are values: admitting returns new ones
    assert not wider.allows("rerank", "b")
