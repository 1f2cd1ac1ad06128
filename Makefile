# Two commands matter: `make run` serves, `make test` tests. Both install what they need.
# The virtualenv and the Neo4j jars live in a cache outside the repository, so a fresh clone
# (and CI on the same machine) reuses them; the venv is rebuilt only when pyproject.toml changes.
PYTHON ?= python3
CACHE ?= $(HOME)/.cache/palimpsest
VENV ?= $(CACHE)/venv
BIN := $(VENV)/bin
DEPS_HASH := $(shell sha256sum pyproject.toml | cut -c1-16)
STAMP := $(VENV)/.deps-$(DEPS_HASH)
export PALIMPSEST_CACHE_DIR ?= $(CACHE)
export LITELLM_LOCAL_MODEL_COST_MAP ?= True
export HF_HUB_OFFLINE ?= 1

.PHONY: install neo4j neo4j-stop run test lint unit bench-temporal

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	@rm -f $(VENV)/.deps-*
	@touch $(STAMP)

install: $(STAMP)
	@$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e . 2>/dev/null || \
		$(BIN)/python -m pip install -q --no-deps -e .

neo4j: install
	$(BIN)/palimpsest neo4j start

neo4j-stop: install
	$(BIN)/palimpsest neo4j stop

run: neo4j
	$(BIN)/palimpsest serve --host 127.0.0.1 --port 8000 --demo

lint: install
	$(BIN)/ruff check schema graph extraction api tests benchmarks
	$(BIN)/mypy

test: lint neo4j
	$(BIN)/pytest -q

unit: install
	$(BIN)/pytest -q tests/unit

bench-temporal: neo4j
	$(BIN)/python -m benchmarks.temporal
