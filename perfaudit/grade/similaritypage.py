"""The similarity page: reports/similarity.html, beside the class report, which links to it.

Per notebook, the pairs of students whose solution code is unusually alike (similarity.py, copydetect), each with
its figures and both students' code side by side, the matching runs marked. It informs the instructor and changes
no grade. Like the class report it makes no request (the same Content Security Policy), and everything that came
from a submission (student ids, code, reasons) is escaped: ids and reasons through page.e, code by
copydetect's escaping highlighter, then escape.control_free. A submission that cannot be read is listed with why.
"""

import os
import time
from pathlib import Path

import copydetect

from perfaudit import ASSIGNMENT
from perfaudit.grade import similarity, solutions
from perfaudit.grade.page import POLICY, STYLE, e

PAGE = "similarity.html"
# Pairs per notebook shown with their code; the table lists every pair. A class that shares one leaked answer makes
# a pair of every two students: shown whole, that page would be megabytes.
CODE_SHOWN = 40

PAGE_STYLE = STYLE + """
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.pair pre { margin: 0; padding: 6px; border: 1px solid #ddd; background: #fafafa; overflow-x: auto;
  font: 12px/1.4 ui-monospace, monospace; white-space: pre-wrap; word-break: break-word; }
mark { background: #ffe08a; }
"""


def render(found: solutions.Submissions, pairs: dict[str, list[similarity.Pair]], threshold: float) -> str:
    """The page; pairs: {notebook: its pairs over threshold}."""
    sections = [_notebook_section(notebook, found.code[notebook], pairs[notebook]) for notebook in pairs]
    if not sections:
        sections = ["<p>No release notebook was found: nothing to compare.</p>"]
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
            f"<title>Similar submissions: {e(ASSIGNMENT)}</title>\n<style>{PAGE_STYLE}</style></head>\n<body>\n"
            f"<h1>Similar submissions: {e(ASSIGNMENT)}</h1>\n"
            f"<p><strong>For your information only: this page changes no grade.</strong> Alike code is a reason to "
            f"look, not proof: short answers to the same question, written with the same API, can look alike, and a "
            f"copy can be disguised.</p>\n"
            f'<p class="note">Compared: the code each student wrote in a notebook\'s solution cells, against every '
            f"other student's for the same notebook; the release's code (each solution cell's starter, every other "
            f"cell) is left out, and markdown answers are not compared. copydetect {e(copydetect.__version__)} "
            f"fingerprints the code as MOSS does: names and strings count as one letter each, so renamed variables "
            f"and reordered functions still match. Listed: pairs in which at least <strong>{threshold:.0%}</strong> "
            f"of one student's fingerprinted code is found in the other's, in runs of at least "
            f"{similarity.NOISE_CHARS} characters of that normalized code, {similarity.MIN_MATCHED_CHARS} or more in "
            f"all. Built "
            f"{e(time.strftime('%Y-%m-%d %H:%M:%S %z'))}; back to the <a href=\"class-report.html\">class "
            f"report</a>.</p>\n"
            + "\n".join(sections) + "\n" + _skipped_section(found.skipped) + "\n</body></html>\n")


def _notebook_section(notebook, code, pairs):
    head = (f"<h2>{e(notebook)}</h2>\n<p class=\"note\">{len(code)} submission(s) compared, "
            f"{len(pairs)} pair(s) over the threshold.</p>\n")
    if not pairs:
        return head
    rows = "".join(f'<tr><td>{_first(notebook, at, p)}</td><td>{e(p.second)}</td>'
                   f'<td class="n">{p.first_share:.0%}</td><td class="n">{p.second_share:.0%}</td>'
                   f'<td class="n">{p.matched_chars}</td></tr>\n'
                   for at, p in enumerate(pairs))
    table = (f"<table><thead><tr><th>student</th><th>and student</th><th>of the first's code, found in the "
             f"second's</th><th>of the second's, in the first's</th><th>characters matched</th></tr></thead>"
             f"<tbody>\n{rows}</tbody></table>\n")
    more = (f'<p class="note">The code of the first {CODE_SHOWN} pairs is shown; the other {len(pairs) - CODE_SHOWN} '
            "are in the table above.</p>\n" if len(pairs) > CODE_SHOWN else "")
    return head + table + more + "".join(_pair(notebook, at, p, code) for at, p in enumerate(pairs[:CODE_SHOWN]))


def _first(notebook, at, pair):
    return f'<a href="#{e(notebook)}-{at}">{e(pair.first)}</a>' if at < CODE_SHOWN else e(pair.first)


def _pair(notebook, at, pair, code):
    first, second = (similarity.marked(code[pair.first], pair.first_runs),
                     similarity.marked(code[pair.second], pair.second_runs))
    return (f'<h3 id="{e(notebook)}-{at}">{e(pair.first)} ({pair.first_share:.0%} of their code matched) and '
            f"{e(pair.second)} ({pair.second_share:.0%})</h3>\n"
            f'<div class="pair"><pre>{first}</pre><pre>{second}</pre></div>\n')


def _skipped_section(skipped):
    head = '<h2 id="skipped">Not compared</h2>\n'
    if not skipped:
        return head + "<p>Every submitted notebook was read.</p>"
    rows = "".join(f"<tr><td>{e(student)}</td><td>{e(notebook)}</td><td class=\"msg\">{e(why)}</td></tr>\n"
                   for student, notebook, why in skipped)
    return (head + '<p class="note">Submissions this page could not read; each is in no pair above.</p>\n'
            f"<table><thead><tr><th>folder in submitted/</th><th>notebook</th><th>why</th></tr></thead><tbody>\n"
            f"{rows}</tbody></table>")


def build(reports_dir: str | Path, submitted_dir: str | Path, release_dir: str | Path,
          threshold: float = similarity.THRESHOLD) -> tuple[Path, float]:
    """Write reports_dir/similarity.html; return (its path, seconds it took)."""
    started = time.monotonic()
    found = solutions.read(submitted_dir, release_dir)
    pairs = {notebook: similarity.similar_pairs(code, found.release[notebook].course_code, threshold)
             for notebook, code in found.code.items()}
    reports_dir = Path(reports_dir)
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = reports_dir / PAGE
    tmp = path.with_name(f"{PAGE}.{os.getpid()}.tmp")
    tmp.write_text(render(found, pairs, threshold), encoding="utf-8")
    tmp.replace(path)
    return path, time.monotonic() - started
