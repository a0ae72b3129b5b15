"""The report's charts, drawn with matplotlib (Agg) as SVG ``data:`` URLs for an ``<img>``.

An ``<img>`` shows an SVG without running anything inside it, and a ``data:`` URL keeps
the report one file that needs no network. Text in a chart is never parsed as math
(``text.parse_math``), so a ``$`` in a title is just a dollar sign.
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402 - after choosing the backend

from grader.class_view.class_statistics import ItemStatistics, ScoreSummary  # noqa: E402

STYLE = {
    "svg.fonttype": "none",  # text stays text: small, sharp, searchable
    "svg.hashsalt": "mha-report",  # the same ids in every build of the same report
    "text.parse_math": False,
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
BAR = "#4c72b0"


def score_histogram(summary: ScoreSummary) -> str:
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(6.4, 2.8))
        axes = figure.add_subplot()
        edges = summary.bin_edges
        axes.bar(edges[:-1], summary.histogram, width=edges[1] - edges[0], align="edge", color=BAR, edgecolor="white")
        axes.axvline(summary.mean, color="#c44e52", linewidth=1.5, label=f"mean {summary.mean:.2f}")
        axes.axvline(summary.median, color="#55a868", linewidth=1.5, linestyle="--", label=f"median {summary.median:g}")
        axes.set_xlim(0, summary.max_score)
        axes.set_xticks(edges)
        axes.set_xlabel(f"score (of {summary.max_score})")
        axes.set_ylabel("students")
        axes.yaxis.get_major_locator().set_params(integer=True)
        axes.legend(frameon=False, loc="upper left")
        return _data_url(figure)


def group_bars(groups: list[ItemStatistics]) -> str:
    """Mean points of each group as a share of its points, hardest on top."""
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(4.8, 0.6 + 0.3 * len(groups)))
        axes = figure.add_subplot()
        shares = [100 * item.mean_points / item.max_points if item.max_points else 0 for item in groups]
        axes.barh(range(len(groups)), shares, color=BAR)
        axes.set_yticks(range(len(groups)), [item.name for item in groups])
        axes.invert_yaxis()
        axes.set_xlim(0, 100)
        axes.set_xlabel("mean points, % of the group's")
        return _data_url(figure)


def _data_url(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
