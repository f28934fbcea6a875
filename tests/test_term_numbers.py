"""Numbers people can trust: one term, and every number each view of it shows read against the gradebook.

The term: a Canvas download (Ann) and a folder placed by hand in submitted/ (Handy's notebook, which came after the
due date: nbgrader's late penalty takes its points) are graded; the instructor then edits a hidden test in source/
(correct_summary: worth 2 points instead of 1, and it now checks the median of two timings, which Ann's summarize
gets wrong) and runs `make release`; a Moodle download (Cy, whose clock is not synchronized, and Dee, who uploaded
03-evidence.ipynb twice: refused, "pick one"; Eve, who did the same beside her notebook 1) is graded by
`python -m perfaudit.grade`, which grades Ann and Handy again, their grades being out of step with source/. Then
every number shown is compared with the gradebook, read through nbgrader's Gradebook API: `make grade`'s summary
(both runs), grades.csv, the class report, Formgrader's API, the Canvas and Moodle exports (grades and feedback
pages), and the student checker's headline, which counts checks and never shows points. Every student submits
notebook 1 (Dee excepted): a refused notebook, and notebook 4 which reuses it, have no row in the gradebook, so no
view shows them as a score, nor counts them in a total or a test's pass count; six notebooks are graded in all;
the environment check is skipped (the course's configuration and source/ change here, so it would run again;
tests/test_whole_term.py runs it).
"""

import contextlib
import csv
import io
import re
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from datetime import datetime, timezone

import nbformat
import pytest
from courses import FULL, NB1, NB4, make_course
from formgrader import started_formgrader
from html_tables import Tables
from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT, check, notebooks, paths, workcopy
from perfaudit.fixtures import samples
from perfaudit.grade.__main__ import main
from perfaudit.grade.classreport import PAGE, REPORTS_DIR
from perfaudit.instructor import course

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")]

COURSE_ID = "jax-performance-audit"
DUE = datetime(2025, 3, 10, 12, 0, tzinfo=timezone.utc)
BEFORE_DUE = DUE.timestamp() - 3600
NB3 = paths.STAGES[3].removesuffix(".ipynb")
NEW_CHECK = 'assert summarize([1.0, 2.0])["median_s"] == 1.5, "the median of two timings is their mean"'
PICK_ONE = "2 files claim dee-dup_888/03-evidence.ipynb; pick one"
EVE = "eve-two_999"  # notebook 1 graded, her notebook 3 refused at intake (two files), so 4 not graded either
EVE_PICK_ONE = f"2 files claim {EVE}/03-evidence.ipynb; pick one"
REUSES = "it reuses 03-evidence.ipynb, which is not graded until you resolve it"


def _notebook(sample, stage=1):
    return nbformat.writes(samples.submission(samples.SAMPLES[sample], stage)).encode()


def _odd_counts_only():
    """Ann's notebook 1: right but for the median of an even number of timings, which only the edited test asks."""
    nb = samples.submission(samples.SAMPLES["correct"], 1)
    cell = next(c for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == "summarize")
    wrong = cell.source.replace('"median_s": float(np.median(samples)),',
                                '"median_s": float(np.median(samples) if len(samples) % 2 else samples.max()),')
    assert wrong != cell.source
    cell.source = wrong
    return nbformat.writes(nb).encode()


def _zip(path, entries):
    """An LMS download: {name: (bytes, epoch seconds the LMS stored)}, zip times being this machine's local time."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, (data, epoch) in entries.items():
            archive.writestr(zipfile.ZipInfo(name, time.localtime(epoch)[:6]), data)
    return path


def _grade_command(root, *args):
    """`python -m perfaudit.grade ARGS` in the course, as `make grade` runs it: (exit status, what it printed)."""
    done = subprocess.run([sys.executable, "-m", "perfaudit.grade", *args], cwd=root, capture_output=True, text=True,
                          timeout=900)
    return done.returncode, done.stdout + done.stderr


def _export(root, lms):
    """`python -m perfaudit.grade --export LMS --roster <the LMS's file>`, run here: (exit status, what it printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["--course-dir", str(root), "--export", lms, "--roster", str(root / f"{lms}.csv")])
    return status, out.getvalue()


