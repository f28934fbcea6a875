"""`python -m perfaudit.grade --variants` (make variants): who audits which variant of notebook 5, with the id each
variant is drawn from (the LMS's id for a student who came through an LMS download)."""

import json
import shutil

from nbgrader.api import Gradebook

from perfaudit import paths, variants
from perfaudit.bookkeeping.coursedir import venv_first_on_path
from perfaudit.grade.__main__ import main
from perfaudit.grade.intake import RECORD

# A Moodle participant id whose variant differs from that of the folder intake names after it (<full-name>_<id>)
MOODLE_ID = next(str(n) for n in range(700, 1000)
                 if variants.assigned(str(n)).variant != variants.assigned(f"ana-lopez_{n}").variant)
MOODLE_STUDENT = f"ana-lopez_{MOODLE_ID}"


def test_every_student_of_the_gradebook_and_of_submitted_is_listed_with_their_variant(tmp_path, capsys):
    shutil.copy(paths.ROOT / "nbgrader_config.py", tmp_path)
    venv_first_on_path()  # nbgrader's Gradebook runs the `alembic` command
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", "jax-performance-audit") as gradebook:
        gradebook.add_student("added-before-anyone-submitted")
    for student in ("hubuser", "doejane_4242", MOODLE_STUDENT, "a\x1b[2Jb"):
        (tmp_path / "submitted" / student / "performance-audit").mkdir(parents=True)
    (tmp_path / "submitted" / RECORD).write_text(json.dumps({
        "doejane_4242": {"lms": "canvas", "id": "4242", "name": "doejane", "late": False},
        MOODLE_STUDENT: {"lms": "moodle", "id": MOODLE_ID, "name": "Ana Lopez", "late": False}}))
    assert main(["--variants", "--course-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"TERM {variants.TERM!r}" in out[0] and "5 student(s)" in out[0]
    rows = {line.split()[0]: line.split()[1:] for line in out[2:]}
    for student, key in (("added-before-anyone-submitted", "added-before-anyone-submitted"), ("hubuser", "hubuser"),
                         ("doejane_4242", "4242"), (MOODLE_STUDENT, MOODLE_ID)):
        assigned = variants.assigned(key)
        assert rows[student] == [key, assigned.variant, str(assigned.seed)]
    assert "\x1b" not in "\n".join(out)  # a hostile folder name is listed escaped
