# `make grade` grades exercises/; `make test` runs the repository's whole test suite.
# Both create .venv first when it is missing (or when requirements.txt changed).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: grade test stubs .venv

.venv: $(STAMP)

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

# pytest exits 1 when some tests failed: that is a score, not an error of the grader.
grade: $(STAMP)
	$(BIN)/python -m pytest grader || [ $$? -eq 1 ]

test: $(STAMP)
	$(BIN)/python -m pytest tests

stubs: $(STAMP)
	$(BIN)/python -m grader stubs
