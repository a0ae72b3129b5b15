"""What pytest does in every session and for every check that a grading session need not pay for.

A batch shard runs one session per 25 students, some 1,300 checks each, so pytest's own
bookkeeping per session and per check adds up to a share of the grading that the student's
code and the checks themselves do not need. Each measure here leaves what runs, and in which
order, exactly as it was (tests/test_session_plugins.py); each was measured with cProfile on
one shard grading the benchmark's class of 100 (tests/benchmark_batch.py), 63 s of CPU:

* pytest's reordering of the items by fixture scope, 1.8 s: skipped, as the grader orders the
  checks itself (targets.py);
* the hooks of each check found afresh at every call, 2.6 s: found once per test file;
* the argument names of a fixture function read from its signature for every fixture made, some
  four per check (one per parametrized argument, one per ``request``), 0.6 s (of 24 s profiled
  for a class of 40): read once per code object;
* where each check is defined (``Item.location``, which every check's start and end report), found
  for each of a function's checks from its source's path and line afresh (11 us a check, 0.6 ms a
  student): found once per test function.
"""

from __future__ import annotations

import types

import pytest
from _pytest import fixtures


@pytest.hookimpl(wrapper=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_without_pytests_reordering(items: list[pytest.Item]):
    """pytest's reordering by fixture scope (``reorder_items`` in _pytest/fixtures.py, which
    FixtureManager's pytest_collection_modifyitems applies to the items as collected) is skipped
    while this hook runs. For the grader's items it changes nothing that targets.py's order
    keeps: their one parameter above function scope is ``submission``, whose items it gathers in
    the order they were collected, and targets.py sorts them by submission, then by group, then
    in the order collected. ``reorder_items`` is a global of that module, looked up at each call
    (pytest is pinned); it is put back as soon as the hook ends."""
    reorder = fixtures.reorder_items
    fixtures.reorder_items = list  # the items as they are
    try:
        return (yield)
    finally:
        fixtures.reorder_items = reorder


def pytest_collection_finish(session: pytest.Session) -> None:
    """Each of a check's hooks (setup, call, teardown, reports, fixtures: some 9 per check) is
    reached through ``item.ihook``, which asks ``session.gethookproxy(item.path)`` for the hooks
    of the conftest files that apply to the item's folder (_pytest/main.py). grader/hidden/
    holds a conftest file that applies to no check's folder, so pytest builds a new proxy at each
    call and looks up every hook in it again (pluggy's ``subset_hook_caller``). Once collection
    is over no conftest file is loaded any more, and what a proxy finds does not change (a
    subset hook caller reads the hook's implementations when called, so plugins registered
    later are still called): the session keeps one proxy per test file."""
    found = session.gethookproxy
    proxies: dict = {}

    def gethookproxy(fspath):
        proxy = proxies.get(fspath)
        if proxy is None:
            proxy = proxies[fspath] = found(fspath)
        return proxy

    session.gethookproxy = gethookproxy
    _locate_once_per_function(session.items)


def _locate_once_per_function(items: list[pytest.Item]) -> None:
    """``Item.location`` is (the file's path relative to the root, the line, the check's name in
    its module): pytest finds the first two from the function's source (``reportinfo``, which
    reads its code's path and line and makes the path absolute and relative again) for every
    check. The checks of one function, one per submission, share them: each of them gets the
    first's, with its own name (``getmodpath``, the third part of a Function's ``reportinfo``).
    Kept where pytest keeps it (``location`` is a functools.cached_property of ``Item``)."""
    found: dict[int, tuple] = {}
    for item in items:
        function = getattr(item, "obj", None) if type(item) is pytest.Function else None
        if function is None:
            continue
        place = found.get(id(function))
        if place is None:
            found[id(function)] = item.location[:2]
        else:
            item.__dict__["location"] = (*place, item.getmodpath())


def pytest_sessionstart(session: pytest.Session) -> None:
    """For the session, pytest's ``getfuncargnames`` remembers what it found per code object.

    pytest makes a ``FixtureDef`` for every parametrized argument of every check (python.py,
    ``Metafunc.parametrize``: each wraps the one ``get_direct_param_fixture_func``) and one for
    each ``request`` a fixture asks for (fixtures.py, ``RequestFixtureDef``: each a new lambda of
    the same code), and each reads its function's argument names from ``inspect.signature``
    (compat.py, ``getfuncargnames``; fixtures.py imports it by name and calls it from
    ``FixtureDef.__init__`` and ``getfixtureinfo``). For a plain function those names depend only
    on its code, its defaults and ``cls``, so a plain function without defaults and outside a
    class (everything else is asked afresh: a wrapped function, a mock's patchings, a function
    with a signature of its own) is read once per code object. ``getfuncargnames`` is put back
    when the session's configuration is cleaned up."""
    found = fixtures.getfuncargnames
    fixtures.getfuncargnames = _names_once_per_code(found)
    session.config.add_cleanup(lambda: setattr(fixtures, "getfuncargnames", found))


def _names_once_per_code(getfuncargnames):
    names_of: dict[types.CodeType, tuple[str, ...]] = {}

    def getfuncargnames_once(function, *, name: str = "", cls: type | None = None) -> tuple[str, ...]:
        if (cls is not None or type(function) is not types.FunctionType or function.__defaults__
                or function.__kwdefaults__ or "__wrapped__" in function.__dict__
                or "__signature__" in function.__dict__ or "patchings" in function.__dict__):
            return getfuncargnames(function, name=name, cls=cls)
        names = names_of.get(function.__code__)
        if names is None:
            names = names_of[function.__code__] = getfuncargnames(function, name=name, cls=cls)
        return names

    return getfuncargnames_once
