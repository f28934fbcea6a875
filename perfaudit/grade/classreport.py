"""The class report: one self-contained HTML page about the whole class, written after every grading run.

    python -m perfaudit.grade --report   # reports/class-report.html from the gradebook, grading nobody

It reads the gradebook (any URL nbgrader takes: sqlite or PostgreSQL), the autograded notebooks and what the batch
keeps beside them in autograded/.batch-grading/ (the records, the reasons, who was not graded), and the newest
regrade diff in reports/. The page holds the score distributions (histograms drawn with matplotlib, embedded as
data: URIs), each test's pass count and discrimination (items.py), the most common failure causes per test, the
last regrade's changes, the time per notebook, who needs you (a notebook refused at intake: in none of the page's
numbers) and who was not graded and why. It makes no request: its Content
Security Policy allows nothing but data: images and its own inline style and script (a few lines that sort a
table when its header is clicked). Everything that came from a submission (student ids, folder names, messages)
is shown through escape.one_line and html.escape.
"""

import base64
import io
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, TextIO

from matplotlib.figure import Figure
from nbgrader.api import MissingEntry
from sqlalchemy.engine import make_url

from perfaudit import ASSIGNMENT, handout, paths, variants
from perfaudit.autograde import graded
from perfaudit.bookkeeping import statefolder
from perfaudit.bookkeeping.coursedir import course_directory
from perfaudit.bookkeeping.coursedir import venv_first_on_path
from perfaudit.grade import classdata, intake, items, records, refused, regrade
from perfaudit.grade.classdata import ClassData
from perfaudit.grade.escape import one_line
from perfaudit.grade.page import POLICY, STYLE, e

REPORTS_DIR = "reports"  # in the course directory
PAGE = "class-report.html"
NOT_GRADED = "not-graded.json"  # in the batch state folder: the last run's students it could not grade
CAUSES_SHOWN = 5  # failure causes listed per test; the rest are counted
# Click a header: sort its table's rows by that column, numbers as numbers (data-value), again to reverse.
SCRIPT = """
document.querySelectorAll("table.sortable th").forEach((th) => th.addEventListener("click", () => {
  const table = th.closest("table"), at = [...th.parentNode.children].indexOf(th);
  const up = th.getAttribute("aria-sort") !== "ascending";
  table.querySelectorAll("th").forEach((h) => h.removeAttribute("aria-sort"));
  th.setAttribute("aria-sort", up ? "ascending" : "descending");
  const key = (row) => {
    const c = row.children[at]; return c.dataset.value !== undefined ? parseFloat(c.dataset.value) : c.textContent;
  };
  const rows = [...table.tBodies[0].rows].sort((a, b) => {
    const x = key(a), y = key(b);
    if (typeof x === "number" || typeof y === "number") {
      if (isNaN(x) || isNaN(y)) return isNaN(x) - isNaN(y);  // no value: last either way
      return up ? x - y : y - x;
    }
    return up ? x.localeCompare(y) : y.localeCompare(x);
  });
  table.tBodies[0].append(...rows);
}));
"""


class Cell(str):
    """A table cell already made of escaped HTML (<td ...>...</td>); any other value is text, escaped by _table."""


def _number(value, digits=2):
    if value is None:
        return Cell('<td class="n" data-value="">&ndash;</td>')
    shown = f"{value:g}" if digits is None else f"{value:.{digits}f}"
    return Cell(f'<td class="n" data-value="{value!r}">{shown}</td>')


def _message(text):
    return Cell(f'<td class="msg">{e(text)}</td>')


def _table(header, rows, table_id=None, sortable=True):
    """rows: lists of Cells or plain values, escaped here."""
    attributes = (f' id="{e(table_id)}"' if table_id else "") + (' class="sortable"' if sortable else "")
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(c if isinstance(c, Cell) else f"<td>{e(c)}</td>"
                                     for c in row) + "</tr>\n" for row in rows)
    return f"<table{attributes}><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>"


