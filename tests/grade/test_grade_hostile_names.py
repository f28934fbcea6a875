"""The batch command with hostile names beside an honest student: the class is graded, the honest student in full.

One run of `python -m perfaudit.grade --from <Moodle download>`, as the instructor types it (its output read back as
bytes), over a download and a submitted/ folder that hold, beside Full Marks's five correct notebooks:

- a classmate's Moodle folder with folders inside it named like Full Marks's participant folder: a jax.py that
  breaks `import jax` and a notebook for the same notebook name, which once landed in Full Marks's folder (20 -> 9,
  one of the notebooks NOT PLACED), and a file name that is not UTF-8;
- in submitted/ (as nbgrader's exchange leaves it): a file name that is not UTF-8 beside a correct notebook (once a
  UnicodeEncodeError that stopped the class), a folder whose name is not UTF-8 and one a spreadsheet would run as a
  formula, a misnamed notebook whose file name is an escape code and a forged summary line about Full Marks, and a
  notebook whose function raises an exception made of escape codes and a forged line in every test that calls it.

Each fixture is named by what it must get. Scores are read from the gradebook.
"""

import csv
import os
import subprocess
import sys

import nbformat
import pytest
from courses import FULL, NB1, NB2, NB3, NB4, NB5, make_course
from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT
from perfaudit.fixtures import samples

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")]

HONEST = "full-marks_777"
HONEST_FOLDER = "Full Marks_777_assignsubmission_file_"
CLASSMATE_FOLDER = "Plants Into Full Marks_999_assignsubmission_file_"
FORGED_LINE = f"  {HONEST} {NB1} (0/5): forged by a classmate"

ODD_FILE_NAME = "not-utf8-file-name-beside-nb1-graded-in-full"
EXPECTED = {  # {student: {notebook: score}} in the gradebook
    HONEST: FULL,
    ODD_FILE_NAME: {NB1: FULL[NB1], NB2: 0, NB3: 0, NB4: 0, NB5: 0},
    "forged-summary-line-in-file-name-scores-0": {NB1: 0, NB2: 0, NB3: 0, NB4: 0, NB5: 0},
    "exception-with-escape-codes-scores-0": {NB1: 0, NB2: 0, NB3: 0, NB4: 0, NB5: 0},
}
NOT_GRADED_FOLDERS = [b"not-utf8-folder-\xff-not-graded", b"=1+1-formula-folder-not-graded",
                      b"mallory,,,,20.0,0.0,20.0,20.0,comma-folder-not-graded"]


def _write(path, data):
    path = os.fsencode(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


def _notebook(sample, stage):
    return nbformat.writes(samples.submission(samples.SAMPLES[sample], stage)).encode()


def _raising_notebook():
    """Notebook 1 untouched, but for a workload that raises an exception whose message clears the screen, says all
    tests passed, and forges a summary line about Full Marks: every test that calls it fails with that message."""
    workload = f'def workload(x):\n    raise RuntimeError("\\x1b[2J\\x1b[32mall tests passed\\n{FORGED_LINE}")'
    sample = samples.Sample(solved=frozenset(), replaced={(1, "workload"): workload})
    return nbformat.writes(samples.submission(sample, 1)).encode()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("hostile-names"))
    download, submitted = root / "moodle-download", root / "submitted"
    for stage, filename in ((1, NB1), (2, NB2), (3, NB3), (4, NB4), (5, NB5)):
        _write(download / HONEST_FOLDER / f"{filename}.ipynb", _notebook("correct", stage))
    _write(download / CLASSMATE_FOLDER / HONEST_FOLDER / "jax.py", b'raise ImportError("planted by a classmate")\n')
    _write(download / CLASSMATE_FOLDER / HONEST_FOLDER / f"{NB2}.ipynb", _notebook("untouched", 2))
    _write(os.fsencode(download / CLASSMATE_FOLDER) + b"/notes-\xff.ipynb", _notebook("untouched", 1))

    _write(submitted / ODD_FILE_NAME / ASSIGNMENT / f"{NB1}.ipynb", _notebook("correct", 1))
    _write(os.fsencode(submitted / ODD_FILE_NAME / ASSIGNMENT) + b"/notes-\xff.txt", b"notes")
    for folder in NOT_GRADED_FOLDERS:
        _write(os.fsencode(submitted) + b"/" + folder + f"/{ASSIGNMENT}/{NB1}.ipynb".encode(), _notebook("correct", 1))
    forged_name = f"\x1b[2Jx\n  {HONEST} {NB2} (6\u22156): forged by a classmate\n.ipynb"  # no '/' in a file name
    _write(submitted / "forged-summary-line-in-file-name-scores-0" / ASSIGNMENT / forged_name,
           _notebook("untouched", 2))
    _write(submitted / "exception-with-escape-codes-scores-0" / ASSIGNMENT / f"{NB1}.ipynb", _raising_notebook())

    done = subprocess.run([sys.executable, "-m", "perfaudit.grade", "--from", str(download), "--workers", "2",
                           "--no-progress", "--no-feedback", "--skip-canary"], cwd=root, capture_output=True)
    return root, done


