"""What a notebook's setup cell runs to install the student grader into its own kernel.

``install_grader`` is written into the setup cell of a notebook made with ``--install-from SPEC``
(grader/handout/notebook.py copies its source), for when no grader/ folder is beside the notebook:
Google Colab or a hosted Jupyter, where the student has the notebook alone. It is real code here
so that it can be read, linted and tested like the rest; the notebook holds a copy, since nothing
of the grader is importable before it runs.

* It installs SPEC into the kernel's own Python, as ``%pip install`` does: IPython's %pip runs
  ``sys.executable -m pip`` (ipython/ipython, IPython/core/magics/packaging.py); it is run here
  through subprocess for its exit code and its messages.
* The kernel's torch and numpy are pinned, by a constraint file, at the versions installed: pip
  adds what is missing (pytest, pytest-timeout) but never replaces the kernel's torch (Colab's is a
  CUDA build of its own). Where the grader's requirements cannot be met with them, pip stops and
  the cell says so.
* It returns None when the grader is installed, else one sentence saying why not and what to do.

Otter-Grader's Colab notebooks need the same first step: its generated notebooks begin with a
``%pip install otter-grader`` cell (ucbds-infra/otter-grader#861). On Colab no file is beside the
notebook, not even the notebook itself, so tests read from files fail there
(ucbds-infra/otter-grader#901): hence a package, and checks that read the cells the kernel ran.
"""

from __future__ import annotations

import inspect



def install_grader(spec, distribution, kept=("torch", "numpy")):
    """Install the grader from ``spec`` into this kernel, keeping its torch and numpy as they are.
    None when it is installed (or was already), else why not, in one sentence."""
    import importlib
    import importlib.metadata
    import subprocess
    import sys
    import tempfile

    try:
        importlib.metadata.version(distribution)
        return None  # installed by an earlier run of the setup cell
    except importlib.metadata.PackageNotFoundError:
        pass
    pins = []
    for name in kept:
        try:
            pins.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pass  # not installed: pip may install it
    keeping = f", keeping this kernel's {' and '.join(pins)}" if pins else ""
    print(f"Installing the grader from {spec}{keeping} ...", flush=True)
    # The constraint file lives as long as pip runs: the cell leaves nothing in the temporary folder.
    with tempfile.TemporaryDirectory(prefix="kernel-keeps-") as folder:
        constraints = f"{folder}/constraints.txt"
        with open(constraints, "w", encoding="utf-8") as pinned:
            pinned.write("".join(pin + "\n" for pin in pins))
        # --no-color: in a kernel pip colours its messages (escape codes around "ERROR:").
        command = [sys.executable, "-m", "pip", "install", "--no-color", "--constraint", constraints, spec]
        finished = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if finished.returncode != 0:
        said = [line.strip() for line in (finished.stderr + finished.stdout).splitlines() if line.strip()] or ["pip said nothing"]
        # pip's most telling line: what the grader needs that this kernel cannot give (a
        # conflict with the kept torch), else its first error (offline: no such file or host).
        telling = [line for line in said if " depends on " in line] + [line for line in said if line.startswith("ERROR:")]
        reason = (telling or said[-1:])[0]
        return (
            f"The grader could not be installed from {spec} ({reason}): check that this notebook is online "
            "and run this cell again, or tell your instructor."
        )
    importlib.invalidate_caches()  # the new package's folder appeared after the kernel started
    return None


def source() -> str:
    """The function's text, as the setup cell holds it."""
    return inspect.getsource(install_grader)