def histogram(title: str, scores: list[float], maximum: float) -> str:
    """A histogram of scores as a PNG data: URI (one bar per point when the maximum is small)."""
    figure = Figure(figsize=(3.6, 2.4), dpi=100)
    axes = figure.subplots()
    step = 1 if maximum <= 40 else maximum / 20
    edges = [i * step - step / 2 for i in range(int(maximum / step) + 2)]
    axes.hist(scores, bins=edges, color="#3b6ea5", edgecolor="white")
    axes.set_title(title, fontsize=9)
    axes.set_xlabel(f"points (of {maximum:g})", fontsize=8)
    axes.set_ylabel("students", fontsize=8)
    axes.tick_params(labelsize=7)
    axes.yaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]  # a MaxNLocator's
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _distribution_section(data):
    found = items.distributions(data)
    plots, rows = [], []
    for name, (scores, maximum) in found.items():
        title = "total" if name == "total" else name
        summary = (f"mean {statistics.fmean(scores):.2f}, median {statistics.median(scores):g}"
                   if scores else "no students")
        plots.append(f'<figure><img src="{histogram(title, scores, maximum)}" width="360" height="240" '
                     f'alt="histogram of scores, {e(title)}: {e(summary)}"></figure>')
        rows.append([title, _number(maximum, None), _number(statistics.fmean(scores) if scores else None),
                     _number(statistics.median(scores) if scores else None, None),
                     _number(sum(1 for s in scores if s >= maximum), None),
                     _number(sum(1 for s in scores if s == 0), None)])
    table = _table(["notebook", "points", "mean", "median", "full marks", "zero"], rows, "distribution-table")
    return (f'<h2 id="scores">Scores</h2>\n<p class="note">Grades after nbgrader\'s late penalty, as the summary, '
            f'grades.csv and the LMS export give them; a notebook not graded (needs you) is in none, nor its '
            f'student in the total.</p>\n<div class="plots">{"".join(plots)}</div>\n{table}')


def _tests_section(analysed):
    rows = []
    for item in analysed:
        top = item.causes[0] if item.causes else None
        rows.append([item.notebook, item.name, _number(item.points, None), _number(item.passed, None),
                     _number(item.graded, None), _number(item.pass_rate), _number(item.discrimination),
                     _message(f"{top[0]} ({top[1]})") if top else Cell("<td></td>")])
    return (f'<h2 id="tests">Tests</h2>\n<p class="note">Passed: full points on the test. Discrimination: '
            f"{e(items.DISCRIMINATION)}; &ndash; when everyone or nobody passed or the other tests do not vary. "
            "Near 0 or below: passing this test says little about the rest (look at its failures below). "
            "Click a column's header to sort by it.</p>\n"
            + _table(["notebook", "test", "points", "passed", "graded", "pass rate", "discrimination",
                      "most common failure (students)"], rows, "tests-table"))


def _failures_section(analysed):
    parts = ['<h2 id="failures">Why students failed each test</h2>\n<p class="note">Messages grouped by cause: the '
             "message with its numbers replaced by #. One example message per cause.</p>"]
    for item in analysed:
        if not item.causes:
            continue
        shown = item.causes[:CAUSES_SHOWN]
        rows = [[_number(n, None), _message(key), _message(example)]
                for key, n, example in shown]
        rest = item.causes[CAUSES_SHOWN:]
        more = (f'<p class="note">and {len(rest)} other cause(s), {sum(n for _, n, _ in rest)} student(s)</p>'
                if rest else "")
        parts.append(f"<h3>{e(item.notebook)} / {e(item.name)}: {item.graded - item.passed} of {item.graded} "
                     f"failed</h3>\n" + _table(["students", "cause", "example"], rows,
                                                f"failures-{item.notebook}-{item.name}") + more)
    if len(parts) == 1:
        parts.append("<p>No test failed.</p>")
    return "\n".join(parts)


