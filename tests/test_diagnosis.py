"""The diagnosis names each known mistake from its numbers, and only then.

Every function of each catalogue entry is probed here directly (the engine of
grader/hidden/diagnosis.py, with the in-process backend), whatever the checks say, so that
a known mistake found in the wrong function, or a diagnosis of a valid rewrite, shows up
even where no check would have asked for one. tests/test_catalogue.py checks the same
through a full grading run.
"""

from __future__ import annotations

import pytest
import torch

import catalogue
from grading import grade
from grader.feedback import root_causes
from grader.feedback import diagnosis_text
from grader.hidden import diagnosis
from grader.exercises.multi_head_attention.hidden import counterfactual, mistakes, probes
from grader.exercises.multi_head_attention.handle import AttentionSubmission as Submission
from grader.submission import InProcessBackend

def verdicts(path) -> dict[str, tuple[str, ...]]:
    """Every function's verdict: known ids, () for unknown; functions that behave are left out."""
    submission = Submission(path.stem, path, InProcessBackend(path)).open()
    assert submission.import_error is None, submission.import_error
    found = {}
    for function in mistakes.FUNCTIONS:
        try:
            verdict = diagnosis.diagnose_function(function, submission)
        except probes.Unusable:
            continue
        if verdict is not None:
            found[function] = verdict
    return found


def named(found: dict) -> set[str]:
    return {id for ids in found.values() for id in ids}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    torch.set_num_threads(1)
    return tmp_path_factory.mktemp("diagnosis")


def catalogue_ids() -> dict[str, set[str]]:
    """Each id the catalogue expects of a submission (its mutants, pairs and rewrites), with
    the names of the entries that expect it."""
    named: dict[str, set[str]] = {}
    for mutant in catalogue.MUTANTS:
        for id in mutant.mistakes:
            named.setdefault(id, set()).add(mutant.name)
    for name, (ids, _) in catalogue.REWRITTEN.items():
        for id in ids:
            named.setdefault(id, set()).add(name)
    return named


def test_the_vocabulary_is_all_there():
    """The vocabulary is grader/exercises/multi_head_attention/hidden/mistakes.py's; its ids are never renamed nor dropped
    (reports and spreadsheets rely on them): every id the catalogue expects is one of them or a
    root cause, and every mistake has a catalogue entry that must be named by it."""
    named = catalogue_ids()
    unknown = {id: sorted(names) for id, names in named.items() if id not in mistakes.BY_ID and id not in root_causes.IDS}
    assert not unknown, f"ids the catalogue expects but the vocabulary lacks: {unknown}"
    untested = [mistake.id for mistake in mistakes.MISTAKES if mistake.id not in named]
    assert not untested, f"known mistakes no catalogue entry exercises: {untested}"
    assert set(root_causes.IDS) <= set(named)


# The catalogue states which submission has which mistake; no other file of tests/ restates the
# vocabulary (a new mistake then touches mistakes.py, the catalogue and the docs' table only).
# The held-out class is a catalogue too, of files planted with mistakes in hands the catalogue
# does not use: which id each file holds is its data, and a new mistake need not appear there.
RESTATES_THE_VOCABULARY = 10
RESTATING_ALLOWED = {"catalogue.py", "held_out_class.py"}


