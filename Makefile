# Two commands matter: `make run` serves, `make test` tests. Both install what they need: `run`
# the runtime dependencies only, `test` (and lint, unit, benchmarks) the dev extras on top.
# The virtualenv and the Neo4j jars live in a cache outside the repository, so a fresh clone
# (and CI on the same machine) reuses them; the venv is rebuilt only when pyproject.toml changes.
PYTHON ?= python3
CACHE ?= $(HOME)/.cache/palimpsest
VENV ?= $(CACHE)/venv
BIN := $(VENV)/bin
DEPS_HASH := $(shell sha256sum pyproject.toml | cut -c1-16)
STAMP := $(VENV)/.deps-$(DEPS_HASH)
DEV_STAMP := $(VENV)/.dev-$(DEPS_HASH)
export PALIMPSEST_CACHE_DIR ?= $(CACHE)
export LITELLM_LOCAL_MODEL_COST_MAP ?= True
export HF_HUB_OFFLINE ?= 1

.PHONY: install install-dev neo4j neo4j-stop run test lint unit bench-temporal screenshots docs

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	@rm -f $(VENV)/.deps-*
	@touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev]"
	@rm -f $(VENV)/.dev-*
	@touch $(DEV_STAMP)

install: $(STAMP)
	@$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e . 2>/dev/null || \
		$(BIN)/python -m pip install -q --no-deps -e .
	@# GraphiQL's pinned files (npm pack, integrity-checked) into the cache; instant once there.
	@$(BIN)/python -m palimpsest.api.graphiql >/dev/null

install-dev: install $(DEV_STAMP)

neo4j: install
	$(BIN)/palimpsest neo4j start

neo4j-stop: install
	$(BIN)/palimpsest neo4j stop

# The CLI lives in the cache's virtualenv, not on PATH: say where, for MCP client configs and shells.
run: neo4j
	@echo "palimpsest CLI: $(BIN)/palimpsest (MCP client configs take this path; or: export PATH=$(BIN):\$$PATH)"
	$(BIN)/palimpsest serve --host 127.0.0.1 --port 8000 --demo

lint: install-dev
	$(BIN)/ruff check palimpsest schema graph extraction api tests benchmarks scripts
	$(BIN)/mypy

test: lint neo4j
	$(BIN)/pytest -q

unit: install-dev
	$(BIN)/pytest -q tests/unit

bench-temporal: install-dev neo4j
	$(BIN)/python -m benchmarks.temporal

# Rewrites docs/graphiql.png and docs/neo4j-browser.png with headless Chromium (the demo namespace).
screenshots: neo4j
	$(BIN)/python -m scripts.screenshots

# The GraphQL examples of docs/GRAPHQL.md and docs/RECALL.md, rewritten from a real run
# (tests/integration/test_readme_examples.py compares).
docs: neo4j
	$(BIN)/python -m scripts.readme_examples