def _variants_section(data, variant_of):
    """Notebook 5 by variant: each variant's students, scores and each test's pass rate, so that a variant harder
    than the others shows. variant_of: {student: variant} (perfaudit/variants.py)."""
    audit = paths.STAGES[5].removesuffix(".ipynb")
    maximum = data.notebooks().get(audit)
    head = ('<h2 id="variants">Notebook 5 by variant</h2>\n<p class="note">Each student audits the variant drawn '
            "from their id (perfaudit/variants.py; python -m perfaudit.grade --variants lists them). A test passed "
            "far less often in one variant than in the others is harder there.</p>\n")
    if maximum is None:
        return head + "<p>No notebook 5 in this assignment.</p>"
    by_variant = {v: [s for s in data.scores if variant_of.get(s) == v and data.graded(s, audit)]
                  for v in handout.VARIANTS}
    rows = []
    for variant, students in by_variant.items():
        scores = [data.final_score(s, audit) for s in students]
        rows.append([variant, _number(len(students), None), _number(statistics.fmean(scores) if scores else None),
                     _number(sum(1 for x in scores if x >= maximum), None)])
    table = _table(["variant", "students", f"mean (of {maximum:g})", "full marks"], rows, "variants-table")
    tests = [t for t in data.tests if t.notebook == audit]
    rate_rows = []
    for test in tests:
        rates = []
        for students in by_variant.values():
            passed = sum(1 for s in students if data.scores[s].get(test.key, 0) >= test.points)
            rates.append(_number(passed / len(students) if students else None))
        rate_rows.append([test.name, _number(test.points, None), *rates])
    rates_table = _table(["test", "points", *(f"pass rate {v}" for v in handout.VARIANTS)], rate_rows,
                         "variant-tests-table")
    return head + table + "\n" + rates_table


def _regrade_section(reports_dir):
    found = regrade.newest(reports_dir)
    head = '<h2 id="regrade">Last regrade that changed scores</h2>\n'
    if found is None:
        return head + "<p>No regrade has changed a score.</p>"
    path, rows = found
    students: dict[str, set[str]] = {}
    for row in rows:
        students.setdefault(row["direction"], set()).add(row["student"])
    said = ", ".join(f"{len(s)} {direction}" for direction, s in sorted(students.items()))
    table = _table(["student", "total before", "total after", "notebook", "test", "before", "after",
                    "message before", "message after"],
                   [[r["student"], _number(float(r["old_total"]), None), _number(float(r["new_total"]), None),
                     r["notebook"], r["test"], _number(float(r["old_score"]), None),
                     _number(float(r["new_score"]), None), _message(r["old_message"]),
                     _message(r["new_message"])] for r in rows], "regrade-table")
    return (head + f"<p>{e(path.name)}: {len({r['student'] for r in rows})} student(s) changed ({e(said)}); one "
            "row per test whose score moved.</p>\n" + table)


def _time_section(data, newest_records):
    found = items.timings(data, newest_records)
    head = ('<h2 id="time">Time per notebook</h2>\n<p class="note">Seconds to grade one notebook on its worker '
            "(nbgrader autograde: the sandboxed kernel running the student's code and the grader's tests), from "
            "the newest record of each grade.</p>\n")
    if not found:
        return head + "<p>No records of grading times (graded before records were kept, or by plain nbgrader).</p>"
    rows = [[nb, _number(n, None), _number(median), _number(p90), _number(longest)]
            for nb, (n, median, p90, longest) in found.items()]
    return head + _table(["notebook", "notebooks timed", "median s", "90th percentile s", "max s"], rows,
                         "time-table")


def _needs_you_section(data, needs_you):
    """Each notebook refused at intake and not resolved: intake's reason, else the one the batch kept (no row in the
    gradebook: graded again once its file is in place)."""
    found = {student: dict(notebooks) for student, notebooks in data.withheld.items()}
    for student, notebooks in needs_you.items():
        found.setdefault(student, {}).update(notebooks)
    rows = [[student, notebook, why] for student, notebooks in sorted(found.items())
            for notebook, why in sorted(notebooks.items())]
    head = ('<h2 id="needs-you">Needs you</h2>\n<p class="note">Notebooks refused at intake: not graded (no score, '
            "not a 0: in no number above, their student with no total), and nothing of the student's exported, until "
            "you put the file you choose in their submitted folder and run again.</p>\n")
    return head + (_table(["student", "notebook", "why"], rows, "needs-you-table") if rows
                   else "<p>Nobody: no notebook is waiting for you.</p>")