def _edit_hidden_test(root):
    """The instructor's edit: correct_summary worth 2 points, with one more hidden check; then `make release`."""
    path = root / "source" / ASSIGNMENT / f"{NB1}.ipynb"
    nb = nbformat.read(path, as_version=4)
    test = next(c for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == "correct_summary")
    test.source = test.source.replace("### END HIDDEN TESTS", f"{NEW_CHECK}\n### END HIDDEN TESTS")
    test.metadata["nbgrader"]["points"] = 2
    nbformat.write(nb, path)
    course.nbgrader("generate_assignment", ASSIGNMENT, "--force", "--no-db", course_dir=root)  # make release


def read_gradebook(root):
    """The gradebook's truth, through nbgrader's API: {"notebooks": {notebook: max}, "max": assignment max,
    "students": {student: {notebook: (score, max, late penalty)}}, "tests": {student: {(notebook, test): (score,
    max)}}, "cells": [(notebook, test, points)]}: a notebook with no row in a submission is absent from both."""
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gradebook:
        assignment = gradebook.find_assignment(ASSIGNMENT)
        found = {"notebooks": {nb.name: nb.max_score for nb in assignment.notebooks}, "max": assignment.max_score,
                 "students": {}, "tests": {},
                 "cells": [(nb.name, cell.name, cell.max_score) for nb in assignment.notebooks
                           for cell in nb.grade_cells if cell.cell_type == "code"]}
        for submission in assignment.submissions:
            student = submission.student.id
            found["students"][student] = {nb.name: (nb.score, nb.max_score, nb.late_submission_penalty or 0)
                                          for nb in submission.notebooks}
            found["tests"][student] = {(nb.name, g.name): (g.score, g.max_score) for nb in submission.notebooks
                                       for g in nb.grades if g.cell.cell_type == "code"}
    return found


def _checker(tmp_path, root, student):
    """`python -m perfaudit.check --stage 1` in a working copy holding the notebook the student submitted."""
    home = tmp_path / student
    work = workcopy.assignment_dir(home)
    work.mkdir(parents=True)
    shutil.copy(root / "submitted" / student / ASSIGNMENT / f"{NB1}.ipynb", work)
    _, lines = check.run_visible_checks(1, home / "evidence", course_dir=home)
    return lines


@contextlib.contextmanager
def _phase(found, name):
    """Time one part of the term: printed at its end, to see where the test's minutes go."""
    started = time.monotonic()
    yield
    found["seconds"][name] = round(time.monotonic() - started, 1)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("term")
    found = {"seconds": {}}
    with _phase(found, "course (made once per test run)"):
        root = found["root"] = make_course(tmp / "course")
    with open(root / "nbgrader_config.py", "a") as config:
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"  # a late notebook scores 0\n')
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gradebook:
        gradebook.update_or_create_assignment(ASSIGNMENT, duedate=DUE.replace(tzinfo=None))

    # Week 1: a Canvas download, and a folder placed by hand with the time the notebook came (after the due date).
    canvas = _zip(tmp / "canvas.zip", {f"ann_101_5001_{NB1}.ipynb": (_odd_counts_only(), BEFORE_DUE)})
    hand_placed = root / "submitted" / "handy_900" / ASSIGNMENT
    hand_placed.mkdir(parents=True)
    (hand_placed / f"{NB1}.ipynb").write_bytes(_notebook("correct"))
    (hand_placed / "timestamp.txt").write_text("2025-03-10 13:00:00.000000 UTC")
    # --skip-canary: nbgrader_config.py changed (and source/ will), so the environment check would run again.
    with _phase(found, "first grading"):
        found["first"] = _grade_command(root, "--from", str(canvas), "--workers", "2", "--no-progress",
                                        "--skip-canary")
    found["before"] = read_gradebook(root)

    # The instructor edits a hidden test; week 2: a Moodle download, one notebook in it twice.
    with _phase(found, "make release"):
        _edit_hidden_test(root)
    moodle = _zip(tmp / "moodle.zip", {
        f"Cy Moo_777_assignsubmission_file_/{NB1}.ipynb": (_notebook("stage1-unsynchronized-clock"), BEFORE_DUE),
        f"Dee Dup_888_assignsubmission_file_/{NB3}.ipynb": (_notebook("correct", 3), BEFORE_DUE),
        f"Dee Dup_888_assignsubmission_file_/{NB3} (1).ipynb": (_notebook("correct", 3), BEFORE_DUE),
        f"Eve Two_999_assignsubmission_file_/{NB1}.ipynb": (_notebook("correct"), BEFORE_DUE),
        f"Eve Two_999_assignsubmission_file_/{NB3}.ipynb": (_notebook("correct", 3), BEFORE_DUE),
        f"Eve Two_999_assignsubmission_file_/{NB3} (1).ipynb": (_notebook("correct", 3), BEFORE_DUE),
    })
    with _phase(found, "second grading"):
        found["second"] = _grade_command(root, "--from", str(moodle), "--workers", "2", "--no-progress",
                                         "--skip-canary")

    # Grades back to both LMSs, from the rosters each gives.
    (root / "canvas.csv").write_text("Student,ID,SIS User ID,SIS Login ID,Section,Audit (9)\n"
                                     '"Ann",101,,,,\n"Handy",900,,,,\n')
    (root / "moodle.csv").write_text(
        "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
        "Last modified (submission),Last modified (grade),Feedback comments\n"
        "Participant 777,Cy Moo,cy@example.org,Submitted,,100.00,Yes,-,-,\n"
        "Participant 888,Dee Dup,dee@example.org,Submitted,,100.00,Yes,-,-,\n"
        "Participant 999,Eve Two,eve@example.org,Submitted,,100.00,Yes,-,-,\n")
    with _phase(found, "exports"):
        found["exports"] = {lms: _export(root, lms) for lms in ("canvas", "moodle")}
    found["after"] = read_gradebook(root)

    # Formgrader's API: what its pages show (Manage Students, an assignment's submissions, a student's notebooks).
    with _phase(found, "Formgrader"), started_formgrader(root, tmp / "lab-home") as server:
        found["formgrader"] = {
            "students": server.api("GET", "/formgrader/api/students"),
            "submissions": server.api("GET", f"/formgrader/api/submissions/{ASSIGNMENT}"),
            "notebooks": {s: server.api("GET", f"/formgrader/api/student_notebook_submissions/{s}/{ASSIGNMENT}")
                          for s in found["after"]["students"]},
        }
    with _phase(found, "checker"):
        found["checker"] = {s: _checker(tmp / "checker", root, s) for s in ("ann_101", "cy-moo_777")}
    print(f"the term's parts, in seconds: {found['seconds']}")
    return found


