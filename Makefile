# toppref: `make demo` runs the whole pipeline on the shipped demo collection and serves the site;
# `make test` runs every test. Both create .venv and install everything on a fresh machine.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install lock migrate demo demo-data serve test test-fast lint typecheck benchmark load figures readme docs docs-serve clean

# Timing of the demo's stages: `$(START)` before a stage's commands, `$(call DONE,NAME)` after them, on one line.
CLOCK = $(PYTHON) -c 'import time; print(time.time())'
START = started=$$($(CLOCK))
DONE = awk -v s="$$started" -v e="$$($(CLOCK))" 'BEGIN { printf "    $(1) done in %.1f s\n", e - s }'
# Where `make demo` tells you to try the real TREC CAsT 2019 data (see ../shared/data/cast2019/README.md).
CAST ?= ../shared/data/cast2019
SERVE ?= 1
demo: DEMO_STARTED := $(shell $(CLOCK))
STAGE = printf '\n==> %s\n'

# Every dependency, the test tools included, pinned with its hashes in requirements.lock (made by uv from
# pyproject.toml: `make lock`), so two machines install the same code; pip refuses a file whose hash differs.
# requirements-runtime.lock is the same pins without the test tools, for the Docker image.
LOCK := requirements.lock
RUNTIME_LOCK := requirements-runtime.lock
UV_COMPILE = $(VENV)/bin/uv pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes --quiet

