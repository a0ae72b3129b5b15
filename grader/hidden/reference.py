"""The reference solution, loaded into the grader's process.

It is the instructor's own code (trusted), so importing it here is safe. It is absent
from the student release; only the hidden tests use it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType

from grader.reading import loading
from grader.seam import registry

SOLUTION_PATH = Path(__file__).resolve().parents[2] / "solutions" / registry.exercise().solution


@functools.cache
def reference() -> ModuleType:
    # Its own module name, so that a traceback through it says whose code it is.
    return loading.import_source(SOLUTION_PATH, name="reference_solution")