def _views(term):
    return term["before"], term["after"]


def test_the_gradebook_holds_the_edited_test_s_points_and_verdicts(term):
    """The exact scores, from the gradebook: Ann's summarize fails the check added to the hidden test (4 of 6),
    Handy's gets the test's new 2 points (6 of 6), Cy's clock loses synchronized_time_call and first_call_slower."""
    before, after = _views(term)
    assert term["first"][0] == 0 and term["second"][0] == 0, term["second"][1]
    # (score, late penalty): Handy's notebook came after the due date, and a late notebook scores 0
    assert {s: nbs[NB1][::2] for s, nbs in before["students"].items()} == {"ann_101": (5, 0), "handy_900": (5, 5)}
    assert {s: nbs[NB1][::2] for s, nbs in after["students"].items()} == {
        "ann_101": (4, 0), "cy-moo_777": (4, 0), "handy_900": (6, 6), EVE: (6, 0)}
    assert (before["notebooks"][NB1], after["notebooks"][NB1]) == (FULL[NB1], FULL[NB1] + 1)
    assert (before["max"], after["max"]) == (sum(FULL.values()), sum(FULL.values()) + 1)
    assert after["tests"]["ann_101"][NB1, "correct_summary"] == (0, 2)
    assert "dee-dup_888" not in after["students"], "a notebook refused at intake is never a score"
    # Eve's notebook 3, refused, and 4, which reuses it: no row (nbgrader's autograde gave each a 0); 2 is not hers
    assert sorted(after["students"][EVE]) == sorted(set(after["notebooks"]) - {NB3, NB4})
    assert after["students"][EVE][paths.STAGES[2].removesuffix(".ipynb")][0] == 0


def _table(out, heading):
    """The rows of a table the summary prints under `heading` (cells two spaces or more apart), header first."""
    lines = out.split(f"\n{heading}")[1].split("\n\n")[0].splitlines()[1:]
    return [re.split(r"\s{2,}", line.strip()) for line in lines]


PASSED = re.compile(r"^ +(\d+)/(\d+) +(\S+) (\S+) \(([\d.]+) pt\)$", re.M)  # a line of the summary's Tests passed


