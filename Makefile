# Each target sets up what it needs: .venv is made from requirements-cpu.txt when missing or stale.
# The Python that makes .venv: python3.11 (what requirements-cpu.txt pins for), else the newest 3.11 or later on
# PATH, else python3; `make PYTHON=/path/to/python3.11 ...` names another. Said when .venv is made.
ifeq ($(origin PYTHON),undefined)
PYTHON := $(or $(shell for v in 3.11 3.14 3.13 3.12; do command -v python$$v >/dev/null 2>&1 && echo python$$v && break; done),python3)
endif
VENV := .venv
# The venv's bin, or, for an account that may not run the venv's Python (one only root runs, as a pyenv under /root),
# the thin venv make hub made over it for every account (.hub/accounts-python: perfaudit/hub/userenv.py): the course's
# owner runs make feedback in Formgrader's terminal or with sudo -u.
THIN_BIN := $(CURDIR)/.hub/accounts-python/bin
BIN := $(if $(shell [ -L $(VENV)/bin/python ] && [ ! -x $(VENV)/bin/python ] && [ -x $(THIN_BIN)/python ] && echo thin),$(THIN_BIN),$(CURDIR)/$(VENV)/bin)
# The venv's bin first: nbgrader calls the `alembic` command and must find the venv's.
export PATH := $(BIN):$(PATH)

STAGE ?= 4
IMPLEMENTATION ?= solution
# Extra arguments for jupyter lab, e.g. make lab LAB_ARGS="--no-browser --port=8890"
LAB_ARGS ?=
# Extra arguments for pytest in make test and test-fast, e.g. PYTEST_ARGS="--durations=15" (what .ci/run adds)
PYTEST_ARGS ?=
# Test processes (pytest-xdist): much of the suite waits on kernels, servers and a browser, so two cores run three
# (measured on 2 cores: two processes left the CPU idle 27 % of the time, three 8 %).
TEST_PROCESSES ?= 3

.PHONY: help demo test test-fast test-catalog lint lab id release check grade feedback variants serve bench-grading bench-load clean \
    reset-course student-copy hub hub-proxy hub-users hub-venv
.DEFAULT_GOAL := help

help:  ## list the targets and what each does
	@grep -E '^[a-zA-Z_.-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([^:]+):.*## (.*)/  \1\t\2/' | expand -t 18

$(VENV)/installed: requirements-cpu.txt pyproject.toml
	@$(PYTHON) -c 'import sys; v = sys.version_info; sys.exit(None if v >= (3, 11) else f"$(PYTHON) is Python {v.major}.{v.minor}; the course needs 3.11 or later: install python3.11 (README.md) or name one, make PYTHON=/path/to/python3.11")'
	@echo "Making $(VENV) with $(PYTHON) ($$($(PYTHON) --version 2>&1))"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-cpu.txt
	touch $@

demo: $(VENV)/installed  ## instructor's main job: release, autograde the bundled samples, grade table
	python -m perfaudit.instructor.demo

test: $(VENV)/installed  ## the whole test suite (CI runs this)
	python -m pytest -n $(TEST_PROCESSES) $(PYTEST_ARGS)

test-fast: $(VENV)/installed  ## the fast tier, under 5 minutes: all but the tests marked slow (browser, PostgreSQL, catalogs, ...)
	python -m pytest -n $(TEST_PROCESSES) -m "not slow" $(PYTEST_ARGS)

# make test grades each catalog case with one of the two graders (chosen by the commit) and an agreement set with both.
test-catalog: $(VENV)/installed  ## every catalog case graded by both graders: run it whenever the grading path changes
	PERFAUDIT_CATALOG_BOTH=1 python -m pytest -n $(TEST_PROCESSES) tests/fixtures/test_catalog.py $(PYTEST_ARGS)

# The same linters as tests/test_lint.py (pyproject.toml configures both); mypy keeps its cache in .mypy_cache/.
lint: $(VENV)/installed  ## ruff over the repository, mypy over perfaudit/autograde, bookkeeping, grade and serve (make test runs both)
	python -m ruff check .
	python -m mypy

lab: $(VENV)/installed  ## students: JupyterLab on your working copy work/performance-audit/ (as root: ALLOW_ROOT=1)
	python -m perfaudit.lab $(if $(ALLOW_ROOT),--allow-root) -- $(LAB_ARGS)

student-copy: $(VENV)/installed  ## dist/performance-audit-student.zip: what students download (no solutions, no hidden tests)
	python -m perfaudit.instructor.student_copy

# --no-db: a gradebook that holds submissions refuses a changed assignment; make grade records it when missing
# or out of step with source/ (a hidden test or its points changed), then grades again those graded before.
id: $(VENV)/installed  ## students: state your id once, as your course knows it, and read your variant of notebook 5: make id ID=jdoe
	python -m perfaudit.check --id "$(ID)"

release: $(VENV)/installed  ## regenerate notebooks/ from source/ after editing a source notebook
	nbgrader generate_assignment performance-audit --force --no-db

