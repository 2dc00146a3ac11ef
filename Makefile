# Two commands work on a fresh machine with only Python 3 and make:
#   make demo   create .venv, install evaldelta, run the offline example agent's two
#               prompt versions (no key, no network) and compare them
#   make test   install the test tools into the same .venv, lint, type-check, test (the
#               store's tests on SQLite and on a throwaway PostgreSQL server)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck browser-deps postgres-deps clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	@# Byte-compile now: where PYTHONDONTWRITEBYTECODE is set, every run would recompile.
	$(BIN)/python -m compileall -q src > /dev/null
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

DEMO_STORE := .evaldelta/demo.db

# The seeds' before/after workflow, end to end: run v1, run v2, compare the two runs.
demo: $(VENV)/.installed
	rm -f $(DEMO_STORE) $(DEMO_STORE)-wal $(DEMO_STORE)-shm
	$(BIN)/evaldelta eval examples/offline-agent/suite.yaml --target v1 --name before --store $(DEMO_STORE)
	$(BIN)/evaldelta eval examples/offline-agent/suite.yaml --target v2 --name after --store $(DEMO_STORE)
	$(BIN)/evaldelta compare before/v1 after/v2 --store $(DEMO_STORE); test $$? -le 1

ESLINT := tools/eslint/node_modules/.bin/eslint

# ESLint for the scripts the package ships (the report's, the dashboard's), from the
# npm registry at the versions tools/eslint/package-lock.json pins; once.
$(ESLINT): tools/eslint/package.json tools/eslint/package-lock.json
	@command -v npm > /dev/null || { echo "make lint needs Node.js and npm (Debian: apt-get install nodejs npm)"; exit 2; }
	cd tools/eslint && npm ci --no-audit --no-fund --loglevel=error
	touch $@

lint: $(VENV)/.installed-test $(ESLINT)
	$(BIN)/ruff check src tests examples bench
	$(BIN)/ruff format --check src tests examples bench
	$(ESLINT) --config tools/eslint/eslint.config.js 'src/evaldelta/*/assets/*.js'

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

# Debian's chromium for the browser tests (apt-get, as root or through sudo); once.
browser-deps: $(VENV)/.installed-test
	PYTHON=$(BIN)/python .ci/browser-deps.sh

# Debian's postgresql for the store's PostgreSQL leg (apt-get, as root or through sudo);
# once. The tests start their own throwaway server with it (tests/postgres.py).
postgres-deps:
	.ci/postgres-deps.sh

test: lint typecheck browser-deps postgres-deps
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache tools/eslint/node_modules
