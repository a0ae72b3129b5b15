"""The notebook alone, as in Google Colab or a hosted Jupyter, with the kernel's own torch.

A fresh environment stands in for such a kernel: only torch (the pinned CPU wheel, standing in
for the kernel's own build), numpy, ipykernel and nbclient, installed from this machine's own
package files (no network). The notebook lies alone in an empty folder, made with
``--install-from`` the student wheel's file, and nbclient runs it there: its setup cell installs
the grader into that kernel, its check cells grade with the installed grader, and torch is
the same files afterwards as before.

Slow (a fresh environment with torch, and two notebooks graded cell by cell): marked ``platform``,
in a file of its own, so that with ``-n`` the other files do not wait on it.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from grader import scoring
from grader.handout import kernel_install, notebook, wheel
from grading import REPO_ROOT

# The kernel's own torch: the pinned CPU wheel (requirements.txt), or another release to rehearse
# (GRADER_TEST_KERNEL_TORCH=torch==2.14.1; its files must be on this machine too).
KERNEL_TORCH = os.environ.get("GRADER_TEST_KERNEL_TORCH", "torch==2.13.0")
KERNEL_PACKAGES = (KERNEL_TORCH, "numpy", "ipykernel", "nbclient")
KERNEL_NAME = "colab-stand-in"
VISIBLE = scoring.visible_and_hidden_points()[0]  # the points a student's own run can earn


# --- where packages come from without the network -------------------------------------------


def local_package_sources() -> dict[str, str]:
    """pip's settings that name only this machine's own package files (its file: indexes and
    find-links folders, read from pip's configuration), or {} when it has none."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    ).stdout
    indexes, folders = [], []
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        for item in value.strip().strip("'\"").split():
            if key.endswith("index-url") and item.startswith("file:") and item not in indexes:
                indexes.append(item)
            elif key.endswith("find-links") and Path(item).is_dir() and item not in folders:
                folders.append(item)
    if not indexes:
        return {}
    return {
        "PIP_INDEX_URL": indexes[0],  # never the public index: these files alone
        "PIP_EXTRA_INDEX_URL": " ".join(indexes[1:]),
        "PIP_FIND_LINKS": " ".join(folders),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def offline_environment(sources: dict[str, str]) -> dict[str, str]:
    """The environment of the stand-in kernel: local package files only, and nothing that
    would make this repository importable."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    return environment | sources


def run(command: list[str], environment: dict[str, str], cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    finished = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=environment, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    assert finished.returncode == 0, f"{command[:4]} failed:\n{finished.stdout[-3000:]}\n{finished.stderr[-3000:]}"
    return finished


# --- what is installed: torch's files, before and after ------------------------------------

TORCH_STATE = textwrap.dedent("""\
    import hashlib, importlib.metadata, json, os, torch
    dist = importlib.metadata.distribution("torch")
    record = dist.read_text("RECORD")
    init = os.path.join(os.path.dirname(torch.__file__), "__init__.py")
    print(json.dumps({"version": dist.version, "record_sha256": hashlib.sha256(record.encode()).hexdigest(),
                      "init_mtime_ns": os.stat(init).st_mtime_ns, "location": os.path.dirname(torch.__file__)}))
""")
INSTALLED = "import importlib.metadata, json; print(json.dumps(sorted(d.metadata['Name'].lower() for d in importlib.metadata.distributions())))"

EXECUTE = textwrap.dedent("""\
    # Runs one notebook as Jupyter would, from the folder it lies in; writes it back executed.
    import sys
    import nbformat
    from nbclient import NotebookClient

    path = sys.argv[1]
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name=sys.argv[2], resources={"metadata": {"path": sys.argv[3]}})
    try:
        client.execute()
    except Exception as error:  # the test reads the cells' outputs; the error is one of them
        print(f"stopped: {type(error).__name__}")
    nbformat.write(nb, path)
""")


def torch_state(python: Path, environment: dict[str, str], cwd: Path) -> dict:
    return json.loads(run([str(python), "-c", TORCH_STATE], environment, cwd).stdout)


# --- the stand-in kernel, and the two notebooks run in it -----------------------------------


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """A fresh environment with only torch, numpy, ipykernel and nbclient, and the student wheel."""
    sources = local_package_sources()
    if not sources:
        pytest.skip("pip is configured with no local package files (file: index): this test never uses the network")
    work = tmp_path_factory.mktemp("colab")
    environment = offline_environment(sources)
    venv = work / "kernel-env"
    run([sys.executable, "-m", "venv", str(venv)], environment, work)
    python = venv / "bin" / "python"
    # --no-compile: pip's byte-compiling of torch's files is half of this install's time (26 of
    # 52 CPU seconds, measured); the kernel compiles what it imports, into files no check reads
    # (torch_state reads torch's RECORD and its __init__.py, written by the install alone).
    run([str(python), "-m", "pip", "install", "--quiet", "--no-compile", *KERNEL_PACKAGES], environment, work)
    run([str(python), "-m", "ipykernel", "install", "--prefix", str(venv), "--name", KERNEL_NAME], environment, work)
    built = subprocess.run([sys.executable, "-m", "grader", "wheel", str(work / "dist")], cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel_path,) = (work / "dist").glob("*.whl")
    return {"python": python, "environment": environment, "work": work, "wheel": wheel_path,
            "torch_before": torch_state(python, environment, work)}


def run_alone(kernel, text: str, name: str) -> nbformat.NotebookNode:
    """The notebook alone in an empty folder, run there by nbclient in the stand-in kernel."""
    folder = kernel["work"] / f"alone-{name}"
    folder.mkdir()
    path = folder / notebook.NOTEBOOK_PATH.name
    path.write_text(text, encoding="utf-8")
    driver = kernel["work"] / "execute.py"
    driver.write_text(EXECUTE, encoding="utf-8")
    run([str(kernel["python"]), str(driver), str(path), KERNEL_NAME, str(folder)], kernel["environment"], folder)
    assert sorted(p.name for p in folder.iterdir()) == [path.name], "the notebook was not alone"
    return nbformat.read(path, as_version=4)


def outputs_of(nb, tag: str) -> list[str]:
    return ["".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            for cell in nb.cells if cell.cell_type == "code" and tag in cell.metadata.get("tags", [])]


def problems_in(nb) -> list[str]:
    found = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                found.append(f"{cell.id}: {output.ename}: {output.evalue}")
            elif output.output_type == "stream" and output.name == "stderr":
                found.append(f"{cell.id}: stderr: {output.text[:500]}")
    return found


@pytest.fixture(scope="module")
def ran(kernel):
    """A grader that would need a newer torch first (it must be refused, torch kept), then the
    release's stub notebook (what a student opens first; it installs the grader), then the
    notebook filled with the solution (it finds the grader installed)."""
    variant_folder = kernel["work"] / "needs-newer-torch"
    variant_folder.mkdir()
    newer_torch = f"torch>{kernel['torch_before']['version'].split('+')[0]}"  # a release after the kernel's
    newer = tuple(newer_torch if r.startswith("torch") else r for r in wheel.REQUIREMENTS)
    variant = wheel.write_wheel(variant_folder / wheel.wheel_name(), wheel.wheel_entries("standard", requirements=newer))
    refuse = f"{kernel_install.source()}\nprint(install_grader({str(variant)!r}, {wheel.distribution_name()!r}))\n"
    refused = run([str(kernel["python"]), "-c", refuse], kernel["environment"], variant_folder).stdout

    out = kernel["work"] / "release"
    made = subprocess.run([sys.executable, "-m", "grader", "release", str(out), "--install-from", str(kernel["wheel"])],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stdout + made.stderr
    stub = run_alone(kernel, (out / "exercises" / notebook.NOTEBOOK_PATH.name).read_text(encoding="utf-8"), "stub")
    filled = run_alone(kernel, notebook.notebook_text(filled=True, install_from=str(kernel["wheel"])), "filled")
    installed = json.loads(run([str(kernel["python"]), "-c", INSTALLED], kernel["environment"], kernel["work"]).stdout)
    return {"refused": refused, "newer_torch": newer_torch, "stub": stub, "filled": filled, "installed": installed,
            "torch_after": torch_state(kernel["python"], kernel["environment"], kernel["work"])}


@pytest.mark.platform
def test_the_filled_notebook_alone_installs_nothing_twice_and_shows_the_visible_full_marks(ran):
    nb = ran["filled"]
    assert not problems_in(nb), problems_in(nb)
    setup, = outputs_of(nb, notebook.SETUP_TAG)
    assert "Installing" not in setup, "the grader installed by the first notebook was installed again"
    last = outputs_of(nb, notebook.CHECK_TAG)[-1]
    assert f"Score so far: {VISIBLE}/{VISIBLE}" in last and "Every check passes." in last, last
    assert "checked when your work is graded" in last, last  # the hidden group is not in the wheel


@pytest.mark.platform
def test_the_release_stub_notebook_alone_installs_the_grader_and_runs_to_its_end(ran, kernel):
    nb = ran["stub"]
    assert not problems_in(nb), problems_in(nb)
    setup, = outputs_of(nb, notebook.SETUP_TAG)
    kept = f"keeping this kernel's torch=={kernel['torch_before']['version']} and numpy=="
    assert setup.startswith(f"Installing the grader from {kernel['wheel']}, {kept}"), setup
    checks = outputs_of(nb, notebook.CHECK_TAG)
    assert all("Checked by the pytest grader" in text for text in checks), checks
    assert "not written yet: head_dimension" in checks[-1] and f"Score so far: 0/{VISIBLE}" in checks[-1], checks[-1]
    assert nb.cells[-1].cell_type == "markdown" and "File > Download > Download .ipynb" in nb.cells[-1].source


@pytest.mark.platform
def test_the_kernels_torch_is_the_same_files_after_and_only_what_was_missing_was_added(ran, kernel):
    assert ran["torch_after"] == kernel["torch_before"]
    assert kernel["torch_before"]["location"].startswith(str(kernel["work"])), "torch must be the stand-in's own"
    assert {wheel.distribution_name(), "pytest", "pytest-timeout"} <= set(ran["installed"]), ran["installed"]


@pytest.mark.platform
def test_a_grader_needing_another_torch_is_refused_in_one_sentence_and_torch_is_kept(ran, kernel):
    said = ran["refused"].strip().splitlines()
    assert said[0].startswith("Installing the grader from") and f"torch=={kernel['torch_before']['version']}" in said[0], said
    assert re.fullmatch(rf"The grader could not be installed from .*multi-head-attention-grader 0\.1\.0 depends on "
                        rf"{re.escape(ran['newer_torch'])}\): check that this notebook is online and run this cell again, "
                        r"or tell your instructor\.", said[-1]), said
    assert ran["torch_after"] == kernel["torch_before"]


@pytest.mark.platform
def test_the_downloaded_notebook_is_graded_by_the_batch_as_any_notebook(ran, tmp_path):
    # As downloaded: executed, outputs and all. One copy also loses its cells' tags, as a front
    # end may drop metadata: the grader's cells are still known by their first line.
    (tmp_path / "class").mkdir()
    nbformat.write(ran["filled"], tmp_path / "class" / "downloaded.ipynb")
    untagged = nbformat.from_dict(json.loads(json.dumps(ran["filled"])))
    for cell in untagged.cells:
        cell.metadata = {}
    nbformat.write(untagged, tmp_path / "class" / "untagged.ipynb")
    batch = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(tmp_path / "class"), "--out", str(tmp_path / "out"),
         "--quiet", "--jobs", "1", "--sandbox", "process"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert batch.returncode == 0, batch.stdout + batch.stderr
    with open(tmp_path / "out" / "gradebook.csv", newline="") as handle:
        gradebook = {row["submission"]: row["score"] for row in csv.DictReader(handle)}
    assert gradebook == {"downloaded": "100", "untagged": "100"}, gradebook
