# `make grade` grades exercises/; `make test` runs the repository's whole test suite (both tiers),
# `make test-fast` its fast tier, for the edit loop (docs/development.md#tests).
# Both create .venv first when it is missing (or when requirements changed). The students'
# targets (grade, example, the environment) are in student.mk, which the release ships as
# its Makefile; the instructor's targets follow.

include student.mk

.PHONY: test test-fast stubs notebook examples release batch report benchmark catalogue rehearse picture

# The instructor's environment finds the grader from any folder (a course file's folder, as
# `course init` says): a .pth file in its site-packages names .venv/grader-only, a folder that
# holds one link, grader -> this repository's grader/, so `.venv/bin/python -m grader ...` runs
# anywhere (site.py adds each line of a .pth to sys.path) while exercises/, solutions/ and tests/
# stay unimportable elsewhere, as in a student's notebook alone.
# Then it says which sandbox a batch will use here: bubblewrap is a system package, which
# pip cannot install (`python -m grader sandbox`). The students' release has no such step.
GRADER_PATH := $(VENV)/.grader-path
.venv: $(GRADER_PATH)

$(GRADER_PATH): $(STAMP)
	rm -rf $(VENV)/grader-only && mkdir $(VENV)/grader-only && ln -s "$(CURDIR)/grader" $(VENV)/grader-only/grader
	$(BIN)/python -c 'import sys, sysconfig, pathlib; pathlib.Path(sysconfig.get_paths()["purelib"], "mha-grader.pth").write_text(sys.argv[1] + "\n")' "$(CURDIR)/$(VENV)/grader-only"
	cd / && $(abspath $(BIN))/python -m grader sandbox
	touch $@

# One test worker more than the machine has cores: many tests wait on a process they started
# (a platform's run, a kernel, a batch), and a third worker computes meanwhile.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))

# Both tiers: what CI runs (.ci/run). Each file's tests run in one worker (a module's fixtures are
# built once); the slowest tests are printed at the end.
test: $(STAMP) $(GRADER_PATH)
	$(BIN)/python -m pytest tests -n $(TEST_WORKERS) --dist loadfile --durations=25

# The fast tier: every test without a slow-tier marker (tests/tiers.py); one of them over 10 s
# (on a quiet machine) fails the run, naming it. One worker per core: its tests compute more than
# they wait (on 2 cores, 106 s with two workers against 125 s with three, the same clone).
FAST_TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
test-fast: $(STAMP) $(GRADER_PATH)
	$(BIN)/python -m pytest tests -n $(FAST_TEST_WORKERS) --dist loadfile -m "not slow and not platform and not browser" --unmarked-limit 10 --durations=15

stubs: $(STAMP)
	$(BIN)/python -m grader stubs

notebook: $(STAMP)
	$(BIN)/python -m grader notebook

# The visible reference group's fixed examples (grader/exercises/multi_head_attention/reference_examples.json).
examples: $(STAMP)
	$(BIN)/python -m grader examples

# What students receive: build/release (no solutions, no hidden tests). LEVEL=guided for API hints.
LEVEL ?= standard
release: $(STAMP)
	$(BIN)/python -m grader release build/release --level $(LEVEL)

# The whole instructor flow on a bundled sample class of eight students (correct, partly
# correct, buggy, broken, hostile): build/sample-class -> build/batch (gradebook, feedback).
BATCH_OUT ?= build/batch
batch: $(STAMP)
	$(BIN)/python tests/sample_class.py build/sample-class
	$(BIN)/python -m grader batch build/sample-class --out $(BATCH_OUT) --force
	@echo; cat $(BATCH_OUT)/gradebook.csv; echo; echo "feedback for each student: $(BATCH_OUT)/feedback/"

# The class report of the sample class ($(BATCH_OUT)/report.html) and a laptop-sized screenshot
# of it (build/report.png), taken with Debian's chromium: what instructors see. It reuses the
# sample class's results when they are there (make batch grades it again).
report: $(BATCH_OUT)/results.json
	$(BIN)/python -m grader report $(BATCH_OUT)
	$(BIN)/python tests/browser.py $(BATCH_OUT)/report.html build/report.png
	@echo "report: $(BATCH_OUT)/report.html (open it in a browser); screenshot: build/report.png"

$(BATCH_OUT)/results.json: | $(STAMP)
	$(MAKE) batch BATCH_OUT=$(BATCH_OUT)

benchmark: $(STAMP)
	$(BIN)/python tests/benchmark_batch.py

catalogue: $(STAMP)
	$(BIN)/python tests/catalogue_report.py

# Gradescope's and PrairieLearn's hand-outs installed and graded the way the platforms run them,
# in a fresh Debian root under each platform's limits (tests/rehearse.py; root, debootstrap,
# python3-seccomp). Not part of `make test`: a first run takes several minutes.
rehearse: $(STAMP)
	$(BIN)/python tests/rehearse.py

# The front page's picture (docs/images/feedback-page.png): one student's feedback page,
# photographed with Debian's chromium (tests/front_page_picture.py).
picture: $(STAMP)
	$(BIN)/python tests/front_page_picture.py
