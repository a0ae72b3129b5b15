"""Each plugin of a grading session (grader/session/), in this process: a pytest session run
inside this one (pytester) with the plugins it needs, or its hooks called directly.

The inner sessions grade tiny modules of checks written here (``test_shapes.py``: one of the
grader's groups, so that the scoreboard takes it) against a student module written here too.
pytest's conftest search stays inside grader/ once the targets plugin is loaded (its options
narrow it), so what an inner session needs besides the plugins comes as a plugin object.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from grader.feedback.errors import ErrorDescription
from grader.feedback.evidence import StudentCodeError
from grader.sandbox import isolated
from grader.session import PLUGINS, folding, handles, sandbox, summary, targets
from grader.session.scoreboard import scoreboard_key
from grader.seam import registry
from grader.submission import InProcessBackend

ALL = [option for name in PLUGINS for option in ("-p", name)]
# The plugins are imported here already, too late for the inner session to rewrite their asserts.
QUIET = ("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning")

STUDENT = """
import torch

print("hello from the student's module")

def causal_mask(seq_len):
    if seq_len > 3:
        raise ValueError(f"too long: {seq_len}")
    return torch.ones(seq_len, seq_len).tril().bool()
"""

CHECKS = """
import pytest

@pytest.mark.points(3)
def test_a_short_mask_is_lower_triangular(submission):
    mask = submission.causal_mask(2)
    assert mask.tolist() == [[True, False], [True, True]]

@pytest.mark.points(2)
def test_a_long_mask(submission):
    submission.causal_mask(5)
"""


def plugins(*names: str) -> list[str]:
    return [option for name in names for option in ("-p", f"grader.session.{name}")]


class Kept:
    """A plugin object that keeps the inner session's config, to read its stash afterwards."""

    def pytest_configure(self, config):
        self.config = config


@pytest.fixture
def student(pytester):
    pytester.makepyfile(test_shapes=CHECKS)
    path = pytester.path / "student" / "multi_head_attention.py"
    path.parent.mkdir()
    path.write_text(STUDENT)
    return path


# --- targets.py --------------------------------------------------------------------------


def test_the_checks_run_once_per_submission_one_after_the_other_in_the_lessons_order(pytester):
    fixture = SUBMISSION_FIXTURE
    pytester.makepyfile(  # collected in the order of their names, graded in the lesson's
        test_probabilities=fixture + "def test_two(submission): pass\n", test_shapes=fixture + "def test_one(submission): pass\n",
    )
    first, second = pytester.path / "alice.py", pytester.path / "bob" / "alice.py"
    first.write_text("")
    second.parent.mkdir()
    second.write_text("")
    result = pytester.runpytest_inprocess(
        *plugins("targets"), *QUIET, "--collect-only", "-q", f"--submission={first}", f"--submission={second}"
    )
    ids = [line.split("::", 1)[1] for line in result.outlines if "::" in line]
    # Two files of one name are two submissions; their checks are not interleaved.
    assert ids == ["test_one[alice]", "test_two[alice]", "test_one[alice-2]", "test_two[alice-2]"], result.outlines


def test_pytests_own_reordering_by_fixture_scope_is_left_out_of_a_grading_session(pytester, monkeypatch):
    # The grader orders its checks itself; pytest's reorder_items (3 % of a shard's CPU) would
    # order them the same, so a session does not run it, and puts it back for whoever runs next.
    from _pytest import fixtures

    reorderings = []

    def counted(items):
        reorderings.append(len(items))
        return list(items)

    monkeypatch.setattr(fixtures, "reorder_items", counted)
    fixture = SUBMISSION_FIXTURE
    pytester.makepyfile(test_shapes=fixture + "def test_one(submission): pass\ndef test_two(submission): pass\n")
    (pytester.path / "alice.py").write_text("")
    (pytester.path / "bob.py").write_text("")
    result = pytester.runpytest_inprocess(
        *plugins("targets", "overheads"), *QUIET, "--collect-only", "-q", f"--submission={pytester.path / 'alice.py'}",
        f"--submission={pytester.path / 'bob.py'}",
    )
    ids = [line.split("::", 1)[1] for line in result.outlines if "::" in line]
    assert ids == ["test_one[alice]", "test_two[alice]", "test_one[bob]", "test_two[bob]"], result.outlines
    assert reorderings == [], "pytest reordered the grader's checks by fixture scope"
    assert fixtures.reorder_items is counted, "pytest's reorder_items was not put back after the session"


