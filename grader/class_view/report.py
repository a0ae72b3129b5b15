"""The instructor's view of a class: ``python -m grader report OUT`` writes ``OUT/report.html``.

The batch writes it after every run; this command rebuilds it from an existing OUT. One
self-contained page that opens from disk: the score and group charts are SVG ``data:`` URLs
(``grader/class_view/report_plots.py``), the misconception counts are bars drawn in HTML (their
titles are whole sentences, which a chart's axis cuts short), the only script is the few lines
that sort the tables, and the Content Security Policy forbids every request and every other
script. Each student's feedback is rendered beside it as ``feedback/<id>.html``
(``grader/class_view/feedback_pages.py``). The page is laid out for a 1366 px laptop screen.

Everything a student controls (ids, file names, messages, printed output) goes through
``html.escape`` (text) or ``urllib.parse.quote`` (a link's file name), never into markup.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import sys
import time
from pathlib import Path
from urllib.parse import quote

from grader import results, untrusted
from grader.class_view import class_results, feedback_pages, report_plots, similarity
from grader.class_view.class_files import ClassFiles, finish_interrupted
from grader.class_view.class_statistics import UNKNOWN, ClassStatistics, ItemStatistics, Misconception, class_statistics
from grader.term.status import NOT_GRADED_IN_THIS_RUN, status_of
from grader.scoring import GROUP_TITLES, GROUPS
from grader.seam import registry

MATCH_FILE = "export.json"  # the roster matching of the last `python -m grader export` (grader/lms/export.py)

SORT_SCRIPT = """
for (const table of document.querySelectorAll("table.sortable")) {
  const headers = [...table.tHead.rows[0].cells];
  headers.forEach((header, column) => {
    header.querySelector("button").addEventListener("click", () => {
      const ascending = header.getAttribute("aria-sort") !== "ascending";
      headers.forEach(other => other.removeAttribute("aria-sort"));
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const key = row => row.cells[column].dataset.sort ?? row.cells[column].textContent.trim();
      const rows = [...table.tBodies[0].rows];
      rows.sort((a, b) => compare(key(a), key(b)) * (ascending ? 1 : -1));
      table.tBodies[0].append(...rows);
    });
  });
}
function compare(a, b) {
  const x = Number(a), y = Number(b);
  if (a !== "" && b !== "" && !Number.isNaN(x) && !Number.isNaN(y)) return x - y;
  return a.localeCompare(b, undefined, {numeric: true});
}
"""
SCRIPT_HASH = base64.b64encode(hashlib.sha256(SORT_SCRIPT.encode("utf-8")).digest()).decode("ascii")
CONTENT_SECURITY_POLICY = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{SCRIPT_HASH}'"
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; max-width: 90rem; margin: 1.5rem auto; padding: 0 1rem; color: #222; overflow-wrap: break-word; }
h1 { font-size: 1.5rem; margin-bottom: .3rem; } h2 { font-size: 1.15rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .1rem 1rem; margin: .5rem 0; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; }
.figure { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
.figure img { max-width: 100%; height: auto; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #e3e3e3; padding: .2rem .5rem; text-align: left; vertical-align: top; }
td.number, th.number { text-align: right; }
th button { font: inherit; font-weight: 600; border: 0; background: none; padding: 0; cursor: pointer; text-align: inherit; }
th[aria-sort=ascending] button::after { content: " ▲"; } th[aria-sort=descending] button::after { content: " ▼"; }
.scroll { overflow-x: auto; }
.muted { color: #666; }
#students-table { width: 100%; font-size: 13px; font-stretch: semi-condensed; }
/* The students table fits a laptop's screen (1366 px) and breaks no word, however many columns it
   gets. The browser gives each column the width its content asks for, within the page's: so what
   each cell's narrowest width is decides it. Every cell keeps its words whole (a column is never
   narrower than its longest word), but for what a student controls and may make one long token:
   an id, a file name, an error's text, which may break anywhere where a word is wider than the
   column; so those columns have a floor (names 8em, prose 9em: a long word fits) and all share the
   rest by how much they hold, prose (an override's reason, a diagnosis, an error) the most; numbers, short words (the feedback link, a status)
   and a column with nothing in it are as narrow as their longest word, header included. An id or
   a file name breaks after an underscore first (<wbr>). A semi-condensed face where the font has
   one. The group columns' names stand upright, as in a gradebook. */
#students-table th, #students-table td { padding: .2rem .3rem; overflow-wrap: break-word; hyphens: manual; }
#students-table th, #students-table td.status, #students-table td.number { overflow-wrap: normal; }
#students-table td.name, #students-table td.problem { overflow-wrap: anywhere; }  /* a student's long token must not widen the table */
#students-table th.name { min-width: 8em; } #students-table th.long { min-width: 9em; }
#students-table th.number, #students-table th.short, #students-table th.empty { width: 1px; }  /* as narrow as their longest word */
#students-table thead th { vertical-align: bottom; }
#students-table th.group, #students-table td[data-group] { padding-left: .15rem; padding-right: .15rem; }
#students-table th.group button { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; }
.side-by-side { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem; } .side-by-side pre { background: #f5f5f5; padding: .5rem; overflow-x: auto; font-size: 12px; }
ul.misconceptions { list-style: none; padding: 0; max-width: 64rem; } ul.misconceptions > li { margin-bottom: .9rem; }
ul.misconceptions p { margin: .1rem 0; }
.bar-row { display: grid; grid-template-columns: minmax(0, 1fr) 12rem 6rem; gap: 1rem; align-items: center; }
.bar-track { height: .9rem; background: #edf0f5; } .bar { display: block; height: 100%; background: #4c72b0; }  /* the charts' blue */
summary { cursor: pointer; }
.warning { color: #a33; }
@media print { body { max-width: none; margin: 0; } th button::after { content: none !important; } a { color: inherit; } }
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="a batch's output folder (holding results.json)")
    parser.add_argument("--assignment", default=None, help="the title shown (default: the batch's)")


def run(arguments: argparse.Namespace) -> int:
    if arguments.out.is_dir():
        for said in finish_interrupted(arguments.out):  # a set of class files a killed run left half moved
            print(f"note: {said}", file=sys.stderr)
    if not (arguments.out / "results.json").is_file():
        print(f"error: {arguments.out} holds no results.json: run `python -m grader batch` first")
        return 2
    course = getattr(arguments, "course_settings", None)
    try:
        class_results.read_class_results(arguments.out / "results.json", course)
    except (OSError, ValueError) as error:
        for line in str(error).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    path = write_report(arguments.out, assignment=arguments.assignment, course=course)
    print(f"report: {path}")
    return 0


def write_report(out: Path, assignment: str | None = None, course=None, files: ClassFiles | None = None) -> Path:
    """Write ``out/report.html`` and a ``feedback/<id>.html`` per student; return the report's path.
    Every final score is derived again with the ``course``'s files (read_class_results:
    ``ValueError`` when results.json no longer agrees with them). The pages are one set with
    the class files (grader/class_view/class_files.py): staged into ``files`` (the batch's set,
    read from it, committed by the batch), or, alone, replaced together when all are written."""
    out = Path(out)
    own = files is None
    files = files or ClassFiles(out)
    try:
        document = class_results.read_class_results(files.path("results.json"), course)
        submissions = document.get("submissions", {})
        for student_id, result in submissions.items():
            # Named as the batch names the student's files: a long or unusual id gets a bounded stem.
            markdown_path = files.path(f"feedback/{untrusted.file_stem(student_id)}.md")
            if markdown_path.is_file():
                page = feedback_pages.render_page(
                    student_id, markdown_path.read_text(encoding="utf-8"), result.get("output", ""), tests=result.get("tests", []),
                    name=class_results.roster_name(result),
                )
                files.write(f"feedback/{untrusted.file_stem(student_id)}.html", page)
        match = _read_match(out / MATCH_FILE)
        written = files.path("results.json").stat().st_mtime
        date = document.get("graded_at") or time.strftime("%Y-%m-%d %H:%M", time.localtime(written))
        similar = similarity.shown_pairs(out, document)
        page = render_report(document, assignment or document.get("assignment") or out.resolve().name, date, match, similar)
        files.write("report.html", page)
        if own:
            files.commit()
    finally:
        if own:
            files.discard()
    return out / "report.html"


def render_report(document: dict, assignment: str, date: str, match: dict | None = None, similar: list[dict] = ()) -> str:
    """The page for a results.json ``document``; ``match`` is the roster matching, if any;
    ``similar`` the pairs of similar submissions shown with their shared lines
    (``similarity.shown_pairs``)."""
    submissions = document.get("submissions", {})
    numbers = class_statistics(submissions)
    sections = [
        _header(document, assignment, date),
        _score_section(numbers),
        _items_section("Groups", "groups", numbers.groups, show_group=False),
        _items_section("Checks", "checks", numbers.checks, show_group=True),
        _misconception_section(numbers, {sid: class_results.student_name(sid, result) for sid, result in submissions.items()}),
        _match_section(match) if match else "",
        _intake_section(document),
        _similarity_section(document.get("similar_submissions") or {}, similar),
        _students_section(submissions),
    ]
    body = "\n".join(section for section in sections if section)
    return feedback_pages.html_page(
        f"Class report: {_text(assignment)}", f"{body}\n<script>{SORT_SCRIPT}</script>", STYLE, CONTENT_SECURITY_POLICY
    )


# --- sections ---------------------------------------------------------------------------


def _exercise_of(match: dict) -> str:
    """The exercise an export was of, as it recorded it (an export before exercises were recorded: none)."""
    name = match.get("exercise")
    return f" ({_text(registry.exercise(name).title)})" if name in registry.names() else ""


def _header(document: dict, assignment: str, date: str) -> str:
    submissions = document.get("submissions", {})
    refused = sorted(class_results.student_name(sid, result) for sid, result in submissions.items() if result.get("intake_problem"))
    everyone_not_graded = document.get("not_graded") or {}
    # A student --only did not name and no run graded yet is no failure of the grader (grader/term/status.py).
    not_graded = {
        sid: result for sid, result in everyone_not_graded.items()
        if not isinstance(result, dict) or result.get("status") != NOT_GRADED_IN_THIS_RUN
    }
    waiting = sorted(class_results.student_name(sid, result) for sid, result in everyone_not_graded.items() if sid not in not_graded)
    sandbox = _text(document.get("sandbox", "?"))
    if document.get("sandbox_note"):
        sandbox += f' <span class="warning">({_text(document["sandbox_note"])})</span>'
    failures = str(len(not_graded))
    if not_graded:
        names = sorted(class_results.student_name(sid, result) for sid, result in not_graded.items())
        failures = f'<span class="warning">{len(not_graded)}: {_text(", ".join(names))} (no result; see batch.log)</span>'
    exercise = registry.exercise()  # the class file's own, checked when it was read (class_results.checked)
    facts = {
        "exercise": f"{_text(exercise.title)} (<code>{_text(exercise.name)}</code>)",
        "date": _text(date),
        "grader version": _text(document.get("grader_version", "?")),
        "grading seed": _text(document.get("grading_seed", "?")),
        "sandbox": sandbox,
        "students graded": f'<span id="graded-count">{len(submissions)}</span>',
        "refused at intake": f'<span id="refused-count">{len(refused)}</span>' + (f" ({_text(', '.join(refused))})" if refused else ""),
        "failures of the grader": f'<span id="grader-failures">{failures}</span>',
    }
    if waiting:
        facts[NOT_GRADED_IN_THIS_RUN] = f"{len(waiting)}: {_text(', '.join(waiting))} (--only named others; a run without --only grades them)"
    not_applied = [row for row in document.get("not_applied") or [] if isinstance(row, dict)]
    if not_applied:  # rows of the instructor's files that changed no grade (grader/batch/run.py)
        items = "".join(
            f"<li>{_text(row.get('file', ''))}:{_text(row.get('line', ''))}: {_text(row.get('what', ''))} for "
            f"<code>{_text(row.get('key', ''))}</code>: {_text(row.get('reason', ''))}</li>" for row in not_applied
        )
        facts["not applied"] = f'<ul class="warning" id="not-applied">{items}</ul>'
    superseded = [str(path) for path in document.get("superseded") or []]
    if superseded:
        facts["moved to superseded/"] = (
            f'<span id="superseded">{len(superseded)} files of entries no longer graded (an earlier attempt, or gone from '
            f"the submissions): {_text(', '.join(superseded))}</span>"
        )

    rows = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts.items())
    return f'<header><h1>Class report: {_text(assignment)}</h1><dl class="facts">{rows}</dl></header>'


def _score_section(numbers: ClassStatistics) -> str:
    summary = numbers.scores
    if summary is None:
        return '<section id="scores"><h2>Score distribution</h2><p>No submission has a result yet.</p></section>'
    figures = {
        "mean": f"{summary.mean:.2f}",
        "median": f"{summary.median:g}",
        "standard deviation": f"{summary.standard_deviation:.2f}",
        "min": f"{summary.minimum}",
        "max": f"{summary.maximum}",
        "at 0": _percent(summary.share_at_zero),
        f"at full marks ({summary.max_score})": _percent(summary.share_at_full),
    }
    rows = "".join(f'<tr><th scope="row">{_text(name)}</th><td class="number">{value}</td></tr>' for name, value in figures.items())
    bins = ", ".join(
        f"{edge:g}–{summary.bin_edges[index + 1]:g}: {count}" for index, (edge, count) in enumerate(zip(summary.bin_edges, summary.histogram))
    )
    image = report_plots.score_histogram(summary)
    return f"""<section id="scores"><h2>Score distribution</h2>
