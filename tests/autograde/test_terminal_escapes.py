"""Nothing a student wrote reaches the instructor's terminal raw under plain `nbgrader autograde`: the handler that
prints nbgrader's log escapes every control character (nbgrader_config.py, perfaudit/grade/escape.py). One run of
nbgrader, two students, the four ways a student's text reaches that log: a cell's grade_id ("Cell ... does not
exist"), a notebook's file name ("Skipping unknown notebook"), the message of an error the student's module raised
(TrustedExecute._judge) and a file name the refusal of an unsafe submission quotes."""

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from courses import FULL, NB2, make_course

from perfaudit import ASSIGNMENT
from perfaudit.fixtures import samples
from perfaudit.grade.escape import EscapeControlCharacters, control_free
from perfaudit.instructor import course

pytestmark = pytest.mark.slow

ESC = "\x1b[2J\x1b]0;owned\x07\x9b1m\r"  # clear the screen, set the window's title, bold (C1 CSI), back to the start
SHOWN = "\\x1b[2J\\x1b]0;owned\\x07\\x9b1m\\r"  # as the log shows it


def test_control_free_escapes_control_characters_and_keeps_lines_and_tabs():
    assert control_free(f"a\tb\n{ESC}\x00\x7f\u202e\udcff é") == f"a\tb\n{SHOWN}\\x00\\x7f\\u202e\\xff é"
    assert control_free(SHOWN) == SHOWN  # escaping twice changes nothing


def test_the_filter_escapes_the_formatted_message_and_the_traceback():
    try:
        raise ValueError(f"raised {ESC}")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "cell %r: %s", ("id", ESC), sys.exc_info())
    assert EscapeControlCharacters().filter(record)
    printed = logging.Formatter().format(record)
    assert "\x1b" not in printed and "\r" not in printed
    assert f"cell 'id': {SHOWN}" in printed and f"ValueError: raised {SHOWN}" in printed
    # A newline a student wrote starts no line of its own: every later line reads as the record's continuation.
    forged = logging.LogRecord("x", logging.WARNING, __file__, 1, "Cell '%s' does not exist",
                               ("note\n[AutogradeApp | INFO] Autograding finished",), None)
    assert EscapeControlCharacters().filter(forged)
    lines = logging.Formatter().format(forged).splitlines()
    assert lines == ["Cell 'note", "    | [AutogradeApp | INFO] Autograding finished' does not exist"]


def test_plain_nbgrader_autograde_prints_no_students_escape_code(tmp_path):
    root = make_course(tmp_path / "course")
    notebook = f"{NB2}.ipynb"
    # untouched: a grade_id, a notebook's file name and a module's error message with escape codes in them
    hostile = samples.write_submission("untouched", root / "submitted", stages=[2])
    nb = nbformat.read(hostile / notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("mine", metadata={"nbgrader": {
        "grade_id": f"forged{ESC}\n[AutogradeApp | INFO] forged", "grade": False, "solution": False, "locked": False,
        "schema_version": 3}}))
    nbformat.write(nb, hostile / notebook)
    shutil.copy(hostile / notebook, hostile / f"{NB2}{ESC}.ipynb")
    (hostile / "jax.py").write_text(f"raise ImportError({f'not jax {ESC}'!r})\n")  # the setup cell fails with it
    # correct: a link the refusal names
    refused = samples.write_submission("correct", root / "submitted", stages=[2])
    (refused / f"notes{ESC}.txt").symlink_to(notebook)

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, f"--notebook={NB2}*"],
                          cwd=root, env=env, capture_output=True, text=True)
    said = done.stdout + done.stderr
    assert "\x1b" not in said and "\x9b" not in said and "\x07" not in said, said
    assert f"Cell 'forged{SHOWN}\n" in said, said
    # the student's newline starts no line of the tool's: the line after it reads as the record's continuation
    [continued] = [line for line in said.splitlines() if line.endswith("forged' does not exist in the database")]
    assert continued.lstrip().startswith("| [AutogradeApp | INFO] forged"), continued
    assert f"Skipping unknown notebook: {hostile / NB2}{SHOWN}.ipynb" in said, said
    assert f"(ImportError: not jax {SHOWN}), but the instructor's solution does not: graded as submitted" in said, said
    assert f"'notes{SHOWN}.txt' is a symbolic link" in said, said
    # the first graded as submitted (its setup cell fails), the second refused: neither scores, one is autograded
    assert {student: scores[NB2] for student, scores in course.scores(root).items()} == {
        "untouched": (0, FULL[NB2]), "correct": (0, FULL[NB2])}
    autograded = root / "autograded" / "{}" / ASSIGNMENT / notebook
    assert Path(str(autograded).format("untouched")).exists()
    assert not Path(str(autograded).format("correct")).exists()
