# Every target installs what it needs into .venv first; nothing else must be installed.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MEASURE_STAMP := $(VENV)/.installed-measure
export DAGSTER_HOME := $(CURDIR)/.dagster_home
SELECT ?= *

.PHONY: setup setup-measure fetch materialize figures test lint bench dev sql clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,lint]'
	touch $(STAMP)

setup: $(STAMP)

## setup-measure: the torch extra for the measurement harness (torch==2.13.0: a CPU build from local disk here).
$(MEASURE_STAMP): $(STAMP)
	$(VENV)/bin/pip install -q -e '.[test,lint,measure]'
	touch $(MEASURE_STAMP)

setup-measure: $(MEASURE_STAMP)

$(DAGSTER_HOME):
	mkdir -p $(DAGSTER_HOME)
	printf 'concurrency:\n  runs:\n    max_concurrent_runs: 2\ntelemetry:\n  enabled: false\n' > $(DAGSTER_HOME)/dagster.yaml

## fetch: copy/download every upstream file into raw/, verified by sha256.
fetch: $(STAMP)
	$(PY) -m pipelines fetch

## materialize: every asset and partition (SELECT=... narrows it), fetching as needed.
materialize: $(STAMP) | $(DAGSTER_HOME)
	$(PY) -m pipelines materialize --select '$(SELECT)'

## figures: the main command: fetch, materialize everything, render figures/.
figures: materialize

## test: the whole suite, the measurement harness's CPU path included (so it installs the torch extra).
test: $(MEASURE_STAMP)
	$(PY) -m pytest -q

## lint: ruff (rules in pyproject.toml) over the code, tests and benchmarks; mypy over the package.
lint: $(STAMP)
	$(VENV)/bin/ruff check pipelines tests bench
	$(VENV)/bin/mypy

bench: $(STAMP)
	for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

## dev: the Dagster UI and daemons (dg dev) on http://127.0.0.1:3000, runs recorded in .dagster_home.
dev: $(STAMP) | $(DAGSTER_HOME)
	VIRTUAL_ENV=$(CURDIR)/$(VENV) $(VENV)/bin/dg dev

## sql: interactive DuckDB shell with a view per asset (in-memory: never locks a materialization).
## Each -cmd holds one statement (the DuckDB shell takes no dot command after a ';' in the same -cmd);
## with .bail off a view whose Parquet is not materialized yet prints an IO Error and the rest load.
sql: $(STAMP)
	$(VENV)/bin/duckdb -cmd "set variable assets = '$(or $(GPU_ENERGY_HOME),$(CURDIR))/assets'" -cmd ".bail off" -cmd ".read sql/views.sql"

clean:
	rm -rf assets/*.parquet assets/*/ figures/*.png figures/*.pdf
