"""pytest wiring for the grader: ``pytest grader`` grades exercises/, ``pytest grader
--submission PATH`` a file, a notebook or a folder (grader/session/targets.py).

What a session does around the checks is a set of plugins of one job each, in grader/session/
(``pytest_plugins`` below: this is the rootdir conftest of ``pytest grader``, loaded before the
session is configured, as pytest requires of a conftest that names plugins). What stays here
must run before them: the check that no student file shadows torch, and the process's settings.
"""

from __future__ import annotations

import atexit
import gc
from pathlib import Path

import pytest

from grader.reading import shadowing

# Before torch is imported: a torch.py beside the grader would be imported in its place.
shadowing.stop_if_shadowed(Path(__file__).resolve().parent)

import torch  # noqa: E402

from grader import timeouts  # noqa: E402
from grader.session import PLUGINS, choice  # noqa: E402

# Imported by pytest once this module is registered: after pytest_plugin_registered below.
pytest_plugins = ["grader.session.choice", *PLUGINS]


def pytest_plugin_registered(plugin, manager) -> None:
    # Called for this conftest with each plugin registered before it, the session's Config
    # among them, before the plugins above are imported: the exercise is chosen then, before
    # any module that reads it (grader/session/choice.py says where pytest does this).
    if isinstance(plugin, pytest.Config):
        choice.choose_from_the_command_line(plugin)


def pytest_configure(config: pytest.Config) -> None:
    # Tiny tensors: one thread is fastest, and a pool of busy-waiting threads here would
    # steal the cores the worker needs.
    torch.set_num_threads(1)
    _skip_gc_sweep_at_exit(config)
    config.pluginmanager.register(timeouts, "grader-timeouts")


def _skip_gc_sweep_at_exit(config: pytest.Config) -> None:
    """Garbage collection at exit walks every object torch created: pytest's
    unraisable-exception plugin runs gc.collect() five times, and the interpreter's own
    shutdown once more, together over half a second of every grading run. Nothing here
    relies on finalizers: skip pytest's sweeps (as pytest's own pytester does), and let
    the interpreter's last collection find nothing to walk (gc.freeze moves every object
    out of the collector's sight; the process is ending, garbage left uncollected costs
    nothing)."""
    # At exit, not now: a process that goes on after this session (pytest run again
    # in-process) must keep collecting its garbage.
    atexit.register(gc.freeze)
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:  # another pytest version: keep its behaviour
        return
    config.stash[gc_collect_iterations_key] = 0
