# Every target installs what it needs into .venv first; nothing else must be installed.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
MEASURE_STAMP := $(VENV)/.installed-measure
DOCS_STAMP := $(VENV)/.installed-docs
DEV_STAMP := $(VENV)/.installed-dev
export DAGSTER_HOME := $(CURDIR)/.dagster_home
SELECT ?= *
DEV_PORT ?= 3000
DOCS_PORT ?= 8000

.PHONY: setup setup-test setup-measure setup-docs setup-browser setup-postgres fetch materialize figures test test-all mutate lint docs docs-serve bench dev dev-read-only sql clean

## Installs follow uv.lock (committed; `uv lock` rewrites it after a change to pyproject.toml, and a test checks that
## the two agree): `uv sync --locked` installs exactly the locked versions, and fails if the lock no longer matches
## pyproject.toml instead of resolving anew. --inexact: each target adds its extras to what the venv holds (a plain
## sync would remove the other targets' extras, torch, and uv itself). uv (installed into the venv from the package
## index) installs in seconds what pip takes minutes for.
## pip fallback, where uv cannot reach the index but pip can (pip's own configuration: a mirror, a proxy): the same
## locked versions, exported from uv.lock by uv (which needs no network for that), installed by pip.
## Bytecode: each module is compiled on its first import (Python writes its .pyc), not every module at install: uv's
## --compile-bytecode compiled all of site-packages (pandas, numba, bokeh... that make figures never imports), 10 s of the
## 2-minute budget; pip compiles all it installs unless told --no-compile (torch: 26 s to install, 8.5 s without). Where
## PYTHONDONTWRITEBYTECODE is set (some CI images, this machine) no .pyc would ever be written, and every Dagster run
## and step process would compile dagster, polars, matplotlib... again (about 2 s of CPU each): make's commands unset
## it, so the venv's cache is written once (docs/benchmarks.md, make figures).
unexport PYTHONDONTWRITEBYTECODE
UV := $(VENV)/bin/uv
PIP := $(VENV)/bin/pip install -q --no-compile
## $(call locked,--extra X ...): the package (editable) and those extras at uv.lock's versions, with uv, else with pip.
EXPORT = $(UV) export -q --locked --no-hashes --no-emit-project --no-header --no-annotate $(1)
locked = $(UV) sync -q --locked --inexact $(1) \
	|| { $(call EXPORT,$(1)) -o $(VENV)/locked.txt && $(PIP) -r $(VENV)/locked.txt && $(PIP) --no-deps -e . ; }

## setup: the package and what it needs to run (make figures, dev, sql); the other targets add their extras.
## The venv is made without pip (ensurepip takes 5 s): uv comes from the system's pip where it has one (pip >= 22.3:
## --python), else from the venv's own pip (ensurepip); pip then joins the venv through uv (for torch and the pip
## fallback), else through ensurepip.
$(STAMP): pyproject.toml uv.lock
	$(PYTHON) -m venv --without-pip $(VENV)
	$(PYTHON) -m pip --python $(PY) install -q --no-compile uv 2>/dev/null || { $(PY) -m ensurepip --default-pip >/dev/null && $(PIP) uv; }
	test -x $(VENV)/bin/pip || $(UV) pip install -q --python $(PY) pip || $(PY) -m ensurepip --default-pip >/dev/null
	$(call locked,)
	touch $(STAMP)

setup: $(STAMP)

## setup-test: the test peers (zeus==0.16.0, pandas, scipy), the wheel tools and the linters.
$(TEST_STAMP): $(STAMP)
	$(call locked,--extra test --extra lint)
	touch $(TEST_STAMP)

setup-test: $(TEST_STAMP)

## setup-measure: the torch extra for the measurement harness, installed by pip within uv.lock's versions (the lock
## is a constraint file here), because pip reads pip's configuration and uv does not: where that configuration offers a
## CPU build of torch==2.13.0 (here: a wheel on local disk, 2.13.0+cpu) pip takes it, where uv would install
## PyPI's torch==2.13.0 with its CUDA libraries (several GB). The measure extra is torch alone.
$(MEASURE_STAMP): $(TEST_STAMP)
	$(call EXPORT,--extra measure) -o $(VENV)/measure-constraints.txt
	$(PIP) -c $(VENV)/measure-constraints.txt torch
	touch $(MEASURE_STAMP)

setup-measure: $(MEASURE_STAMP)

## setup-browser: Debian's Chromium, for the test that opens whatif's HTML report (tests/cli/test_whatif_html_browser.py,
## Playwright driving /usr/bin/chromium; no browser is downloaded). Needs root (apt-get); a no-op when chromium is there.
setup-browser:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

## setup-postgres: PostgreSQL's server binaries (initdb, pg_ctl, postgres), for the tests that start a throwaway server of
## their own (tests/support/postgres.py: a home whose Dagster instance stores in PostgreSQL). Needs root (apt-get); a no-op
## when initdb is on the PATH or under /usr/lib/postgresql. Those tests fail without it: never skipped.
setup-postgres:
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; }

