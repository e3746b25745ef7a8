# toppref: `make demo` runs the whole pipeline on the shipped demo collection and serves the site;
# `make test` runs every test. Both create .venv and install everything on a fresh machine.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install migrate demo demo-data serve test test-fast lint benchmark clean

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("toppref needs Python 3.11+, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	@touch $@

install: $(VENV)/.installed

migrate: install
	$(PY) manage.py migrate --noinput -v 0

demo-data: migrate
	$(PY) manage.py demo_load
	$(PY) manage.py demo_run
	$(PY) manage.py runs_score demo-crowd
	$(PY) manage.py scores_show demo-crowd

demo: demo-data
	$(PY) manage.py demo_superuser
	@echo "Serving toppref on http://$(HOST):$(PORT)/  (Ctrl-C to stop)"
	$(PY) manage.py runserver --noreload $(HOST):$(PORT)

serve: migrate
	$(PY) manage.py runserver $(HOST):$(PORT)

test: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest

test-fast: install
	$(PY) -m pytest -x -q -m "not slow and not celery_worker"

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

benchmark: install
	$(PY) benchmarks/measures.py
	$(PY) benchmarks/pipeline.py
	$(PY) benchmarks/import_runs.py
	$(PY) benchmarks/dashboard.py --topics 40 --workers 100

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-* media staticfiles .pytest_cache