<div class="figure"><img id="histogram" src="{image}" alt="Histogram of scores in 10 bins: {_text(bins)}" width="640">
<table id="score-figures"><tbody>{rows}</tbody></table></div></section>"""


def _items_section(title: str, anchor: str, items: list[ItemStatistics], show_group: bool) -> str:
    if not items:
        return ""
    names = ["check", "group"] if show_group else ["group"]
    figures = ["points", "pass rate", "mean points", "discrimination"]
    headers = "".join(_sortable_header(name) for name in names) + "".join(_sortable_header(name, "number") for name in figures)
    rows = []
    for item in items:
        group_cell = f"<td>{_text(GROUP_TITLES.get(item.group, item.group))}</td>" if show_group else ""
        discrimination = "—" if item.discrimination is None else f"{item.discrimination:.2f}"
        rows.append(
            f"<tr><td>{_text(item.name)}</td>{group_cell}<td class=\"number\">{item.max_points}</td>"
            f'<td class="number" data-sort="{item.pass_rate:.6f}">{_percent(item.pass_rate)}</td>'
            f'<td class="number" data-sort="{item.mean_points:.6f}">{item.mean_points:.2f}</td>'
            f'<td class="number" data-sort="{"" if item.discrimination is None else f"{item.discrimination:.6f}"}">{discrimination}</td></tr>'
        )
    note = (
        "Hardest first. Pass rate: share of students with all of its points. Discrimination: correlation of its points "
        "with the rest of the score (item-rest); low or negative values flag a check that does not separate strong from weak work."
    )
    chart = ""
    if not show_group:
        alt = "; ".join(f"{item.name}: {item.mean_points:.2f} of {item.max_points}" for item in items)
        chart = f'<img id="groups-chart" src="{report_plots.group_bars(items)}" alt="Mean points per group: {_text(alt)}" width="480">'
    table = f'<div class="scroll"><table class="sortable" id="{anchor}-table"><thead><tr>{headers}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    return f"""<section id="{anchor}"><h2>{title}</h2><p class="muted">{note}</p>
