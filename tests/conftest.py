"""Make the repository root importable (``import grader``) however pytest is started, and
load the suite's own plugins: the tiers' markers and the fast tier's guard (tests/tiers.py)."""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import pytest  # noqa: E402

import shared  # noqa: E402  (tests/ is on the path: pytest puts a conftest's folder there)
import tiers  # noqa: E402
from tiers import pytest_collection_modifyitems  # noqa: E402, F401  (a hook: marks the slow fixtures' tests)

# pytester: tests/test_tiers.py runs pytest inside pytest; golden: figures kept in tests/golden.json
pytest_plugins = ("pytester", "golden")


def pytest_addoption(parser):
    tiers.pytest_addoption(parser)


def pytest_configure(config):
    # The slow tier's markers (slow, platform, browser), one line each in tiers.SLOW_TIER.
    tiers.pytest_configure(config)
    # The grader's own marker, met here when a test imports a module of checks (the hidden
    # tests' draws): grader/session/scoreboard.py registers it for the grader's sessions.
    config.addinivalue_line("markers", "points(n): the points a check of the grader is worth")


@pytest.fixture(scope="session")
@tiers.slow_tier("slow")
def catalogue_run(tmp_path_factory):
    """The whole catalogue graded once for the run, shared by every file and worker (tests/shared.py)."""
    return shared.catalogue_run(tmp_path_factory)