## setup-docs: mkdocs, mkdocs-material, mkdocs-click, mkdocstrings, mkdocs-gen-files and mkdocs-literate-nav (the docs extra, pinned).
$(DOCS_STAMP): $(STAMP)
	$(call locked,--extra docs)
	touch $(DOCS_STAMP)

setup-docs: $(DOCS_STAMP)

## The Dagster instance's settings (pipelines/home/init.py DAGSTER_YAML, the same as `gpu-energy init` writes).
$(DAGSTER_HOME)/dagster.yaml: $(STAMP) pipelines/home/init.py
	$(PY) -c 'import sys; from pathlib import Path; from pipelines.home.init import write_dagster_yaml; write_dagster_yaml(Path(sys.argv[1]))' $(DAGSTER_HOME)

## fetch: copy/download every upstream file into raw/, verified by sha256.
fetch: $(STAMP)
	$(PY) -m pipelines fetch

## materialize: every asset and partition (SELECT=... narrows it), fetching as needed.
## --exit-with-parent: killing make stops the runs too.
materialize: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(PY) -m pipelines materialize --select '$(SELECT)' --exit-with-parent

## figures: the main command: fetch, materialize everything, render figures/.
figures: materialize

## test: the suite but its tests marked slow (pyproject.toml), the measurement harness's CPU path included (so it
## installs the torch extra); one worker per core, each test file in one worker. Within 2 minutes on 2 idle cores.
test: $(MEASURE_STAMP)
	$(PY) -m pytest -q -n auto --dist loadfile -m "not slow"

## test-all: the whole suite, the slow tests included (real process stacks, whole-trace peer replays); what CI runs.
test-all: $(MEASURE_STAMP)
	$(PY) -m pytest -q -n auto --dist loadfile

## mutate: mutation testing (mutmut, the dev extra) of the modules that carry the claims, each with the fast test files that
## exercise it (tests/mutation/run.py; the scores and the surviving mutants in docs/testing.md). Not part of test or
## test-all; at nice 19, one mutant at a time. MUTATE=anchoring totals ... runs those targets only.
MUTATE ?=
$(DEV_STAMP): $(TEST_STAMP)
	$(call locked,--extra test --extra lint --extra dev)
	touch $(DEV_STAMP)

mutate: $(DEV_STAMP)
	$(PY) -m tests.mutation.run $(MUTATE)

## lint: ruff (rules in pyproject.toml) over the code, tests and benchmarks; mypy over the package; the layer contracts (import-linter).
lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check pipelines tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

## docs: the site of docs/ (mkdocs.yml) into site/, strict: a warning (broken link or anchor, an API object
## mkdocstrings cannot find, a page missing from nav) fails it. CI runs it after lint.
## NO_MKDOCS_2_WARNING: mkdocs-material's banner about its end of life (a notice, not a build warning).
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

## docs-serve: the site served on 127.0.0.1:$(DOCS_PORT) (8000), rebuilt as docs/ changes. site/ also works opened from
## disk (site/index.html) and offline: mkdocs.yml's use_directory_urls, theme.font and offline plugin (the search too).
docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --strict -a 127.0.0.1:$(DOCS_PORT)

bench: $(TEST_STAMP)
	for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

## dev: the Dagster UI and daemons (dg dev) on 127.0.0.1:$(DEV_PORT) (3000), after marking runs left behind by a killed command as failed;
## Ctrl-C or SIGTERM ends every process of it within 5 s (python -m pipelines dev: dg dev's own shutdown waits a minute).
## Loopback only; Dagster 1.13's webserver checks no Origin or Host and runs GraphQL mutations sent as GET (README, docs/getting-started.md).
dev: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(PY) -m pipelines recover
	VIRTUAL_ENV=$(CURDIR)/$(VENV) $(PY) -m pipelines dev --host 127.0.0.1 --port $(DEV_PORT)

## dev-read-only: the Dagster UI alone with dagster-webserver --read-only (no run launched, no sensor or schedule switched,
## from the UI or from another site's request), on 127.0.0.1:$(DEV_PORT); no daemon.
dev-read-only: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(VENV)/bin/dagster-webserver --read-only -w workspace.yaml -h 127.0.0.1 -p $(DEV_PORT)

## sql: an interactive SQL shell with a view per asset (in-memory: never locks a materialization), read-only like
## `python -m pipelines sql` (pipelines/sql/views.py). Not the DuckDB CLI: its -safe mode and enable_external_access
## turn off reading the views' Parquet too, and its allowed_directories lets writes into them (docs/sql.md).
sql: $(STAMP)
	$(PY) -m pipelines sql --shell

clean:
	rm -rf assets/*.parquet assets/*/ figures/*.png figures/*.pdf site/