def ids_named(path, ids) -> set[str]:
    """The ids ``path`` spells as string literals."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in ids}


def test_no_test_file_but_the_catalogue_restates_the_vocabulary():
    from pathlib import Path

    ids = {mistake.id for mistake in mistakes.MISTAKES} | set(root_causes.IDS)
    tests = Path(__file__).resolve().parent
    restating = {path.relative_to(tests).as_posix(): len(named) for path in sorted(tests.rglob("*.py"))
                 if path.name not in RESTATING_ALLOWED and len(named := ids_named(path, ids)) >= RESTATES_THE_VOCABULARY}
    assert restating == {}, f"derive from grader/exercises/multi_head_attention/hidden/mistakes.py and tests/catalogue.py instead: {restating}"

def test_every_mistake_has_words_for_a_student():
    for mistake in mistakes.MISTAKES:
        for text in (mistake.title, mistake.why, mistake.fix):
            assert text and len(text) < 400 and "\n" not in text, mistake.id


@pytest.mark.parametrize("name, told", [("masked_fill_result_discarded", True), ("no_mask", False)])
def test_the_fix_says_masked_fill_is_not_in_place_only_to_code_that_threw_its_result_away(folder, name, told):
    path = catalogue.write_implementation(next(m for m in catalogue.MUTANTS if m.name == name), folder)
    (entry,) = diagnosis.Diagnosis(mistakes.HEAD, ("mask_not_applied",)).entries(diagnosis.student_code(path))
    assert ("not in place" in entry["fix"]) == told, entry["fix"]


def test_the_solution_gets_no_diagnosis():
    path = catalogue.SOLUTION_PATH
    assert verdicts(path) == {}


@pytest.mark.parametrize("variant", catalogue.VARIANTS, ids=[v.name for v in catalogue.VARIANTS])
def test_a_valid_variant_gets_no_diagnosis(folder, variant):
    assert verdicts(catalogue.write_implementation(variant, folder)) == {}


# Root causes (a layout slip, randomness) are the grader's own (grader/feedback/root_causes.py), found
# before the diagnosis runs: tests/test_catalogue.py checks them through a grading run.
KNOWN = [m for m in catalogue.MUTANTS if m.mistake and m.mistake not in root_causes.IDS]
UNLISTED = [m for m in catalogue.MUTANTS if not m.mistake]


# check_returns_zero's head_dimension gives 0, and torch warns when the mutant builds its 0-wide layers.
@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors is a no-op:UserWarning")
@pytest.mark.parametrize("mutant", KNOWN, ids=[m.name for m in KNOWN])
def test_a_known_mistake_is_named_and_nothing_else(folder, mutant):
    found = verdicts(catalogue.write_implementation(mutant, folder))
    assert found, f"{mutant.name}: no function found wrong"
    assert named(found) == mutant.mistakes and all(found.values()), f"{mutant.name}: {found}"
    assert all(set(mistakes.BY_ID[id].functions) & set(found) for id in mutant.mistakes)


@pytest.mark.parametrize("mutant", UNLISTED, ids=[m.name for m in UNLISTED])
def test_a_mistake_outside_the_vocabulary_gets_no_known_id(folder, mutant):
    found = verdicts(catalogue.write_implementation(mutant, folder))
    assert named(found) == set(), f"{mutant.name} was given {found}"
    assert found, f"{mutant.name}: the diagnosis did not even see a wrong function"


def test_the_catalogue_has_enough_pairs_of_both_kinds():
    by_name = {m.name: m for m in catalogue.MUTANTS}
    same_function = [p for p in catalogue.PAIRS if len({mistakes.BY_ID[by_name[n].mistake].function for n in p}) == 1]
    assert all(by_name[n].mistake in mistakes.BY_ID for p in catalogue.PAIRS for n in p)
    assert len(catalogue.PAIRS) >= 10
    assert len(same_function) >= 5 and len(catalogue.PAIRS) - len(same_function) >= 5


@pytest.mark.parametrize("pair", catalogue.PAIRS, ids=["+".join(p) for p in catalogue.PAIRS])
def test_both_mistakes_of_a_pair_are_named(folder, pair):
    by_name = {m.name: m for m in catalogue.MUTANTS}
    found = verdicts(catalogue.write_implementation(catalogue.paired(*pair), folder))
    assert named(found) == set().union(*(by_name[n].mistakes for n in pair)) and all(found.values()), f"{pair}: {found}"


def test_a_wrong_function_matching_two_explanations_is_unknown(monkeypatch, tmp_path):
    """Two different known mistakes fitting the numbers is no diagnosis: never a guess."""
    missing_scale = mistakes.BY_ID["missing_scale"]
    twin = mistakes.Mistake("twin_of_missing_scale", mistakes.HEAD, "t", "w", "f", missing_scale.forms)
    monkeypatch.setattr(mistakes, "MISTAKES", (*mistakes.MISTAKES, twin))
    mutant = next(m for m in KNOWN if m.mistake == "missing_scale")
    assert verdicts(catalogue.write_implementation(mutant, tmp_path)) == {mistakes.HEAD: ()}


def test_outcomes_are_compared_strictly():
    value = torch.tensor([[0.25, 0.75], [1.0, float("nan")]], dtype=torch.float64)
    assert diagnosis.same(value, value.clone())
    assert not diagnosis.same(value, value + 1e-6)  # float64: far beyond a valid rewrite's 1e-15
    assert diagnosis.same(value.float(), value + 1e-6)  # float32 answers: the grader's float32 tolerance
    assert not diagnosis.same(value, value[:1])
    assert not diagnosis.same(torch.ones(2, dtype=torch.bool), torch.ones(2))  # a float mask is not a bool one
    assert diagnosis.same(None, torch.zeros(3)) and not diagnosis.same(None, torch.ones(3))
    assert not diagnosis.same(("error", "ValueError"), ("error", "TypeError"))


# --- the same misconceptions written differently (catalogue.REWRITTEN) ------------------------------


@pytest.mark.parametrize("name", catalogue.REWRITTEN)
def test_a_mistake_written_differently_is_named_the_same(folder, name):
    expected, edits = catalogue.REWRITTEN[name]
    path = folder / f"rewritten_{name}.py"
    path.write_text(catalogue.apply_edits(catalogue.SOLUTION_PATH.read_text(), edits, name))
    found = verdicts(path)
    assert found, f"{name}: no function found wrong"
    if expected:
        assert named(found) == expected and all(found.values()), f"{name}: {found}"
    else:
        assert named(found) == set(), f"{name} (outside the vocabulary) was given {found}"


# --- through a grading run: results, terminal, feedback page -----------------------------------------


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("graded")
    by_name = {m.name: m for m in catalogue.MUTANTS}
    paths = [
        catalogue.write_implementation(catalogue.paired("missing_scale", "interleaved_concatenation"), folder),
        catalogue.write_implementation(by_name["sigmoid_instead_of_softmax"], folder),  # outside the vocabulary
        catalogue.write_implementation(catalogue.VARIANTS[0], folder),
    ]
    return grade(paths, folder, "--results-dir", str(folder / "out")), folder / "out"


PAIR = "missing_scale__and__interleaved_concatenation"


def test_results_name_each_mistake_with_the_checks_it_explains(graded):
    run, _ = graded
    entries = run.results[PAIR]["diagnoses"]
    assert [(e["function"], e["mistake"]) for e in entries] == [
        ("AttentionHead.forward", "missing_scale"), ("concatenate_heads", "heads_interleaved"),
    ]
    failed = {t["name"] for t in run.failed_tests(PAIR)}
    for entry in entries:
        assert entry["title"] == mistakes.BY_ID[entry["mistake"]].title
        assert entry["explains"] and set(entry["explains"]) <= failed
    head, concatenation = entries
    assert any(n.startswith("test_concatenation_puts_each_head") for n in concatenation["explains"])
    assert not any(n.startswith("test_concatenation_puts_each_head") for n in head["explains"])
    # By counterfactual: the module's weights come from the heads alone, its output from both
    # mistakes, so no single fix makes an output check pass and it keeps its own message.
    assert any(n.startswith("test_module_weights_agree_with_the_reference_example") for n in head["explains"])
    both = [n for n in failed if n.startswith("test_module_output_agrees_with_the_reference_example")]
    assert both and not set(both) & (set(head["explains"]) | set(concatenation["explains"]))


def test_a_failing_function_that_matches_nothing_is_called_unknown(graded):
    run, _ = graded
    (entry,) = run.results["sigmoid_instead_of_softmax"]["diagnoses"]
    assert (entry["function"], entry["mistake"], entry["explains"]) == ("AttentionHead.forward", "unknown", [])
    assert entry["first_failing_check"] in {t["name"] for t in run.failed_tests("sigmoid_instead_of_softmax")}


def test_a_submission_with_nothing_wrong_gets_no_diagnosis(graded):
    run, _ = graded
    assert run.results[catalogue.VARIANTS[0].name]["diagnoses"] == []


def test_the_terminal_shows_the_diagnosis_first_and_explained_failures_in_one_line(graded):
    run, _ = graded
    output = run.output
    assert output.index(f"diagnosis: {PAIR}") < output.index("FAILURES")
    explained = output[output.index(f"test_concatenation_puts_each_head_in_its_own_block_in_order[{PAIR}]"):]
    assert explained.splitlines()[1].endswith("[explained by the diagnosis above]")
    assert "hint:" not in explained.split("\n_")[0]
    failures = output[output.index("FAILURES"):]
    unexplained = failures[failures.index("test_every_row_of_every_head_sums_to_one[sigmoid_instead_of_softmax"):]
    # Not explained: the whole message stays (expected / got; no hint, as no premise is checked).
    assert "  expected:" in unexplained.split("\n_")[0] and "  got:" in unexplained.split("\n_")[0]


def test_the_feedback_page_puts_the_diagnosis_before_the_failing_checks(graded):
    _, out = graded
    page = (out / "feedback" / f"{PAIR}.md").read_text()
    assert page.index("## What went wrong") < page.index("## Failing checks")
    assert mistakes.BY_ID["missing_scale"].fix in page and mistakes.BY_ID["heads_interleaved"].why in page
    folded = page.split("## Failing checks", 1)[1].split("\n### ", 1)[0]
    assert "(explained abo" in folded and "hint:" not in folded  # explained failures: no menu of hints
    unknown = (out / "feedback" / "sigmoid_instead_of_softmax.md").read_text()
    assert "matches none of the known ones" in unknown and "got:" in unknown


def test_a_function_not_written_yet_or_not_defined_is_not_diagnosed(tmp_path):
    """Stubs are reported as "not written yet" by the score table, not as unknown mistakes."""
    source = catalogue.implementation_source(next(m for m in KNOWN if m.mistake == "missing_scale"))
    body = "    outputs = [result.output for result in head_results]  # each (batch, seq, head_dim)\n"
    stubbed = source.replace(body, "    raise NotImplementedError\n" + body)
    undefined = source.replace("def concatenate_heads(", "def concatenate_all_heads(")
    for name, text in (("stubbed", stubbed), ("undefined", undefined)):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        assert verdicts(path) == {mistakes.HEAD: ("missing_scale",)}, name


@pytest.mark.slow
def test_an_endless_loop_met_only_by_the_diagnosis_stops_and_costs_no_point(tmp_path):
    """The probes' sizes are their own; code looping only there must not hang the run."""
    source = catalogue.implementation_source(next(m for m in KNOWN if m.mistake == "missing_scale"))
    size = probe_size_no_check_uses(grading_seed=7)
    looping = source.replace(
        "        queries = self.query(inputs)  # (batch, seq, head_dim)\n",
        f"        while tuple(inputs.shape) == {size}:  # a probe's size, never a check's\n            pass\n"
        "        queries = self.query(inputs)  # (batch, seq, head_dim)\n",
    )
    assert looping != source
    options = ("--timeout", "3", "--grading-seed", "7")
    plain = grade([write_source(tmp_path / "plain", "mistake.py", source)], tmp_path / "plain", *options)
    run = grade([write_source(tmp_path / "loops", "mistake.py", looping)], tmp_path / "loops", *options)
    assert run.results["mistake"]["diagnoses"] == []
    assert run.score("mistake") == plain.score("mistake") < 100
    assert plain.diagnosed("mistake") == {"missing_scale"}


