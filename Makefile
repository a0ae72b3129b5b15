# `make grade` grades exercises/; `make test` runs the repository's whole test suite.
# Both create .venv first when it is missing (or when requirements.txt changed).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: grade test stubs notebook release batch report benchmark catalogue .venv

.venv: $(STAMP)

# The instructor's copy installs nbgrader too; the student release has only requirements.txt.
REQUIREMENTS := $(firstword $(wildcard requirements-instructor.txt) requirements.txt)

$(STAMP): $(wildcard requirements*.txt)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r $(REQUIREMENTS)
	touch $@

# pytest exits 1 when some tests failed: that is a score, not an error of the grader.
grade: $(STAMP)
	$(BIN)/python -m pytest grader || [ $$? -eq 1 ]

test: $(STAMP)
	$(BIN)/python -m pytest tests -n auto --dist loadfile

stubs: $(STAMP)
	$(BIN)/python -m grader stubs

notebook: $(STAMP)
	$(BIN)/python -m grader notebook

# What students receive: build/release (no solutions, no hidden tests).
release: $(STAMP)
	$(BIN)/python -m grader release build/release

# The whole instructor flow on a bundled sample class of eight students (correct, partly
# correct, buggy, broken, hostile): build/sample-class -> build/batch (gradebook, feedback).
batch: $(STAMP)
	$(BIN)/python tests/sample_class.py build/sample-class
	$(BIN)/python -m grader batch build/sample-class --out build/batch --force
	@echo; cat build/batch/gradebook.csv; echo; echo "feedback for each student: build/batch/feedback/"

# The class report of the sample class (build/batch/report.html) and a laptop-sized screenshot
# of it (build/report.png), taken with Debian's chromium: what instructors see.
report: batch
	$(BIN)/python tests/browser.py build/batch/report.html build/report.png
	@echo "report: build/batch/report.html (open it in a browser); screenshot: build/report.png"

benchmark: $(STAMP)
	$(BIN)/python tests/benchmark_batch.py

catalogue: $(STAMP)
	$(BIN)/python tests/catalogue_report.py