<div class="figure">{table}{chart}</div></section>"""


def _misconception_section(numbers: ClassStatistics, names: dict[str, str]) -> str:
    found = numbers.misconceptions
    unexplained = "".join(
        f"<li>{_text(function)}: {len(students)} {_students_noun(len(students))} "
        f"({', '.join(_feedback_link(sid, names.get(sid)) for sid in students)})</li>"
        for function, students in numbers.unexplained.items()
    )
    if unexplained:
        unexplained = f'<p>Failing functions that match no known mistake (look at these by hand):</p><ul id="unexplained">{unexplained}</ul>'
    if not found:
        return (
            '<section id="misconceptions"><h2>Misconceptions</h2>'
            '<p class="muted">No known mistake diagnosed in these results (none matched, or they come from a grader without diagnoses).</p>'
            f"{unexplained}</section>"
        )
    most = max(len(m.students) for m in found)
    return f"""<section id="misconceptions"><h2>Misconceptions</h2>
<p class="muted">Known mistakes the diagnosis recognised, the most held first; a bar's length is the number of students holding it.</p>
<ul class="misconceptions">{''.join(_misconception_item(m, most, names) for m in found)}</ul>{unexplained}</section>"""


def _misconception_item(m: Misconception, most: int, names: dict[str, str] | None = None) -> str:
    """Its title in full beside a bar of its students; who they are, why it matters, and the
    checks it explains (often a dozen names: folded away until asked for)."""
    count = len(m.students)
    links = ", ".join(_feedback_link(sid, (names or {}).get(sid)) for sid in m.students)
    why = f'<p class="muted">{_text(m.why)}</p>' if m.why else ""
    explains = ""
    if m.explains:
        explains = (
            # Tests (test functions), as the feedback pages' "explains 7 failing checks of 4 tests" says:
            # the number of failing checks (parametrised cases) differs from student to student.
            f'<details><summary class="muted">the tests it explains ({len(m.explains)} test{"s" if len(m.explains) != 1 else ""})</summary>'
            f'<p class="muted">{_text(", ".join(m.explains))}</p></details>'
        )
    return (
        f'<li class="misconception"><div class="bar-row"><strong class="title">{_text(m.title)}</strong>'
        f'<span class="bar-track" aria-hidden="true"><span class="bar" style="width: {100 * count / most:.1f}%"></span></span>'
        f'<span><span class="holders">{count}</span> {_students_noun(count)}</span></div>'
        f'<p>{links} <span class="muted">({_text(m.function)}: {_text(m.mistake)})</span></p>{why}{explains}</li>'
    )


def _match_section(match: dict) -> str:
    missing = match.get("roster_without_submission") or []
    unknown = match.get("submissions_not_on_roster") or []
    missing_items = "".join(f"<li>{_text(name)}</li>" for name in missing) or "<li>none</li>"
    unknown_items = "".join(
        f"<li>{_feedback_link(str(entry.get('submission', '')))}: {_text(entry.get('reason', ''))}</li>" for entry in unknown
    ) or "<li>none</li>"
    return f"""<section id="roster"><h2>Roster</h2>
