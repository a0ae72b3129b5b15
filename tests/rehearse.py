"""``make rehearse``: install and run the Gradescope and PrairieLearn hand-outs as the platforms do.

    sudo .venv/bin/python tests/rehearse.py [--platform gradescope|prairielearn] [--cache DIR] [--rebuild]

No Docker engine runs here, so each platform's container is rebuilt from the kernel's own
pieces (``tests/rehearsal/container.py``: an overlay root, cgroups, namespaces, Docker's
default capabilities and seccomp profile) on a fresh Debian root (``tests/rehearsal/images.py``):

* **Gradescope** (gradescope/autograder_samples, docs/specs.md and manual_docker/Dockerfile):
  the zip's files in /autograder/source, run_autograder copied to /autograder/run_autograder,
  then `apt-get update && bash /autograder/source/setup.sh && apt-get clean` as root with the
  network. Each submission in a new container from that image, /autograder/submission and
  /autograder/results bound in, run_autograder as root, under Gradescope's defaults
  (docs/troubleshooting.md: 768 MB of memory, 1/2 of a virtual CPU, 10 minutes).
* **PrairieLearn** (apps/grader-host/src/index.ts and lib/config.ts at commit
  88fb8556a7a1768e2082736be9095241b11238d7; docs/externalGrading.md): the generated
  Dockerfile's steps in order (RUN, COPY, ENV, ARG) over a stand-in for its FROM image; each
  submission in a new container with the job folder bound at /grade (tests/, student/), the
  entrypoint from info.json, the question's timeout, and the grader host's limits:
  Memory = MemorySwap = 2 GiB, CpuQuota 90000 of CpuPeriod 100000 (0.9 CPU), PidsLimit 1024,
  NetworkDisabled (enableNetworking is false by default), no SecurityOpt (so Docker's default
  seccomp profile). Its 1 GiB DiskQuota is not reproduced.

Stand-ins, said in every run's output: the base systems are Debian 12 (bookworm), not
Gradescope's Ubuntu 22.04 (whose archive this machine cannot reach) nor python:3.12-slim
(Docker Hub is out of reach: Debian's python3 3.11 with /usr/local/bin/python stands in);
PyTorch's CPU index is out of reach too, so the installs take torch from pip's configured
sources (the fallback path of grader/torch_index.py).

Grades the reference, a missing scale, the results forger and its honest twin, an endless
loop and the stubs on each platform; then the course's second exercise (its own hand-out, built
with ``--exercise``) grades its reference and its stub in the same installed image, the way a
second assignment of the course would run: each submission in a new container under the same
limits. Its hand-out's install (setup.sh, the Dockerfile and requirements) must be the first's,
byte for byte, for that image to be the one its platform would build; the rehearsal checks so.
Prints one line per platform and exercise, and exits 1 when any case is wrong. Needs root, debootstrap, python3-seccomp, and cgroup v1's cpu, memory and pids
controllers. Files: the cache folder (default ~/.cache/mha-grader-rehearsal, or
$REHEARSAL_CACHE) keeps the base systems; each run's images, logs and results go to
build/rehearsal/ (its path is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import autograder_harness as harness  # noqa: E402
import catalogue  # noqa: E402
from grading import REPO_ROOT  # noqa: E402
from rehearsal.images import (  # noqa: E402
    Container,
    base_system,
    build_step,
    dockerfile_steps,
    package_sources,
)

from grader.platforms import gradescope, prairielearn  # noqa: E402
from grader.exercises.multi_head_attention.hidden.mistakes import MISTAKES  # noqa: E402

GRADESCOPE_LIMITS = {"cpus": 0.5, "memory": "768M"}  # docs/troubleshooting.md's defaults
GRADESCOPE_TIMEOUT = 600  # "a default overall timeout of 10 minutes"
PRAIRIELEARN_LIMITS = {"cpus": 0.9, "memory": "2G", "pids": 1024}  # grader-host lib/config.ts
PYTHON_SLIM_STANDIN = (
    "apt-get update && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates "
    "&& ln -s /usr/bin/python3 /usr/local/bin/python && rm -rf /var/lib/apt/lists/*"
)
MISSING_SCALE = next(m for m in catalogue.MUTANTS if m.name == "missing_scale")
MISSING_SCALE_TITLE = next(m.title for m in MISTAKES if m.id == "missing_scale")
ENDLESS_LOOP = (REPO_ROOT / "tests" / "attacks" / "endless_loop.py").read_text()


@dataclass
class Case:
    name: str
    source: str


@dataclass
class Outcome:
    case: str
    score: float | None  # out of 100; None when no results file was written
    seconds: float
    text: str  # what students read (the results' messages) and what instructors read (the log)
    sandbox: str


def cases(forger: str) -> list[Case]:
    solution = harness.SOLUTION.read_text()
    return [
        Case("reference", solution),
        Case("missing scale", catalogue.implementation_source(MISSING_SCALE)),
        Case("forger", forger),
        Case("honest twin", solution + harness.HONEST_TWIN),
        Case("endless loop", solution + "\n\n" + ENDLESS_LOOP),
        Case("stubs", harness.STUB.read_text()),
    ]


def judge(outcomes: dict[str, Outcome]) -> list[str]:
    """What is wrong with a platform's outcomes (nothing, when every case is right)."""
    problems = []
    score = {name: outcome.score for name, outcome in outcomes.items()}
    if any(value is None for value in score.values()):
        problems += [f"{name}: no results" for name, value in score.items() if value is None]
        return problems
    if score["reference"] != 100:
        problems.append(f"reference {score['reference']:g}/100")
    if not 0 < score["missing scale"] < 100 or MISSING_SCALE_TITLE not in outcomes["missing scale"].text:
        problems.append(f"missing scale {score['missing scale']:g}/100 without its diagnosis")
    if score["forger"] != score["honest twin"]:
        problems.append(f"forger {score['forger']:g}/100, its honest twin {score['honest twin']:g}")
    if harness.MARKER in outcomes["forger"].text.replace(f"{harness.MARKER} printed at import", ""):
        problems.append("forged results reached the platform")
    if any(line.startswith("BREACH") for line in outcomes["forger"].text.splitlines()):
        problems.append("the forger wrote results or read hidden files")
    if not score["endless loop"] < 100:
        problems.append(f"endless loop {score['endless loop']:g}/100")
    if score["stubs"] != 0:
        problems.append(f"stubs {score['stubs']:g}/100")
    return problems


