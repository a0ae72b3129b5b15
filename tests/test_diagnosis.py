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
from grader.hidden import diagnosis, mistakes, probes
from grader.submission import InProcessBackend, Submission

# The vocabulary: ids reports and spreadsheets rely on; they must never disappear.
VOCABULARY = {
    mistakes.HEAD_DIMENSION: {"no_divisibility_check", "error_message_without_numbers"},
    mistakes.CAUSAL_MASK: {"upper_triangle_mask", "mask_without_diagonal", "inverted_mask"},
    mistakes.HEAD: {
        "missing_scale", "scaled_by_head_dim", "scaled_by_model_dim", "scale_power_half", "softmax_over_queries", "mask_after_softmax",
        "mask_not_applied", "head_ignores_given_mask", "mask_polarity_flipped", "returns_scores", "softmax_over_batch",
        "values_not_weighted", "projection_detached",
    },
    mistakes.CONCATENATE: {"concatenated_on_wrong_axis", "heads_interleaved"},
    mistakes.MODULE: {
        "shared_head_module", "identically_initialised_heads", "missing_output_projection",
        "repeated_output_projection", "weights_stacked_on_wrong_axis", "one_head_weights_repeated",
        "module_ignores_given_mask", "default_mask_wrong_size",
    },
}


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


def test_the_vocabulary_is_all_there():
    for function, ids in VOCABULARY.items():
        missing = ids - {mistake.id for mistake in mistakes.of_function(function)}
        assert not missing, f"{function} lacks {sorted(missing)}"


def test_every_mistake_has_words_for_a_student():
    for mistake in mistakes.MISTAKES:
        for text in (mistake.title, mistake.why, mistake.fix):
            assert text and len(text) < 400 and "\n" not in text, mistake.id


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


# --- the same misconceptions written differently, and more mistakes outside the vocabulary ------------
# Held-out submissions will not be the catalogue's exact edits: each entry is a different way to
# write a known mistake (or pair), or a mistake the vocabulary does not hold (expected: no known id).
E = catalogue.Edit
SCALE, MASK, SOFT, OUT = catalogue._SCALE_LINE, catalogue._MASK_LINE, catalogue._SOFTMAX_LINE, catalogue._OUTPUT_LINE
CAT, STACK, PROJ = catalogue._CONCAT_LINE, catalogue._STACK_LINE, catalogue._PROJECTION_LINE
DEF, TRIL = catalogue._DEFAULT_MASK_LINE, catalogue._TRIL_LINE