<p>At the last export ({_text(match.get("exported_at", "?"))}, {_text(match.get("file", ""))}), {_text(match.get("roster", "the roster"))}
matched {_text(match.get("matched", 0))} submissions for {_text(match.get("assignment", ""))}{_exercise_of(match)} (<code>python -m grader export</code> again after regrading).</p>
<h3>On the roster, without a submission ({len(missing)})</h3><ul id="roster-without-submission">{missing_items}</ul>
<h3>Submissions not on the roster ({len(unknown)})</h3><ul id="submissions-not-on-roster">{unknown_items}</ul></section>"""


def _similarity_section(record: dict, shown: list[dict]) -> str:
    """Pairs whose code is nearly the same beyond the hand-out: for a person to look at."""
    if not record:
        return ""
    found = int(record.get("pairs_found") or 0)
    rule = (
        f"Pairs of which each file has at least {100 * float(record.get('threshold', 0)):.0f}% of its own code in the other, once the "
        "hand-out's text (the stub, its comments), whitespace, comments, names and strings are set aside "
        f"({_text(record.get('compared', 0))} files compared). A flag for a person to look at: no score depends on it."
    )
    if not found:
        return f'<section id="similar"><h2>Similar submissions</h2><p class="muted">{rule}</p><p>None.</p></section>'
    items = []
    for pair in shown:
        first, second = str(pair.get("first", "")), str(pair.get("second", ""))
        shares = pair.get("shares") or [0, 0]
        sides = "".join(
            f'<div><p>{_feedback_link(sid)}: {_percent(float(share))} of its own code shared</p><pre>{_text(chr(10).join(lines))}</pre></div>'
            for sid, share, lines in zip((first, second), shares, pair.get("lines") or [[], []])
        )
        items.append(
            f'<li><details><summary>{_text(first)} and {_text(second)}: {_percent(float(pair.get("similarity", 0)))} similar</summary>'
            f'<div class="side-by-side">{sides}</div></details></li>'
        )
    more = found - len(shown)
    rest = f'<p class="muted">{more} more pairs in results.json (<code>similar_submissions</code>).</p>' if more > 0 else ""
    return f"""<section id="similar"><h2>Similar submissions ({found} pair{"s" if found != 1 else ""})</h2>
