# NotifyHub. `make run` starts a local service; `make test` runs the test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
export PORT

.PHONY: install install-dev run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: install
	$(BIN)/python manage.py migrate --noinput
	@echo ""
	@echo "  NotifyHub is starting at http://127.0.0.1:$(PORT)/  (API docs: http://127.0.0.1:$(PORT)/api/docs/)"
	@echo "  Get an API key:  $(BIN)/python manage.py createaccount you@example.com --plan free"
	@echo "  Then:            curl -H 'X-API-Key: <key>' http://127.0.0.1:$(PORT)/api/v1/ping"
	@echo ""
	$(BIN)/honcho start --procfile Procfile

test: install-dev
	$(BIN)/pytest $(PYTEST_ARGS)

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

bench: install-dev
	$(BIN)/python bench/run.py all

clean:
	rm -rf $(VENV) var
