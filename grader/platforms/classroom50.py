"""Classroom 50: ``python -m grader classroom50 OUT_DIR``, and the grading its runner starts.

Classroom 50 (foundation50/classroom50) grades on GitHub Actions, in each student's repository:
the shim workflow there calls the reusable ``autograde-runner.yaml`` of the classroom's config
repository, whose runner.py downloads the assignment's bundle (``<classroom>/autograders/<slug>/``,
tarred by publish-pages.yaml), runs its ``autograder.py`` in the student's checkout and publishes
``result.json`` and ``release-body.md`` as the submission's Release. Sources, in that repository:
cli/gh-teacher/skeleton/dotgithub/scripts/runner.py (0c499034f24703425496698992fedc41fbc1162f),
cli/gh-teacher/skeleton/dotgithub/workflows/autograde-runner.yaml (0343327c7678fefeaf3a89dd44a23bcc186d484b),
cli/gh-teacher/skeleton/dotgithub/workflows/publish-pages.yaml (1da53974d8a6d55f8cb7e600143f66dfe56b65ab),
cli/gh-teacher/embed/autograder.py (17f28b5476b417fe2c3a8ae99121c051d19a1e24),
schemas/result-v1.schema.json (6e593c79b87c99f94fec2ae0badadba761360516),
cli/gh-teacher/internal/assignment/runtime.go (0f5a38fddc1b5dda3277a8b8d88a432d05028da1), and
the wiki pages Advanced Autograding and Assignment Templates.

Building (the instructor's machine) writes::

    OUT_DIR/autograders/<slug>/   copy to <classroom>/autograders/<slug>/ in the config repository:
        autograder.py             the entrypoint (grader/platforms/classroom50_autograder.py)
        grader/, solutions/       the whole grader, hidden tests included, and the reference
        requirements.txt          the pinned versions it installs on the runner
        classroom50.json          this build's settings (how the hidden group is shown, which exercise)
    OUT_DIR/runtime.json          the assignment's runtime block: Python 3.12, bubblewrap
    OUT_DIR/template/             the assignment's template repository (the student release)
    OUT_DIR/README.md             the steps, with gh teacher's commands

Grading (``python -m grader.platforms.classroom50 --checkout DIR --out DIR``, started by
autograder.py, as root where sudo allows) is the shared grading path of
``grader/platforms/autograder.py``: the file chosen in the checkout, graded with the batch
machinery in the sandbox, and result.json (schema ``classroom50/result/v1``) and
release-body.md written into ``--out``, a private folder, which autograder.py copies into the
checkout last. What the student reads (the Release, and the Actions log of their own
repository: both are theirs) is every visible check with its points and, when it failed, its
expected / got / hint, the diagnosis as far as the visible checks reveal it, and the hidden
group as one entry with its points (``--hidden total``, the default) or as its checks
(``--hidden checks``). Nothing else of the hidden tests is written anywhere a student reads.

A checkout with nothing to grade is not a grading failure: result.json is the runner's error
shape (no tests, 0/0) and the commit status ``error`` with the reason, exit status 0, so the
gradebook records neither points nor a zero (as PrairieLearn's "not gradable"). A grader
failure exits non-zero: the runner then writes its own error result.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
from pathlib import Path

from grader.feedback import diagnosis_text
from grader.handout import release
from grader.seam import registry
from grader.platforms.autograder import (
    HIDDEN_GROUP,
    REPO_ROOT,
    choose_submission_file,
    failure_details,
    failure_output,
    grade,
    instructor_note,
    readable,
    requested_sandbox,
    sentence,
    shipped_files,
    shown_diagnoses,
)
from grader.untrusted import html_text, markdown_code_block, markdown_text, printable

# The assignment's slug: the exercise's name, as the slug pattern below spells it ("multi-head-attention").
DEFAULT_SLUG = registry.exercise().name.replace("_", "-")
# The slug pattern of the runner's setup step (autograde-runner.yaml, "Read assignment config": _SLUG).
SLUG_PATTERN = r"[a-z0-9][a-z0-9-]{1,38}"
HIDDEN_CHOICES = ("total", "checks")
ENTRYPOINT = Path(__file__).with_name("classroom50_autograder.py")
SETTINGS_FILE = "classroom50.json"
RESULT_SCHEMA = "classroom50/result/v1"  # runner.py's RESULT_SCHEMA_V1
RESULT_FILENAME = "result.json"
RELEASE_BODY_FILENAME = "release-body.md"
# runner.py fetches at most 10 MB of bundle (MAX_FETCH_BYTES); this one is far smaller.
MAX_BUNDLE_BYTES = 10 * 1024 * 1024
# runner.py clips captured output in a release body at 2000 characters (MAX_CAPTURED_CHARS):
# a failed check's message here is kept to the same.
MAX_MESSAGE_CHARS = 2000
# And the whole body is kept well under what a Release shows ("the release body must stay
# skimmable", runner.py beside MAX_LOG_CAPTURED_CHARS): past this, the failed checks' messages
# are left to result.json, which the Release carries too.
MAX_BODY_CHARS = 60_000
# The runtime block of assignments.json (runtime.go: python, apt; the runner's setup step
# installs the apt packages with sudo on a hosted runner and defaults python to 3.14). 3.12:
# the interpreter the grader is tested on; bubblewrap: the sandbox.
RUNTIME = {"python": "3.12", "apt": ["bubblewrap"]}
TEMPLATE_SECTION = f"""