SUBMISSION_FIXTURE = "import pytest\n@pytest.fixture(scope='session')\ndef submission(request):\n    return request.param\n"


def graded_twice(pytester, checks: str, *, plugins_too=(), fixtures: str = ""):
    """``checks`` (a test file's text, after the session's ``submission`` fixture and ``fixtures``)
    run in-process for two empty submissions, alice and bob, with the targets and overheads plugins."""
    pytester.makepyfile(test_shapes=SUBMISSION_FIXTURE + fixtures + checks)
    (pytester.path / "alice.py").write_text("")
    (pytester.path / "bob.py").write_text("")
    return pytester.runpytest_inprocess(
        *plugins("targets", "overheads"), *QUIET, f"--submission={pytester.path / 'alice.py'}",
        f"--submission={pytester.path / 'bob.py'}", plugins=list(plugins_too),
    )


def test_the_hooks_of_a_test_file_are_looked_up_once_per_session_not_at_every_call(pytester, monkeypatch):
    # Every hook of a check (setup, call, teardown, reports, fixtures) goes through item.ihook,
    # which asks the session for its file's hooks; pytest looks them up again each time (once
    # per node's path here: the file, its folder).
    lookups_while_running = []
    look_up = pytest.Session.gethookproxy

    def counted(session, fspath):
        if session.config.stash.get(running_key, False):
            lookups_while_running.append(fspath)
        return look_up(session, fspath)

    running_key = pytest.StashKey[bool]()

    class Running:
        @pytest.hookimpl(tryfirst=True)
        def pytest_runtestloop(self, session):
            session.config.stash[running_key] = True

    monkeypatch.setattr(pytest.Session, "gethookproxy", counted)
    checks = "".join(f"def test_{number}(submission): pass\n" for number in range(5))
    result = graded_twice(pytester, checks, plugins_too=[Running()])
    result.assert_outcomes(passed=10)
    assert len(lookups_while_running) == len(set(lookups_while_running)), f"10 checks looked their hooks up {len(lookups_while_running)} times"


def test_a_fixture_functions_argument_names_are_read_once_per_session_not_for_every_fixture_made(pytester, monkeypatch):
    # pytest makes a fixture for each parametrized argument of each check and for each `request`
    # asked for, reading each one's argument names from its signature (4 % of a shard's CPU);
    # the names of one code are read once, and pytest's own reader is put back after the session.
    from _pytest import fixtures

    read = []
    getfuncargnames = fixtures.getfuncargnames

    def counted(function, **keywords):
        read.append(function.__code__)
        return getfuncargnames(function, **keywords)

    monkeypatch.setattr(fixtures, "getfuncargnames", counted)
    seed = "@pytest.fixture\ndef seed(request):\n    return request.node.name\n"
    checks = "".join(f"@pytest.mark.parametrize('size', [1, 2])\ndef test_{number}(submission, seed, size): pass\n" for number in range(5))
    result = graded_twice(pytester, checks, fixtures=seed)
    result.assert_outcomes(passed=20)
    assert len(read) == len(set(read)), f"20 checks read argument names {len(read)} times, of {len(set(read))} functions"
    assert fixtures.getfuncargnames is counted, "pytest's getfuncargnames was not put back after the session"


def test_each_checks_location_is_pytests_own_found_once_per_test_function(pytester, monkeypatch):
    """Every check's ``location`` (path, line, name) is what pytest itself finds, and pytest's
    ``reportinfo`` runs once per test function, not once per check (two submissions, 5 functions
    and one parametrized twice: 12 checks, 6 functions)."""
    calls = []
    reportinfo = pytest.Function.reportinfo

    def counted(item):
        calls.append(item.nodeid)
        return reportinfo(item)

    monkeypatch.setattr(pytest.Function, "reportinfo", counted)
    seen = {}

    class Recorder:
        def pytest_runtest_logstart(self, nodeid, location):
            seen[nodeid] = location

        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session):
            seen["pytest's own"] = {item.nodeid: type(item).location.func(item) for item in session.items}

    checks = "".join(f"def test_{number}(submission): pass\n" for number in range(4))
    checks += "@pytest.mark.parametrize('size', [1, 2])\ndef test_sized(submission, size): pass\n"
    result = graded_twice(pytester, checks, plugins_too=[Recorder()])
    result.assert_outcomes(passed=12)
    own = seen.pop("pytest's own")
    assert seen == own and len(own) == 12, (seen, own)
    assert {location[2] for location in own.values()} >= {"test_0[alice]", "test_sized[bob-2]"}, own
    during_the_run = len(calls) - len(own)  # the Recorder asked pytest's own once per check
    assert during_the_run == 5, f"reportinfo ran {during_the_run} times for 12 checks of 5 functions"


