# NotifyHub. `make run` starts a local service; `make test` runs the test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
export PORT
# Where web, worker and beat keep their metrics for /metrics to sum, emptied when `make run` starts them
# together (docs/observability.md). A process that bin/keep-running restarts keeps what the others counted.
METRICS_DIR := $(CURDIR)/var/metrics
# The browser tests (tests/browser/) drive Debian's Chromium through Playwright.
CHROMIUM := /usr/bin/chromium
# The pooled fault tests (tests/faults/test_pooler.py) and the scale bench start Debian's PgBouncer in front of their
# PostgreSQL.
PGBOUNCER := /usr/sbin/pgbouncer

.PHONY: install install-dev lock run test browser pgbouncer screenshots lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Installs come from the lock files, every package at an exact version with its hashes; a changed lock file
# installs again. requirements.txt and requirements-dev.txt are the lists people edit; `make lock` compiles them.
$(VENV)/.installed: requirements.lock | $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	touch $@

# The Python client (clients/python/) is not installed here: its package is named notifyhub too, and installed it
# would shadow the project's for every tool that puts site-packages before the clone (mypy's Django plugin, for one).
# Its tests import it from its folder (tests/client/sdk.py); its dependencies are in the lock.
$(VENV)/.installed-dev: requirements.lock requirements-dev.lock | $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.lock
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# requirements.lock from requirements.txt, then requirements-dev.lock from requirements-dev.txt holding the runtime
# packages at the same versions; for Python 3.11 on Linux x86_64 whatever machine runs it. Pins already in a lock
# stay unless a range now excludes them: LOCK_ARGS=--upgrade takes the newest release every range allows,
# LOCK_ARGS="--upgrade-package NAME" one package's. tests/test_dependencies.py fails while a lock is behind its list.
LOCK = $(BIN)/uv pip compile --quiet --generate-hashes --python-version 3.11 --python-platform x86_64-unknown-linux-gnu \
	--custom-compile-command "make lock" $(LOCK_ARGS)

lock: $(VENV)/.installed-dev
	$(LOCK) requirements.txt --output-file requirements.lock
	$(LOCK) requirements-dev.txt --constraint requirements.lock --output-file requirements-dev.lock

# One address for every process `make run` starts: honcho gives each its own PORT (web PORT, the worker PORT+100,
# beat PORT+200), from which the settings would make PUBLIC_URL, so the worker's emails linked to another port.
# A PUBLIC_URL already set is kept.
run: export PUBLIC_URL ?= http://127.0.0.1:$(PORT)
run: install
	@$(BIN)/python bin/port-is-free $(PORT)
	$(BIN)/python manage.py migrate --noinput
	@echo ""
	@echo "  NotifyHub is starting at http://127.0.0.1:$(PORT)/  (API docs: http://127.0.0.1:$(PORT)/api/docs/)"
	@echo "  Sign up:         http://127.0.0.1:$(PORT)/signup/  (the confirmation email lands in var/outbox/)"
	@echo "  Or from here:    $(BIN)/python manage.py createaccount you@example.com --plan free"
	@echo "  Then:            curl -H 'X-API-Key: <key>' http://127.0.0.1:$(PORT)/api/v1/ping"
	@echo "  See webhooks:    $(BIN)/python manage.py listen --account you@example.com  (README.md, Quick start)"
	@echo "  Health, metrics: http://127.0.0.1:$(PORT)/api/v1/health  http://127.0.0.1:$(PORT)/metrics"
	@echo ""
	rm -rf $(METRICS_DIR) && mkdir -p $(METRICS_DIR)
	PROMETHEUS_MULTIPROC_DIR=$(METRICS_DIR) $(BIN)/honcho start --procfile Procfile

test: install-dev browser pgbouncer
	$(BIN)/pytest $(PYTEST_ARGS)

# Chromium for the browser tests: installed when missing if this runs as root with apt-get, else a stop
# that names the command. (Playwright's own browser downloads are not used.)
browser:
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing Debian's Chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  fi; \
	  test -x $(CHROMIUM) || { echo "The browser tests need Chromium at $(CHROMIUM): run  apt-get install -y chromium  (as root)" >&2; exit 1; }; \
	fi

# PgBouncer for the pooled fault tests, as Chromium above: installed when missing if this runs as root with apt-get,
# else a stop that names the command.
pgbouncer:
	@if [ ! -x $(PGBOUNCER) ] && ! command -v pgbouncer >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing Debian's PgBouncer for the pooled fault tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer; \
	  fi; \
	  test -x $(PGBOUNCER) || command -v pgbouncer >/dev/null || { echo "The pooled fault tests need PgBouncer at $(PGBOUNCER): run  apt-get install -y pgbouncer  (as root)" >&2; exit 1; }; \
	fi

# Every page at 1280 and 390 px wide into var/screenshots/, as a paid demo holder (tests/browser/screenshots.py).
# Its test database and state live in var/screenshots-run/, apart from `make test`'s.
screenshots: install-dev browser
	NOTIFYHUB_VAR_DIR=$(CURDIR)/var/screenshots-run $(BIN)/pytest -q tests/browser/screenshots.py
	@echo "Screenshots are in var/screenshots/"

# mypy's django-stubs loads the settings: as an embedded run (no REDIS_URL) they need no secrets, and type the same.
# The Python client is checked apart, strictly, from its own folder: there `notifyhub` is the client, not the shell.
lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	env -u REDIS_URL $(BIN)/mypy .
	cd clients/python && $(CURDIR)/$(BIN)/mypy

# Every bench in turn (bench/README.md); the scale bench puts PgBouncer in front of the bench's database.
bench: install-dev pgbouncer
	$(BIN)/python bench/run.py all

clean:
	rm -rf $(VENV) var