## Grading on GitHub (Classroom 50)

Submit with `gh student submit` (or push, if your instructor grades every push). GitHub Actions
grades `exercises/{registry.exercise().student_file}` in your repository (or your notebook,
`exercises/{registry.exercise().notebook}`, when it holds more of the work) and publishes a Release
with your score: every visible check with what was expected, what came back and the likely
mistake, and the hidden checks' points. `make grade` runs the same visible checks at your desk.
Keep the file's name and place.
"""


# --- building (the instructor's machine) ----------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", type=Path, help="folder to (re)create: autograders/<slug>/, template/, runtime.json, README.md")
    parser.add_argument("--slug", type=_slug, default=DEFAULT_SLUG, help=f"the assignment's slug in Classroom 50 (default: {DEFAULT_SLUG})")
    parser.add_argument(
        "--hidden", choices=HIDDEN_CHOICES, default="total",
        help="the hidden group in each result: one entry with its points (total, the default) or every hidden check (checks)",
    )


def _slug(text: str) -> str:
    import re

    if not re.fullmatch(SLUG_PATTERN, text):
        raise argparse.ArgumentTypeError(f"Classroom 50's slugs match {SLUG_PATTERN}: {text!r} does not")
    return text


def run(arguments: argparse.Namespace) -> int:
    bundle = write_config(arguments.out_dir, slug=arguments.slug, hidden=arguments.hidden)
    leaks = release.leaked_solution_lines(arguments.out_dir / "template")
    if leaks:
        print("the template holds solution text; fix before handing it out:", *leaks[:10], sep="\n  ", file=sys.stderr)
        return 1
    print(f"wrote the autograder to {bundle}, the template repository to {arguments.out_dir / 'template'},")
    print(f"and the steps to {arguments.out_dir / 'README.md'}.")
    return 0


def write_config(out_dir: Path, *, slug: str = DEFAULT_SLUG, hidden: str = "total") -> Path:
    """Write (replacing) OUT_DIR: the bundle, the runtime block, the template, the README."""
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    bundle = out_dir / "autograders" / slug
    bundle.mkdir(parents=True)
    for path in shipped_files():
        target = bundle / path.relative_to(REPO_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    shutil.copyfile(ENTRYPOINT, bundle / "autograder.py")
    # The exercise it was built for: autograder.py grades that one (classroom50_autograder.py).
    settings = {"hidden": hidden, "exercise": registry.exercise().name}
    (bundle / SETTINGS_FILE).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    (out_dir / "runtime.json").write_text(json.dumps(RUNTIME, indent=2) + "\n", encoding="utf-8")
    template = release.write_release(out_dir / "template")
    readme = template / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + TEMPLATE_SECTION, encoding="utf-8")
    (out_dir / "README.md").write_text(steps(slug), encoding="utf-8")
    return bundle


def steps(slug: str) -> str:
    title = registry.exercise().title
    return f"""\
