"""palimpsest.settings: every environment variable read in one place, typed, checked, documented once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from palimpsest.api.auth import KeyStore
from palimpsest.extraction.embeddings import DEFAULT_MODEL
from palimpsest.extraction.hub import local_files_only
from palimpsest.graph.db.connection import Neo4jSettings
from palimpsest.graph.db.local_server import ServerConfig
from palimpsest.graph.recall.packet_log import Retention
from palimpsest.schema.errors import BadInputError
from palimpsest.settings import Settings

REPO = Path(__file__).resolve().parents[2]
SECTION = "## Configuration (environment variables)"


def test_unset_variables_give_the_layers_own_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = Settings.from_env({})
    assert settings.neo4j() == Neo4jSettings()
    assert settings.local_server() == ServerConfig(cache_dir=tmp_path / ".cache" / "palimpsest")
    assert settings.embedding_model == DEFAULT_MODEL
    assert (settings.max_body_bytes, settings.request_timeout_s, settings.subscription_poll_s) == (2 * 1024 * 1024,
                                                                                                   30.0, 1.0)
    assert (settings.body_chunk_timeout_s, settings.body_timeout_s, settings.log_packets) == (10.0, 30.0, False)
    assert settings.mention_cache_edges == 2_000_000
    assert settings.packet_retention() == Retention()  # the packet log's own defaults
    assert settings.local_allowed_hosts == ()
    assert settings.api_keys_file is settings.api_keys is settings.metrics_key_sha256 is None


def test_every_variable_is_read_typed() -> None:
    digest = "AB" * 32
    env = {"NEO4J_URI": "neo4j+s://db.example:7687", "NEO4J_USER": "u", "NEO4J_PASSWORD": "secret pw",
           "NEO4J_DATABASE": "mem", "NEO4J_HTTP_URL": "http://db.example:7474", "PALIMPSEST_NEO4J_RETRY_S": "0.5",
           "PALIMPSEST_NEO4J_CONNECT_TIMEOUT_S": "1", "PALIMPSEST_NEO4J_ACQUIRE_TIMEOUT_S": "3",
           "PALIMPSEST_CACHE_DIR": "/srv/cache", "PALIMPSEST_NEO4J_BOLT_PORT": "17687",
           "PALIMPSEST_NEO4J_HTTP_PORT": "17474", "PALIMPSEST_NEO4J_HEAP": "2g", "PALIMPSEST_NEO4J_PAGECACHE": "1.5g",
           "PALIMPSEST_API_KEYS_FILE": "/srv/keys.json", "PALIMPSEST_API_KEYS": "[]",
           "PALIMPSEST_METRICS_KEY_SHA256": digest, "PALIMPSEST_MAX_BODY_BYTES": "1000",
           "PALIMPSEST_BODY_CHUNK_TIMEOUT_S": "0.25", "PALIMPSEST_BODY_TIMEOUT_S": "2",
           "PALIMPSEST_REQUEST_TIMEOUT_S": "7.5", "PALIMPSEST_SUBSCRIPTION_POLL_S": "0.1",
           "PALIMPSEST_LOG_PACKETS": "true", "PALIMPSEST_MENTION_CACHE_EDGES": "0",
           "PALIMPSEST_EMBEDDING_MODEL": "/models/e5", "PALIMPSEST_PACKET_LOG_MAX": "50",
           "PALIMPSEST_PACKET_LOG_TTL_S": "3600", "PALIMPSEST_MAX_SUBSCRIPTIONS": "40",
           "PALIMPSEST_MAX_SUBSCRIPTIONS_PER_KEY": "4", "PALIMPSEST_LOCAL_ALLOWED_HOSTS":
               "Memory.LAN, devbox,[fe80::1]", "PALIMPSEST_ALLOWED_LLM_MODELS": "gpt-4o-mini,openai/gpt-4o",
           "PALIMPSEST_ALLOWED_RERANK_MODELS": "/models/ranker", "PALIMPSEST_ALLOWED_NLI_MODELS": "org/nli"}
    assert set(env) == set(Settings.variables())  # this test covers each of them
    s = Settings.from_env(env)
    assert s.neo4j() == Neo4jSettings(uri="neo4j+s://db.example:7687", user="u", password="secret pw",
                                      database="mem", retry_s=0.5, connect_s=1.0, acquire_s=3.0)
    assert s.local_server() == ServerConfig(cache_dir=Path("/srv/cache"), bolt_port=17687, http_port=17474,
                                            heap="2g", pagecache="1.5g", password="secret pw")
    assert s.neo4j_http_url == "http://db.example:7474"
    assert (s.api_keys_file, s.api_keys, s.metrics_key_sha256) == (Path("/srv/keys.json"), "[]", digest.lower())
    assert (s.max_body_bytes, s.body_chunk_timeout_s, s.body_timeout_s) == (1000, 0.25, 2.0)
    assert (s.request_timeout_s, s.subscription_poll_s, s.log_packets) == (7.5, 0.1, True)
    assert (s.mention_cache_edges, s.embedding_model) == (0, "/models/e5")
    assert s.packet_retention() == Retention(max_packets=50, ttl_s=3600.0)
    assert (s.max_subscriptions, s.max_subscriptions_per_key) == (40, 4)
    assert s.local_allowed_hosts == ("memory.lan", "devbox", "fe80::1")
    assert (s.allowed_llm_models, s.allowed_rerank_models, s.allowed_nli_models) == (
        ("gpt-4o-mini", "openai/gpt-4o"), ("/models/ranker",), ("org/nli",))
    assert "secret pw" not in repr(s) and digest.lower() not in repr(s)  # what could be a secret is not shown


def test_empty_is_unset_and_the_default_uri_follows_the_bolt_port() -> None:
    s = Settings.from_env({"NEO4J_URI": "", "NEO4J_USER": " ", "PALIMPSEST_MAX_BODY_BYTES": "",
                           "PALIMPSEST_NEO4J_BOLT_PORT": "7999"})
    assert s.neo4j_uri is None and s.neo4j_user == "neo4j" and s.max_body_bytes == 2 * 1024 * 1024
    assert s.neo4j().uri == "bolt://127.0.0.1:7999" == s.local_server().bolt_uri


@pytest.mark.parametrize(("name", "raw", "allowed"), [
    ("NEO4J_URI", "localhost:7687", "a Neo4j URI"),
    ("NEO4J_URI", "http://localhost:7474", "a Neo4j URI"),
    ("NEO4J_HTTP_URL", "localhost:7474", "an http:// or https:// URL"),
    ("PALIMPSEST_NEO4J_RETRY_S", "0", "a positive number of seconds"),
    ("PALIMPSEST_NEO4J_CONNECT_TIMEOUT_S", "soon", "a positive number of seconds"),
    ("PALIMPSEST_REQUEST_TIMEOUT_S", "nan", "a positive number of seconds"),
    ("PALIMPSEST_BODY_TIMEOUT_S", "-1", "a positive number of seconds"),
    ("PALIMPSEST_NEO4J_BOLT_PORT", "70000", "a whole number 1-65535"),
    ("PALIMPSEST_NEO4J_HTTP_PORT", "http", "a whole number 1-65535"),
    ("PALIMPSEST_NEO4J_HEAP", "1.5g", "a memory size"),
    ("PALIMPSEST_NEO4J_PAGECACHE", "lots", "a memory size"),
    ("PALIMPSEST_MAX_BODY_BYTES", "2MB", "a whole number ≥ 1"),
    ("PALIMPSEST_MAX_BODY_BYTES", "0", "a whole number ≥ 1"),
    ("PALIMPSEST_MENTION_CACHE_EDGES", "-1", "a whole number ≥ 0"),
    ("PALIMPSEST_MENTION_CACHE_EDGES", "1e6", "a whole number ≥ 0"),
    ("PALIMPSEST_LOG_PACKETS", "maybe", "1, true, yes or on"),
    ("PALIMPSEST_METRICS_KEY_SHA256", "abc", "64 hex characters"),
    ("PALIMPSEST_PACKET_LOG_MAX", "0", "a whole number ≥ 1"),
    ("PALIMPSEST_PACKET_LOG_TTL_S", "forever", "a positive number of seconds"),
    ("PALIMPSEST_MAX_SUBSCRIPTIONS_PER_KEY", "-1", "a whole number ≥ 0"),
    ("PALIMPSEST_LOCAL_ALLOWED_HOSTS", "memory.lan:8000", "host names separated by commas, without ports"),
    ("PALIMPSEST_LOCAL_ALLOWED_HOSTS", "http://memory.lan", "host names separated by commas, without ports"),
])
def test_a_bad_value_is_a_coded_error_naming_the_variable_and_what_it_takes(name: str, raw: str,
                                                                             allowed: str) -> None:
    with pytest.raises(BadInputError) as exc:
        Settings.from_env({name: raw})
    assert exc.value.field == name and exc.value.code == "BAD_INPUT"
    assert exc.value.message.startswith(f"{name} must be ") and allowed in exc.value.message


def test_the_environment_is_read_when_asked_not_when_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALIMPSEST_SUBSCRIPTION_POLL_S", "0.2")
    assert Settings.from_env().subscription_poll_s == 0.2
    monkeypatch.setenv("PALIMPSEST_SUBSCRIPTION_POLL_S", "0.3")
    assert Settings.from_env().subscription_poll_s == 0.3


def test_create_app_reads_its_settings_when_it_builds_the_app(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    from palimpsest.api.app import create_app  # imported first: a value set afterwards still counts

    monkeypatch.setenv("PALIMPSEST_MAX_BODY_BYTES", "4096")
    assert create_app(graphiql_assets=tmp_path).state.settings.max_body_bytes == 4096
    monkeypatch.setenv("PALIMPSEST_MAX_BODY_BYTES", "four kilobytes")
    with pytest.raises(BadInputError) as exc:
        create_app(graphiql_assets=tmp_path)
    assert exc.value.field == "PALIMPSEST_MAX_BODY_BYTES"
    given = Settings(request_timeout_s=3.0)
    assert create_app(graphiql_assets=tmp_path, settings=given).state.settings is given


def test_api_keys_come_from_the_file_first_and_a_bad_list_names_its_variable(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text('[{"name": "a", "sha256": "' + "0" * 64 + '", "namespaces": {"ops": ["read"]}}]')
    store = KeyStore.from_env(Settings(api_keys_file=keys, api_keys="not json"))
    assert [e.name for e in store.entries] == ["a"]
    assert KeyStore.from_env(Settings()).local_mode
    for bad in ("not json", '[{"name": "a"}]', '[{"name": "a", "sha256": "00", "namespaces": {}}]', "{}"):
        with pytest.raises(BadInputError) as exc:
            KeyStore.from_env(Settings(api_keys=bad))
        assert exc.value.field == "PALIMPSEST_API_KEYS", bad
    keys.write_text("[1]")
    with pytest.raises(BadInputError) as exc:
        KeyStore.from_env(Settings(api_keys_file=keys))
    assert exc.value.field == "PALIMPSEST_API_KEYS_FILE"


def _readme_variables() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert text.count(SECTION + "\n") == 1, "the README has one configuration section"
    section = text.split(SECTION + "\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert rows[:2] == ["| variable | default | meaning |", "|---|---|---|"], rows[:2]
    names = []
    for row in rows[2:]:
        first = row.split("|")[1].strip()
        found = re.fullmatch(r"`([A-Z0-9_]+)`", first)
        assert found, f"one variable per row, in backticks: {row}"
        names.append(found.group(1))
    return names


def test_the_readme_table_lists_exactly_the_variables_settings_reads() -> None:
    documented = _readme_variables()
    assert len(documented) == len(set(documented)), "a variable is documented twice"
    assert documented == list(Settings.variables()), (
        f"README only: {sorted(set(documented) - set(Settings.variables()))}; "
        f"settings only: {sorted(set(Settings.variables()) - set(documented))} (same order, too)")


# Layers that must not touch the environment: they are given their settings. A child process's
# environment built as `{**os.environ, …}` passes the parent's on, it reads no setting. Model loads say
# "local files only" through extraction.hub.local_files_only instead of setting HF_HUB_OFFLINE.
PACKAGE_DIRS = ("schema", "graph", "extraction", "api")
ENV_ACCESS = re.compile(r"\bos\.environ\b|\bgetenv\b|\bputenv\b|\benviron\.(get|setdefault|update|pop)\b")


def test_nothing_but_the_settings_module_reads_or_writes_the_environment() -> None:
    sources = [p for d in PACKAGE_DIRS for p in sorted((REPO / d).rglob("*.py"))]
    sources += [p for p in sorted((REPO / "palimpsest").glob("*.py")) if p.name != "settings.py"]
    assert len(sources) > 50
    found = []
    for path in sources:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if ENV_ACCESS.search(line) and "{**os.environ," not in line:
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert found == []


def test_a_local_model_directory_loads_without_the_hub(tmp_path: Path) -> None:
    assert local_files_only(str(tmp_path)) is True
    assert local_files_only("cross-encoder/nli-deberta-v3-small") is False
