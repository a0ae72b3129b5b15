"""Loaded by pytest with the hidden tests, so only where grader/hidden/ exists (an instructor's copy).

It switches the diagnosis on (grader/hidden/plugin.py): the known mistakes hold solution
code, so the student's grader never imports them; pytest finds them here instead. Only when
a grading session runs the hidden tests too, which every instructor run (batch, Gradescope,
nbgrader, `pytest grader` at the instructor's desk) does.
"""

from __future__ import annotations

import pytest

from grader.hidden.plugin import DiagnosisPlugin


def pytest_configure(config: pytest.Config) -> None:
    # Historic hook: called as soon as pytest loads this file during collection, before any test runs.
    scoreboard = config.pluginmanager.get_plugin("grader-scoreboard")
    if scoreboard is not None and not config.pluginmanager.has_plugin("grader-diagnosis"):
        config.pluginmanager.register(DiagnosisPlugin(scoreboard, config.getoption("grading_seed")), "grader-diagnosis")
