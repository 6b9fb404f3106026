# Each target sets itself up on a fresh machine that has Python 3.11 and make.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home
# Python's bytecode caches, even where the environment turns them off: without them every process
# the suite starts compiles bench from source, and each pytest worker rewrites every test module
# and hypothesis again (16 s of CPU to collect the suite instead of 9 s)
unexport PYTHONDONTWRITEBYTECODE
SOURCES = bench_assets bench_assets_tests benchmarks scripts

.PHONY: setup demo test test-fast lint format typecheck check dev simulator clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

demo: setup  ## run the whole demo snapshot on the embedded simulator
	$(BIN)/bench demo

test: setup  ## run the test suite
	$(BIN)/pytest -q -n 4

test-fast: setup  ## unit and simulator tests only (no Dagster materialization): a minute or two
	$(BIN)/pytest -q -n 4 -m "unit or simulator"

lint: setup  ## ruff (lint and format check) and the import contracts
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)
	$(BIN)/lint-imports

format: setup  ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix $(SOURCES)
	$(BIN)/ruff format $(SOURCES)

typecheck: setup  ## mypy (strict on bench_assets/metrics)
	$(BIN)/mypy

check: lint typecheck test  ## everything CI runs

dev: setup  ## Dagster UI + daemon on 127.0.0.1:3000 with a persistent home; Ctrl-C or SIGTERM stops it
	mkdir -p $(DAGSTER_HOME) && cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/bench snapshot add web_search-2026-q3
	exec $(BIN)/python -m bench_assets.cli.dev --host 127.0.0.1 --port 3000 --workspace workspace.yaml

simulator: setup  ## the vendor simulator alone
	$(BIN)/bench simulator --port 8765

clean:
	rm -rf data/warehouse data/publish data/private .dagster_home
