"""Gradescope's setup.sh on the images Gradescope offers, with stand-ins for python3 and apt-get.

Gradescope's default base image is Ubuntu 22.04 (gradescope/autograder_samples,
docs/base_images.md), whose python3 is 3.10; the grader needs 3.11. No Ubuntu archive is
reachable here, so each test runs the real setup.sh with a PATH of its own: a ``python3``
that says what the image's says, an ``apt-get`` that records what it was asked and, when
asked for python3.11 as 22.04's universe offers it, puts a real Python 3.11+ on that PATH
(or fails, like an archive without it). The requirements are emptied: what is tested is the
choice of Python, not pip (``make rehearse`` runs the whole setup in a fresh root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grading import REPO_ROOT
from grader.platforms.gradescope import SETUP_SH

# A real interpreter of the version the grader needs, outside any virtualenv.
REAL_PYTHON = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
TOOLS = ("bash", "dirname", "basename", "cat", "env", "rm", "ln", "chmod", "mkdir", "uname", "readlink")

UBUNTU_2204_PYTHON3 = """#!/bin/bash
# Ubuntu 22.04's python3: 3.10.
if [ "${1:-}" = --version ]; then echo "Python 3.10.12"; exit 0; fi
exit 1
"""

APT_GET = """#!/bin/bash
echo "apt-get $*" >> "@LOG@"
case " $* " in
  *" install "*python3.11*)
    if [ "@ARCHIVE_HAS_311@" = yes ]; then ln -sf "@REAL_PYTHON@" "@BIN@/python3.11"; else echo "E: Unable to locate package python3.11" >&2; exit 100; fi ;;
esac
exit 0
"""


def run_setup(tmp_path: Path, python3: str | None, archive_has_311: bool = True) -> tuple[subprocess.CompletedProcess, str, Path]:
    if not REAL_PYTHON.exists():
        pytest.skip(f"no {REAL_PYTHON.name} outside the virtualenv")
    source, bin_folder = tmp_path / "source", tmp_path / "bin"
    (source / "grader").mkdir(parents=True)
    bin_folder.mkdir()
    (source / "setup.sh").write_text(SETUP_SH)
    shutil.copy(REPO_ROOT / "grader" / "torch_index.py", source / "grader" / "torch_index.py")
    (source / "requirements.txt").write_text("# emptied: these tests are about the Python, not the packages\n")
    for tool in TOOLS:
        shutil.which(tool) and (bin_folder / tool).symlink_to(shutil.which(tool))
    log = tmp_path / "apt.log"
    apt = APT_GET.replace("@LOG@", str(log)).replace("@REAL_PYTHON@", str(REAL_PYTHON)).replace("@BIN@", str(bin_folder))
    (bin_folder / "apt-get").write_text(apt.replace("@ARCHIVE_HAS_311@", "yes" if archive_has_311 else "no"))
    if python3 == "ubuntu-22.04":
        (bin_folder / "python3").write_text(UBUNTU_2204_PYTHON3)
    elif python3 == "recent":
        (bin_folder / "python3").symlink_to(REAL_PYTHON)
    for script in bin_folder.iterdir():
        if not script.is_symlink():
            script.chmod(0o755)
    venv = tmp_path / "venv"
    environment = {
        "PATH": str(bin_folder), "GRADER_VENV": str(venv), "TORCH_INDEX": "", "HOME": str(tmp_path),
        **{name: value for name, value in os.environ.items() if name.startswith("PIP_")},
    }
    completed = subprocess.run(
        [str(bin_folder / "bash"), str(source / "setup.sh")], cwd=source, env=environment,
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    return completed, log.read_text() if log.exists() else "", venv


def venv_version(venv: Path) -> tuple[int, int]:
    printed = subprocess.run([str(venv / "bin" / "python"), "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout
    major, minor = printed.split()
    return int(major), int(minor)


@pytest.mark.platform  # setup.sh run with the image's stand-ins: seconds
def test_on_ubuntu_22_04_setup_installs_python_3_11_from_the_archive_and_builds_the_venv_with_it(tmp_path):
    completed, apt, venv = run_setup(tmp_path, "ubuntu-22.04")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert apt.splitlines()[0] == "apt-get update"  # before any install: the image's lists may be stale
    assert "apt-get install -y bubblewrap python3.11 python3.11-venv" in apt
    assert venv_version(venv) >= (3, 11)
    assert "python3 is Python 3.10.12; the grader needs 3.11 or newer: installing python3.11" in completed.stdout
    assert f"the grader runs on Python {sys.version_info.major}.{sys.version_info.minor}" in completed.stdout


@pytest.mark.platform  # setup.sh run with the image's stand-ins: seconds
def test_on_an_image_without_python_setup_installs_python_3_11_too(tmp_path):
    completed, apt, venv = run_setup(tmp_path, None)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "python3 is not installed" in completed.stdout
    assert "python3.11 python3.11-venv" in apt and venv_version(venv) >= (3, 11)


@pytest.mark.platform  # setup.sh run with the image's stand-ins: seconds
def test_where_python3_is_recent_enough_setup_uses_it_and_installs_no_other_python(tmp_path):
    completed, apt, venv = run_setup(tmp_path, "recent")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "python3.11 python3.11-venv" not in apt and "apt-get install -y bubblewrap python3-venv" in apt
    assert venv_version(venv) == sys.version_info[:2]


def test_an_archive_without_python_3_11_stops_setup_with_a_sentence_naming_the_images_to_choose(tmp_path):
    completed, _, venv = run_setup(tmp_path, "ubuntu-22.04", archive_has_311=False)
    assert completed.returncode != 0
    assert "could not install python3.11" in completed.stderr and "Ubuntu 22.04 (default) or 24.04" in completed.stderr
    assert not venv.exists()
