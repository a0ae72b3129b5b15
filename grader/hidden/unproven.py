"""What an exercise's counterfactual raises when it cannot be run (a call not replayable, out of
its calls): the failing check is then neither explained nor not (grader/hidden/plugin.py)."""


class Unproven(Exception):
    """The counterfactual could not be run (not replayable, or out of its calls): not explained."""
