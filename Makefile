# The two commands of the README: `make demo` and `make test`. Everything else is for developers.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export DO_NOT_TRACK := 1

.PHONY: demo test test-unit docs lint fmt bench bench-e2e bench-lineage bench-plugin bench-nats bench-om-faults bench-coverage bench-explorer bench-accuracy clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# compat: a .pth path entry, so dbt's plugin discovery (pkgutil) sees dbt_oml in this venv
	$(BIN)/python -m pip install --quiet --config-settings editable_mode=compat -e '.[dev]'
	touch $(STAMP)

# OM's request schemas for the OM stand-in, from the pinned openmetadata-ingestion releases
# (PyPI, no dependencies; tests/support/fakes/om_models.py)
OM_MODELS := $(VENV)/om-models/.installed
$(OM_MODELS): $(STAMP) tests/support/fakes/om_models.py
	$(BIN)/python -m tests.support.fakes.om_models
	touch $(OM_MODELS)

# Build the bundled project with events (embedded default: DuckDB files, events to a file).
demo: $(STAMP)
	cd integration_project && ../$(BIN)/dbt-oml build --profiles-dir .
	cd integration_project && ../$(BIN)/dbt-oml lineage --html target/lineage.html --profiles-dir .
	@echo "(expected: one WARNING, no column lineage for core_column_profile: the bundled project"
	@echo " has one model whose SQL the parser cannot read, to show that it costs that model only)"
	@echo "events: integration_project/target/openlineage/events.jsonl"
	@echo "column lineage explorer: integration_project/target/lineage.html"
	@echo "  open it: xdg-open integration_project/target/lineage.html   (macOS: open ...)"

# The whole suite, lint included, as CI runs it. pytest runs on one xdist worker per core, a
# test file per worker (loadfile: a module's dbt builds are paid once), slowest files first
# (SLOWEST_FIRST in tests/conftest.py; --no-loadscope-reorder keeps that order); the modules on the
# shared PostgreSQL/MariaDB schemas (marker `servers`) take a lock (tests/conftest.py), so they run
# in turn while the other workers go on.
PYTEST_WORKERS ?= auto
test: $(STAMP) $(OM_MODELS)
	$(BIN)/ruff check dbt_oml tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The fast loop: no dbt, no servers, no nats-server.
test-unit: $(STAMP) $(OM_MODELS)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m "not integration and not nats"

# The manual (docs/) as a site in site/; --strict fails on a broken link, anchor or nav entry.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

lint: $(STAMP)
	$(BIN)/ruff check dbt_oml tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

fmt: $(STAMP)
	$(BIN)/ruff format dbt_oml tests benchmarks
	$(BIN)/ruff check --fix dbt_oml tests benchmarks

# dbt-ol (openlineage-dbt) is installed only in the benchmark's own virtualenv.
BENCH_VENV := benchmarks/.venv
bench: $(STAMP)
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --force-reinstall --no-deps .
	$(BENCH_VENV)/bin/python -m pip install --quiet '.[nats]' -r benchmarks/requirements.txt
	$(BENCH_VENV)/bin/python benchmarks/run.py
	$(BENCH_VENV)/bin/python benchmarks/e2e_bench.py

# What users wait for, alone: emit on 2,000 models (cold, warm, one changed) vs dbt-ol send-events,
# builds on 500 models vs dbt-ol build and dbt build + docs generate (part of `make bench`).
bench-e2e: $(STAMP)
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --force-reinstall --no-deps .
	$(BENCH_VENV)/bin/python -m pip install --quiet '.[nats]' -r benchmarks/requirements.txt
	$(BENCH_VENV)/bin/python benchmarks/e2e_bench.py

# Column-lineage engine: pure sqlglot (.venv) and sqlglot[c] (benchmarks/.venv-c) side by side,
# naive lineage() and openlineage-sql (dbt-ol's engine, from benchmarks/.venv).
BENCH_C := benchmarks/.venv-c
bench-lineage: $(STAMP)
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet '.[nats]' -r benchmarks/requirements.txt
	test -x $(BENCH_C)/bin/python || $(PYTHON) -m venv $(BENCH_C)
	$(BENCH_C)/bin/python -m pip install --quiet --force-reinstall --no-deps .
	$(BENCH_C)/bin/python -m pip install --quiet '.[fast]'
	$(BIN)/python benchmarks/lineage_bench.py

# The dbt plugin's cost to a plain `dbt build` (not installed / off / on), in benchmarks/.venv.
bench-plugin: $(STAMP)
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --force-reinstall --no-deps .
	$(BENCH_VENV)/bin/python -m pip install --quiet '.[nats]' -r benchmarks/requirements.txt
	cd benchmarks && .venv/bin/python plugin_bench.py

# JetStream publish and relay throughput (a nats-server binary must be installed).
bench-nats: $(STAMP)
	$(BIN)/python benchmarks/nats_bench.py

# OpenMetadata refused or hanging: whole `dbt-oml build` / plugin `dbt build` vs the file transport.
bench-om-faults: $(STAMP)
	$(BIN)/python benchmarks/om_faults_bench.py

# Share of models with column lineage: the bundled project (built first if it has no artifacts)
# and the generated corpus; BENCH_COVERAGE_ARGS=--engine-rev REV adds an older engine's numbers.
bench-coverage: $(STAMP)
	$(BIN)/python benchmarks/coverage.py $(BENCH_COVERAGE_ARGS)

# The lineage explorer's page load at 2,000 models in headless chromium (benchmarks/README section 6)
bench-explorer: $(STAMP)
	$(BIN)/python benchmarks/explorer_bench.py

# Column-lineage accuracy (issue 30): dbt-oml vs DataHub's parser, sqlglot.lineage, dbt-colibri and
# openlineage-sql on the cases with known answers; each peer in its own benchmarks/.venv-peers-*,
# made by the script from the pinned benchmarks/requirements-*.txt. BENCH_ACCURACY_ARGS=--cases etc.
bench-accuracy: $(STAMP)
	$(BIN)/python benchmarks/accuracy.py $(BENCH_ACCURACY_ARGS)

clean:
	rm -rf $(VENV) integration_project/target integration_project/logs integration_project/*.duckdb
