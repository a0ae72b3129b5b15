# ATTACK (not appended to the solution): shipped as conftest.py, beside a pytest.ini
# (shipped_pytest.ini) and a multi_head_attention.py whose head is not written, in a folder
# submission. If pytest ever imports it, it runs in the grader's own process, outside any
# sandbox: it leaves a marker file and rewrites the scoring so that every test earns its
# points, and its hook reports every test of its folder as passed.
# Honest score: that of a head that is not written.
from pathlib import Path

import pytest

MARKER = "@MARKER@"
for folder in ("/tmp", "/dev/shm"):
    try:
        (Path(folder) / f"{MARKER}-conftest-loaded-{Path(__file__).parent.name}").write_text("the submission's conftest.py ran in the grader\n")
    except OSError:
        pass
try:
    from grader import scoring

    scoring.TestRecord.points = property(lambda record: record.max_points)
    print("BREACH conftest: the submission's conftest.py rewrote the grader's scoring")
except ImportError:
    pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