# Classroom 50: the {title[:1].lower()}{title[1:]} assignment

Written by `python -m grader classroom50`. ORG is your organization, CLASSROOM the classroom's
short name (Classroom 50's wiki: Teacher Guide, Assignment Templates, Advanced Autograding).

1. The template repository: push `template/` to a new repository in ORG, mark it a template
   (Settings, "Template repository"). It holds no solution and no hidden test.
2. The assignment, with its runtime (Python 3.12, bubblewrap for the sandbox):

       gh teacher assignment add ORG CLASSROOM {slug} --name "{title}" \\
           --template ORG/TEMPLATE_REPOSITORY --runtime runtime.json

3. The autograder: copy `autograders/{slug}/` to `CLASSROOM/autograders/{slug}/` in ORG's
   `classroom50` repository, commit and push. publish-pages.yaml bundles it for the runner.

The bundle (the grader with its hidden tests, and the solution) never enters a student's
repository, and student code cannot read it while it is graded. But Classroom 50 serves it
from the organization's Pages site, which is not access-controlled (its pull request #833:
"the bundle is publicly readable"): a student who builds its address can download it. The
hidden group's points rest on data drawn at grading time, which no submission can predict;
if the solution itself must stay secret, grade with the batch instead (`python -m grader
batch` over the clones: `gh teacher download ORG CLASSROOM {slug} -d clones`).

