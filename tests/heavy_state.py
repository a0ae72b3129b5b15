"""Valid work with heavy state beside it: what a student's file or notebook keeps besides the
module (a logger, a figure, a progress bar, a data set, a cache, an object graph, an optimiser, a
deep configuration), written as people write them. Each context is appended to a module's source,
so the module's own lines, and every line number a message gives, stay where they were.

The contexts draw no number from torch's or Python's global generators: a context that did would
change what a module with dropout draws next, and the point here is that what surrounds a module
never changes its grade.
"""

from __future__ import annotations

import json
from pathlib import Path

SOLUTION = Path(__file__).resolve().parent.parent / "solutions" / "multi_head_attention.py"

CONTEXTS = {
    # The style an AI assistant writes: a module-level logger, configured.
    "module_logger": """
import logging

logger = logging.getLogger(__name__)
logging.basicConfig(level=logging.WARNING)
logger.info("attention module loaded")
""",
    # A progress bar left over from a training loop, and what it printed.
    "tqdm_training": """
from tqdm.auto import tqdm

_generator = torch.Generator().manual_seed(0)
losses = []
with torch.random.fork_rng():  # the global generator as it was, after
    torch.manual_seed(0)
    _model = MultiHeadSelfAttention(8, 2)
    _optimiser = torch.optim.Adam(_model.parameters(), lr=1e-3)
    progress = tqdm(range(3), desc="training", disable=True)
    for _step in progress:
        _inputs = torch.randn(2, 4, 8, generator=_generator)
        _loss = _model(_inputs).output.pow(2).mean()
        _optimiser.zero_grad()
        _loss.backward()
        _optimiser.step()
        losses.append(float(_loss))
print(f"trained 3 steps, last loss {losses[-1]:.4f}")
""",
    # A data set of 20,000 tensors and a dict of 5,000 cached masks.
    "data_set_and_cache": """
_generator = torch.Generator().manual_seed(1)
data_set = [torch.randn(16, generator=_generator) for _ in range(20_000)]
mask_cache = {index: torch.tril(torch.ones(8, 8, dtype=torch.bool)) for index in range(5_000)}
""",
    # An object graph whose nodes point at each other.
    "cyclic_graph": """
class GraphNode:
    def __init__(self, index):
        self.index = index
        self.neighbours = []


graph = [GraphNode(index) for index in range(3_000)]
for _index, _node in enumerate(graph):
    _node.neighbours += [graph[(_index + 1) % 3_000], graph[(_index * 7) % 3_000]]
""",
    # numpy arrays, and a configuration nested 200 deep.
    "arrays_and_deep_config": """
import numpy as np

embeddings = np.random.default_rng(0).normal(size=(1_000, 64))
vocabulary = np.arange(1_000)
config = {"name": "root"}
_node = config
for _depth in range(200):
    _node["child"] = {"depth": _depth, "sizes": [8, 2]}
    _node = _node["child"]
""",
    # A figure of the heads' weights left as globals, as a notebook's last cell leaves it.
    "figure": """
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

with torch.random.fork_rng(), torch.no_grad():  # the global generator as it was, after
    torch.manual_seed(2)
    _demo = MultiHeadSelfAttention(8, 2).eval()
    _result = _demo(torch.randn(1, 5, 8))
fig, axes = plt.subplots(1, 2, figsize=(6, 3))
for _head, _axis in enumerate(axes):
    _axis.imshow(_result.weights[0, _head].numpy(), cmap="viridis")
    _axis.set_title(f"head {_head}")
""",
}

# Beside a module whose forward logs on every call (the other contexts leave the module as it is).
LOGGED_FORWARD = """
import logging

_log = logging.getLogger(__name__)
_forward_without_log = MultiHeadSelfAttention.forward


def _logged_forward(self, inputs, allowed_mask=None):
    _log.debug("forward on inputs of shape %s", tuple(inputs.shape))
    return _forward_without_log(self, inputs, allowed_mask)


MultiHeadSelfAttention.forward = _logged_forward
"""


def with_context(source: str, context: str) -> str:
    return source.rstrip("\n") + "\n\n\n# --- beside the exercise " + "-" * 40 + "\n" + context


def heavy_files(folder: Path) -> list[Path]:
    """The solution beside each context (and with a logging forward), one file each, and a notebook
    whose last cell plots the heads' weights, as Colab leaves it."""
    folder.mkdir(parents=True, exist_ok=True)
    solution = SOLUTION.read_text(encoding="utf-8")
    paths = []
    for name, context in {**CONTEXTS, "logged_forward": LOGGED_FORWARD}.items():
        path = folder / f"{name}.py"
        path.write_text(with_context(solution, context), encoding="utf-8")
        paths.append(path)
    paths.append(notebook_with_a_plot(folder / "colab_plot.ipynb", solution))
    return paths


def notebook_with_a_plot(path: Path, source: str) -> Path:
    """A notebook as Colab saves it: the work in one cell, a demo and a plot of the weights in the next."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# Combining attention heads"),
        nbformat.v4.new_code_cell(source),
        nbformat.v4.new_code_cell(CONTEXTS["figure"].strip() + "\nplt.show()"),
    ]
    notebook.metadata["colab"] = {"provenance": []}
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path
