"""What a class's files use that costs a child more than grading it does (matplotlib, an optimiser),
made ready once in the worker so that the children forked after it inherit it.

A notebook's plot cell imports matplotlib's pyplot: some 0.8 s in a child, most of it matplotlib
building its font cache afresh in the child's new, empty home (every child's home is new). A
training loop's first optimiser imports torch's compiler front end and sympy: another 0.8 s. The
whole grading of a submission takes some 0.1 s. The worker forks each child from itself
(grader/sandbox/worker.py), so what it has imported is already in every later child's
``sys.modules``. It does so for a use only once a second submission's source shows it (a class that
plots, not a lone file: at the desk a worker grades one submission, and an import after its only
child would be time spent for no one), and only while at least one source in ``SHARE_WORTH_IT``
shows it: every child forked after costs some 8 ms more (a larger process to copy and to end:
matplotlib and an optimiser's modules add 100 MB), which only a class where some use it pays back.
Only the uses of ``WARMED_FOR``: a class that plots pays once per worker, a class that does not pays
nothing, and no name a student writes chooses what the worker imports.

What the child computes is the same either way: its import finds the module in ``sys.modules``, as
the second import in any program does, and nothing the worker makes holds a figure, a thread or a
file of a student's. The worker does it outside any child's time, before the next child is forked
(never while one runs), so no student's clock counts it. And only where every child could import
the same itself: a child of the plain-process sandbox started as root runs as "nobody", who cannot
import what it cannot read (an interpreter under /root): there a plot cell fails for every student
alike (``children_import_alike``), never for the first ones of a class only.
"""

from __future__ import annotations

import collections
import gc
import importlib
import os
import re
import stat
import sys
import tempfile
from pathlib import Path


def _import(*modules: str):
    def warm() -> None:
        for module in modules:
            importlib.import_module(module)
    return warm


def _build_an_optimiser() -> None:
    # An optimiser's constructor imports torch._dynamo (and with it sympy and some 800 modules) the
    # first time one is built; it starts no thread. Built on a tensor of the worker's own, then dropped.
    import torch

    torch.optim.Adam([torch.zeros(1, requires_grad=True)])


# What the worker makes ready, by the use a source shows: (the pattern that shows it, what to do).
# Only what starts no thread (a thread pool inherited across fork() can deadlock a child: scipy's and
# scikit-learn's BLAS start one, so they are not here) and holds nothing of a student's.
WARMED_FOR = {
    # 0.8 s in a child: matplotlib's font cache built in the child's new home
    "matplotlib": (r"^[ \t]*(?:import|from)[ \t]+[^\n#]*?\bmatplotlib\b", _import("matplotlib", "matplotlib.pyplot")),
    # 0.1 s: a notebook's `from IPython.display import ...`
    "IPython": (r"^[ \t]*(?:import|from)[ \t]+[^\n#]*?\bIPython\b", _import("IPython", "IPython.display")),
    # 0.8 s: a training loop's torch.optim.Adam(...), optim.SGD(...)
    "an optimiser": (r"\boptim\.[A-Z]\w*\(", _build_an_optimiser),
}
_SHOWN = {use: re.compile(pattern, re.MULTILINE) for use, (pattern, _) in WARMED_FOR.items()}

# A use is made ready once two sources, and one in this many of those seen, show it: some 800 ms saved
# a source that shows it, some 8 ms more for every child after (measured: a child's CPU and its fork).
SHARE_WORTH_IT = 20
_shown = collections.Counter()  # how many of the sources seen show each use
_sources_seen = 0
_tried: set[str] = set()  # uses made ready, or tried and failed, in this worker: tried once each


def shown_in(source: str) -> set[str]:
    """The uses of ``WARMED_FOR`` that ``source`` shows."""
    return {use for use, pattern in _SHOWN.items() if pattern.search(source)}


def warm_for_later_children(source: str) -> list[str]:
    """Make ready, in this process, what ``source`` uses that an earlier source used too, that
    enough of the sources seen use (``SHARE_WORTH_IT``) and that has not been tried yet; the uses
    made ready. One that fails is left to the child, as before."""
    global _sources_seen
    shown = shown_in(source)
    _sources_seen += 1
    _shown.update(shown)
    wanted = {use for use in shown if _shown[use] >= 2 and _shown[use] * SHARE_WORTH_IT >= _sources_seen} - _tried
    warmed = []
    if not wanted or not children_import_alike():
        return []
    for use in sorted(wanted):
        _tried.add(use)
        try:
            with _a_home_of_its_own():
                WARMED_FOR[use][1]()
        except Exception as error:  # noqa: BLE001 - the child does it itself, as it would have
            print(f"worker: {use} not made ready ahead ({type(error).__name__}: {error})", file=sys.stderr, flush=True)
            continue
        warmed.append(use)
    if warmed:
        # As after the worker's own imports: what is imported for good is kept out of the
        # collector's scans, so that a child does not copy the pages it merely scans.
        gc.freeze()
    return warmed


def children_import_alike() -> bool:
    """Whether a child can import whatever this worker can: it runs as this worker's user, or the
    interpreter's library and its packages are readable by anyone (grader/sandbox/worker.py drops a
    child of a worker run as root to "nobody")."""
    if os.getuid() != 0:
        return True
    import torch  # where the packages are: torch is one of them

    try:
        return all(_readable_by_anyone(folder) for folder in (Path(os.__file__).resolve().parent, Path(torch.__file__).resolve().parent.parent))
    except OSError:  # a folder that cannot be looked at: nor can a child
        return False


def _readable_by_anyone(folder: Path) -> bool:
    return bool(folder.stat().st_mode & stat.S_IROTH) and all(
        above.stat().st_mode & stat.S_IXOTH for above in (folder, *folder.parents))


class _a_home_of_its_own:
    """matplotlib reads its configuration and builds its font cache in MPLCONFIGDIR, else under
    $HOME, and asks fontconfig's ``fc-list`` for the system's fonts, which keeps its cache under
    $XDG_CACHE_HOME or $HOME; the worker's home is the machine's /tmp in the plain-process
    sandbox, where anyone may have left a matplotlibrc or a cache. For the import, all of them
    point to a new folder of the worker's own, as a child's point to its new home: it reads
    nothing of anyone's. MPLCONFIGDIR is "the directory used to store user customizations to
    matplotlib, as well as some caches" (https://matplotlib.org/stable/faq/environment_variables_faq.html);
    the other place it reads a matplotlibrc from is the working folder, the worker's is /
    (``matplotlib_fname`` in matplotlib/__init__.py)."""

    NAMES = ("MPLCONFIGDIR", "HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")

    def __enter__(self) -> None:
        self.before = {name: os.environ.get(name) for name in self.NAMES}
        os.environ.update(dict.fromkeys(self.NAMES, tempfile.mkdtemp(prefix="mha-libraries-")))

    def __exit__(self, *exc) -> None:
        for name, value in self.before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