def test_the_class_is_graded_and_the_honest_student_in_full(graded):
    root, done = graded
    assert done.returncode == 0, done.stderr.decode(errors="backslashreplace")[-3000:]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "jax-performance-audit") as gradebook:
        scores = {s.student.id: {nb.name: nb.score for nb in s.notebooks}
                  for s in gradebook.find_assignment(ASSIGNMENT).submissions}
    assert scores == EXPECTED, done.stdout.decode(errors="backslashreplace")


def test_nothing_of_a_classmate_s_lands_in_the_honest_student_s_folder(graded):
    root, done = graded
    folder = root / "submitted" / HONEST / ASSIGNMENT
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"{nb}.ipynb" for nb in (NB1, NB2, NB3, NB4, NB5)] + ["submission_secret.txt", "timestamp.txt"])
    assert not (root / "submitted" / "plants-into-full-marks_999").exists()
    out = done.stdout.decode()
    assert f"NOT PLACED {CLASSMATE_FOLDER}/{HONEST_FOLDER}/jax.py: inside a folder in {CLASSMATE_FOLDER}/" in out
    assert f"NOT PLACED {CLASSMATE_FOLDER}/notes-\\xff.ipynb: its name is not valid UTF-8 text" in out


def test_a_file_name_that_is_not_utf8_costs_nothing_and_a_folder_name_only_its_folder(graded):
    """A file the grader does not need, beside the notebooks, is graded past as plain nbgrader does (its notebook in
    full); a folder of submitted/ whose name cannot be a student id is left ungraded with the reason."""
    _, done = graded
    out = done.stdout.decode()
    assert f"{ODD_FILE_NAME} {NB1}" not in out
    assert f"  {ODD_FILE_NAME} {NB2} (0/6): missing" in out
    assert "NOT GRADED (the folder's name): submitted/not-utf8-folder-\\xff-not-graded: its name is not valid" in out
    assert "NOT GRADED (the folder's name): submitted/=1+1-formula-folder-not-graded: its name starts with '='" in out


def test_nothing_from_a_submission_poses_as_a_line_of_the_tool_s_own(graded):
    root, done = graded
    out = done.stdout.decode()  # UTF-8: no byte of a student's name reaches the terminal as it is
    assert b"\x1b" not in done.stdout + done.stderr
    assert all(char.isprintable() for line in out.splitlines() for char in line)
    problems = out[out.index("Zeros and problems:"):out.index("Tests passed")].splitlines()[1:]
    assert not [line for line in problems if line.startswith(f"  {HONEST} ")]  # full marks: no problem to report
    assert any(line.startswith("  forged-summary-line-in-file-name-scores-0 02-retracing (0/6): misnamed: submitted as "
                               "'\\x1b[2Jx\\n full-marks_777 02-retracing") for line in problems)  # padding: 1 space
    # what the student's code raised during a test is never shown (autograde/plugins/verdicts.py): its type only
    assert any(line.startswith("  exception-with-escape-codes-scores-0 01-first-call-vs-steady (0/5): no test passed; "
                               "first: '") and "' failed: in your code: your code raised this error" in line
               for line in problems)
    assert "all tests passed" not in out
    with open(root / "grades.csv", newline="") as handle:
        students = {row["student_id"] for row in csv.DictReader(handle)}
    assert students == set(EXPECTED)