def test_a_notebook_is_graded_as_its_code_cells_staged_as_one_file(pytester):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# My work"},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": "def causal_mask(n):\n    return n"},
    ]
    notebook = pytester.path / "work.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    config = pytester.parseconfigure(*plugins("targets"), f"--submission={notebook}")
    (target,) = config.stash[targets.targets_key].values()
    assert target.given == notebook.resolve() and target.graded_file == "work.ipynb" and not target.problem
    assert target.path != notebook.resolve() and "def causal_mask(n):" in target.path.read_text()
    assert len(target.cells) == 1
    staged = target.path
    config._ensure_unconfigure()
    assert not staged.exists()  # the staged copy goes with the session


def test_a_manifest_names_the_submissions_and_what_the_batch_knows_of_them(pytester):
    manifest = pytester.path / "manifest.json"
    manifest.write_text(json.dumps([{"name": "carol", "path": "/nowhere", "problem": "not a zip", "content_hash": "abc"}]))
    notebook = pytester.path / "work.ipynb"
    notebook.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    config = pytester.parseconfigure(*plugins("targets"), f"--manifest={manifest}", f"--submission={notebook}", "--grading-seed=7")
    assert config.stash[targets.targets_key] == {"carol": targets.Target("carol", Path("/nowhere"), "not a zip", "abc")}
    assert config.getoption("grading_seed") == 7
    assert targets.notebooks_key not in config.stash  # nothing else read, nothing staged


# --- sandbox.py --------------------------------------------------------------------------


def test_without_isolate_the_code_runs_in_this_process(pytester, tmp_path):
    config = pytester.parseconfigure(*plugins("targets", "sandbox"))
    assert config.stash[sandbox.sandbox_key] == ("in-process", "")
    backend, unavailable = sandbox.backend(config, tmp_path / "multi_head_attention.py", None)
    assert type(backend) is InProcessBackend and unavailable == ()


def test_in_this_process_each_submission_draws_what_it_draws_graded_alone(tmp_path):
    # Code that draws without a seed (dropout, torch.rand) must not get other numbers because
    # another submission was graded before it in the same session.
    source = tmp_path / "multi_head_attention.py"
    source.write_text("import random, torch\nDRAWN = (torch.rand(3).tolist(), random.random())\n")
    first = InProcessBackend(source)
    assert first.open() is None
    torch.rand(100), random.random()  # what a submission before it drew
    second = InProcessBackend(source)
    assert second.open() is None
    assert second.module.DRAWN == first.module.DRAWN


def test_a_shards_shared_worker_serves_the_session_and_is_left_open(pytester):
    class FakeWorker:
        closed = False

        def close(self):
            self.closed = True

    class Shared:
        __name__ = isolated.SHARED_WORKER_PLUGIN

        def __init__(self):
            self.worker = FakeWorker()

        def get(self, chosen):
            self.chosen = chosen
            return self.worker

    shared = Shared()
    config = pytester.parseconfig(*plugins("targets", "sandbox"), "--isolate", "--sandbox=process", "--call-timeout=3")
    config.pluginmanager.register(shared, isolated.SHARED_WORKER_PLUGIN)
    config._do_configure()
    assert config.stash[sandbox.worker_key] is shared.worker and shared.chosen == "process"
    source = pytester.makepyfile(multi_head_attention=STUDENT)
    backend, unavailable = sandbox.backend(config, source, None)
    assert type(backend) is isolated.IsolatedBackend and backend.call_timeout == 3 and unavailable is isolated.WorkerUnavailable
    config._ensure_unconfigure()
    assert not shared.worker.closed  # the shard closes it after its last session


# --- scoreboard.py -----------------------------------------------------------------------


def test_the_scoreboard_counts_each_checks_points_into_the_score_table(pytester):
    pytester.makepyfile(test_shapes="import pytest\n@pytest.mark.points(4)\ndef test_ok(): pass\n"
                                    "@pytest.mark.points(6)\ndef test_wrong(): assert False\n")
    result = pytester.runpytest_inprocess(*plugins("scoreboard"), *QUIET)
    result.stdout.fnmatch_lines(["*= score =*", "1. shapes*4/10", "Score: 4/10"])


# --- handles.py --------------------------------------------------------------------------