def probe_size_no_check_uses(grading_seed: int) -> tuple:
    from grader.exercises.multi_head_attention import data
    from grader.exercises.multi_head_attention.hidden import test_reference

    used = {(c.batch, c.seq, c.model_dim) for c in (*data.SHAPE_CONFIGS, *data.PROPERTY_CONFIGS)}
    used |= {(c.batch, c.seq, c.model_dim) for d in test_reference.DRAWS for c in [test_reference.drawn_config(grading_seed, d)]}
    sizes = [(p.config.batch, p.config.seq, p.config.model_dim) for p in probes.for_seed(grading_seed)[mistakes.HEAD]]
    return next(size for size in sizes if size not in used and size[1] > 5)


def test_the_probes_are_drawn_from_the_grading_seed():
    """A submission cannot tell the diagnosis's probes by their sizes (they change with the
    seed, as the hidden checks' data does), and one seed always gives the same probes."""
    def sizes(seed):
        return [(p.config.batch, p.config.seq, p.config.model_dim) for p in probes.for_seed(seed)[mistakes.HEAD]]

    assert sizes(11) == sizes(11)
    assert len({tuple(sizes(seed)) for seed in range(8)}) > 4
    for seed in range(8):
        for probe in probes.for_seed(seed)[mistakes.HEAD]:
            c = probe.config
            assert len({c.batch, c.seq, c.model_dim, c.head_dim, c.head_dim**2}) == 5 and c.num_heads > 1