Every grading job installs the grader's requirements (torch's CPU build) into a new
virtualenv: a minute or two. Do not add an actions/cache step for it. The grade job runs in
each student's repository, and a cache there is one the student's own workflows can save:
actions/cache matches a cache by its key and path, both computable, and a cache saved on the
default branch is restored on every branch. A virtualenv saved first by a workflow the student
pushed would then run as the grader, as root. autograder.py trusts no cache and starts every
interpreter isolated from the checkout.
"""


# --- result.json and release-body.md ----------------------------------------------------------


def _now() -> str:
    # result.json's datetime: YYYY-MM-DDTHH:MM:SSZ (the schema's pattern). The runner replaces it
    # with the graded commit's date (runner.py, finalize_result).
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def identity(metadata: dict[str, str]) -> dict:
    """result.json's identity fields from the runner's environment (runner.py's make_result:
    the runner stamps owner, assignment_type, datetime and submitted_by again afterwards)."""
    commit = metadata.get("COMMIT_URL") or (
        f"{metadata.get('GITHUB_SERVER_URL') or 'https://github.com'}/{metadata.get('GITHUB_REPOSITORY', '')}/commit/{metadata.get('GITHUB_SHA', '')}"
    )
    return {
        "schema": RESULT_SCHEMA,
        "classroom": metadata["CLASSROOM"],
        "assignment": metadata["ASSIGNMENT"],
        # The runner's MODE: individual unless group or team (runner.py assignment_type_for_mode).
        "assignment_type": metadata.get("ASSIGNMENT_TYPE") or "individual",
        "owner": metadata.get("OWNER") or metadata.get("USERNAME") or metadata.get("GITHUB_ACTOR") or "unknown",
        "submission": metadata["SUBMISSION_TAG"],
        "commit": commit,
        "release": metadata.get("RELEASE_URL") or commit,
        "review": metadata.get("REVIEW_URL") or commit,
        "datetime": _now(),
    }


def _clipped(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "\n... (cut)"


def result_tests(document: dict, hidden: str) -> list[dict]:
    """One entry per visible check (and per hidden check with ``hidden="checks"``), else the
    hidden group as one entry with its points and no details."""
    from grader.scoring import GROUP_TITLES, GROUPS

    diagnoses = shown_diagnoses(document, hidden_details=hidden == "checks")
    explained = diagnosis_text.explained_checks(diagnoses)
    entries = []
    for test in sorted(document["tests"], key=lambda t: GROUPS.index(t["group"])):  # stable: keeps grading order
        if test["group"] == HIDDEN_GROUP and hidden == "total":
            continue
        passed = test["outcome"] == "passed"
        entry = {
            "test-name": f"{GROUP_TITLES[test['group']]}: {readable(test['name'])}",
            "passed": passed,
            "score": int(test["points"]),
            "max-score": int(test["max_points"]),
            "group": test["group"],
        }
        if not passed:
            entry["message"] = _clipped(failure_output(test, test["name"] in explained))
        entries.append(entry)
    hidden_tests = [test for test in document["tests"] if test["group"] == HIDDEN_GROUP]
    if hidden == "total" and hidden_tests:
        earned, maximum = sum(t["points"] for t in hidden_tests), sum(t["max_points"] for t in hidden_tests)
        entries.append({
            "test-name": GROUP_TITLES[HIDDEN_GROUP],
            "passed": earned == maximum,
            "score": int(earned),
            "max-score": int(maximum),
            "group": HIDDEN_GROUP,
            "message": "Compares your numbers with the reference on data drawn at grading time; its checks are not shown.",
        })
    return entries


def classroom50_result(document: dict, metadata: dict[str, str], hidden: str = "total") -> dict:
    tests = result_tests(document, hidden)
    return identity(metadata) | {
        "score": sum(t["score"] for t in tests),
        "max-score": sum(t["max-score"] for t in tests),
        "tests": tests,
    }


def release_body(document: dict, result: dict, found: str, hidden: str = "total") -> str:
    """The Release's Markdown: the score, the diagnosis, the points per group, each failed check.
    Everything the student controls (file names, messages) is escaped or fenced."""
    from grader.scoring import GROUP_TITLES

    diagnoses = shown_diagnoses(document, hidden_details=hidden == "checks")
    lines = [f"### {registry.exercise().title}: {result['score']}/{result['max-score']}", "", markdown_text(sentence(found)), ""]
    if document.get("import_error"):
        lines += ["Your file could not be imported, so no check could run:", "", markdown_code_block(_clipped(document["import_error"])), ""]
    lines += diagnosis_text.markdown_lines(diagnoses)
    lines += ["| Group | Points |", "|---|---|"]
    for group, points in document.get("groups", {}).items():
        lines.append(f"| {GROUP_TITLES[group]} | {points['earned']}/{points['max']} |")
    lines.append("")
    failed = [test for test in result["tests"] if not test["passed"]]
    if failed:
        lines += ["### Failed checks", "", "Each says what was expected, what came back, and the likely mistake.", ""]
        length = sum(len(line) + 1 for line in lines)
        for shown, test in enumerate(failed):
            block = [
                # Inside an HTML element GitHub reads no Markdown: the name is escaped as HTML there.
                f"<details><summary>{html_text(test['test-name'])} ({test['score']}/{test['max-score']})</summary>", "",
                markdown_code_block(test["message"]), "", "</details>", "",
            ]
            length += sum(len(line) + 1 for line in block)
            if length > MAX_BODY_CHARS:
                lines.append(f"{len(failed) - shown} more failed checks: their messages are in result.json, attached to this Release.")
                break
            lines += block
    else:
        lines.append("Every check passed.")
    return "\n".join(lines).rstrip() + "\n"


def nothing_to_grade(metadata: dict[str, str], found: str) -> tuple[dict, str, str]:
    """result.json, release body and summary for a checkout without a file to grade: the
    runner's error shape (no tests, 0/0), so no points are recorded, not even a zero."""
    result = identity(metadata) | {"score": 0, "max-score": 0, "tests": []}
    body = f"### {registry.exercise().title}: not graded\n\n{markdown_text(sentence(found))}\n"
    return result, body, f"not graded: {printable(found)}"


