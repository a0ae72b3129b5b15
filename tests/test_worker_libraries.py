"""What a class's files use that costs a child more than its grading (matplotlib, an optimiser) is made
ready once in the worker, for the children after it (grader/sandbox/libraries.py): later children
find it imported, and every child grades as it did when it imported it itself."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.class_view import class_results
from grader.sandbox import libraries, processes
from grading import REPO_ROOT

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"

# A notebook's last cells, as a file: what the child found imported before its own imports, a plot
# and a few training steps (the global generator as it was after them, so the grading is unchanged).
PLOTS_AND_TRAINS = '''

import sys as _sys
print("FOUND already imported:", sorted(name for name in ("matplotlib.pyplot", "sympy") if name in _sys.modules))
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

with torch.random.fork_rng():
    torch.manual_seed(0)
    _model = MultiHeadSelfAttention(8, 2)
    _optimiser = torch.optim.Adam(_model.parameters(), lr=1e-3)
    for _step in range(2):
        _loss = _model(torch.randn(2, 4, 8)).output.pow(2).mean()
        _optimiser.zero_grad()
        _loss.backward()
        _optimiser.step()
fig, axes = plt.subplots(1, 2)
print("FOUND figures:", plt.get_fignums())
'''


def test_a_source_shows_the_uses_the_worker_makes_ready():
    assert libraries.shown_in("import matplotlib.pyplot as plt\n") == {"matplotlib"}
    assert libraries.shown_in("x = 1\nfrom matplotlib import pyplot\n") == {"matplotlib"}
    assert libraries.shown_in("    import numpy as np, matplotlib\n") == {"matplotlib"}
    assert libraries.shown_in("from IPython.display import display\n") == {"IPython"}
    assert libraries.shown_in("opt = torch.optim.Adam(model.parameters())\n") == {"an optimiser"}
    assert libraries.shown_in("from torch import optim\nopt = optim.SGD(params, lr=0.1)\n") == {"an optimiser"}
    # Named in a comment or a string only, or a name that merely contains one: nothing.
    assert libraries.shown_in("# we could plot with matplotlib\ntext = 'import matplotlib'\n") == set()
    assert libraries.shown_in("import mymatplotlibhelpers\nadam_optim.step()\n") == set()


def test_the_worker_makes_a_use_ready_once_a_class_shows_it_often_enough(monkeypatch):
    made = []
    monkeypatch.setattr(libraries, "WARMED_FOR", {"matplotlib": (libraries.WARMED_FOR["matplotlib"][0], lambda: made.append(1))})
    monkeypatch.setattr(libraries, "_SHOWN", {"matplotlib": libraries._SHOWN["matplotlib"]})
    monkeypatch.setattr(libraries, "children_import_alike", lambda: True)
    monkeypatch.setattr(libraries, "gc", type("NoCollector", (), {"freeze": staticmethod(lambda: None)}))

    def class_of(plotting: set[int], size: int) -> list[list[str]]:
        monkeypatch.setattr(libraries, "_shown", libraries.collections.Counter())
        monkeypatch.setattr(libraries, "_sources_seen", 0)
        monkeypatch.setattr(libraries, "_tried", set())
        return [libraries.warm_for_later_children("import matplotlib.pyplot as plt\n" if index in plotting else "x = 1\n")
                for index in range(size)]

    # A lone plotting file (the desk's one submission): nothing, not even after it.
    assert class_of({0}, 1) == [[]] and made == []
    # The second plotting file of a class: once, after it, and never again.
    assert class_of({0, 3, 5, 9}, 12) == [[], [], [], ["matplotlib"], *[[]] * 8] and made == [1]
    # Two files in a hundred plot: each later child would pay more than the two save.
    assert class_of({10, 90}, 100) == [[]] * 100 and made == [1]


SANDBOXES = ("bwrap", "process") if processes.bwrap_available() else ("process",)  # CI has bubblewrap (.ci/run)


@pytest.mark.slow  # a batch of four in each sandbox
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_later_children_find_a_class_s_libraries_ready_and_every_child_grades_alike(tmp_path, sandbox):
    submissions = tmp_path / "class"
    submissions.mkdir()
    names = [f"plots_{index}" for index in range(4)]
    for index, name in enumerate(names):
        (submissions / f"{name}.py").write_text(SOLUTION.read_text() + f"\n# student {index}" + PLOTS_AND_TRAINS)
    out = tmp_path / "out"
    finished = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out), "--quiet", "--jobs", "1",
         "--sandbox", sandbox, "--no-report", "--grading-seed", "3"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
    )
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-3000:]
    results = class_results.read_class_results(out / "results.json")["submissions"]
    found = {name: [line for line in results[name]["output"].splitlines() if line.startswith("FOUND ")] for name in names}
    # Every child grades alike, whatever the worker made ready before it: the same score, outcomes and messages.
    graded = {name: repr((results[name]["score"], results[name]["import_error"], [
        (test["name"], test["outcome"], test.get("message")) for test in results[name]["tests"]])).replace(name, "STUDENT")
        for name in names}  # each check's id and message name the student
    assert len(set(graded.values())) == 1, graded
    if results[names[0]]["import_error"]:
        # The plain-process sandbox started as root, its interpreter where "nobody" cannot read it: the
        # children cannot import matplotlib, and the worker does not import it for the later ones either.
        assert sandbox == "process" and not libraries.children_import_alike()
        return
    assert results[names[0]]["score"] == 100, results[names[0]]
    # Each child's own figure only: nothing the worker made holds one.
    assert all(lines[1] == "FOUND figures: [1]" for lines in found.values()), found
    # The first two children import matplotlib and build an optimiser themselves; after the second, the
    # worker has done both once, and the later children find them done.
    assert sorted(lines[0] for lines in found.values()) == [
        "FOUND already imported: ['matplotlib.pyplot', 'sympy']", "FOUND already imported: ['matplotlib.pyplot', 'sympy']",
        "FOUND already imported: []", "FOUND already imported: []",
    ], found
