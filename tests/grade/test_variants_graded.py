"""Notebook 5 graded against each student's own variant (perfaudit/variants.py), by both graders: plain
`nbgrader autograde` and `python -m perfaudit.grade`, each in a course of its own, side by side.

One class, each student's audit written their own way: three students whose ids draw variants A, B and C hand in
valid audits of the catalog (perfaudit/fixtures/catalog/valid.py; each right in any variant), and score full marks;
a student of variant B hands in a copy of the variant C student's notebook, names changed and its findings as they
stand for variant C (loses the findings point, and the feedback says which variant they name and which one is the
student's); and a student whose folder holds a student-id.txt naming a classmate hands in another valid audit
(graded as themselves: the grader's id is the gradebook's). None of them states an id in the notebook: a downloaded
copy's student-id.txt stays on the student's machine. The batch command also grades a Canvas download, an audit
written another way again, whose student is drawn by Canvas's user id, not by the folder's name. Scores are read
from each gradebook. The similarity page lists the copy with its source, and no other pair: every other two
students wrote their audits differently. Built again, it changes no grade."""

import copy
import hashlib
import html
import io
import os
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import nbformat
import pytest
from audit_misconceptions import student_with
from courses import FULL, NB5, make_course
from similar_submissions import HONEST_B, filled, renamed

from perfaudit import ASSIGNMENT, notebooks, paths, variants
from perfaudit.fixtures import catalog
from perfaudit.grade import similaritypage
from perfaudit.grade.__main__ import main
from perfaudit.grade.run import Options, run
from perfaudit.instructor import course

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")]


def _another(variant, *taken):
    """A second id of `variant`, after student_with's."""
    return next(f"classmate-{n}" for n in range(1000)
                if variants.assigned(f"classmate-{n}").variant == variant and f"classmate-{n}" not in taken)


HONEST = {variant: student_with(variant) for variant in ("A", "B", "C")}
COPIER = _another("B")  # hands in a copy of HONEST["C"]'s notebook
SOURCE = HONEST["C"]  # whose notebook the copier copied
NAMES_A_CLASSMATE = _another("C")  # hands in a student-id.txt naming HONEST["A"]
# A Canvas user id whose variant differs from that of the folder intake names after it (<lastfirst>_<user id>)
CANVAS_ID = next(str(n) for n in range(4000, 5000)
                 if variants.assigned(str(n)).variant != variants.assigned(f"doejane_{n}").variant)
CANVAS_STUDENT = f"doejane_{CANVAS_ID}"
FINDINGS_POINTS = 1  # problems_named's points in source/

# Each student's valid audit, written their own way: catalog cases that tests/fixtures/test_catalog.py grades full
# marks, no two alike enough for the similarity page, each right in any variant (its findings chosen by
# AUDIT_VARIANT, or decided by the measurements).
AUDITS = {
    HONEST["A"]: "valid-loop-audit-findings-decided-by-the-measurements",
    HONEST["B"]: "valid-loop-audit-whole-loop-in-one-scan",
    HONEST["C"]: "valid-loop-audit-whole-loop-in-one-fori-loop",
    NAMES_A_CLASSMATE: "valid-loop-audit-counter-in-a-list-bucketed-padding",
}
# The Canvas student's audit: the similarity page's honest student B (tests/helpers/similar_submissions.py), with the
# import its counter needs (the release imports no inspect).
CANVAS_AUDIT = {**HONEST_B, "count_traces": "import inspect\n\n\n" + HONEST_B["count_traces"]}
# The copier's disguise: names changed in every solution cell (copydetect sees through it).
RENAMES = {"tally": "seen", "traced": "counting", "xs": "x_all", "ys": "y_all", "ns": "rows", "body": "one_step",
           "carry": "state", "losses": "loss_list", "start": "t0", "missed": "late_by", "at_one_size": "same_size"}


def _copied(notebook):
    """notebook's solution cells with names changed (RENAMES), and its findings cell made to pick the findings of
    SOURCE's variant whoever runs it: the findings SOURCE's own notebook showed."""
    copied = copy.deepcopy(notebook)
    findings_picked = 0
    for cell in copied.cells:
        if notebooks.nbgrader_meta(cell).get("solution"):
            code = renamed({"cell": cell.source}, RENAMES)["cell"]
            cell.source = code.replace("}[AUDIT_VARIANT]", f'}}["{variants.assigned(SOURCE).variant}"]')
            findings_picked += cell.source != code
    assert findings_picked == 1 and copied != notebook
    return copied


def _handed_in():
    """{student: the notebook 5 they hand in} of the class, the Canvas student aside."""
    audits = {student: catalog.submission(catalog.CASES[name], 5) for student, name in AUDITS.items()}
    return {**audits, COPIER: _copied(audits[SOURCE])}