check: $(VENV)/installed  ## instructors' checker with hidden tests: make check STAGE=2 IMPLEMENTATION=starter
	python -m perfaudit.check --implementation $(IMPLEMENTATION) --stage $(STAGE)

# Student code runs in bubblewrap (docs/grading-security.md, "How grading works"); without it grading refuses unless PERFAUDIT_UNSANDBOXED=1.
feedback: $(VENV)/installed  ## after manual grading in Formgrader: every feedback page and each LMS export again, from the gradebook
	python -m perfaudit.grade --feedback-only

grade: $(VENV)/installed  ## instructor: grade submitted/ (or FROM=canvas.zip) on a local Dask cluster (GRADE_ARGS="--scheduler tcp://host:8786": on yours): grades.csv, feedback/, summary
	python -m perfaudit.grade $(if $(FROM),--from $(FROM)) $(GRADE_ARGS)

variants: $(VENV)/installed  ## instructor: who audits which variant of notebook 5 (drawn from each student's id: perfaudit/variants.py)
	python -m perfaudit.grade --variants

serve: $(VENV)/installed  ## instructor: grade each submission in the exchange as it arrives and release its feedback (a fair limit per student; SERVE_ARGS="--status")
	python -m perfaudit.serve $(SERVE_ARGS)

bench-grading: $(VENV)/installed  ## benchmark: 40 submissions on 1 and 2 local workers and a loopback Dask cluster vs plain serial nbgrader (STUDENTS=8: fewer)
	python benchmarks/batch_grading.py $(if $(STUDENTS),--students $(STUDENTS))

bench-load: $(VENV)/installed  ## benchmark: every sample graded 20 times by both graders on a busy machine (RUNS=3 SAMPLES=correct,untouched SKIP_CANARY=1: less)
	python benchmarks/verdicts_under_load.py $(if $(RUNS),--runs $(RUNS)) $(if $(SAMPLES),--samples $(SAMPLES)) $(if $(SKIP_CANARY),--skip-canary)

# The course on JupyterHub (docs/hub.md), as root. The proxy comes from npm, pinned with its dependencies by
# perfaudit/hub/proxy/package-lock.json, into .hub/node: nothing is downloaded when the hub starts.
HUB_PROXY := .hub/node/node_modules/.bin/configurable-http-proxy
# A roster for make hub-users: one `name student` or `name instructor` a line.
ROSTER ?= roster.txt

# As root in a course another account owns (sudo make hub-users, sudo make hub: docs/hub.md), the venv is made by that
# account, under umask 022: nothing of it is root's in the course (a root-owned perfaudit.egg-info, closed to other
# accounts by make hub, stopped the grading service at every start), and every account's JupyterLab runs it.
COURSE_OWNER := $(shell stat -c %U $(CURDIR))
AS_COURSE_OWNER := $(if $(and $(filter 0,$(shell id -u)),$(filter-out root,$(COURSE_OWNER))),runuser -u $(COURSE_OWNER) --)

hub-venv:  ## the course's venv, made by the course's owner under umask 022 when root runs it (hub, hub-users)
	$(AS_COURSE_OWNER) sh -c 'umask 022 && exec $(MAKE) --no-print-directory $(VENV)/installed'

hub: hub-venv $(HUB_PROXY)  ## the course's JupyterHub on this machine, port 8000 (as root; docs/hub.md): PAM logins, Formgrader, the grading service
	python -m perfaudit.hub.exchange
	jupyterhub -f perfaudit/hub/jupyterhub_config.py

hub-proxy: $(HUB_PROXY)  ## install JupyterHub's proxy (configurable-http-proxy, pinned) into .hub/node with npm

$(HUB_PROXY): perfaudit/hub/proxy/package.json perfaudit/hub/proxy/package-lock.json
	mkdir -p .hub/node
	cp perfaudit/hub/proxy/package.json perfaudit/hub/proxy/package-lock.json .hub/node/
	npm ci --prefix .hub/node --no-audit --no-fund
	touch $@

hub-users: hub-venv  ## the class's Linux accounts from ROSTER=roster.txt (`name student|instructor` a line; as root); first passwords in .hub/passwords.txt
	python -m perfaudit.hub.accounts add $(ROSTER)

# clean never touches student work or grades: submitted/, gradebook.db (manual grades too), autograded/, feedback/.
clean:  ## remove what can be made again: evidence (runs/), the student copy (dist/), grade exports; keeps grades
	rm -rf runs dist exports grades.csv autograded/grades-by-notebook.csv

reset-course:  ## DELETES submitted work, gradebook.db, autograded/, feedback/, reports/, the intake record and the local exchange: a new term
	@echo "Removing submitted/ (earlier submissions and the LMS intake record too), gradebook.db, autograded/, feedback/, reports/, exchange/ (student work and grades)."
	rm -rf gradebook.db gradebook.db.versions.json gradebook.db.serve.json submitted/*/ submitted/.lms-intake.json autograded/*/ autograded/.batch-grading feedback/*/ reports exchange
	$(MAKE) --no-print-directory clean