<p class="muted">{rule} The lines each file shares with the other, side by side:</p>
<ul id="similar-pairs">{"".join(items)}</ul>{rest}</section>"""


def _intake_section(document: dict) -> str:
    """What intake set aside: one student's files not graded (and why), what was not a
    submission, and students' files the class zip could not give."""
    submissions = document.get("submissions", {})
    notes = [
        (class_results.student_name(sid, result), result["intake_note"]) for sid, result in sorted(submissions.items()) if result.get("intake_note")
    ]
    ignored = [item for item in document.get("ignored") or [] if isinstance(item, dict)]
    not_unpacked = [item for item in document.get("not_unpacked") or [] if isinstance(item, dict)]
    if not (notes or ignored or not_unpacked):
        return ""

    def items(pairs: list[tuple[str, str]]) -> str:
        return "".join(f"<li><code>{_text(name)}</code>: {_text(reason)}</li>" for name, reason in pairs) or "<li>none</li>"

    parts = [f'<section id="intake"><h2>Intake</h2>']
    parts.append(f'<h3>Students who handed in several files ({len(notes)})</h3><ul id="several-files">{items(notes)}</ul>')
    if not_unpacked:
        pairs = [(str(item.get("name", "")), str(item.get("reason", ""))) for item in not_unpacked]
        parts.append(f'<h3 class="warning">Files in the class zip not graded ({len(pairs)})</h3><ul id="not-unpacked">{items(pairs)}</ul>')
    pairs = [(str(item.get("name", "")), str(item.get("reason", ""))) for item in ignored]
    parts.append(f'<h3>Not submissions, ignored ({len(pairs)})</h3><ul id="ignored">{items(pairs)}</ul></section>')
    return "\n".join(parts)


