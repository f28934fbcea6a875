# Each target sets up what it needs: .venv is made from requirements-cpu.txt when missing or stale.
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
# The venv's bin first: nbgrader calls the `alembic` command and must find the venv's.
export PATH := $(BIN):$(PATH)

STAGE ?= 4
IMPLEMENTATION ?= solution
# Extra arguments for jupyter lab, e.g. make lab LAB_ARGS="--no-browser --port=8890"
LAB_ARGS ?=

.PHONY: demo test test-fast lab release check grade bench-grading bench-load clean

$(VENV)/installed: requirements-cpu.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-cpu.txt
	touch $@

demo: $(VENV)/installed  ## instructor's main job: release, autograde the bundled samples, grade table
	python -m perfaudit.demo

test: $(VENV)/installed  ## the whole test suite (CI runs this)
	python -m pytest

test-fast: $(VENV)/installed  ## the fast tier: everything but the tests marked slow (browser, PostgreSQL, catalogs, ...)
	python -m pytest -m "not slow"

lab: $(VENV)/installed  ## students: JupyterLab on the released notebooks, nbgrader's Validate button working
	python -m perfaudit.lab -- $(LAB_ARGS)

release: $(VENV)/installed  ## regenerate notebooks/ from source/ after editing a source notebook
	nbgrader generate_assignment performance-audit --force --no-db

check: $(VENV)/installed  ## the seed's checker: make check STAGE=2 IMPLEMENTATION=starter
	python -m perfaudit.check --implementation $(IMPLEMENTATION) --stage $(STAGE)

# Student code runs in bubblewrap (README, "Sandbox"); without it grading refuses unless PERFAUDIT_UNSANDBOXED=1.
grade: $(VENV)/installed  ## instructor: grade submitted/ (or FROM=canvas.zip) on a local Dask cluster (GRADE_ARGS="--scheduler tcp://host:8786": on yours): grades.csv, feedback/, summary
	python -m perfaudit.grade $(if $(FROM),--from $(FROM)) $(GRADE_ARGS)

bench-grading: $(VENV)/installed  ## benchmark: 40 submissions on 1 and 2 local workers and a loopback Dask cluster vs plain serial nbgrader (STUDENTS=8: fewer)
	python benchmarks/batch_grading.py $(if $(STUDENTS),--students $(STUDENTS))

bench-load: $(VENV)/installed  ## benchmark: every sample graded 20 times by both graders on a busy machine (RUNS=3: fewer)
	python benchmarks/verdicts_under_load.py $(if $(RUNS),--runs $(RUNS))

clean:  ## remove what grading and the checker wrote (keeps .venv)
	rm -rf gradebook.db gradebook.db.versions.json grades.csv runs submitted/*/ autograded/*/ autograded/.batch-grading feedback/*/ autograded/grades-by-notebook.csv