def test_each_submission_gets_one_handle_closed_with_what_its_code_printed(pytester, student):
    kept = Kept()
    reprec = pytester.inline_run(*ALL, *QUIET, f"--submission={student.parent}", "-s", plugins=[kept])
    result = kept.config.stash[scoreboard_key].submission_result("student")
    assert result.graded_file == "multi_head_attention.py"
    assert kept.config.stash[handles.handles_key] == {}  # finished after its last check
    assert [test.outcome for test in result.tests] == ["passed", "failed"]
    assert len(reprec.getreports("pytest_runtest_logreport")) == 6


def test_a_submission_that_does_not_import_fails_each_check_with_one_line(pytester, student):
    student.write_text("def causal_mask(seq_len):\n    return (\n")
    kept = Kept()
    reprec = pytester.inline_run(*ALL, *QUIET, f"--submission={student.parent}", plugins=[kept])
    failures = [report.longreprtext for report in reprec.getfailures() if report.when == "setup"]
    assert len(failures) == 2
    assert all(text.startswith("not graded: student could not be imported") for text in failures)
    assert "SyntaxError" in kept.config.stash[scoreboard_key].submission_result("student").import_error


def test_a_path_that_does_not_exist_fails_each_check_with_one_line(pytester, student):
    missing = pytester.path / "nowhere" / "multi_head_attention.py"
    reprec = pytester.inline_run(*ALL, *QUIET, f"--submission={missing}")
    failures = [report.longreprtext for report in reprec.getfailures() if report.when == "setup"]
    assert len(failures) == 2
    assert all(text.startswith("not graded: multi_head_attention could not be imported") for text in failures)
    assert not any("During handling" in text or "does not exist" in text for text in failures)


# --- persistence.py ----------------------------------------------------------------------


def test_results_are_written_per_submission_and_for_the_session(pytester, student):
    out, document = pytester.path / "out", pytester.path / "results.json"
    pytester.inline_run(*ALL, *QUIET, f"--submission={student.parent}", f"--results-dir={out}", f"--results-json={document}", "--grading-seed=11")
    written = json.loads((out / "results" / "student.json").read_text())
    assert written["score"] == 3 and written["grading_seed"] == 11
    assert (out / "feedback" / "student.md").is_file()
    assert json.loads(document.read_text())["submissions"]["student"]["score"] == 3


def test_an_entry_refused_at_intake_records_no_other_files_hash(pytester, student):
    # The batch writes "" as the path of an entry it refused (a broken zip): the result must not
    # take the hash of whatever multi_head_attention.py the folder the shard runs from holds.
    (pytester.path / "multi_head_attention.py").write_text(STUDENT)  # pytester runs in its own folder
    manifest, out = pytester.path / "manifest.json", pytester.path / "out"
    manifest.write_text(json.dumps([{"name": "carol", "path": "", "problem": "carol.zip is not a zip file"}]))
    pytester.inline_run(*ALL, *QUIET, f"--manifest={manifest}", f"--results-dir={out}")
    written = json.loads((out / "results" / "carol.json").read_text())
    assert written["score"] == 0 and written["content_hash"] == ""


def test_a_result_that_cannot_be_written_is_said_and_the_session_goes_on(pytester, student, capfd):
    blocked = pytester.path / "blocked"
    blocked.write_text("a file where the results' folder should be")
    reprec = pytester.inline_run(*ALL, *QUIET, f"--submission={student.parent}", f"--results-dir={blocked}")
    assert "grader: the result of student could not be written" in capfd.readouterr().err
    assert len(reprec.getreports("pytest_runtest_logreport")) == 6


# --- folding.py --------------------------------------------------------------------------


def test_each_failure_is_reported_once_unless_a_summary_is_asked_for(pytester, student):
    quiet = pytester.runpytest_inprocess(*ALL, *QUIET, f"--submission={student.parent}")
    assert "short test summary info" not in quiet.stdout.str()
    asked = pytester.runpytest_inprocess(*ALL, *QUIET, f"--submission={student.parent}", "-rf")
    assert "short test summary info" in asked.stdout.str()


def test_a_checks_label_leaves_out_the_submissions_name():
    item = SimpleNamespace(originalname="test_mask", name="test_mask[alice-b1-s4]", callspec=SimpleNamespace(id="alice-b1-s4"))
    assert folding.check_label(item, "alice") == "test_mask[b1-s4]"
    assert folding.check_label(SimpleNamespace(originalname="test_x", name="test_x[alice]"), "alice") == "test_x"