$(VENV)/.installed: pyproject.toml $(LOCK)
	@$(PYTHON) -c 'import sys; sys.exit("toppref needs Python 3.11+, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	@echo "    installing toppref into $(VENV) with Django, DRF, Celery, numpy, scipy, pandas, pyarrow, matplotlib"
	@echo "    and the test tools (pytest, ruff, mypy, playwright...): about 140 packages, 1 to 3 minutes the"
	@echo "    first time, each the version and file $(LOCK) names (hashes checked). One dot per package;"
	@echo "    pip's full output goes to $(VENV)/pip.log."
	@$(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/pip install --quiet --upgrade pip > $(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log; exit 1; }
	@# pip's exit status is kept in a file because a plain POSIX shell has no `pipefail`.
	@{ $(VENV)/bin/pip install --require-hashes -r $(LOCK) 2>&1; echo $$? > $(VENV)/pip.status; } | tee -a $(VENV)/pip.log \
	  | awk '/^(Collecting|Processing) / { if (n % 60 == 0) printf "%s    ", (n ? "\n" : ""); n++; printf "."; fflush() } \
	         /^Installing collected packages/ { printf "\n    installing %d packages...\n", n; fflush() }'
	@status=$$(cat $(VENV)/pip.status); rm -f $(VENV)/pip.status; \
	  if [ "$$status" != 0 ]; then echo "pip failed (exit $$status); the end of $(VENV)/pip.log:"; \
	  tail -n 30 $(VENV)/pip.log; exit 1; fi
	@# toppref itself, without dependencies: they all come from the lock, and pip check says if one is missing.
	@$(VENV)/bin/pip install --no-deps -e . >> $(VENV)/pip.log 2>&1 || { tail -n 30 $(VENV)/pip.log; exit 1; }
	@$(VENV)/bin/pip check >> $(VENV)/pip.log 2>&1 || { tail -n 5 $(VENV)/pip.log; \
	  echo "$(LOCK) does not satisfy pyproject.toml: run make lock"; exit 1; }
	@touch $@

# Refresh requirements.lock from pyproject.toml: new dependencies are added, the pins of the others kept;
# `make lock UPGRADE=1` moves every pin to the newest release allowed. Then `make install`.
lock:
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@test -x $(VENV)/bin/uv || $(VENV)/bin/pip install --quiet "uv>=0.5"
	$(UV_COMPILE) --extra dev $(if $(UPGRADE),--upgrade) -o $(LOCK)
	$(UV_COMPILE) -c $(LOCK) -o $(RUNTIME_LOCK)
	@echo "    $(LOCK) and $(RUNTIME_LOCK) made from pyproject.toml; make install installs the first"

install: $(VENV)/.installed

migrate: install
	$(PY) manage.py migrate --noinput -v 0

demo-data: migrate
	$(PY) manage.py demo_load
	$(PY) manage.py demo_run
	$(PY) manage.py runs_score demo-crowd
	$(PY) manage.py scores_show demo-crowd

# The demo's story, one stage at a time, each with its elapsed time. `make demo SERVE=0` stops before serving.
demo:
	@echo "toppref demo: install, migrate, load, crowd campaign, tournament, scoring, serve."
	@$(STAGE) "install: a virtual environment in $(VENV) with toppref and its dependencies"
	@$(START) && if $(MAKE) --no-print-directory -q install 2>/dev/null; then echo "    $(VENV) is up to date"; \
	  else $(MAKE) --no-print-directory -s install; fi && $(call DONE,install)
	@$(STAGE) "migrate: create or update the database ($${DATABASE_URL:-SQLite file db.sqlite3})"
	@$(START) && $(PY) manage.py migrate --noinput -v 0 && $(call DONE,migrate)
	@$(STAGE) "load: the demo collection in demo/ (questions, passages, graded qrels, runs; see demo/README.md)"
	@$(START) && $(PY) manage.py demo_load && $(call DONE,load)
	@# demo_run prints the crowd campaign and tournament stages itself, each with its time.
	@$(PY) manage.py demo_run
	@$(STAGE) "scoring: every demo run against the crowd's preference qrels and against the graded qrels"
	@$(START) && $(PY) manage.py runs_score demo-crowd >/dev/null && $(PY) manage.py scores_show demo-crowd && $(call DONE,scoring)
	@$(STAGE) "serve: the web site with the two demo campaigns"
	@# The demo logins: the admin (a researcher), and an assessor and a crowd worker for the open campaigns.
	@$(PY) manage.py demo_superuser --url http://$(HOST):$(PORT)
	@$(PY) manage.py demo_judges
	@echo
	@echo "What to try next:"
	@echo "  - judge a pair: log in at http://$(HOST):$(PORT)/accounts/login/ as the assessor or the crowd user, then /judge/"
	@echo "  - watch the campaigns and the leaderboard: http://$(HOST):$(PORT)/dashboard/ (as admin)"
	@echo "  - browse http://$(HOST):$(PORT)/admin/ : campaigns, rounds, HITs, judgments, run scores"
	@echo "  - score the 23 published TREC CAsT 2019 runs (173 questions) by compatibility and NDCG, no database:"
	@echo "      $(VENV)/bin/toppref evaluate $(CAST)/qrels.preference.txt $(CAST)/runs/*.run -m compat@0.8 ndcg@3"
	@[ -d "$(CAST)" ] || echo "    (no CAsT data at $(CAST): point CAST at its folder, e.g. make demo CAST=/path/to/cast2019)"
	@echo "  - docs/how-to/reproduce-the-paper.md for every number of the paper with its command; make docs for the rest"
	@awk -v s="$(DEMO_STARTED)" -v e="$$($(CLOCK))" 'BEGIN { printf "\nThe demo took %.1f s from start to serving.\n", e - s }'
	@if [ "$(SERVE)" = 0 ]; then echo "SERVE=0: not serving. Start the site with: make serve"; else \
	  echo "Serving toppref on http://$(HOST):$(PORT)/  (Ctrl-C to stop)"; \
	  $(PY) manage.py runserver --noreload $(HOST):$(PORT); fi

serve: migrate
	$(PY) manage.py runserver $(HOST):$(PORT)

# Type checks: strict on the judging engine, the measures and trecio, and the judging services with the
# django-stubs plugin (pyproject [tool.mypy]); `make test` runs them.
typecheck: install
	$(VENV)/bin/mypy judging/engine metrics/core trecio judging/services

# axe-core (npm) for the accessibility browser tests, pinned by tests/e2e/package-lock.json.
AXE := tests/e2e/node_modules/axe-core/axe.min.js
$(AXE): tests/e2e/package.json tests/e2e/package-lock.json
	cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# PYTEST_ARGS: more pytest options, e.g. .ci/run's PostgreSQL pass leaves out the backend-independent tests that
# its SQLite pass runs (tests/conftest.py); plain `make test` runs every test.
PYTEST_ARGS ?=
# TEST_WORKERS: pytest-xdist processes, one per core by default (`TEST_WORKERS=0` runs in this process). Each
# has its own test database, and the Celery worker tests their own Redis database (docs/decisions.md "The
# suite on every core").
TEST_WORKERS ?= auto
test: install $(AXE)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(MAKE) --no-print-directory typecheck
	$(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

test-fast: install
	$(PY) -m pytest -n $(TEST_WORKERS) -x -q -m "not slow and not celery_worker"

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

benchmark: install
	$(PY) benchmarks/measures.py
	$(PY) benchmarks/pipeline.py
	$(PY) benchmarks/import_runs.py
	$(PY) benchmarks/judging_pages.py
	$(PY) benchmarks/crowd.py
	$(PY) benchmarks/dashboard.py --topics 40 --workers 100
	$(PY) benchmarks/uploads.py

# Every command output and figure the README and the docs quote (blocks marked `<!-- run: NAME -->`, e.g.
# docs/how-to/reproduce-the-paper.md), regenerated from the commands (docs/readme_figures.py;
# tests/config/test_readme.py fails when one is stale).
readme: install
	$(PY) docs/readme_figures.py

# The documentation site: docs/ is the source (mkdocs.yml), built offline into site/ with the reference pages
# generated from the code (docs/hooks.py); --strict fails on a broken link or a missing page, as the test does.
DOCS_PORT ?= 8001
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
	@echo "    the site is in site/: open site/index.html"

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --strict --dev-addr $(HOST):$(DOCS_PORT)

# The full stack under load (not in `make benchmark`: minutes, not seconds): gunicorn on PostgreSQL, a Celery
# worker and beat on the script's own redis-server, N judges over HTTP. Needs PostgreSQL (DATABASE_URL's server,
# or postgres://postgres@127.0.0.1:5432) and the redis-server binary, e.g.
# make load LOAD_ARGS="--judges 200 --think 0" or LOAD_ARGS="--fault broker-restart".
LOAD_ARGS ?=
load: install
	$(PY) benchmarks/judging_load.py $(LOAD_ARGS)

# The figures under docs/ shown in the README, from the CAsT 2019 data (see "Reproducing the paper").
figures: install
	$(VENV)/bin/toppref plot scatter $(CAST)/qrels.graded.txt $(CAST)/runs/*.run -m ndcg@3 compat@0.8 \
	  -o docs/cast-scatter.png

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-* media staticfiles .pytest_cache site