def _students_section(submissions: dict[str, dict]) -> str:
    groups = [g for g in GROUPS if any(g in d.get("groups", {}) for d in submissions.values())]
    group_max = {g: max(d["groups"][g]["max"] for d in submissions.values() if g in d.get("groups", {})) for g in groups}
    # A grade's trail (grader/term/grade_trail.py), where some student's score is not the tests' alone
    # or an instructor wrote to a student.
    adjusted = any(d.get("late") or d.get("override") or d.get("comment") for d in submissions.values())
    overridden = "long" if any(d.get("override") or d.get("comment") for d in submissions.values()) else "empty"
    trail_columns = [("raw score", "number"), ("late penalty", "number"), ("override", overridden)] if adjusted else []
    texts = {
        sid: (
            "; ".join(_diagnosis_text(d) for d in submissions[sid].get("diagnoses") or [] if isinstance(d, dict)),
            submissions[sid].get("intake_problem") or (submissions[sid].get("import_error") or "").strip().split("\n", 1)[0],
        )
        for sid in submissions
    }
    # A column of long text gets its share of the width only when some row has text in it.
    wide = [" long" if any(text[column] for text in texts.values()) else "" for column in (0, 1)]
    columns = [
        ("student", "name"), ("graded from", "name"), ("feedback", "short"), ("status", "short"), ("score", "number"), *trail_columns,
        *((f"{GROUP_TITLES[g]} ({group_max[g]})", "number group") for g in groups),
        ("diagnoses", "long" if wide[0] else "empty"), ("problem", "long" if wide[1] else "empty"),
    ]  # (name, the header's classes: how wide the column may be, STYLE)
    head = "".join(_sortable_header(name, classes) for name, classes in columns)
    rows = []
    for sid in sorted(submissions):
        result = submissions[sid]
        points = result.get("groups", {})
        diagnoses, problem = texts[sid]
        late, override = result.get("late") or {}, result.get("override") or {}
        trail_cells = [
            f'<td class="number raw-score">{_text(result.get("raw_score", result["score"]))}</td>',
            f'<td class="number late-penalty" title="{_text(late.get("note", ""))}">{_text(_late_text(late))}</td>',
            f'<td class="override text">{_text(_override_text(override, result.get("comment", "")))}</td>',
        ] if adjusted else []
        cells = [
            f'<td class="student text name">{_breakable(class_results.student_name(sid, result))}</td>',
            f'<td class="text name">{_breakable(result.get("graded_from", ""))}</td>',
            f"<td>{_feedback_link(sid, 'feedback')}</td>",
            f'<td class="status text">{_text(result.get("status") or status_of(result))}</td>',
            f'<td class="number score">{_text(result["score"])}</td>',
            *trail_cells,
            *(f'<td class="number" data-group="{g}">{_text(points.get(g, {}).get("earned", 0))}</td>' for g in groups),
            f'<td class="diagnoses text{wide[0]}">{_text(diagnoses)}</td>',
            f'<td class="problem text{wide[1]}">{_breakable(problem)}</td>',
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"""<section id="students"><h2>Students ({len(submissions)})</h2>
<p class="muted">Click a column's name to sort by it. Scores are out of the points in brackets.</p>
<div class="scroll"><table class="sortable" id="students-table"><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></section>"""


# --- helpers ----------------------------------------------------------------------------


def _text(value: object) -> str:
    """Any value as HTML text: markup in it shows as characters, never as elements."""
    return html.escape(str(value), quote=True)


def _override_text(override: dict, comment: str = "") -> str:
    """The override and its reason, and an instructor's comment to the student (which changes no score)."""
    said = [f"{override['score']} ({override.get('reason', '')})"] if "score" in override else []
    if comment:
        said.append(f"comment: {comment}")
    return "; ".join(said)


def _late_text(late: dict) -> str:
    """The points the late policy took, with the days and the percent that made them."""
    if not late.get("days_late"):
        return str(late.get("penalty", ""))
    days = late["days_late"]
    return f"{late.get('penalty', '')} ({days} day{'s' if days != 1 else ''}, {late.get('percent', 0):g}%)"


def _breakable(value: object) -> str:
    """Text as HTML that may break after each underscore (``<wbr>``): an id or a file name, where a
    Canvas file stem has its parts (``smithjane_LATE_12345_67890_attention.py``), or a module's name
    in an error. Wider than its column, it breaks there, not inside a word. html.escape writes no
    underscore, so none is inside an entity."""
    return _text(value).replace("_", "_<wbr>")


def _diagnosis_text(diagnosis: dict) -> str:
    if diagnosis.get("mistake") == UNKNOWN:
        return f"{diagnosis.get('function', '')}: no known mistake"
    return str(diagnosis.get("title") or diagnosis.get("mistake", ""))


def _feedback_link(student_id: str, label: str | None = None) -> str:
    href = "feedback/" + quote(f"{untrusted.file_stem(student_id)}.html", safe="")
    return f'<a href="{_text(href)}">{_text(label or student_id)}</a>'


def _sortable_header(name: str, classes: str = "") -> str:
    """A column's header: a button that sorts the table by the column (SORT_SCRIPT)."""
    attribute = f' class="{classes}"' if classes else ""
    return f'<th{attribute}><button type="button">{_text(name)}</button></th>'


def _students_noun(count: int) -> str:
    return "student" if count == 1 else "students"


def _percent(share: float) -> str:
    return f"{100 * share:.0f}%"


def _read_match(path: Path) -> dict | None:
    try:
        match = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return match if isinstance(match, dict) else None
