# What students run (the release ships this file as its Makefile; the repository's Makefile
# includes it). `make grade` creates .venv when it is missing (or when requirements changed),
# then grades exercises/: the .py file or the notebook, whichever holds the work.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# On Linux, torch's CPU build comes from the PyTorch project's CPU wheel index (PyPI's Linux
# wheel is the CUDA build, several GB). Change it for a CUDA build or a mirror, e.g.
# `make grade TORCH_INDEX=https://download.pytorch.org/whl/cu126`, or turn it off with
# `make grade TORCH_INDEX=`. When the index does not answer within 3 s (offline, a local
# mirror of wheels), pip installs from its usual indexes, as before (grader/torch_index.py).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: grade example .venv

.venv: $(STAMP)

# The instructor's copy installs nbgrader too; the student release has only requirements.txt.
REQUIREMENTS ?= $(firstword $(wildcard requirements-instructor.txt) requirements.txt)

# pip byte-compiles what it installs one file after another (torch's some 10,000 files: half of
# the install's time); `compileall -j0` does that work on every core (os.cpu_count() workers:
# docs.python.org/3/library/compileall.html; pip's --no-compile: pip.pypa.io, pip install).
# The files must be compiled here, at set-up: the grader's sandbox user cannot write __pycache__
# in this folder, and would compile torch's modules again at every start. compileall exits 1
# for the few files that are not Python 3.11 (torch ships one written for 3.12), which pip
# skips silently too: its status is not the set-up's, and -qq keeps its list of them quiet.
SITE_PACKAGES = $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

$(STAMP): $(wildcard requirements*.txt)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile \
		$$($(BIN)/python grader/torch_index.py "$(TORCH_INDEX)") -r $(REQUIREMENTS)
	$(BIN)/python -m compileall -qq -j0 $(SITE_PACKAGES) || true
	touch $@

# pytest exits 1 when some tests failed: that is a score, not an error of the grader.
grade: $(STAMP)
	$(BIN)/python -m pytest grader || [ $$? -eq 1 ]

# The lesson's focused example, where the exercise has one (its declaration's `example`; the
# release writes this line for the exercise it hands out, empty when it has none).
EXAMPLE := exercises/example.py
example: $(STAMP)
ifeq ($(EXAMPLE),)
	@echo "This exercise has no focused example: the notebook's cells show the lesson's point."
else
	$(BIN)/python $(EXAMPLE) || true
endif