def test_an_error_raised_again_at_the_same_line_is_said_in_full_once(pytester, student):
    pytester.makepyfile(test_shapes=CHECKS + "\n@pytest.mark.points(1)\ndef test_another_long_mask(submission):\n    submission.causal_mask(6)\n")
    reprec = pytester.inline_run(*ALL, *QUIET, f"--submission={student.parent}")
    first, again = (report.longreprtext for report in reprec.getfailures())
    assert first.startswith("your code raised ValueError: too long: 5\n  at multi_head_attention.py:")
    assert again.startswith("your code raised ValueError: too long: 6 again at multi_head_attention.py:")
    assert again.endswith("as in test_a_long_mask[student] (its whole message is there)")


# --- summary.py --------------------------------------------------------------------------


def test_the_header_says_what_is_graded_on_which_seed_and_where_the_code_runs(pytester, student):
    config = pytester.parseconfigure(*plugins("targets", "sandbox", "summary"), f"--submission={student.parent}", "--grading-seed=5")
    exercise = registry.exercise()
    assert summary.pytest_report_header(config) == [
        f"exercise: {exercise.title} ({exercise.name})", f"grading: {student.parent}", "grading seed: 5", "student code runs: in-process",
    ]


@pytest.mark.parametrize(("kind", "message", "said"), [
    ("not_written", "causal_mask", "causal_mask: this test needs it (it still raises NotImplementedError)."),
    ("contract", "causal_mask(...) returned a list", "causal_mask(...) returned a list"),
    ("raised", "too long", "your code raised ValueError: too long\n  at multi_head_attention.py:9"),
])
def test_a_students_exception_reads_as_one_paragraph(kind, message, said):
    error = ErrorDescription(kind, "ValueError", message, "multi_head_attention.py:9" if kind == "raised" else "")
    assert summary.student_error_message(StudentCodeError("causal_mask", error)) == said


def test_a_stub_that_says_its_own_words_is_named_by_its_function():
    error = ErrorDescription("not_written", "NotImplementedError", "write this", function="causal_mask")
    assert summary.student_error_message(StudentCodeError("causal_mask", error)).startswith("causal_mask is not written yet")


class CountsReadsOfAllReports:
    """Counts how often the terminal reads the whole session's list of passed phases."""

    reads = 0

    def pytest_sessionfinish(self, session):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        own = reporter.getreports

        def counted(name):
            self.reads += name == ""
            return own(name)

        reporter.getreports = counted


def test_the_failures_section_reads_the_sessions_reports_once_and_prints_what_pytest_prints(pytester, student, monkeypatch):
    """pytest looks up each failure's teardown by reading every report again (quadratic in a
    session of many submissions); summary.py indexes them once. The output stays pytest's own."""
    for name in ("second", "third"):
        (pytester.path / name).mkdir()
        (pytester.path / name / "multi_head_attention.py").write_text(STUDENT)
    arguments = (*ALL, *QUIET, "--grading-seed=3", *(f"--submission={pytester.path / name}" for name in ("student", "second", "third")))

    def run() -> tuple[int, list[str]]:
        counter = CountsReadsOfAllReports()
        text = pytester.runpytest_inprocess(*arguments, plugins=[counter]).stdout.lines
        return counter.reads, [line for line in text if " in " not in line or "=" not in line]  # not the timing line

    indexed = run()
    monkeypatch.setattr(summary, "_teardown_reports_looked_up_once", lambda reporter: None)
    pytests_own = run()
    assert indexed[0] == 1 and pytests_own[0] == 3  # once a failure, one failure a submission
    assert indexed[1] == pytests_own[1]


def test_a_failure_in_the_terminal_is_the_students_message_not_a_traceback(pytester, student):
    result = pytester.runpytest_inprocess(*ALL, *QUIET, f"--submission={student.parent}")
    text = result.stdout.str()
    assert "your code raised ValueError: too long: 5" in text
    assert "submission.causal_mask(5)" not in text and "Traceback" not in text


def test_the_submission_fixture_hands_out_a_plain_data_handle(pytester, student):
    pytester.makepyfile(test_shapes="import pytest\n@pytest.mark.points(1)\ndef test_handle(submission):\n"
                                    "    from grader.submission import Submission\n"
                                    f"    assert isinstance(submission, Submission) and type(submission).__name__ == {registry.handle().__name__!r}\n")
    pytester.inline_run(*ALL, *QUIET, f"--submission={student.parent}").assertoutcome(passed=1)
