"""The seam: the engine finds an exercise by its name, through its declaration, and says clearly
when a name or a declaration is wrong."""

from __future__ import annotations

import pytest

from grader.seam import registry
from grader.seam.declaration import Declaration, Group
from grading import REPO_ROOT


def declared(**changes) -> Declaration:
    fields = dict(
        name="scratch", title="Scratch", student_file="scratch.py", notebook="scratch.ipynb", lesson="LESSON.md",
        solution="scratch.py", functions=("f", "C.forward"), groups=(Group("shapes", "1. shapes"), Group("secret", "2. secret", hidden=True)),
        operations="operations", handle="handle.Handle", data="data",
    )
    return Declaration(**fields | changes)


def test_an_unknown_exercise_is_refused_with_the_names_the_grader_holds():
    # Built from the registry: an exercise added changes no test here.
    held = r", ".join(rf"{name} \(.+\)" for name in registry.names())
    with pytest.raises(registry.UnknownExercise, match=rf"no exercise named 'no_such_exercise': this grader holds {held}$"):
        registry.exercise("no_such_exercise")


def test_a_declaration_states_its_one_hidden_group_last_and_each_group_and_function_once():
    assert declared().hidden_group == "secret" and declared().classes == {"C"} and declared().module_name == "scratch"
    with pytest.raises(ValueError, match="one hidden group, its last"):
        declared(groups=(Group("secret", "1. secret", hidden=True), Group("shapes", "2. shapes")))
    with pytest.raises(ValueError, match="one hidden group"):
        declared(groups=(Group("shapes", "1. shapes"),))
    with pytest.raises(ValueError, match="a group twice"):
        declared(groups=(Group("shapes", "1. shapes"), Group("shapes", "2. shapes", hidden=True)))
    with pytest.raises(ValueError, match="its functions once each"):
        declared(functions=("f", "f"))


def test_the_worker_takes_the_exercises_operations_from_its_declaration():
    declaration = registry.exercise()
    operations = registry.operations()
    assert operations.__name__ == f"grader.exercises.{declaration.name}.{declaration.operations}"
    for relative in registry.worker_modules():
        assert (REPO_ROOT / "grader" / relative).is_file(), relative


def test_the_session_hands_out_the_exercises_own_handle_and_the_release_ships_its_visible_checks():
    from grader.handout import release
    from grader.submission import Submission

    handle = registry.handle()
    assert issubclass(handle, Submission) and handle is not Submission
    for folder in registry.student_folders():
        assert f"grader/{folder}" in release.OWN_FILES_ONLY and (REPO_ROOT / "grader" / folder / "__init__.py").is_file()


def test_the_exercise_graded_is_the_one_chosen_else_the_courses_first_and_a_wrong_choice_is_refused(monkeypatch):
    monkeypatch.delenv(registry.CHOSEN, raising=False)
    first = registry.course_order()[0]
    assert registry.exercise().name == first
    monkeypatch.setenv(registry.CHOSEN, first)
    assert registry.exercise() is registry.exercise(first)
    monkeypatch.setenv(registry.CHOSEN, "no_such_exercise")
    with pytest.raises(registry.UnknownExercise, match="no exercise named 'no_such_exercise'"):
        registry.exercise()


def test_an_exercise_left_out_of_the_course_order_is_refused(monkeypatch):
    import grader.exercises

    monkeypatch.setattr(grader.exercises, "COURSE_ORDER", ())
    with pytest.raises(registry.UnknownExercise, match="COURSE_ORDER leaves out " + ", ".join(registry.names())):
        registry.course_order()


def test_the_hand_out_tools_read_an_exercises_examples_and_scan_case_through_its_declaration_and_do_without(monkeypatch, capsys):
    """The reference examples and the behaviour scan's case are made by the modules the
    declaration names (``examples``, ``scan``); an exercise that declares none gets a sentence
    saying so, not a crash."""
    import dataclasses
    from types import SimpleNamespace

    from grader.handout import behaviour_scan, reference_examples
    from grader.seam import registry

    first = registry.exercise()
    assert reference_examples.examples() is registry.module(first, first.examples)
    assert behaviour_scan.scan() is registry.module(first, first.scan)
    bare = dataclasses.replace(first, examples=None, scan=None)
    monkeypatch.setattr(reference_examples, "EXERCISE", bare)
    monkeypatch.setattr(behaviour_scan, "EXERCISE", bare)
    assert reference_examples.examples() is None and reference_examples.examples_path() is None
    assert reference_examples.run(SimpleNamespace(check=True)) == 0
    assert "declares no reference examples" in capsys.readouterr().out
    with pytest.raises(LookupError, match="declares no behaviour scan"):
        behaviour_scan.reference_case()
