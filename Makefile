# The course's two commands: `make book` and `make test`. Both create .venv and
# install the pinned environment on first use (and again when the pins change).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Where the loaders look first for data (see README); CI and the tests use ../shared/data.
export QKV_DATA_DIR ?= $(abspath ../shared/data)
EDITION ?= student
JOBS ?= 2

.PHONY: book test test-fast test-notebooks test-grading test-book lint format release notebooks grade gradescope export bench clean constraints help public lab

help:
	@echo "make book [EDITION=student|solutions]   build the book under _build/<edition>/html"
	@echo "make test                               lint, then the whole test suite (every tier)"
	@echo "make test-fast                          the edit loop: lint and the unit tier (qkv, structure, layout, tooling)"
	@echo "make test-notebooks | test-grading | test-book   one tier of the suite (CONTRIBUTING.md says when)"
	@echo "make release                            the nbgrader course and its student release"
	@echo "make notebooks                          the sections as .ipynb for Colab (_build/notebooks)"
	@echo "make lab                                JupyterLab as students get it (student/jupyter: no instructor tools)"
	@echo "make grade SUBMISSIONS=DIR|ZIP          autograde a class (GRADE_ARGS='--cluster tcp://HOST:8786 --db postgresql://...')"
	@echo "make gradescope [SECTION=slug]          a Gradescope autograder zip per section (_build/gradescope/<slug>.zip)"
	@echo "make export [CANVAS=export.csv]         the gradebook's scores: nbgrader's CSV, and Canvas's import file (EXPORT_ARGS='--map ids.csv'); written answers by question and per student (EXPORT_ARGS=--blind)"
	@echo "make bench                              run the benchmarks in benchmarks/"
	@echo "make public                             the public repository, without answers or hidden tests (_build/public)"

$(STAMP): pyproject.toml constraints.txt
	@bash .ci/system-deps.sh
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c constraints.txt pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	@touch $@

book: $(STAMP)
	$(BIN)/python -m $(if $(filter solutions,$(EDITION)),autograder.editions,publish.build_book --edition $(EDITION))

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PYTHONPATH=. $(BIN)/lint-imports
	$(BIN)/python -m autograder.hidden_lint

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The suite's tiers are its folders (tests/unit, notebooks, grading, book: tests/conftest.py); loadgroup keeps each section's in-process grading
# cases in one worker, so that its notebook runs once (tests/support/inprocess.py).
PYTEST := $(BIN)/python -m pytest -n $(JOBS) --dist loadgroup

test: lint
	$(PYTEST)

test-fast: lint
	$(PYTEST) -m unit

test-notebooks: $(STAMP)
	$(PYTEST) -m notebooks

test-grading: $(STAMP)
	$(PYTEST) -m grading

test-book: $(STAMP)
	$(PYTEST) -m book

bench: $(STAMP)
	for b in benchmarks/[!_]*.py; do $(BIN)/python $$b || exit 1; done  # _common.py is their shared preamble

constraints: $(STAMP)
	$(BIN)/python -m pip freeze --exclude-editable | sed -E 's/^torch==(.*)\+cpu$$/torch==\1/' > constraints.new
	@echo "wrote constraints.new: review, move it over constraints.txt (keep its header), then run: $(BIN)/python -m publish.envfile"

clean:  # keeps the nbgrader course when it has a gradebook: that holds the class's grades
	@if [ -f _build/course/gradebook.db ]; then \
		find _build -mindepth 1 -maxdepth 1 ! -name course -exec rm -rf {} +; \
		echo "removed _build/ except _build/course/, whose gradebook.db holds your class's grades"; \
		echo "(to remove those too: rm -rf _build/course)"; \
	else rm -rf _build; fi

release: $(STAMP)
	$(BIN)/python -m autograder.release

notebooks: $(STAMP)
	$(BIN)/python -m publish.colab

# JupyterLab with the students' configuration (student/README.md); the instructor's is `.venv/bin/jupyter lab`.
lab: $(STAMP)
	JUPYTER_CONFIG_PATH="$(abspath student/jupyter)$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" $(BIN)/jupyter lab $(LAB_ARGS)

public: $(STAMP)
	$(BIN)/python -m publish.public

grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=DIR|ZIP [GRADE_ARGS='--jobs 4 --deadline 300']  (nbgrader layout STUDENT/ASSIGNMENT/NOTEBOOK.ipynb)" >&2; exit 2; }
	$(BIN)/python -m autograder.grade "$(SUBMISSIONS)" $(GRADE_ARGS)

# The gradebook's scores for the LMS (autograder/lms.py): nbgrader's own CSV, and with CANVAS= the Canvas gradebook
# export filled in, both in _build/course/reports/; and each section's written answers, by question and per student,
# in _build/course/reports/written/ (autograder/written/).
export: $(STAMP)
	$(BIN)/python -m autograder.lms $(if $(CANVAS),--canvas "$(CANVAS)") $(EXPORT_ARGS)

# One Gradescope autograder per section (autograder/gradescope): GRADESCOPE_ARGS='--output visible --bubblewrap ...'.
gradescope: $(STAMP)
	$(BIN)/python -m autograder.gradescope.build $(if $(SECTION),--section $(SECTION)) $(GRADESCOPE_ARGS)
