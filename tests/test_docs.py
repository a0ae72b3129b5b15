"""The documentation, tested like code: README.md and every page of docs/.

Every command they show exists and accepts the flags it is shown with: `python -m grader X
...` is parsed by the grader's own parser, a make target is dry-run (`make -n`), a pytest
flag is one `pytest grader --help` lists, a script of the repository exists (and lists the
flags it is shown with in its --help). Commands are read from the fenced shell blocks and
from code spans that start like a command. Every relative link and image points to a file of
the repository, and every anchor (#...) to a heading of its page, by GitHub's rules.
"""

from __future__ import annotations

import atexit
import functools
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader import __main__ as command_line
from grading import REPO_ROOT

README = REPO_ROOT / "README.md"
PAGES = [README, *sorted((REPO_ROOT / "docs").rglob("*.md"))]
SHELL_LANGUAGES = {"sh", "bash", "shell", "console"}
# Programs that are not this repository's: named here so that a command nobody recognises fails.
EXTERNAL = {"cd", "cp", "mv", "git", "gh", "docker", "nbgrader", "for", "zip", "cat", "open", "apt-get"}
# Where the commands write what they generate (gitignored): a script there is made by an earlier step.
GENERATED = REPO_ROOT / "build"
# Python modules run with `-m` that are not this repository's (the set-up's venv and pip).
EXTERNAL_MODULES = {"venv", "pip", "compileall"}
# Commands the pages mention as removed: they must stay refused.
REMOVED_COMMANDS = {"classroom"}
COMMAND_STARTS = ("python ", "python3 ", ".venv/bin/python ", "make ", "sudo make ", "pytest ")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


