"""The student grader as one wheel, and the setup cell of a notebook that has nothing beside it.

What a notebook alone in a real kernel does with them is tests/test_colab.py (slow); here, what
can be seen without a fresh environment: what the wheel holds and declares, what the setup
cell says when it has no grader and cannot install one, and that the checks hide the GPU.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbclient import NotebookClient

import grader
from grader import notebook_checks
from grader.handout import kernel_install, notebook, release, stubs, wheel
from grader.platforms import nbgrader_course
import shared
from grading import REPO_ROOT
import tiers

# Every folder of grader/ but the student's grader's own (grader.STUDENT_SUBPACKAGES): hidden/,
# sandbox/, the term, the class view, the batch, the LMS, the hand-outs, the platforms.
INSTRUCTOR_LAYERS = tuple(
    f"grader/{folder.name}/" for folder in sorted((REPO_ROOT / "grader").iterdir())
    if (folder / "__init__.py").is_file() and folder.name not in grader.STUDENT_SUBPACKAGES
)
assert {"grader/hidden/", "grader/sandbox/", "grader/batch/", "grader/platforms/"} <= set(INSTRUCTOR_LAYERS)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    finished = subprocess.run([sys.executable, "-m", "grader", "wheel", str(out)], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    (path,) = out.glob("*.whl")
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    return SimpleNamespace(path=path, entries=entries, said=finished.stdout)


def dist_info(entries: dict[str, bytes], name: str) -> str:
    (found,) = [path for path in entries if path.endswith(f".dist-info/{name}")]
    return entries[found].decode()


# --- what the wheel holds ---------------------------------------------------------------


def test_the_wheel_holds_the_graders_own_files_and_nothing_of_the_instructors(built):
    assert built.path.name == f"multi_head_attention_grader-0.1.0-py3-none-any.whl"
    package = {name for name in built.entries if not ".dist-info/" in name}
    assert not [name for name in built.entries if name.startswith(INSTRUCTOR_LAYERS)]
    assert package == {relative for relative, _ in release.own_files()} | {"grader/scaffolding.txt"}
    for needed in ("grader/conftest.py", "grader/notebook_checks.py", "grader/exercises/multi_head_attention/visible/test_reference_examples.py",
                   "grader/exercises/multi_head_attention/reference_examples.json"):
        assert needed in package, needed
    assert built.entries["grader/scaffolding.txt"] == b"standard\n"
    assert not [name for name in built.entries if name.startswith(("solutions/", "tests/", "exercises/"))]


def test_no_line_of_solution_text_is_in_the_wheel(built):
    assert wheel.leaked_solution_lines(built.path, "standard") == []
    assert "no solution text found in it" in built.said


@pytest.mark.slow  # the scan of tests/test_release.py: once per run for both (tests/shared.py)
def test_no_function_of_the_wheel_computes_the_references_numbers(built, tmp_path, tmp_path_factory):
    """The behaviour scan of tests/test_release.py, on the grader the wheel installs."""
    for name, content in built.entries.items():
        if name.startswith("grader/"):
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_bytes(content)
    # Once per run for these files: the release ships the same (tests/shared.py).
    assert shared.callable_solutions(tmp_path_factory, tmp_path) == []


def test_a_wheel_that_would_hold_solution_text_is_refused_and_not_written(monkeypatch, tmp_path):
    leaky = tmp_path / "notes.py"
    leaky.write_text("    weights = torch.softmax(scores, dim=-1)  # (batch, seq, seq)\n")
    own = release.own_files()
    monkeypatch.setattr(release, "own_files", lambda: own + [("grader/notes.py", leaky)])
    with pytest.raises(wheel.WheelLeak, match=r"grader/notes.py: weights = torch.softmax"):
        wheel.build_wheel(tmp_path / "dist")
    assert list((tmp_path / "dist").iterdir()) == []


def test_the_wheel_declares_requirements_that_accept_the_kernels_torch(built):
    metadata = dist_info(built.entries, "METADATA")
    required = re.findall(r"^Requires-Dist: (.+)$", metadata, flags=re.MULTILINE)
    assert {re.split(r"[<>=!~ ]", line)[0] for line in required} == {"torch", "numpy", "pytest", "pytest-timeout"}
    torch_line = next(line for line in required if line.startswith("torch"))
    assert torch_line == "torch>=2.13" and "==" not in metadata, "a floor that was tested, never a pin"
    assert f"Name: {wheel.distribution_name()}" in metadata and "Requires-Python: >=3.11" in metadata


def test_the_wheels_record_lists_every_file_with_its_hash_as_installers_check_it(built):
    record = dist_info(built.entries, "RECORD").splitlines()
    listed = {}
    for line in record:
        name, digest, size = line.rsplit(",", 2)
        listed[name] = (digest, size)
    assert set(listed) == set(built.entries)
    for name, data in built.entries.items():
        if name.endswith("/RECORD"):
            assert listed[name] == ("", "")
            continue
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert listed[name] == (f"sha256={expected}", str(len(data))), name
    assert "Root-Is-Purelib: true" in dist_info(built.entries, "WHEEL")


def test_the_same_sources_give_the_same_wheel(built, tmp_path):
    again = wheel.build_wheel(tmp_path)
    assert again.read_bytes() == built.path.read_bytes()


# --- the setup cell of a notebook alone ---------------------------------------------------


def execute_alone(text: str, folder: Path) -> nbformat.NotebookNode:
    """The notebook alone in an empty folder, run by nbclient in this environment's kernel
    (which has no grader installed: only this repository has it, and it is not beside)."""
    folder.mkdir()
    nb = nbformat.reads(text, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    client.execute()  # raises if a cell raised: the notebook must run to its end
    return nb


def stream(cell, name: str = "stdout") -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == name)


@pytest.fixture(scope="module")
@tiers.slow_tier("slow")  # notebooks run in kernels without a grader
def alone(tmp_path_factory):
    folder = tmp_path_factory.mktemp("alone")
    missing = "/nonexistent/multi_head_attention_grader-0.1.0-py3-none-any.whl"
    texts = {"nothing configured": notebook.notebook_text(), "install fails": notebook.notebook_text(install_from=missing)}
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = pool.map(lambda item: execute_alone(item[1], folder / item[0].replace(" ", "-")), texts.items())
    return dict(zip(texts, runs)) | {"missing": missing}


def cells_tagged(nb, tag: str) -> list:
    return [cell for cell in nb.cells if cell.cell_type == "code" and tag in cell.metadata.get("tags", [])]


@pytest.mark.parametrize("case", ["nothing configured", "install fails"])
def test_a_notebook_alone_without_a_grader_says_why_once_and_every_check_repeats_it(alone, case):
    nb = alone[case]
    (setup,) = cells_tagged(nb, notebook.SETUP_TAG)
    said = stream(setup).strip().splitlines()
    if case == "nothing configured":
        assert said == ["".join(notebook.NOT_BESIDE)], said
    else:
        kept = f"torch=={importlib.metadata.version('torch')} and numpy=={importlib.metadata.version('numpy')}"
        assert said[0] == f"Installing the grader from {alone['missing']}, keeping this kernel's {kept} ...", said
        assert re.fullmatch(
            rf"The grader could not be installed from {re.escape(alone['missing'])} \(ERROR: Could not install packages "
            r"due to an OSError: .*No such file or directory.*\): check that this notebook is online and run this cell "
            r"again, or tell your instructor\.", said[1]), said
        assert len(said) == 2, said
    for cell in cells_tagged(nb, notebook.CHECK_TAG):
        assert stream(cell).strip() == f"The check could not run. {said[-1]}", stream(cell)
    assert not [o for cell in nb.cells for o in cell.get("outputs", []) if o.output_type == "error" or o.get("name") == "stderr"]


def test_without_a_grader_nbgraders_points_raise_rather_than_count(tmp_path):
    # nbgrader gives a test cell that neither raises nor returns a number its full points.
    setup = notebook.setup_source().replace("import torch", "")
    probe = setup + "\nnotebook_checks.points('shapes', out_of=15)\n"
    finished = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": ""})
    assert finished.returncode == 1 and "RuntimeError: No grader/ folder beside this notebook" in finished.stderr


def test_the_grader_beside_the_notebook_comes_first_even_when_an_install_is_configured():
    setup = notebook.setup_source(install_from="/nonexistent/grader.whl")
    probe = setup.replace("import torch", "").replace("notebook_checks.start()", "print(GRADER_ROOT, GRADER_PROBLEM)")
    finished = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT / "exercises", capture_output=True, text=True,
                              timeout=60, env={**os.environ, "PYTHONPATH": ""})
    assert finished.stdout.strip() == f"{REPO_ROOT} None", finished.stdout + finished.stderr


# --- the commands that write notebooks take --install-from ---------------------------------


def test_notebook_with_install_from_and_filled_writes_both_with_the_install(monkeypatch, tmp_path):
    monkeypatch.setattr(notebook, "REPO_ROOT", tmp_path)  # where it says it wrote them
    monkeypatch.setattr(notebook, "NOTEBOOK_PATH", tmp_path / "exercise.ipynb")
    monkeypatch.setattr(notebook, "LESSON_PATH", tmp_path / "LESSON.md")
    arguments = SimpleNamespace(level="standard", install_from="https://example.org/g.whl", check=False,
                                filled=tmp_path / "filled.ipynb")
    assert notebook.run(arguments) == 0
    for path in (tmp_path / "exercise.ipynb", tmp_path / "filled.ipynb"):
        setup = next(c.source for c in nbformat.read(path, as_version=4).cells if c.get("id") == "setup")
        assert 'install_grader("https://example.org/g.whl", "multi-head-attention-grader")' in setup, path
    assert notebook.run(SimpleNamespace(**(vars(arguments) | {"check": True}))) == 0
    assert notebook.run(SimpleNamespace(**(vars(arguments) | {"check": True, "install_from": None}))) == 1


def test_the_release_with_install_from_holds_it_and_no_solution_text(tmp_path):
    out = release.write_release(tmp_path / "release", install_from="https://example.org/g.whl")
    nb = nbformat.read(out / "exercises" / notebook.NOTEBOOK_PATH.name, as_version=4)
    assert 'install_grader("https://example.org/g.whl"' in nb.cells[[c.get("id") for c in nb.cells].index("setup")].source
    assert release.leaked_solution_lines(out) == []


def test_the_nbgrader_course_with_install_from_looks_for_this_repository_first():
    solution = stubs.SOLUTION_PATH.read_text(encoding="utf-8")
    nb = nbgrader_course.build_source_notebook(solution, {"shapes": 15}, REPO_ROOT, hidden=set(),
                                               install_from="https://example.org/g.whl")
    setup = next(cell.source for cell in nb.cells if cell.get("id") == "setup")
    places = next(line for line in setup.splitlines() if line.startswith("GRADER_PLACES"))
    assert places.startswith(f'GRADER_PLACES = [Path(os.environ.get("{nbgrader_course.ROOT_VARIABLE}"'), places
    assert 'else install_grader("https://example.org/g.whl", "multi-head-attention-grader")' in setup


# --- the checks run on the CPU -------------------------------------------------------------


@pytest.mark.slow
def test_the_checks_see_no_gpu_whatever_the_kernel_has(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # as on a kernel with a GPU
    solution = notebook.exercise_source(stubs.SOLUTION_PATH.read_text(encoding="utf-8"), filled=True)
    seen = "import os\nassert os.environ.get('CUDA_VISIBLE_DEVICES') == '', 'the grader showed a GPU'\n"
    result = notebook_checks.run_grader(solution + "\n" + seen)
    assert result["import_error"] in ("", None), result["import_error"]
    assert result["score"] == result["max_score"], [t["message"] for t in result["tests"] if t["outcome"] != "passed"]


# --- what the setup cell leaves behind -------------------------------------------------------


def test_the_setup_cells_install_leaves_no_file_in_the_temporary_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the cell's constraint file goes
    said = kernel_install.install_grader(str(tmp_path / "no-such-grader.whl"), "no-such-distribution-for-this-test")
    assert said is not None and "could not be installed" in said  # pip ran, and failed on the missing wheel
    assert list(tmp_path.iterdir()) == []