def _missing_file_sentence(found: str) -> str:
    from grader.reading.loading import MODULE_FILE_NAME, NOTEBOOK_FILE_NAME

    return (
        f"nothing was graded: this commit holds no {MODULE_FILE_NAME} (the template keeps it in exercises/) "
        f"and no {NOTEBOOK_FILE_NAME}. Restore exercises/{MODULE_FILE_NAME} and submit again ({found})"
    )


# --- grading one checkout (on the runner) ------------------------------------------------------


def settings() -> dict:
    path = REPO_ROOT / SETTINGS_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"hidden": "total"}


def autograde(checkout: Path, out: Path, sandbox: str = "auto") -> int:
    """Grade ``checkout`` into ``out``: result.json, release-body.md, status.json, log.txt.
    0 when they are written; 1 when the grader failed (nothing written but the log)."""
    from grader.reading.loading import MODULE_FILE_NAME, NOTEBOOK_FILE_NAME

    metadata = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    hidden = settings().get("hidden", "total")
    log: list[str] = []
    status = 0
    try:
        # The template keeps the exercise in exercises/; the rest of the checkout is the
        # template's own, the student's copy of the grader among it, whose modules would count
        # as work under the rule that grades the file holding the most of it.
        exercises = checkout / "exercises"
        chosen, found = choose_submission_file(exercises if exercises.is_dir() and not exercises.is_symlink() else checkout)
        if chosen is None or chosen.name not in (MODULE_FILE_NAME, NOTEBOOK_FILE_NAME):
            result, body, summary = nothing_to_grade(metadata, _missing_file_sentence(found))
            outcome = {"status": "error", "summary": summary}
            log.append(summary)
        else:
            document = grade(chosen, sandbox)
            result = classroom50_result(document, metadata, hidden)
            body = release_body(document, result, found, hidden)
            passed = all(test["passed"] for test in result["tests"])
            outcome = {
                "status": "success" if passed else "failure",
                "summary": f"{registry.exercise().title.lower()}: {result['score']}/{result['max-score']}",
            }
            # The Actions log is the student's to read: the sandbox and the seed, their own points
            # and output; no hidden check is named unless the instructor chose to show them.
            log += [
                instructor_note(
                    document, sandbox_requested=sandbox, found=found, running_as_root=os.geteuid() == 0,
                    private="the autograder's bundle (solution, hidden tests)", runner="autograder.py",
                ),
                "",
                # The runner mirrors release-body.md to the run's Summary page too (runner.py,
                # mirror_body_to_step_summary): the log need not repeat it.
                "The points per group, the diagnosis and each failed check: this submission's Release, "
                "and the Summary page of this run.",
            ]
        _write(out / RESULT_FILENAME, json.dumps(result, indent=2) + "\n")
        _write(out / RELEASE_BODY_FILENAME, body)
        _write(out / "status.json", json.dumps(outcome))
    except Exception as error:  # noqa: BLE001 - whatever went wrong, the log must say it
        log += [f"GRADER FAILURE: {type(error).__name__}: {error}", failure_details(error)]
        status = 1
    _write(out / "log.txt", printable("\n".join(log), keep_newlines=True) + "\n")
    return status


def _write(path: Path, text: str) -> None:
    """Written for autograder.py, which reads it as the folder's owner (this process may be root through sudo)."""
    from grader import results

    results.write_atomically(path, text)
    owner = path.parent.stat()
    if os.geteuid() == 0 and owner.st_uid != 0:
        os.chown(path, owner.st_uid, owner.st_gid)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.platforms.classroom50", description="Grade one Classroom 50 checkout.")
    parser.add_argument("--checkout", type=Path, required=True, help="the student's checkout (the runner's working directory)")
    parser.add_argument("--out", type=Path, required=True, help="private folder for result.json, release-body.md, status.json, log.txt")
    arguments = parser.parse_args(argv)
    return autograde(arguments.checkout.resolve(), arguments.out, requested_sandbox())


if __name__ == "__main__":
    sys.exit(main())