def page_id(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


# --- reading a page -------------------------------------------------------------------------


def split_fences(text: str) -> tuple[list[tuple[str, list[str]]], str]:
    """(the fenced blocks as (language, lines), the prose with fenced blocks blanked)."""
    blocks, prose, current = [], [], None
    for line in text.splitlines():
        fence = FENCE.match(line)
        if fence and current is None:
            current = (fence.group(2).lower(), [])
            prose.append("")
        elif fence and current is not None and not fence.group(2):
            blocks.append(current)
            current = None
            prose.append("")
        elif current is not None:
            current[1].append(line.strip())
            prose.append("")
        else:
            prose.append(line)
    return blocks, "\n".join(prose)


def code_spans(prose: str) -> list[str]:
    return [span.strip() for span in re.findall(r"(?<!`)`([^`\n]+)`(?!`)", prose)]


def shell_commands(lines: list[str]) -> list[str]:
    """The commands of a shell block: comments dropped, continuations joined, split at && and ;
    a command after `cd DIR` on its line is written `(cd DIR) command`."""
    joined, pending = [], ""
    for line in lines:
        if line.startswith("#") or not line:
            continue
        line = re.sub(r"\s+#\s.*$", "", line)  # a comment after the command
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    commands = []
    for line in joined:
        folder = ""
        for part in (part.strip() for part in re.split(r"&&|;", line) if part.strip()):
            if part.startswith("cd "):
                folder = f"(cd {part[3:].strip()}) "
            commands.append(folder + part if not part.startswith("cd ") else part)
    return commands


def documented_commands(path: Path) -> list[str]:
    blocks, prose = split_fences(path.read_text(encoding="utf-8"))
    commands = [command for language, lines in blocks if language in SHELL_LANGUAGES for command in shell_commands(lines)]
    commands += [span for span in code_spans(prose) if span.startswith(COMMAND_STARTS)]
    return commands


def synopsis_words(command: str) -> list[str]:
    """A command as words; a synopsis's [optional] parts kept, a|b|c choices read as their first."""
    command = command.replace("[", " ").replace("]", " ").replace("...", " ")
    words = shlex.split(command)
    return [word.split("|")[0] if "|" in word and not word.startswith(("http", "'", '"')) else word for word in words]


# --- checking a command ------------------------------------------------------------------------


@functools.cache
def pytest_help(folder: str = "grader") -> str:
    """``pytest FOLDER --help``: the grader's options, or the test suite's (tests/conftest.py's)."""
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", folder, "--help", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stderr
    return finished.stdout


@functools.cache
def script_help(script: str) -> str:
    finished = subprocess.run(
        [sys.executable, script, "--help"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, f"{script} --help: {finished.stderr}"
    return finished.stdout


def flags(words: list[str]) -> list[str]:
    return [word.split("=")[0] for word in words if word.startswith("-") and word != "-"]


PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*")


def accept_placeholders(parser) -> None:
    """A synopsis's `--jobs N`: an option's type accepts an upper-case placeholder, and checks
    every real value as before (a documented `--jobs 0` still fails)."""
    for action in parser._actions:
        if isinstance(action.choices, dict):  # the subcommands' parsers
            for subparser in action.choices.values():
                accept_placeholders(subparser)
        elif action.type is not None and action.choices is None:
            action.type = functools.partial(_placeholder_or, action.type)


def _placeholder_or(convert, text: str):
    return text if PLACEHOLDER.fullmatch(text) else convert(text)


@functools.cache
def example_course() -> str:
    """A course file as `python -m grader course init` writes it: what `--course PATH` stands for."""
    folder = Path(tempfile.mkdtemp(prefix="docs-course-"))
    atexit.register(shutil.rmtree, folder, True)
    assert command_line.main(["course", "init", str(folder / "course.toml")]) == 0
    return str(folder / "course.toml")


def check_grader_command(words: list[str]) -> str | None:
    """None when the grader's parser accepts ``words`` (after ``python -m grader``), else why not."""
    if words and words[0] in REMOVED_COMMANDS:
        return None if words[0] not in command_line.BY_NAME else f"{words[0]} is documented as removed but exists"
    if words and PLACEHOLDER.fullmatch(words[0]):  # `python -m grader COMMAND --help`
        return None
    if len(words) == 1 and not words[0].startswith("-"):  # `python -m grader batch` in prose names the command
        return None if words[0] in command_line.BY_NAME else f"no command {words[0]}"
    words = [example_course() if previous == "--course" and PLACEHOLDER.fullmatch(word) else word
             for previous, word in zip(["", *words], words)]
    parser = command_line.parser_for(words)  # reads the --course file it is given
    accept_placeholders(parser)
    try:
        parser.parse_args(words)
    except SystemExit as exit_status:
        if exit_status.code != 0:  # --help exits 0
            return f"python -m grader refuses {shlex.join(words)}"
    return None


ALTERNATIVES = re.compile(r"\[([^\[\]]*\s\|\s[^\[\]]*)\]")  # [--force | --only ID...]


def check_command(command: str) -> str | None:
    """None when the command, and each of its synopsis's alternatives, exists and takes its flags."""
    group = ALTERNATIVES.search(command)
    if group:
        for choice in group.group(1).split(" | "):
            problem = check_command(command[:group.start()] + f"[{choice.strip()}]" + command[group.end():])
            if problem:
                return problem
        return None
    return check_one_command(command)


def check_one_command(command: str) -> str | None:
    """None when the command exists and takes the flags it is shown with, else what is wrong."""
    folder = REPO_ROOT
    moved = re.match(r"\(cd (\S+)\) (.*)", command)
    if moved:
        folder, command = REPO_ROOT / moved.group(1), moved.group(2)
    words = synopsis_words(command)
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):  # VARIABLE=value before a command
        words = words[1:]
    if words[:1] == ["sudo"]:
        words = words[1:]
    if not words:
        return None
    program, rest = words[0], words[1:]
    if program == "make":
        targets = [word for word in rest if "=" not in word and not word.startswith("-")]
        finished = subprocess.run(
            ["make", "-n", "-C", str(REPO_ROOT), *rest], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )
        return None if finished.returncode == 0 and targets else f"make -n {shlex.join(rest)}: {finished.stderr.strip()}"
    if program == "pytest":
        rest = ["-m", "pytest", *rest]
    elif program.endswith(("python", "python3")):
        pass
    elif program in EXTERNAL:
        return None
    else:
        return f"{program}: not a command of this repository nor one listed in EXTERNAL"
    if rest[:1] == ["-m"]:
        module, arguments = rest[1], rest[2:]
        if module == "grader":
            return check_grader_command(arguments)
        if module == "pytest":
            suite = "tests" if arguments and arguments[0].split("/")[0] == "tests" else "grader"
            listed = pytest_help(suite)
            unknown = [flag for flag in flags(arguments) if not re.search(rf"(^|[\s,]){re.escape(flag)}\b", listed, re.M)]
            return f"pytest does not list {unknown}" if unknown else None
        return None if module in EXTERNAL_MODULES else f"python -m {module}: not a module this repository documents"
    script, arguments = rest[0], rest[1:]
    if GENERATED in (folder / script).resolve().parents:
        return None  # written by an earlier step of the same page
    if not (REPO_ROOT / script).is_file():
        return f"{script} does not exist"
    unknown = [flag for flag in flags(arguments) if flag not in script_help(script)] if flags(arguments) else []
    return f"{script} --help does not list {unknown}" if unknown else None


COMMANDS = [(page_id(path), command) for path in PAGES for command in documented_commands(path)]


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[f"{page}: {command[:60]}" for page, command in COMMANDS])
def test_every_command_the_documentation_shows_exists_and_takes_its_flags(page, command):
    assert check_command(command) is None, f"{page}: `{command}`: {check_command(command)}"


def test_the_command_checker_catches_a_wrong_command():
    assert check_command(".venv/bin/python -m grader batch SUBMISSIONS --out OUT --jobz 2") is not None
    assert check_command("python -m grader gradescope a.zip --hidden-visibility sometimes") is not None
    assert check_command("make no-such-target") is not None
    assert check_command("pytest grader --no-such-flag") is not None
    assert check_command("pytest tests --no-such-flag") is not None
    assert check_command("pytest grader --unmarked-limit 10") is not None  # the test suite's option, not the grader's
    assert check_command(".venv/bin/python exercises/no_such_script.py") is not None
    assert check_command("frobnicate --all") is not None
    assert check_command("python -m grader batch SUBMISSIONS --out OUT [--jobs N] [--sandbox auto|bwrap|process]") is None
    assert check_command("python -m grader batch SUBMISSIONS --out OUT [--force | --only ID...]") is None
    assert check_command("python -m grader batch SUBMISSIONS --out OUT [--force | --never ID...]") is not None


# --- links and anchors -----------------------------------------------------------------------


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading. GitHub's "Basic writing and formatting syntax",
    section "Section links": letters lower-cased; spaces replaced by hyphens, any other
    whitespace or punctuation removed; leading and trailing whitespace removed; markup
    removed, leaving its contents. (Duplicates get -1, -2: `anchors`.) Punctuation as
    GitHub's renderer takes it: what is not a letter, mark, digit, `_`, `-` or space."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"(?<!\w)_(.+?)_(?!\w)", r"\1", text)  # _emphasis_
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    return "".join(character for character in text if character.isalnum() or character in "_- ").replace(" ", "-")


def anchors(path: Path) -> set[str]:
    _, prose = split_fences(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for line in prose.splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            slug = github_slug(heading.group(1))
            found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return found


def test_github_slugs_follow_githubs_own_examples():
    # The examples of GitHub's "Section links" (the Greek letter left out: GitHub's own page
    # spells its anchor with a capital).
    assert github_slug("Sample Section") == "sample-section"
    assert github_slug("This'll  be a _Helpful_ Section About the Greek Letter") == "thisll--be-a-helpful-section-about-the-greek-letter"
    assert github_slug("The rehearsal: `make rehearse`") == "the-rehearsal-make-rehearse"


def links(path: Path) -> list[str]:
    _, prose = split_fences(path.read_text(encoding="utf-8"))
    prose = re.sub(r"`[^`\n]+`", "", prose)  # code spans hold no links
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", prose)


LINKS = [(page_id(path), target) for path in PAGES for target in links(path) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize(("page", "target"), LINKS, ids=[f"{page} -> {target}" for page, target in LINKS])
def test_every_relative_link_and_anchor_resolves(page, target):
    path, _, anchor = target.partition("#")
    destination = (REPO_ROOT / page).parent / path if path else REPO_ROOT / page
    assert destination.exists(), f"{page}: {target}: no {destination.relative_to(REPO_ROOT)}"
    assert REPO_ROOT in destination.resolve().parents, f"{page}: {target} leaves the repository"
    if anchor:
        assert destination.suffix == ".md", f"{page}: {target}: an anchor into a file that is not a page"
        assert anchor in anchors(destination), f"{page}: {target}: no heading of that anchor (has {sorted(anchors(destination))})"


def test_the_link_checker_catches_a_broken_anchor(tmp_path):
    page = REPO_ROOT / "docs" / "students.md"
    assert "set-up" in anchors(page)
    assert "no-such-heading" not in anchors(page)


# --- the front page and the pages' shape ------------------------------------------------------


def test_the_readme_is_a_front_page_with_the_two_commands_at_its_top():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    top = "\n".join(lines[:10])
    assert "make grade" in top and "make test" in top


def test_every_page_is_reached_from_the_front_page():
    reached, queue = {README.resolve()}, [README]
    while queue:
        page = queue.pop()
        for target in links(page):
            path = target.partition("#")[0]
            if path.endswith(".md") and not re.match(r"[a-z]+:", path):
                destination = ((page.parent / path) if path else page).resolve()
                if destination.exists() and destination not in reached:
                    reached.add(destination)
                    queue.append(destination)
    assert {page.resolve() for page in PAGES} <= reached


@pytest.mark.parametrize("page", PAGES[1:], ids=page_id)
def test_each_page_opens_with_what_its_reader_wants_to_do(page):
    paragraphs = [block.strip() for block in page.read_text(encoding="utf-8").split("\n\n") if block.strip()]
    assert paragraphs[0].startswith("# ")
    assert paragraphs[1].startswith("You "), f"{page_id(page)} opens with {paragraphs[1][:60]!r}"


def test_the_diagnosis_page_names_every_id_of_the_vocabulary():
    """docs/diagnosis.md's table is the vocabulary of grader/exercises/multi_head_attention/hidden/mistakes.py, row for row and in
    its order: each id, every function it can be found in, its title (words may follow it), then the
    root causes and "unknown". A failure prints the row to paste."""
    from grader.exercises.multi_head_attention.hidden import mistakes
    from grader.feedback import root_causes

    text = (REPO_ROOT / "docs" / "diagnosis.md").read_text(encoding="utf-8")
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines() if line.startswith("| `")]
    ids = [*(mistake.id for mistake in mistakes.MISTAKES), *root_causes.IDS, "unknown"]
    functions_of = {mistake.id: ", ".join(f"`{f}`" for f in mistake.functions) for mistake in mistakes.MISTAKES}
    to_paste = [f"| `{m.id}` | {functions_of[m.id]} | {m.title} |" for m in mistakes.MISTAKES]
    assert [row[0].strip("`") for row in rows] == ids, "the table's rows, in the vocabulary's order:\n" + "\n".join(to_paste)
    for mistake, (_, functions, said), row in zip(mistakes.MISTAKES, rows, to_paste):
        assert functions == functions_of[mistake.id] and said.startswith(mistake.title), row

def test_the_pages_state_the_visible_and_hidden_points_the_checks_give():
    """The points live on the checks' markers: a page that says how many a student sees at the
    desk says what grader/scoring.py computes from them."""
    import re

    from grader import scoring

    visible, hidden = scoring.visible_and_hidden_points()
    said = {"visible": re.compile(r"(\d+) of the 100 points|visible (\d+) points"),
            "hidden": re.compile(r"hidden (\d+)\b")}
    wrong = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for kind, pattern in said.items():
            for match in pattern.finditer(text):
                number = int(next(group for group in match.groups() if group))
                if number != {"visible": visible, "hidden": hidden}[kind]:
                    wrong.append(f"{page_id(page)}: {match.group(0)!r}")
    assert wrong == [], f"the checks give {visible} visible and {hidden} hidden points: {wrong}"
