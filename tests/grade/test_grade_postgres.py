"""A gradebook on a real PostgreSQL server (tests/grade/conftest.py starts it), written by the grading client alone."""

import os
import subprocess
import sys

import pytest
from courses import FULL, NB2, NONE, make_course

from perfaudit.fixtures import samples
from perfaudit.instructor import course

pytestmark = pytest.mark.slow  # minutes: the fast tier (make test-fast) leaves it out

EXPECTED = {
    "correct": FULL,
    "deleted-test-cell-in-02": {**NONE, NB2: 5},
    "split-solution-cell-in-02": {**NONE, NB2: 6},
    "misnamed-02": NONE,
    "empty-submission": NONE,
}


def test_a_postgresql_gradebook_written_by_the_client_alone(postgres_url, tmp_path):
    """Two worker processes grade; the one client writes PostgreSQL; a second run finds everyone graded."""
    root = make_course(tmp_path / "course", db_url=postgres_url)
    samples.write_submission("correct", root / "submitted")
    for name in set(EXPECTED) - {"correct"}:
        samples.write_broken(name, root / "submitted")
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "perfaudit.grade", f"--db={postgres_url}", "--workers=2", "--no-progress"]
    runs = [subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=900) for _ in range(2)]
    outputs = [done.stdout + done.stderr for done in runs]
    assert [done.returncode for done in runs] == [0, 0], "\n".join(outputs)

    from nbgrader.api import Gradebook

    with Gradebook(postgres_url, "jax-performance-audit") as gradebook:
        got = {
            sub.student.id: {nb.name: nb.score for nb in sub.notebooks}
            for sub in gradebook.find_assignment("performance-audit").submissions
        }
    assert got == EXPECTED, "\n".join(outputs)
    assert f"Scores ({len(EXPECTED)} graded now, 0 unchanged" in outputs[0]
    # The record of the check this environment passed (make_course put it in the batch command's state folder, where
    # a gradebook elsewhere keeps it) is found there: the solutions are not graded again.
    assert "Environment check: passed earlier for this environment" in outputs[0], outputs[0]
    assert f"Scores (0 graded now, {len(EXPECTED)} unchanged" in outputs[1]
    assert not (root / "gradebook.db").exists(), "nothing may fall back to the sqlite default"
    course.nbgrader("export", f"--db={postgres_url}", course_dir=root)
    assert (root / "grades.csv").read_text().count("\n") == len(EXPECTED) + 1