def _class(root):
    for student, notebook in _handed_in().items():
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / paths.STAGES[5])
    (root / "submitted" / NAMES_A_CLASSMATE / ASSIGNMENT / variants.ID_FILE).write_text(HONEST["A"] + "\n")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(plain's course, batch's course), graded side by side: plain nbgrader in a process of its own."""
    plain, batch = (make_course(tmp_path_factory.mktemp(name)) for name in ("plain", "batch"))
    _class(plain)
    _class(batch)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    plainly = subprocess.Popen([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT], cwd=plain, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    download = tmp_path_factory.mktemp("canvas-download")
    nbformat.write(nbformat.from_dict(filled(CANVAS_AUDIT)),
                   download / f"{CANVAS_STUDENT}_{CANVAS_ID}0_{paths.STAGES[5]}")
    here = os.getcwd()
    os.chdir(batch)
    try:
        run(Options(course_dir=batch, download=download, workers=1, progress=False), out=io.StringIO())
    finally:
        os.chdir(here)
    output = plainly.communicate(timeout=1500)[0]
    assert plainly.returncode == 0, output
    course.nbgrader("generate_feedback", ASSIGNMENT, course_dir=plain)
    return plain, batch


@pytest.mark.parametrize("grader", ("plain", "batch"))
def test_each_student_is_graded_against_their_own_variant(graded, grader):
    root = graded[("plain", "batch").index(grader)]
    scores = {student: got[NB5][0] for student, got in course.scores(root).items()}
    expected = {**dict.fromkeys([*HONEST.values(), NAMES_A_CLASSMATE], FULL[NB5]), COPIER: FULL[NB5] - FINDINGS_POINTS}
    if grader == "batch":
        expected[CANVAS_STUDENT] = FULL[NB5]
    assert scores == expected
    feedback = html.unescape((root / "feedback" / COPIER / ASSIGNMENT / f"{NB5}.html").read_text())
    assert ("findings names the problems of variant C, but this notebook is graded against variant B, the one "
            f"'{COPIER}' audits") in feedback
    # the setup cell, run in the grading kernel, printed the student's own variant: never the one of the classmate
    # whose id NAMES_A_CLASSMATE's student-id.txt holds
    drawn_from = {student: student for student in [*HONEST.values(), COPIER, NAMES_A_CLASSMATE]}
    if grader == "batch":
        drawn_from[CANVAS_STUDENT] = CANVAS_ID
    for student, key in drawn_from.items():
        graded_nb = (root / "autograded" / student / ASSIGNMENT / f"{NB5}.ipynb").read_text()
        assigned = variants.assigned(key)
        assert f"student '{key}': variant {assigned.variant}, data seed {assigned.seed}" in graded_nb, student
        if student == NAMES_A_CLASSMATE:
            assert f"student '{HONEST['A']}'" not in graded_nb
    assert variants.assigned(NAMES_A_CLASSMATE).variant != variants.assigned(HONEST["A"]).variant


def _listed_pairs(page, notebook):
    """{frozenset of two students} of the page's table for `notebook`, and how many submissions it compared."""
    section = page.split(f"<h2>{notebook}</h2>")[1].split("<h2")[0]
    compared = int(re.search(r"(\d+) submission\(s\) compared", section)[1])
    table = section.split("</table>")[0] if "<table>" in section else ""
    rows = [re.findall(r"<td>(.*?)</td>", row)[:2] for row in re.findall(r"<tr>(.*?)</tr>", table)]
    return {frozenset(html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in row) for row in rows if row}, compared


def test_the_class_report_shows_each_variant_and_the_similarity_page_pairs_the_copy_with_its_source_only(graded):
    root = graded[1]
    report = (root / "reports" / "class-report.html").read_text()
    table = report[report.index('id="variants-table"'):]
    table = table[:table.index("</table>")]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)]
    students = [*HONEST.values(), COPIER, NAMES_A_CLASSMATE]
    drawn = [variants.assigned(s).variant for s in students] + [variants.assigned(CANVAS_ID).variant]
    assert {row[0]: int(row[1]) for row in rows if row} == {v: drawn.count(v) for v in ("A", "B", "C")}
    pairs, compared = _listed_pairs((root / "reports" / similaritypage.PAGE).read_text(), NB5)
    assert compared == len(students) + 1  # the Canvas student's too: no submission left out of the comparison
    assert pairs == {frozenset({COPIER, SOURCE})}  # the copy, with the notebook it was copied from; no honest pair


def _grades(root):
    """Every row of the gradebook's grade table (each graded cell's scores), sorted, and the file's sha256."""
    path = root / "gradebook.db"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
        rows = sorted(connection.execute("SELECT * FROM grade"), key=repr)
    return rows, hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_similarity_page_changes_no_grade(graded, capsys):
    """The page written again by `python -m perfaudit.grade --report` on the batch's graded class, the copy listed:
    every grade of the gradebook as before, cell by cell, and the gradebook's file byte for byte."""
    root = graded[1]
    page = root / "reports" / similaritypage.PAGE
    page.unlink()
    scores, grades = course.scores(root), _grades(root)
    assert grades[0] and scores[COPIER][NB5][0] == FULL[NB5] - FINDINGS_POINTS
    assert main(["--report", "--course-dir", str(root)]) == 0, capsys.readouterr()
    assert _listed_pairs(page.read_text(), NB5)[0] == {frozenset({COPIER, SOURCE})}
    assert (course.scores(root), _grades(root)) == (scores, grades)