def _not_graded_section(data, state_dir):
    rows = []
    try:
        last = json.loads((state_dir / NOT_GRADED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        last = {}
    for student, whys in sorted(last.get("environment", {}).items()):
        rows += [[student, "every notebook", "the grading environment failed, not the student: graded at the next "
                  f"run; {why}"] for why in whys]
    for folder, why in sorted(last.get("refused", {}).items()):
        rows.append([f"submitted/{folder}", "every notebook", f"its folder's name: {why}"])
    for student, notebooks in sorted(data.not_graded.items()):
        rows += [[student, notebook, why] for notebook, why in notebooks.items()]
    head = ('<h2 id="not-graded">Not graded</h2>\n<p class="note">Students the last run could not grade, and '
            "notebooks with no autograded copy (each of their tests scores 0).</p>\n")
    return head + (_table(["student", "notebook", "why"], rows, "not-graded-table") if rows
                   else "<p>Everyone was graded.</p>")


def render(data: ClassData, analysed: list[items.Item], newest_records: dict[tuple[str, str], dict[str, Any]],
           reports_dir: Path, state_dir: Path, source: str, needs_you: dict[str, dict[str, str]] | None = None,
           similarity: str = "", variant_of: dict[str, str] | None = None) -> str:
    """The page; needs_you: {student: {notebook: "not graded: why"}} refused at intake (refused.needs_you);
    similarity: the paragraph that links the similarity page (similarity_link), already HTML; variant_of:
    {student: their variant of notebook 5}."""
    maximum = sum(data.notebooks().values())
    sections = [_distribution_section(data), _tests_section(analysed), _failures_section(analysed),
                _variants_section(data, variant_of or {}), _regrade_section(reports_dir),
                _time_section(data, newest_records), _needs_you_section(data, needs_you or {}),
                _not_graded_section(data, state_dir)]
    nav = " &middot; ".join(f'<a href="#{a}">{t}</a>' for a, t in [
        ("scores", "Scores"), ("tests", "Tests"), ("failures", "Failures"), ("variants", "Variants"),
        ("regrade", "Regrade"),
        ("time", "Time"), ("needs-you", "Needs you"), ("not-graded", "Not graded")])
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
            f"<title>Class report: {e(ASSIGNMENT)}</title>\n<style>{STYLE}</style></head>\n<body>\n"
            f"<h1>Class report: {e(ASSIGNMENT)}</h1>\n"
            f'<p class="note">{len(data.scores)} student(s) in the gradebook, {len(data.tests)} tests, '
            f"{maximum:g} points. Built {e(time.strftime('%Y-%m-%d %H:%M:%S %z'))} from {e(source)}.</p>\n"
            f"<nav>{nav}</nav>\n{similarity}\n" + "\n".join(sections)
            + f"\n<script>{SCRIPT}</script>\n</body></html>\n")


def similarity_link(reports_dir: Path, submitted: Path, release: Path) -> str:
    """Write the similarity page beside this one; the paragraph that links it, or says why it was not written (its
    failure never stops the class report)."""
    try:
        from perfaudit.grade import similaritypage  # copydetect imports matplotlib.pyplot: only when a page is built

        path, seconds = similaritypage.build(reports_dir, submitted, release)
    except Exception as error:  # noqa: BLE001 - a student's file or a library's bug: the class report comes first
        return (f'<p class="low">The similarity page was not written ({e(type(error).__name__)}: {e(error)}); '
                "python -m perfaudit.grade --report tries again.</p>")
    return (f'<p>Pairs of submissions whose code is unusually alike: <a href="{e(path.name)}">the similarity '
            f"page</a> (for your information: it changes no grade; built in {seconds:.1f} s).</p>")


def build(course_dir: str | Path, url: str, course_id: str, autograded: str | Path,
          needs_you: dict[str, dict[str, str]] | None = None, submitted: Path | None = None,
          release: Path | None = None) -> tuple[Path, float]:
    """Write reports/class-report.html; return (its path, seconds it took). needs_you: refused.needs_you's.
    submitted and release (the assignment's folders): the similarity page is written beside it, and linked."""
    started = time.monotonic()
    course_dir, autograded = Path(course_dir), Path(autograded)
    state_dir = statefolder.folder(autograded)
    data = classdata.read(url, course_id, ASSIGNMENT, autograded)
    newest_records = records.latest(records.read(records.path_for(autograded)))
    reports_dir = course_dir / REPORTS_DIR
    source = f"the gradebook {make_url(url).render_as_string(hide_password=True)} and {autograded}"
    similar = similarity_link(reports_dir, Path(submitted), Path(release)) if submitted and release else ""
    submitted_dir = Path(submitted) if submitted else course_dir / course_directory(course_dir).submitted_directory
    variant_of = {student: variants.assigned(graded.variant_id(student, submitted_dir)).variant
                  for student in data.scores}
    page = render(data, items.analyse(data), newest_records, reports_dir, state_dir, source, needs_you, similar,
                  variant_of)
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = reports_dir / PAGE
    tmp = path.with_name(f"{PAGE}.{os.getpid()}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path, time.monotonic() - started


def after_run(course_dir: str | Path, url: str, course_id: str, autograded: str | Path, batch: Any,
              before: ClassData | None, when: str, out: TextIO, submitted: Path | None = None,
              release: Path | None = None) -> None:
    """After a grading run: who it could not grade (kept for the report), the regrade diff, the class report and
    (given submitted and release) the similarity page."""
    course_dir, state_dir = Path(course_dir), statefolder.folder(autograded)
    state_dir.mkdir(parents=True, exist_ok=True)
    last = {"run_at": when, "environment": batch.environment, "refused": batch.refused}
    (state_dir / NOT_GRADED).write_text(json.dumps(last, indent=1, sort_keys=True), encoding="utf-8")
    if before is not None:
        after = classdata.read(url, course_id, ASSIGNMENT, autograded, students=list(before.scores))
        rows = regrade.changes(before, after)
        path = regrade.write_csv(course_dir / REPORTS_DIR, when, rows) if rows else None
        print(regrade.summary_line(rows, path), file=out)
    try:
        path, seconds = build(course_dir, url, course_id, autograded, batch.needs_you, submitted, release)
    except Exception as error:  # noqa: BLE001 - the grades are saved: say so, and how to get the page
        print(f"WARNING: the class report was not written ({type(error).__name__}: {one_line(error)}); the grades "
              "are saved. python -m perfaudit.grade --report writes it from the gradebook.", file=out)
        return
    print(f"Class report: {path} (built in {seconds:.1f} s)", file=out)


def build_for(course_dir: str | Path, db_url: str | None = None) -> tuple[Path, float]:
    """--report: the page for a course directory, from its gradebook (nbgrader_config.py's, or db_url)."""
    venv_first_on_path()  # nbgrader's Gradebook calls the `alembic` command: the venv's, unactivated or not
    coursedir = course_directory(Path(course_dir).resolve(), db_url=db_url)
    autograded = Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")).resolve()
    submitted = coursedir.format_path(coursedir.submitted_directory, ".", ".")
    needs_you = refused.needs_you(submitted, intake.lms_record(submitted), ASSIGNMENT)
    release = Path(coursedir.format_path(coursedir.release_directory, ".", ASSIGNMENT)).resolve()
    try:
        return build(Path(course_dir).resolve(), coursedir.db_url, coursedir.course_id, autograded, needs_you,
                     Path(submitted).resolve(), release)
    except MissingEntry:
        raise SystemExit(f"The gradebook ({make_url(coursedir.db_url).render_as_string(hide_password=True)}) has no "
                         f"assignment '{ASSIGNMENT}': nothing graded to report on yet.")