def _totals(view):
    """{student: total after the late penalty}, None where a notebook has no row (not graded: no total yet)."""
    return {s: sum(score - late for score, _, late in nbs.values()) if len(nbs) == len(view["notebooks"]) else None
            for s, nbs in view["students"].items()}


def _shown(value):
    """A number as the summary shows it; None (no row in the gradebook) as "not graded"."""
    return "not graded" if value is None else f"{value:g}"


@pytest.mark.parametrize("run", ["first", "second"])
def test_make_grade_s_summary_shows_the_gradebook_s_numbers(term, run):
    """The table of scores (maxima, each notebook and the total, after the late penalty) and the tests passed."""
    view = term["before" if run == "first" else "after"]
    out = term[run][1]
    header, *rows = _table(out, "Scores (")
    notebooks = sorted(view["notebooks"])
    assert header == ["student", *(f"{nb.split('-')[0]} /{view['notebooks'][nb]:g}" for nb in notebooks),
                      f"total /{view['max']:g}"]
    shown = {row[0]: row[1:] for row in rows}
    assert shown == {s: [_shown(nbs[nb][0] - nbs[nb][2] if nb in nbs else None) for nb in notebooks]
                     + [_shown(_totals(view)[s])] for s, nbs in view["students"].items()}
    passed = {(nb, test): (int(full), int(graded), float(points)) for full, graded, nb, test, points in
              PASSED.findall(out.split("\nTests passed")[1])}
    counts = {}
    for tests in view["tests"].values():
        for key, (score, points) in tests.items():
            full, graded, _ = counts.get(key, (0, 0, points))
            counts[key] = (full + (score >= points), graded + 1, points)
    for nb, test, points in view["cells"]:  # a test nobody was graded on: 0 of 0
        counts.setdefault((nb, test), (0, 0, points))
    assert passed == counts
    if run == "second":  # Eve's notebooks 3 and 4 are not counted: the others' are (not submitted: 0)
        assert {graded for (nb, _), (_, graded, _) in passed.items() if nb in (NB3, NB4)} == {len(view["students"]) - 1}


def test_the_summary_says_who_was_graded_again_and_who_needs_you(term):
    before, after = _views(term)
    out = term["second"][1]
    for student in before["students"]:
        old, new = _totals(before)[student], _totals(after)[student]
        assert f"{student}: graded again: the source of {NB1} changed ({old:g} -> {new:g})" in out
    moved = [_totals(after)[s] - _totals(before)[s] for s in before["tests"]  # a test's score moved: listed
             if {key: score for key, (score, _) in before["tests"][s].items()}
             != {key: score for key, (score, _) in after["tests"][s].items()}]
    up, down, same = sum(m > 0 for m in moved), sum(m < 0 for m in moved), sum(m == 0 for m in moved)
    assert (f"Regrade: {len(moved)} student(s)' scores changed: {up} up, {down} down"
            + (f", {same} with the same total" if same else "") + " (") in out
    assert _table(out, "Needs you (") == [
        ["dee-dup_888 03-evidence: not graded: " + PICK_ONE], [f"dee-dup_888 {NB4}: not graded: {REUSES} ({PICK_ONE})"],
        [f"{EVE} 03-evidence: not graded: {EVE_PICK_ONE}"], [f"{EVE} {NB4}: not graded: {REUSES} ({EVE_PICK_ONE})"]]
    assert f"  {EVE} 03-evidence (not graded): not graded: {EVE_PICK_ONE}" in out  # under "Zeros and problems"


def test_grades_csv_holds_the_gradebook_s_numbers(term):
    """A student with a notebook not graded has no score there (empty, not a sum of what was graded) and the
    reasons in not_graded."""
    after = term["after"]
    rows = {row["student_id"]: row for row in csv.DictReader((term["root"] / "grades.csv").open())}
    assert {s: tuple(float(r[k]) if r[k] else None for k in ("raw_score", "late_submission_penalty", "score",
                                                             "max_score")) for s, r in rows.items()} == {
        s: (sum(score for score, _, _ in nbs.values()), sum(late for _, _, late in nbs.values()), _totals(after)[s],
            after["max"]) if _totals(after)[s] is not None else (None, None, None, after["max"])
        for s, nbs in after["students"].items()}
    assert {s: r["not_graded"] for s, r in rows.items()} == {
        "ann_101": "", "cy-moo_777": "", "handy_900": "",
        EVE: f"03-evidence: not graded: {EVE_PICK_ONE}; {NB4}: not graded: {REUSES} ({EVE_PICK_ONE})"}