REWRITTEN = {
 # in vocabulary, written differently
 "scale_hd_recip": ({"scaled_by_head_dim"}, [E(SCALE, "scores = scores * (1.0 / self.head_dim)")]),
 "scale_power_half_unbracketed": ({"scale_power_half"}, [E(SCALE, "scores = scores / self.head_dim ** 1/2")]),
 "scale_power_half_times": ({"scale_power_half"}, [E(SCALE, "scores = scores * (2 / self.head_dim)")]),
 "scale_in_features": ({"scaled_by_model_dim"}, [E(SCALE, "scores = scores / math.sqrt(self.query.in_features)")]),
 "softmax_dim1": ({"softmax_over_queries"}, [E(SOFT, "weights = torch.nn.functional.softmax(scores, dim=1)")]),
 "mask_after_fill0": ({"mask_after_softmax"}, [E(MASK, "scores = scores"), E(SOFT, "weights = torch.softmax(scores, dim=-1).masked_fill(~allowed_mask, 0.0)")]),
 "own_tril": ({"head_ignores_given_mask"}, [E(MASK, "n = inputs.shape[1]\n        scores = scores.masked_fill(torch.tril(torch.ones(n, n)) == 0, float('-inf'))")]),
 "where_flipped": ({"mask_polarity_flipped"}, [E(MASK, "scores = torch.where(allowed_mask, torch.full_like(scores, float('-inf')), scores)")]),
 "returns_unmasked": ({"returns_scores"}, [E(MASK, "masked = scores.masked_fill(~allowed_mask, float('-inf'))"), E(SOFT, "weights = torch.softmax(masked, dim=-1)"), E("return HeadResult(output=output, weights=weights)", "return HeadResult(output=output, weights=scores)")]),
 "value_data": ({"projection_detached"}, [E("values = self.value(inputs)", "values = self.value(inputs).data")]),
 "query_no_grad": ({"projection_detached"}, [E("queries = self.query(inputs)", "with torch.no_grad():\n            queries = self.query(inputs)")]),
 "cat_default": ({"concatenated_on_wrong_axis"}, [E(CAT, "return torch.cat(outputs)")]),
 "interleave_view": ({"heads_interleaved"}, [E(CAT, "stacked = torch.stack(outputs, dim=3)\n    return stacked.reshape(stacked.shape[0], stacked.shape[1], -1)")]),
 "deepcopy_heads": ({"identically_initialised_heads"}, [E(catalogue._HEADS_LIST, "import copy\n        head = AttentionHead(model_dim, self.head_dim)\n        self.heads = nn.ModuleList(copy.deepcopy(head) for _ in range(num_heads))")]),
 "append_same": ({"shared_head_module"}, [E(catalogue._HEADS_LIST, "head = AttentionHead(model_dim, self.head_dim)\n        self.heads = nn.ModuleList()\n        for _ in range(num_heads):\n            self.heads.append(head)")]),
 "double_proj": ({"repeated_output_projection"}, [E(PROJ, "combined = self.output_projection(self.output_projection(concatenated))")]),
 "stack_last": ({"weights_stacked_on_wrong_axis"}, [E(STACK, "weights = torch.stack([result.weights for result in head_results], dim=-1)")]),
 "cat_weights": ({"weights_stacked_on_wrong_axis"}, [E(STACK, "weights = torch.cat([result.weights for result in head_results], dim=1)")]),
 "last_head_w": ({"one_head_weights_repeated"}, [E(STACK, "weights = torch.stack([head_results[-1].weights for _ in head_results], dim=1)")]),
 "always_causal": ({"module_ignores_given_mask"}, [E("head_results = [head(inputs, allowed_mask) for head in self.heads]", "mask = causal_mask(inputs.shape[1])\n        head_results = [head(inputs, mask) for head in self.heads]")]),
 "mask_batch": ({"default_mask_wrong_size"}, [E(DEF, "allowed_mask = causal_mask(len(inputs), device=inputs.device)")]),
 "only_lt1": ({"no_divisibility_check"}, [E(catalogue._HEAD_DIM_CHECK, "if num_heads < 1:")]),
 "one_number": ({"error_message_without_numbers"}, [E(catalogue._HEAD_DIM_ERROR, '        raise ValueError(f"num_heads={num_heads} does not divide the width")\n')]),
 "int_mask": ({"mask_not_boolean"}, [E(TRIL, "return torch.tril(ones).long()")]),
 "triu_bool": ({"upper_triangle_mask"}, [E("ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)", "ones = torch.ones(seq_len, seq_len, device=device)"), E(TRIL, "return torch.triu(ones).bool()")]),
 "not_tril": ({"inverted_mask"}, [E(TRIL, "return ~torch.tril(ones)")]),
 "gt_mask": ({"mask_without_diagonal"}, [E("ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)", "p = torch.arange(seq_len, device=device)"), E(TRIL, "return p[:, None] > p[None, :]")]),
 # pairs in one function, written differently
 "pair_noscale_sm1": ({"missing_scale", "softmax_over_queries"}, [E(SCALE, "scores = scores"), E(SOFT, "weights = scores.softmax(1)")]),
 "pair_flip_values_keys": ({"mask_polarity_flipped", "values_not_weighted"}, [E(MASK, "scores = scores.masked_fill(allowed_mask, float('-inf'))"), E(OUT, "output = weights @ keys")]),
 "pair_nomask_detach": ({"mask_not_applied", "projection_detached"}, [E(MASK, "scores = scores"), E("values = self.value(inputs)", "values = self.value(inputs).detach()")]),
 "pair_noproj_stack0": ({"missing_output_projection", "weights_stacked_on_wrong_axis"}, [E(PROJ, "combined = concatenated"), E(STACK, "weights = torch.stack([result.weights for result in head_results])")]),
 "pair_ignore_shared": ({"module_ignores_given_mask", "shared_head_module"}, [E("head_results = [head(inputs, allowed_mask) for head in self.heads]", "head_results = [head(inputs, causal_mask(inputs.shape[1])) for head in self.heads]"), E(catalogue._HEADS_LIST, "self.heads = nn.ModuleList([AttentionHead(model_dim, self.head_dim)] * num_heads)")]),
 "pair_rev_interleave": ({"heads_in_reverse", "heads_interleaved"}, [E(CAT, "return torch.stack(outputs[::-1], dim=-1).flatten(start_dim=-2)")]),
 "pair_hd_msg_float": ({"error_message_without_numbers", "true_division"}, [E(catalogue._HEAD_DIM_ERROR, '        raise ValueError("width does not divide")\n'), E(catalogue._HEAD_DIM_RETURN, "return model_dim / num_heads")]),
 # a misconception is a behaviour: the same mistake with its own shift, its own masking, its own words
 "softmax_by_hand_row_max_over_queries": ({"softmax_over_queries"}, [E(SOFT, "e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)\n        weights = e / e.sum(dim=1, keepdim=True)")]),
 "softmax_where_over_queries": ({"softmax_over_queries"}, [E(SOFT, "e = torch.where(allowed_mask, torch.exp(scores - scores.amax(-1, keepdim=True)), 0.0)\n        weights = e / e.sum(-2, keepdim=True)")]),
 "assert_naming_one_number": ({"assert_instead_of_raise", "error_message_without_numbers"}, [E(catalogue._HEAD_DIM_CHECK + "\n" + catalogue._HEAD_DIM_ERROR, 'assert num_heads > 0, f"num_heads={num_heads} must be positive"\n    assert model_dim % num_heads == 0, f"num_heads={num_heads} does not divide the width"\n')]),
 "assert_without_a_message": ({"assert_instead_of_raise", "error_message_without_numbers"}, [E(catalogue._HEAD_DIM_CHECK + "\n" + catalogue._HEAD_DIM_ERROR, "assert num_heads >= 1 and model_dim % num_heads == 0\n")]),
 "zero_heads_by_assert": ({"assert_instead_of_raise", "zero_heads_not_rejected"}, [E(catalogue._HEAD_DIM_CHECK + "\n" + catalogue._HEAD_DIM_ERROR, 'assert model_dim % num_heads == 0, f"model_dim={model_dim} does not split into num_heads={num_heads}"\n')]),
 "softmax_over_batch_by_hand": ({"softmax_over_batch"}, [E(SOFT, "e = torch.exp(scores)\n        weights = e / e.sum(dim=0, keepdim=True)")]),
 "softmax_over_batch_named_dim": ({"softmax_over_batch"}, [E(SOFT, "weights = torch.nn.functional.softmax(scores, 0)")]),
 "assert_in_the_constructor_with_a_tuple": ({"assert_instead_of_raise"}, [E("        self.head_dim = head_dimension(model_dim, num_heads)\n", "        assert model_dim % num_heads == 0, (model_dim, num_heads)\n        self.head_dim = head_dimension(model_dim, num_heads)\n")]),
 # out of vocabulary
 "oov_weights_T": (set(), [E(OUT, "output = weights.transpose(-2, -1) @ values")]),
 "oov_scale_sqrt_seq_after": (set(), [E(SOFT, "weights = torch.softmax(scores, dim=-1) ** 2")]),
 "oov_avg_heads": (set(), [E(STACK, "weights = torch.stack([result.weights for result in head_results], dim=1).mean(1, keepdim=True).expand(-1, len(head_results), -1, -1)")]),
 "oov_relu": (set(), [E(SOFT, "weights = torch.relu(scores)")]),
 "oov_temp": (set(), [E(SCALE, "scores = scores / (2 * math.sqrt(self.head_dim))")]),
 "oov_mask_neg1e2": (set(), [E(MASK, "scores = scores.masked_fill(~allowed_mask, -1.0)")]),
 "oov_concat_weights_scaled": (set(), [E(CAT, "return torch.cat(outputs, dim=-1) * 2")]),
 "oov_proj_no_bias_used": (set(), [E(PROJ, "combined = concatenated @ self.output_projection.weight.T")]),
 "oov_mask_diag1": (set(), [E(TRIL, "return torch.tril(ones, diagonal=1)")]),
 "oov_hd_ceil": (set(), [E(catalogue._HEAD_DIM_CHECK, "if num_heads < 1 or model_dim % num_heads != 0 and False:"), E(catalogue._HEAD_DIM_RETURN, "return -(-model_dim // num_heads)")]),
 "oov_dropout": (set(), [E(OUT, "output = torch.nn.functional.dropout(weights, 0.5, training=True) @ values")]),
 "oov_residual_head": (set(), [E(OUT, "output = weights @ values + values")]),
}


@pytest.mark.parametrize("name", REWRITTEN)
def test_a_mistake_written_differently_is_named_the_same(folder, name):
    expected, edits = REWRITTEN[name]
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
    from grader.exercise import data
    from grader.hidden import test_reference

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
    from grader.exercise import data
    from grader.hidden import counterfactual

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