def write_source(folder, name: str, text: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_a_reply_in_a_dtype_numpy_lacks_is_compared_not_a_crash(dtype):
    reference = torch.linspace(-1, 1, 6, dtype=torch.float64).reshape(2, 3)
    assert diagnosis.same(reference.to(dtype), reference.to(dtype)) is True
    assert diagnosis.same(reference.to(dtype), torch.zeros(2, 3, dtype=dtype)) is False


# --- crashes: compared by what they say, and never a diagnosis by themselves --------------------


def test_a_crash_matches_a_mistake_only_when_it_says_the_same(tmp_path):
    """A float32 cast raises a dtype error on the float64 probes; a mask of the wrong size raises
    a size error. Both are RuntimeErrors: the same type is not the same failure."""
    path = write_source(tmp_path, "float32_module.py", catalogue.implementation_source(
        next(m for m in UNLISTED if m.name == "module_computes_in_float32")
    ))
    assert verdicts(path) == {mistakes.MODULE: ()}


def test_a_function_that_only_ever_crashes_is_not_given_a_known_id(tmp_path):
    """The module crashes on every probe, with the very words a known pair would raise (it has
    that pair, the mask sized by the batch whatever mask it is given): a crash shows that it
    crashes, not which misconception is behind it, so the diagnosis says "unknown"."""
    source = catalogue.SOLUTION_PATH.read_text(encoding="utf-8").replace(
        "        if allowed_mask is None:\n            " + catalogue._DEFAULT_MASK_LINE,
        "        allowed_mask = causal_mask(inputs.shape[0], device=inputs.device)",
    )
    found = verdicts(write_source(tmp_path, "crashes_only.py", source))
    assert found == {mistakes.MODULE: ()}


def test_a_crash_reproduced_beside_an_answer_is_named(tmp_path):
    """The mask sized by the batch crashes only without a mask: the module answers the custom
    mask right, and that answer with the crash's very words names the mistake."""
    mutant = next(m for m in KNOWN if m.mistake == "default_mask_wrong_size")
    assert verdicts(catalogue.write_implementation(mutant, tmp_path)) == {mistakes.MODULE: ("default_mask_wrong_size",)}


# --- counterfactuals: the reference's outputs, only for the check's own data ---------------------


def test_a_replaced_head_is_answered_only_on_the_data_the_check_sent(tmp_path):
    """The stand-in receives the reference head's outputs for a call the check itself made (its
    inputs, one of its heads' weights), and nothing for data the student's code picked: the
    counterfactual is no oracle of the reference."""
    from grader.exercises.multi_head_attention import data
    from grader.exercises.multi_head_attention.hidden import counterfactual

    path = catalogue.write_implementation(next(m for m in KNOWN if m.mistake == "missing_scale"), tmp_path)
    submission = Submission(path.stem, path, InProcessBackend(path)).open()
    replaced = counterfactual.Replaced(submission, mistakes.HEAD, [0])
    config = data.Config(batch=2, seq=5, model_dim=6, num_heads=2)
    rng = data.generator(3)
    arguments = {"parameters": data.attention_parameters(config, rng), "inputs": data.random_inputs(config, rng)}
    got = replaced.run_attention(model_dim=6, num_heads=2, **arguments)
    reference = counterfactual.reference().MultiHeadSelfAttention(6, 2)
    reference.load_state_dict(arguments["parameters"])
    assert torch.allclose(got["output"], reference(arguments["inputs"]).output, atol=1e-6)
    head = {n.removeprefix("heads.0."): v for n, v in arguments["parameters"].items() if n.startswith("heads.0.")}
    mask = data.causal_allowed(5)
    assert "output" in replaced._answer({"parameters": head, "inputs": arguments["inputs"], "allowed_mask": mask})
    for other in ({"inputs": arguments["inputs"] + 1}, {"parameters": {n: v + 1 for n, v in head.items()}}):
        asked = {"parameters": head, "inputs": arguments["inputs"], "allowed_mask": mask, **other}
        assert replaced._answer(asked) == {"unanswerable": True}
    # The head's backward pass is served too: the module's gradients are the reference's.
    output_gradient = torch.randn(2, 5, 6, generator=rng)
    got = replaced.run_attention(model_dim=6, num_heads=2, **arguments, output_gradient=output_gradient)
    inputs = arguments["inputs"].clone().requires_grad_()
    loss = (reference(inputs).output * output_gradient).sum()
    expected = torch.autograd.grad(loss, [inputs, reference.heads[1].key.weight])
    assert torch.allclose(got["input_gradient"], expected[0], atol=1e-6)
    assert torch.allclose(got["parameter_gradients"]["heads.1.key.weight"], expected[1], atol=1e-6)
    # The concatenation's backward pass is served too, and a module replaced by the reference's
    # steps backpropagates through the student's own heads and concatenation: both right in this
    # file (its mistake is the head's), so the gradients are the student's own.
    own = submission.run_attention(model_dim=6, num_heads=2, **arguments, output_gradient=output_gradient)
    for function in (mistakes.CONCATENATE, mistakes.MODULE):
        replaced = counterfactual.Replaced(submission, function, [0])
        got = replaced.run_attention(model_dim=6, num_heads=2, **arguments, output_gradient=output_gradient)
        assert torch.allclose(got["input_gradient"], own["input_gradient"], atol=1e-6), function
        assert got["parameter_gradients"].keys() == own["parameter_gradients"].keys(), function
        for name, gradient in own["parameter_gradients"].items():
            assert torch.allclose(got["parameter_gradients"][name], gradient, atol=1e-6), (function, name)


def test_a_hidden_check_a_diagnosis_could_not_replay_is_not_named_where_hidden_checks_are_not():
    """The entry's ``unreplayable`` names checks as ``explains`` does: a platform that does not
    show the hidden checks yet shows neither list's hidden names."""
    from grader.platforms.autograder import HIDDEN_GROUP, shown_diagnoses

    document = {
        "tests": [{"name": "test_seen[x]", "group": "causal_masking"}, {"name": "test_secret[x]", "group": HIDDEN_GROUP}],
        "diagnoses": [{"function": "MultiHeadSelfAttention", "mistake": "shared_head_module", "explains": ["test_seen[x]"],
                       "unreplayable": ["test_seen[x]", "test_secret[x]"]}],
    }
    (entry,) = shown_diagnoses(document, hidden_details=False)
    assert entry["unreplayable"] == ["test_seen[x]"] and entry["explains"] == ["test_seen[x]"]
    assert shown_diagnoses(document, hidden_details=True)[0]["unreplayable"] == ["test_seen[x]", "test_secret[x]"]


# --- where to start looking, and what the answers show (issue 48) ------------------------------------
# Forms of this file's own: a head_dimension that raises OverflowError beside a head that computes
# its weights in float64; a concatenate_heads that gives back nothing, in a module that joins its
# heads itself; a causal mask built in any dtype but bool.
_HEAD_DIM_REFUSAL = catalogue._HEAD_DIM_CHECK + "\n" + catalogue._HEAD_DIM_ERROR


def _written(tmp_path, name: str, edits) -> Submission:
    path = tmp_path / f"{name}.py"
    path.write_text(catalogue.apply_edits(catalogue.SOLUTION_PATH.read_text(), edits, name))
    return Submission(name, path, InProcessBackend(path)).open()


def _unknown_entries(found) -> dict[str, dict]:
    return {entry["function"]: entry for d in found for entry in d.entries() if entry["mistake"] == diagnosis.UNKNOWN}


MODULE_CHECK = diagnosis.FailedCheck("test_module_first", frozenset({"run_attention"}))


def test_an_unknown_mistakes_first_failing_check_is_its_own_functions(tmp_path):
    """The module's check fails first on the page (the head's float64 weights), yet head_dimension's
    own check is where its mistake shows."""
    submission = _written(tmp_path, "overflow_and_float64", [
        catalogue.Edit(_HEAD_DIM_REFUSAL, "if num_heads < 1 or model_dim % num_heads:\n        raise OverflowError(f'{model_dim} / {num_heads}')\n"),
        catalogue.Edit(catalogue._SOFTMAX_LINE, "weights = torch.softmax(scores.double(), dim=-1)"),
    ])
    failed = [MODULE_CHECK, diagnosis.FailedCheck("test_head_dimension_own", frozenset({"head_dimension"})),
              diagnosis.FailedCheck("test_head_own", frozenset({"run_head"}))]
    entries = _unknown_entries(diagnosis.diagnose(submission, failed))
    assert entries[mistakes.HEAD_DIMENSION]["first_failing_check"] == "test_head_dimension_own", entries
    assert entries[mistakes.HEAD]["first_failing_check"] == "test_head_own", entries


_JOINED_BY_THE_MODULE = [
    catalogue.Edit(catalogue._CONCAT_LINE, "return None"),
    catalogue.Edit("concatenated = concatenate_heads(head_results)", "concatenated = torch.cat([r.output for r in head_results], dim=-1)"),
]


def test_a_function_the_module_never_calls_is_not_blamed_through_the_module(tmp_path):
    """No check of concatenate_heads' own failed here (it was diagnosed behind another's failures):
    the student is sent to the grader's own call it fails, not to a check of a module that never
    calls it."""
    submission = _written(tmp_path, "joined_by_the_module", _JOINED_BY_THE_MODULE)
    entries = _unknown_entries(diagnosis.diagnose(submission, [MODULE_CHECK], also_suspect={mistakes.CONCATENATE}))
    entry = entries[mistakes.CONCATENATE]
    assert entry["first_failing_check"] == "" and entry["first_failing_probe"].startswith("concatenate_heads on "), entry
    said = diagnosis_text.text_lines([entry])[0]
    assert "test_module_first" not in said and entry["first_failing_probe"] in said, said


def test_a_module_is_shown_to_call_a_function_only_where_it_does(tmp_path):
    own = _written(tmp_path, "joined_by_the_module", _JOINED_BY_THE_MODULE)
    solution = Submission("solution", catalogue.SOLUTION_PATH, InProcessBackend(catalogue.SOLUTION_PATH)).open()
    assert not counterfactual.module_calls(own, mistakes.CONCATENATE, 0)
    assert all(counterfactual.module_calls(solution, function, 0) for function in counterfactual.REPLACEABLE)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.float16, torch.float64])