def test_the_class_report_shows_the_gradebook_s_numbers(term):
    """Scores (after the late penalty), each test's pass count, the last regrade's rows, and who needs you: a
    notebook not graded (no row in the gradebook) is in no distribution, no total and no pass count."""
    before, after = _views(term)
    tables = Tables((term["root"] / REPORTS_DIR / PAGE).read_text(encoding="utf-8")).tables
    students = sorted(after["students"])
    final = {s: {nb: score - late for nb, (score, _, late) in nbs.items()} for s, nbs in after["students"].items()}
    scores = {nb: ([final[s][nb] for s in students if nb in final[s]], maximum)
              for nb, maximum in after["notebooks"].items()}
    scores["total"] = ([_totals(after)[s] for s in students if _totals(after)[s] is not None], after["max"])
    shown = {row[0][0]: [float(value) if value else None for _, value in row[1:]]
             for row in tables["distribution-table"]}
    assert shown == {nb: [maximum, pytest.approx(statistics.fmean(found)) if found else None,
                          statistics.median(found) if found else None, sum(v >= maximum for v in found),
                          sum(v == 0 for v in found)] for nb, (found, maximum) in scores.items()}
    assert len(scores[NB3][0]) == len(scores["total"][0]) == 3  # Eve's notebook 3 is in none, nor her total
    shown = {(row[0][0], row[1][0]): [float(row[i][1]) for i in (2, 3, 4)] for row in tables["tests-table"]}
    assert shown == {(nb, test): [points, sum(after["tests"][s][nb, test][0] >= points for s in students
                                              if (nb, test) in after["tests"][s]),
                                  sum((nb, test) in after["tests"][s] for s in students)]
                     for nb, test, points in after["cells"]}
    assert [[cell for cell, _ in row] for row in tables["needs-you-table"]] == [
        ["dee-dup_888", "03-evidence", f"not graded: {PICK_ONE}"],
        ["dee-dup_888", NB4, f"not graded: {REUSES} ({PICK_ONE})"],
        [EVE, "03-evidence", f"not graded: {EVE_PICK_ONE}"], [EVE, NB4, f"not graded: {REUSES} ({EVE_PICK_ONE})"]]
    # The last regrade: each test whose score moved, with both totals, as the gradebook held them before and now.
    shown = sorted((r[0][0], float(r[1][1]), float(r[2][1]), r[3][0], r[4][0], float(r[5][1]), float(r[6][1]))
                   for r in tables["regrade-table"])
    assert shown == sorted((s, _totals(before)[s], _totals(after)[s], nb, test, old, after["tests"][s][nb, test][0])
                           for s in before["tests"] for (nb, test), (old, _) in before["tests"][s].items()
                           if old != after["tests"][s][nb, test][0])
    assert len(shown) == 2  # Ann's correct_summary down, Handy's up


def test_formgrader_shows_the_gradebook_s_numbers(term):
    """Formgrader shows the sum of the tests' scores, before nbgrader's late penalty (grades.csv's raw_score):
    Handy's 6 of 6, which the summary, grades.csv's score and the export give as 0. Eve's refused notebook 3, and
    her 4, have no row: Formgrader lists her graded notebooks alone, and their sum (no total anywhere else)."""
    after, shown = term["after"], term["formgrader"]
    raw = {s: sum(score for score, _, _ in nbs.values()) for s, nbs in after["students"].items()}
    assert {s["id"]: (s["score"], s["max_score"]) for s in shown["students"]} == {
        s: (raw[s], after["max"]) for s in after["students"]}
    assert {s["student"]: (s["score"], s["max_score"]) for s in shown["submissions"]} == {  # of the notebooks held
        s: (raw[s], sum(maximum for _, maximum, _ in nbs.values())) for s, nbs in after["students"].items()}
    assert {s["student"]: s["max_score"] for s in shown["submissions"]}[EVE] == after["max"] - FULL[NB3] - FULL[NB4]
    per_notebook = {s: {nb["name"]: (nb["score"], nb["max_score"]) for nb in found}
                    for s, found in shown["notebooks"].items()}
    assert per_notebook == {s: {nb: (score, maximum) for nb, (score, maximum, _) in nbs.items()}
                            for s, nbs in after["students"].items()}
    assert not {NB3, NB4} & set(per_notebook[EVE]), "Formgrader shows no score for a notebook refused at intake"


