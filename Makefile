# Two commands on a fresh machine: `make demo` and `make test`. Neither changes anything outside
# the checkout: system packages (Chromium, PostgreSQL, ...) are installed by .ci/run only.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
NPM_PREFIX := .npm-prefix
BACKLOG_VERSION := 1.52.0
BACKLOG := $(NPM_PREFIX)/node_modules/.bin/backlog
STAMP := $(VENV)/.installed

# Tests and the demo find the pinned Backlog.md CLI and the venv's `just` first.
export PATH := $(CURDIR)/$(BIN):$(CURDIR)/$(NPM_PREFIX)/node_modules/.bin:$(PATH)

# Some machines (this project's CI among them) set PYTHONDONTWRITEBYTECODE: then every Python
# process compiles the checkout from source, and every pytest worker rewrites every test module's
# asserts again (docs/development.md has the cost). __pycache__/ is ignored by git.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup test test-thorough lint typecheck pytest demo bench fixtures help-texts clean

setup: $(STAMP) $(BACKLOG)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q --upgrade pip
	# compat: the checkout goes on sys.path through a .pth line; the default editable finder costs
	# every interpreter start (each test's subprocess, each loop-verify call).
	$(BIN)/python -m pip install -q -e '.[dev]' --config-settings editable_mode=compat
	touch $(STAMP)

$(BACKLOG):
	npm install --prefix $(NPM_PREFIX) --no-audit --no-fund --loglevel=error backlog.md@$(BACKLOG_VERSION)

# ruff, and the architecture's import rules (import-linter contracts in pyproject.toml).
lint: setup
	$(BIN)/ruff check jobs audit tests bench scripts backlog-fixtures
	$(BIN)/lint-imports --no-logo --no-cache

typecheck: setup
	$(BIN)/mypy

# Every test, spread over pytest-xdist workers: twice as many as a 2-core machine has cores, since
# much of the suite waits (recipes, servers, bounded timeouts) rather than computes; see
# docs/development.md.
PYTEST_WORKERS ?= 4
pytest: setup
	$(BIN)/pytest -q -n $(PYTEST_WORKERS)

# The same suite with every property example drawn and every loop-verify/loop-pi-audit call a
# real process (slower; what `make test` trades for speed, checked in full).
test-thorough: setup
	LOOP_JOBS_THOROUGH=1 LOOP_JOBS_TEST_SUBPROCESS=1 $(BIN)/pytest -q -n $(PYTEST_WORKERS)

# ruff and mypy use one core, while the tests leave some core time idle (they wait on
# recipes, servers and timeouts): the checks run beside the tests, their output printed whole
# when they end, and `make test` fails if either part does.
test: setup
	@$(MAKE) --no-print-directory --output-sync=target -j2 lint typecheck & checks=$$!; \
	  $(BIN)/pytest -q -n $(PYTEST_WORKERS); tests=$$?; \
	  wait $$checks; checks=$$?; \
	  if [ $$checks -ne 0 ]; then echo "make test: ruff or mypy failed (see above)"; fi; \
	  [ $$tests -eq 0 ] && [ $$checks -eq 0 ]

demo: setup
	$(BIN)/python scripts/demo.py

bench: setup
	$(BIN)/python bench/scan.py
	$(BIN)/python bench/verify_overhead.py
	$(BIN)/python bench/audit.py
	$(BIN)/python bench/review.py
	$(BIN)/python bench/runner_overhead.py

fixtures: setup
	$(BIN)/python backlog-fixtures/generate.py

# argparse's help texts that `--help` prints without argparse (jobs/cached_help.py): write them
# again after changing a verb, an option or a help string (tests/test_cached_help.py says when).
help-texts: setup
	$(BIN)/python scripts/help_texts.py

clean:
	rm -rf $(VENV) $(NPM_PREFIX) demo-run
