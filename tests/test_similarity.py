"""Similar submissions: copies are listed (renamed, reformatted, recommented), independent work and
the hand-out's own text are not, the figures are the same every run, and the report shows the pairs."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from grader.class_view import code_comparison, report, similarity
from grading import REPO_ROOT
from handmade_class import class_documents, write_out

SOLUTION = (REPO_ROOT / "solutions" / "multi_head_attention.py").read_text(encoding="utf-8")
STUB = (REPO_ROOT / "exercises" / "multi_head_attention.py").read_text(encoding="utf-8")

# A head written from scratch in another style: the same maths, none of the reference's text.
INDEPENDENT = '''
import math
import torch
from torch import nn


def head_dimension(model_dim, num_heads):
    if num_heads <= 0:
        raise ValueError(f"need at least one head, got {num_heads}")
    per_head, rest = divmod(model_dim, num_heads)
    if rest:
        raise ValueError(f"{model_dim} features cannot be split evenly across {num_heads} heads")
    return per_head


def causal_mask(length, device=None):
    rows = torch.arange(length, device=device).unsqueeze(1)
    cols = torch.arange(length, device=device).unsqueeze(0)
    return cols <= rows


class AttentionHead(nn.Module):
    def __init__(self, model_dim, head_dim):
        super().__init__()
        self.query = nn.Linear(model_dim, head_dim)
        self.key = nn.Linear(model_dim, head_dim)
        self.value = nn.Linear(model_dim, head_dim)
        self.head_dim = head_dim

    def forward(self, inputs, allowed_mask=None):
        if allowed_mask is None:
            allowed_mask = causal_mask(inputs.size(1), device=inputs.device)
        q, k, v = self.query(inputs), self.key(inputs), self.value(inputs)
        logits = torch.einsum("bqd,bkd->bqk", q, k) * (1.0 / math.sqrt(self.head_dim))
        logits = logits.masked_fill(allowed_mask.logical_not(), -math.inf)
        probabilities = logits.softmax(dim=-1)
        return torch.einsum("bqk,bkd->bqd", probabilities, v), probabilities
'''


def _renamed_copy(source: str) -> str:
    """What a student who copies does: other names, other comments, other blank lines."""
    renamed = source.replace("queries", "qs").replace("keys", "ks").replace("values", "vs").replace("weights", "attn")
    renamed = re.sub(r"#[^\n]*", "# my own work", renamed)
    return renamed.replace("\n\n", "\n\n\n")


def test_a_renamed_recommented_copy_is_listed_with_both_shares():
    pairs = code_comparison.similar_pairs({"alice": SOLUTION, "bob": _renamed_copy(SOLUTION)}, similarity.THRESHOLD)
    assert [(pair.first, pair.second) for pair in pairs] == [("alice", "bob")]
    assert min(pairs[0].shares) >= similarity.THRESHOLD


def test_independent_work_and_the_untouched_hand_out_are_not_listed():
    codes = {"alice": SOLUTION, "carol": INDEPENDENT, "dan": STUB, "erin": STUB}
    # Two untouched stubs are byte-identical, and share nothing of their own: the hand-out is set aside.
    assert code_comparison.similar_pairs(codes, similarity.THRESHOLD) == []


def test_without_the_hand_out_set_aside_two_stubs_would_be_a_pair():
    # The check above can fail: it is the boilerplate removal that keeps the stubs apart.
    pairs = code_comparison.similar_pairs({"dan": STUB, "erin": STUB}, similarity.THRESHOLD, hand_out=[])
    assert [(pair.first, pair.second) for pair in pairs] == [("dan", "erin")]


@pytest.mark.slow
def test_the_figures_are_the_same_in_every_process():
    # copydetect's own hash is Python's, salted per process: the figures would move run to run.
    script = (
        "import json, sys; sys.path[:0] = ['tests', '.']; from grader.class_view import code_comparison; "
        "from test_similarity import SOLUTION, _renamed_copy, INDEPENDENT; "
        "pairs = code_comparison.similar_pairs({'a': SOLUTION, 'b': _renamed_copy(SOLUTION), 'c': INDEPENDENT}, threshold=0.0); "
        "print(json.dumps([p.as_record() for p in pairs]))"
    )
    runs = {
        subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True,
                       env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2", "3")
    }
    assert len(runs) == 1 and json.loads(runs.pop())


def test_a_class_of_one_is_compared_without_loading_copydetect(tmp_path):
    # A platform grades one submission a run: no pair can exist, and copydetect imports
    # matplotlib.pyplot, about a second of CPU. The record still says what was compared.
    folder = tmp_path / similarity.GRADED_CODE_FOLDER
    folder.mkdir()
    (folder / "only.py").write_text(SOLUTION, encoding="utf-8")
    script = (
        "import json, sys; from grader.class_view import similarity; "
        f"record = similarity.class_similarity({str(tmp_path)!r}, ['only']); "
        "print(json.dumps([record['compared'], record['pairs_found'], record['pairs'], record['threshold'], 'copydetect' in sys.modules]))"
    )
    completed = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert json.loads(completed.stdout) == [1, 0, [], similarity.THRESHOLD, False], completed.stderr
    # Two files are compared, with the same threshold the record states.
    (folder / "other.py").write_text(_renamed_copy(SOLUTION), encoding="utf-8")
    record = similarity.class_similarity(tmp_path, ["only", "other"])
    assert (record["compared"], record["pairs_found"]) == (2, 1)
    assert record["pairs"][0]["similarity"] >= record["threshold"] == similarity.THRESHOLD


def test_the_shared_lines_are_the_students_own_not_the_hand_outs():
    first, second = code_comparison.shared_lines(SOLUTION, _renamed_copy(SOLUTION))
    assert any("softmax" in line for line in first) and any("softmax" in line for line in second)
    stub_lines = {line.strip() for line in STUB.splitlines()}
    assert not [line for line in first if line.strip() in stub_lines]


def test_the_filter_is_copydetects_on_what_the_tokenizer_reads():
    # Names become V, defined functions F, classes O, strings S; comments and whitespace go.
    filtered, offsets = code_comparison._filter_python('def f(x):\n    y = "a"  # note\n    return x + y\n', "s.py")
    assert filtered == "defF(V):V=SreturnV+V"
    assert len(offsets) == len(filtered)


@pytest.fixture
def out_with_a_pair(tmp_path):
    out = write_out(tmp_path / "out", class_documents())
    sids = sorted(json.loads((out / "results.json").read_text())["submissions"])
    codes = {sids[0]: SOLUTION, sids[1]: _renamed_copy(SOLUTION), sids[2]: INDEPENDENT}
    for sid, code in codes.items():
        (out / similarity.GRADED_CODE_FOLDER).mkdir(exist_ok=True)
        (out / similarity.GRADED_CODE_FOLDER / f"{sid}.py").write_text(code, encoding="utf-8")
    document = json.loads((out / "results.json").read_text())
    document["similar_submissions"] = similarity.class_similarity(out, document["submissions"])
    (out / "results.json").write_text(json.dumps(document))
    return out, sids


def test_the_report_lists_the_pair_with_its_shared_lines(out_with_a_pair):
    out, sids = out_with_a_pair
    page = report.write_report(out).read_text(encoding="utf-8")
    section = page[page.index('<section id="similar">') :]
    section = section[: section.index("</section>")]
    assert f"{sids[0]} and {sids[1]}" in section
    assert "no score depends on it" in section
    assert section.count("<pre>") == 2 and "softmax" in section
    assert sids[2] not in section.split("<ul")[1]  # the independent file is in no pair