def test_each_lms_export_holds_the_gradebook_s_numbers(term):
    """Canvas takes the grade as it is (its roster has no Points Possible row), Moodle scaled to its Maximum Grade;
    the folder placed by hand is matched by the id in its name; a student who needs you gets nothing."""
    after, root = term["after"], term["root"]
    assert [status for status, _ in term["exports"].values()] == [0, 0], term["exports"]
    totals = _totals(after)
    canvas = {row[1]: row[-1] for row in csv.reader((root / "exports" / "canvas-grades.csv").open())}
    assert canvas == {"ID": "Audit (9)", "101": f"{totals['ann_101']:g}", "900": f"{totals['handy_900']:g}"}
    moodle = {row[0]: (row[4], row[5]) for row in csv.reader((root / "exports" / "moodle-grades.csv").open())}
    assert float(moodle["Participant 777"][0]) == pytest.approx(totals["cy-moo_777"] / after["max"] * 100, abs=0.005)
    for participant in ("888", "999"):
        assert moodle[f"Participant {participant}"] == ("", "100.00"), "nothing exported for a student who needs you"
    assert "NEEDS YOU dee-dup_888: nothing exported until you resolve it" in term["exports"]["moodle"][1]
    assert (f"NEEDS YOU {EVE}: nothing exported until you resolve it; 03-evidence not graded: {EVE_PICK_ONE}"
            in term["exports"]["moodle"][1])
    # The feedback pages bundled for each LMS: the notebook's score and each test's, as the gradebook holds them.
    for lms, student in (("canvas", "ann_101"), ("moodle", "cy-moo_777")):
        with zipfile.ZipFile(root / "exports" / f"{lms}-feedback.zip") as bundle:
            [page] = [bundle.read(name).decode() for name in bundle.namelist()]
        score, maximum, _ = after["students"][student][NB1]
        assert f"<h4>{NB1} (Score: {score:.1f} / {maximum:.1f})</h4>" in page
        tests = dict(re.findall(r'<a href="#(\w+)">Test cell</a> \(Score: ([\d.]+ / [\d.]+)\)', page))
        assert tests == {test: f"{score:.1f} / {points:.1f}"
                         for (nb, test), (score, points) in after["tests"][student].items() if nb == NB1}


HEADLINE = re.compile(r"(PASS|FAIL) performance-audit stage 1 \(your notebook work/performance-audit/"
                      rf"{NB1}\.ipynb\): (\d+) of (\d+) visible checks (passed|failed)(?:: ([\w, ]+))?")


def test_the_checker_s_headline_counts_the_gradebook_s_tests_and_never_shows_points(term):
    """The checker runs the notebook each student submitted: its headline counts the notebook's tests (as many as
    the gradebook grades) and self-checks, names only tests the gradebook did not give full points, and shows no
    points; Cy's unsynchronized clock fails a visible check that says so."""
    after, root = term["after"], term["root"]
    for student, lines in term["checker"].items():
        found = HEADLINE.fullmatch(lines[0])
        assert found, lines[0]
        verdict, count, ran, _, named = found.groups()
        submitted = nbformat.read(root / "submitted" / student / ASSIGNMENT / f"{NB1}.ipynb", as_version=4)
        self_checks = [notebooks.nbgrader_meta(c)["grade_id"] for c in submitted.cells
                       if notebooks.nbgrader_meta(c).get("grade_id", "").startswith(check.SELF_CHECK)]
        tests = [test for nb, test in after["tests"][student] if nb == NB1]
        assert int(ran) == len(tests) + len(self_checks)
        failed = named.split(", ") if named else []
        lost = {test for (nb, test), (score, points) in after["tests"][student].items() if nb == NB1 and score < points}
        assert set(failed) - set(self_checks) <= lost
        assert (verdict, int(count)) == (("FAIL", len(failed)) if failed else ("PASS", int(ran)))
    assert term["checker"]["cy-moo_777"][0].endswith("1 of 8 visible checks failed: selfcheck_time_call")
    assert "never waited for the result" in "\n".join(term["checker"]["cy-moo_777"])
    assert term["checker"]["ann_101"][0].endswith("8 of 8 visible checks passed")