def summary(platform: str, outcomes: dict[str, Outcome], limits: str, setup_seconds: float, problems: list[str]) -> str:
    def score(name: str) -> str:
        value = outcomes[name].score
        return "no results" if value is None else f"{value:g}/100"

    graded = [o.seconds for name, o in outcomes.items() if name != "endless loop"]
    sandboxes = sorted({o.sandbox for o in outcomes.values() if o.sandbox})
    line = (
        f"{platform}: reference {score('reference')}, missing scale {score('missing scale')} (missing_scale"
        f"{'' if MISSING_SCALE_TITLE in outcomes['missing scale'].text else ' NOT named'}), forger {score('forger')} "
        f"(honest twin {score('honest twin')}), endless loop {score('endless loop')} stopped after "
        f"{outcomes['endless loop'].seconds:.0f} s, stubs {score('stubs')}; sandbox {', '.join(sandboxes) or '?'}; "
        f"{limits}; {sum(graded) / len(graded):.1f} s per submission; setup {minutes(setup_seconds)}"
    )
    return line + ("" if not problems else "\n  WRONG: " + "; ".join(problems))


# --- the course's second exercise, in the image built for the first ------------------------------


def second_handout(command: str, out: Path, *options: str) -> Path:
    """The second exercise's hand-out for a platform, as an instructor makes it."""
    completed = subprocess.run(
        [sys.executable, "-m", "grader", command, str(out), "--exercise", harness.SECOND.name, *options],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    if completed.returncode != 0:
        sys.exit(f"rehearse: python -m grader {command} --exercise {harness.SECOND.name} failed:\n{completed.stdout}{completed.stderr}")
    return out


def second_cases() -> list[Case]:
    return [Case("reference", harness.SECOND_SOLUTION.read_text()), Case("stub", harness.SECOND_STUB.read_text())]


def second_summary(platform: str, outcomes: dict[str, Outcome], total: float, install_differs: list[str]) -> tuple[str, bool]:
    """One line: the second exercise's reference full and its stub at 0, out of its own total."""
    problems = [f"{name}: no results" for name, outcome in outcomes.items() if outcome.score is None]
    if not problems:
        if outcomes["reference"].score != total:
            problems.append(f"reference {outcomes['reference'].score:g}/{total:g}")
        if outcomes["stub"].score != 0:
            problems.append(f"stub {outcomes['stub'].score:g}/{total:g}")
    problems += [f"its hand-out installs differently: {name} differs from the first exercise's" for name in install_differs]

    def score(name: str) -> str:
        value = outcomes[name].score
        return "no results" if value is None else f"{value:g}/{total:g}"

    seconds = [outcome.seconds for outcome in outcomes.values()]
    line = (
        f"{platform} ({harness.SECOND.name}, in the image built for the first exercise): reference {score('reference')}, "
        f"stub {score('stub')}; {sum(seconds) / len(seconds):.1f} s per submission"
    )
    return line + ("" if not problems else "\n  WRONG: " + "; ".join(problems)), not problems


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s" if seconds >= 60 else f"{seconds:.0f} s"


def sandbox_of(note: str) -> str:
    """'process + Landlock (bubblewrap refused: ...)' from the instructors' note."""
    first = next((line for line in note.splitlines() if line.startswith("Sandbox: ")), "")
    if first.startswith("Sandbox: bwrap"):
        return "bwrap"
    kind = first.removeprefix("Sandbox: ").split(" ", 1)[0] or "?"
    landlock = " + Landlock" if "Landlock (ABI" in note else ""
    reason = first.split("): ", 1)[1].rstrip(".").removeprefix("falling back to the plain-process sandbox: ") if "): " in first else ""
    return f"{kind}{landlock} ({reason[:160]})" if reason else f"{kind}{landlock}"


# --- Gradescope --------------------------------------------------------------------------------


def rehearse_gradescope(base: Path, run_folder: Path, log) -> tuple[str, bool]:
    folder = run_folder / "gradescope"
    folder.mkdir()
    sources = package_sources(folder / "layer-package-sources")
    image = folder / "layer-autograder"
    archive = gradescope.build_zip(folder / "autograder.zip")
    source = image / "autograder" / "source"
    source.mkdir(parents=True)
    with zipfile.ZipFile(archive) as opened:  # as Gradescope's harness does: the zip into source/
        for member in opened.infolist():
            opened.extract(member, source)
            (source / member.filename).chmod((member.external_attr >> 16) & 0o777 or 0o644)
    # manual_docker/Dockerfile: run_autograder copied beside source/, made executable.
    shutil.copy2(source / "run_autograder", image / "autograder" / "run_autograder")
    (image / "autograder" / "run_autograder").chmod(0o755)
    build = Container(base, [sources.layer], upper=image, binds=sources.binds, environment=sources.environment)
    log("gradescope: apt-get update && bash /autograder/source/setup.sh (a fresh bookworm root standing in for Ubuntu 22.04) ...")
    setup_seconds = build_step(
        build, "apt-get update && bash /autograder/source/setup.sh && apt-get clean && rm -rf /var/lib/apt/lists/* /tmp/* /var/tmp/*",
        folder / "setup.log", "Gradescope's setup.sh",
    )
    forger = harness.forger_source(
        '[_Path("/autograder"), _Path(_os.environ.get("GRADESCOPE_ROOT", "/autograder"))]',
        {"score": 100.0, "output": "@MARKER@ forged", "tests": [
            {"name": "forged", "score": 100.0, "max_score": 100.0, "output": "@MARKER@"}]},
        ("source/solutions/multi_head_attention.py", "source/grader/exercises/multi_head_attention/hidden/test_reference.py"),
    ).replace("@ROOT@", "/autograder")
    outcomes = {case.name: gradescope_run(base, [sources.layer, image], folder, case, log) for case in cases(forger)}
    problems = judge(outcomes)
    limits = f"{GRADESCOPE_LIMITS['cpus']} CPU, {GRADESCOPE_LIMITS['memory'].replace('M', ' MB')}"
    line = summary("gradescope", outcomes, limits, setup_seconds, problems)

    # The second exercise: its zip's /autograder bound over the image's, so its run_autograder
    # and grader run on what the first's setup.sh installed (the virtualenv, bubblewrap).
    second = folder / harness.SECOND.name
    second_archive = second_handout("gradescope", second / "autograder.zip")
    with zipfile.ZipFile(second_archive) as opened, zipfile.ZipFile(archive) as first:
        differs = [name for name in ("setup.sh", "requirements.txt") if opened.read(name) != first.read(name)]
    outcomes = {}
    for case in second_cases():
        job = second / case.name
        autograder = job / "autograder"
        with zipfile.ZipFile(second_archive) as opened:
            for member in opened.infolist():
                opened.extract(member, autograder / "source")
                (autograder / "source" / member.filename).chmod((member.external_attr >> 16) & 0o777 or 0o644)
        shutil.copy2(autograder / "source" / "run_autograder", autograder / "run_autograder")
        (autograder / "run_autograder").chmod(0o755)
        outcomes[case.name] = gradescope_run(
            base, [sources.layer, image], second, case, log, student_file=harness.SECOND.student_file,
            binds=[f"{autograder}:/autograder"],
        )
    total = float(sum(harness.second_exercise_totals().values()))
    second_line, second_ok = second_summary("gradescope", outcomes, total, differs)
    return line + "\n" + second_line, not problems and second_ok


def gradescope_run(
    base: Path, layers: list[Path], folder: Path, case: Case, log, student_file: str = "multi_head_attention.py",
    binds: tuple[str, ...] | list[str] = (),
) -> Outcome:
    """One submission in a new container from the image, run_autograder as Gradescope runs it."""
    job = folder / case.name.replace(" ", "-")
    (job / "submission").mkdir(parents=True)
    (job / "results").mkdir()
    (job / "submission" / student_file).write_text(case.source)
    container = Container(
        base, layers,
        binds=[*binds, f"{job / 'submission'}:/autograder/submission", f"{job / 'results'}:/autograder/results"],
        timeout=GRADESCOPE_TIMEOUT, **GRADESCOPE_LIMITS,
    )
    started = time.monotonic()
    container.run(["/autograder/run_autograder"], job / "run_autograder.log", report=job / "container.json")
    seconds = time.monotonic() - started
    results_file = job / "results" / "results.json"
    results = json.loads(results_file.read_text()) if results_file.is_file() else None
    note = next((t["output"] for t in (results or {}).get("tests", []) if t.get("visibility") == "hidden" and not t["max_score"]), "")
    text = json.dumps(results) + (job / "run_autograder.log").read_text(errors="replace") if results else ""
    outcome = Outcome(case.name, results["score"] if results else None, seconds, text, sandbox_of(note))
    log(f"  {case.name}: {outcome.score} in {seconds:.0f} s ({memory_used(job)})")
    return outcome


def memory_used(job: Path) -> str:
    try:
        report = json.loads((job / "container.json").read_text())
    except (OSError, ValueError):
        return "no report"
    peak = (
        f"peak {report['peak_memory_bytes'] / 2**20:.0f} MiB, {report['cpu_seconds']:.1f} CPU s, "
        f"throttled {report['times_throttled']} times"
    )
    return peak + (f", {report['oom_kills']} killed for memory" if report["oom_kills"] else "")


# --- PrairieLearn ------------------------------------------------------------------------------


def rehearse_prairielearn(base: Path, cache: Path, run_folder: Path, log) -> tuple[str, bool]:
    folder = run_folder / "prairielearn"
    folder.mkdir()
    sources = package_sources(folder / "layer-package-sources")
    course = folder / "course"
    question = prairielearn.write_question(course, image="mha-grader")
    info = json.loads((question / "info.json").read_text())["externalGradingOptions"]
    python_slim = cache / "python-slim-standin"
    started = time.monotonic()
    if not python_slim.is_dir():  # the FROM image, cached with the base system
        log("prairielearn: a stand-in for python:3.12-slim-bookworm (Debian's python3, /usr/local/bin/python) ...")
        building = cache / ".python-slim-standin.building"
        shutil.rmtree(building, ignore_errors=True)
        build_step(Container(base, [sources.layer], upper=building, binds=sources.binds, environment=sources.environment),
                   PYTHON_SLIM_STANDIN, folder / "setup.log", "the python:3.12-slim stand-in")
        building.rename(python_slim)
    image = folder / "layer-image"
    image.mkdir()
    environment = dict(sources.environment)
    log("prairielearn: the Dockerfile's steps ...")
    for step in dockerfile_steps((course / "Dockerfile").read_text()):
        if step.instruction == "FROM":
            log(f"  FROM {step.argument}: the stand-in")
        elif step.instruction in ("ENV", "ARG"):
            name, _, value = step.argument.partition("=")
            environment.setdefault(name.strip(), value.strip()) if step.instruction == "ARG" else environment.update({name.strip(): value.strip()})
        elif step.instruction == "COPY":
            *names, destination = step.argument.split()
            target = image / destination.lstrip("/")
            target.mkdir(parents=True, exist_ok=True)
            for name in names:
                shutil.copy2(course / name, target / Path(name).name)
        elif step.instruction == "RUN":
            build_step(Container(base, [sources.layer, python_slim], upper=image, binds=sources.binds, environment=environment),
                       step.argument, folder / "setup.log", f"the Dockerfile's RUN {step.argument[:60]}")
        else:
            sys.exit(f"rehearse: the Dockerfile has {step.instruction}, which the rehearsal does not know")
    setup_seconds = time.monotonic() - started
    forger = harness.forger_source(
        '[_Path("/grade"), _Path(_os.environ.get("PRAIRIELEARN_ROOT", "/grade"))]',
        {"gradable": True, "score": 1.0, "message": "@MARKER@ forged", "tests": [
            {"name": "forged", "points": 100, "max_points": 100, "message": "@MARKER@"}]},
        ("tests/solutions/multi_head_attention.py", "tests/grader/exercises/multi_head_attention/hidden/test_reference.py"),
    ).replace("@ROOT@", "/grade")
    runtime_environment = {
        name: value for name, value in environment.items() if not name.startswith("PIP_") and name != "TORCH_INDEX"
    } | (info.get("environment") or {})
    layers = [sources.layer, python_slim, image]

    def grade(job_folder: Path, tests: Path, options: dict, case: Case, student_file: str) -> Outcome:
        """One job in a new container: the question's tests/ and the student's file at /grade."""
        job = job_folder / case.name.replace(" ", "-")
        shutil.copytree(tests, job / "grade" / "tests")
        (job / "grade" / "student").mkdir(parents=True)
        (job / "grade" / "student" / student_file).write_text(case.source)
        container = Container(
            base, layers, network=False, binds=[f"{job / 'grade'}:/grade"],
            environment=runtime_environment, timeout=options["timeout"], **PRAIRIELEARN_LIMITS,
        )
        started = time.monotonic()
        status = container.run(options["entrypoint"].split(), job / "entrypoint.log", report=job / "container.json")
        seconds = time.monotonic() - started
        results_file = job / "grade" / "results" / "results.json"
        results = json.loads(results_file.read_text()) if status == 0 and results_file.is_file() else None
        log_text = (job / "entrypoint.log").read_text(errors="replace")
        score = round(100 * results["score"], 6) if results and results.get("gradable") else None
        log(f"  {case.name}: {score}/100 in {seconds:.0f} s (exit {status}, {memory_used(job)})")
        return Outcome(case.name, score, seconds, json.dumps(results) + log_text, sandbox_of(log_text))

    outcomes = {case.name: grade(folder, question / "tests", info, case, "multi_head_attention.py") for case in cases(forger)}
    problems = judge(outcomes)
    limits = "0.9 CPU, 2 GiB without swap, 1024 processes, no network"
    line = summary("prairielearn", outcomes, limits, setup_seconds, problems)

    # The second exercise: its own question's tests/ at /grade, in the image the first's Dockerfile built.
    second = folder / harness.SECOND.name
    second_course = second_handout("prairielearn", second / "course", "--image", "mha-grader")
    second_question = second_course / "questions" / harness.SECOND.name
    # The Dockerfile's steps (its comments name the question), and the requirements byte for byte.
    differs = [
        name for name, same in (
            ("the Dockerfile's steps", dockerfile_steps((second_course / "Dockerfile").read_text()) == dockerfile_steps((course / "Dockerfile").read_text())),
            ("requirements.txt", (second_course / "requirements.txt").read_bytes() == (course / "requirements.txt").read_bytes()),
        ) if not same
    ]
    second_info = json.loads((second_question / "info.json").read_text())["externalGradingOptions"]
    outcomes = {
        case.name: grade(second, second_question / "tests", second_info, case, harness.SECOND.student_file) for case in second_cases()
    }
    second_line, second_ok = second_summary("prairielearn", outcomes, 100.0, differs)
    return line + "\n" + second_line, not problems and second_ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", choices=("gradescope", "prairielearn"), action="append")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("REHEARSAL_CACHE") or Path.home() / ".cache" / "mha-grader-rehearsal"))
    parser.add_argument("--rebuild", action="store_true", help="build the base systems again")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "rehearsal")
    arguments = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("run as root (cgroups, namespaces and chroot need it)")
    missing = [what for what, ok in (
        ("debootstrap", shutil.which("debootstrap")),
        ("python3-seccomp", subprocess.run(["/usr/bin/python3", "-c", "import seccomp"], capture_output=True).returncode == 0),
        ("cgroup v1 cpu, memory and pids", all(Path("/sys/fs/cgroup", c, "cgroup.procs").exists() for c in ("cpu", "memory", "pids"))),
    ) if not ok]
    if missing:
        parser.error(f"missing: {', '.join(missing)} (apt-get install debootstrap python3-seccomp)")

    def log(text: str) -> None:
        print(text, flush=True)

    started = time.monotonic()
    if arguments.rebuild:
        shutil.rmtree(arguments.cache / "python-slim-standin", ignore_errors=True)
    base = base_system(arguments.cache, arguments.rebuild, log)
    run_folder = arguments.out / time.strftime("%Y%m%d-%H%M%S")
    run_folder.mkdir(parents=True)
    log(f"rehearsal files: {run_folder}")
    log("stand-ins: Debian 12 roots (not Ubuntu 22.04, not python:3.12-slim); PyTorch's CPU index is out of "
        "reach here, so torch comes from pip's configured sources (grader/torch_index.py's fallback)")
    lines, right = [], True
    for platform in arguments.platform or ["gradescope", "prairielearn"]:
        if platform == "gradescope":
            line, ok = rehearse_gradescope(base, run_folder, log)
        else:
            line, ok = rehearse_prairielearn(base, arguments.cache, run_folder, log)
        lines.append(line)
        right = right and ok
    print()
    print("\n".join(lines))
    print(f"rehearsal: {minutes(time.monotonic() - started)} in all")
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main())