def test_a_mask_of_ones_and_zeros_is_named_in_any_dtype_but_bool_and_the_dtype_said(tmp_path, dtype):
    (expected,) = next(m for m in catalogue.MUTANTS if m.name == "causal_mask_of_bytes").mistakes
    submission = _written(tmp_path, f"mask_{dtype}".replace("torch.", ""), [
        catalogue.Edit(catalogue._MASK_ONES, f"ones = torch.ones(seq_len, seq_len, dtype={dtype}, device=device)")])
    found = diagnosis.diagnose(submission, [diagnosis.FailedCheck("test_mask", frozenset({"causal_mask"}))])
    (entry,) = [entry for d in found for entry in d.entries()]
    assert entry["mistake"] == expected and f"a {dtype} tensor" in entry["seen"], entry
    assert entry["seen"] in diagnosis_text.text_lines([entry])[1]  # said to the student, before the why


def test_an_exercise_without_a_vocabulary_of_mistakes_is_graded_undiagnosed_and_the_log_says_so(monkeypatch, caplog):
    """The diagnosis reads an exercise's mistakes, probes and tables only through its declaration
    (``mistakes``); one that declares none keeps its failures' own messages, and the grader's log
    says why no diagnosis came."""
    import dataclasses
    import logging
    from types import SimpleNamespace

    from grader.hidden.plugin import DiagnosisPlugin
    from grader.seam import registry

    first = registry.exercise()
    assert diagnosis.vocabulary() is registry.module(first, first.mistakes)
    bare = dataclasses.replace(first, mistakes=None)
    monkeypatch.setattr(registry, "exercise", lambda name=None: bare)
    assert diagnosis.vocabulary() is None
    with pytest.raises(LookupError, match="declares no vocabulary of mistakes"):
        diagnosis.diagnose(object(), [diagnosis.FailedCheck("test_x", frozenset({"anything"}))])
    failing = SimpleNamespace(outcome="failed", name="test_x", message="wrong numbers")
    result = SimpleNamespace(import_error=None, diagnoses=[], tests=[failing, failing], submission="alice")
    plugin = DiagnosisPlugin(scoreboard=None)
    with caplog.at_level(logging.WARNING, logger="grader.hidden.plugin"):
        plugin._diagnose(handle=None, result=result)
        plugin._diagnose(handle=None, result=result)
    assert result.diagnoses == []
    said = [record.getMessage() for record in caplog.records if "vocabulary of mistakes" in record.getMessage()]
    assert said == [f"{first.name} declares no vocabulary of mistakes (its declaration's mistakes): failed checks keep their own messages, none is diagnosed"]
