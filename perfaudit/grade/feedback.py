"""Feedback and LMS exports brought in line with the gradebook after manual grading (Formgrader), grading nobody.

    python -m perfaudit.grade --feedback-only      # or: make feedback

Each student's feedback pages are written again by nbgrader's generate_feedback (the course's preprocessors, so no
hidden-test source) from the gradebook and autograded/; the students whose pages changed are named; then the last
--export to each LMS (remembered in exports/) is written again, so the LMS files carry the same scores.
"""

import os
import secrets
from datetime import datetime, timezone
from pathlib import Path

from perfaudit import ASSIGNMENT
from perfaudit.bookkeeping.coursedir import course_directory, venv_first_on_path
from perfaudit.grade import export, gradebook, intake, task, worker
from perfaudit.grade.escape import one_line


def refresh(course_dir: str | Path, db_url: str | None = None) -> tuple[list[str], list[str], list[str]]:
    """Rewrite every graded student's feedback and each LMS export made; return (changed, failed, lines to print)."""
    venv_first_on_path()
    course_dir = Path(course_dir).resolve()
    coursedir = course_directory(course_dir, db_url=db_url)
    with gradebook.opened(coursedir.db_url, coursedir.course_id) as course_gb:
        students = sorted(s.student.id for s in course_gb.find_assignment(ASSIGNMENT).submissions)
    settings = {"CourseDirectory.db_url": db_url} if db_url else {}
    changed, failed = [], []
    for student in students:
        folder = Path(coursedir.format_path(coursedir.feedback_directory, student, ASSIGNMENT))
        before = task.read_tree(folder)
        done = worker.feedback(course_dir, ASSIGNMENT, student, settings)
        if done["failure"]:
            failed.append(f"  feedback NOT written for {one_line(student)}: {one_line(done['failure'])}")
        elif task.read_tree(folder) != before:
            changed.append(student)
    lines = [f"feedback: written again for {len(students)} students from the gradebook; changed for "
             + (", ".join(one_line(s) for s in changed) if changed else "nobody"), *failed]
    return changed, failed, lines + export.export_again(course_dir, db_url)


def stamp_for_release(submitted: str | Path, *folders: str | Path) -> None:
    """nbgrader's release_feedback reads timestamp.txt and submission_secret.txt beside each feedback page, as its
    collect (and intake) leave them in submitted/; a folder placed there by hand has neither. Give each of `folders`
    (autograded/ and feedback/ of the student; submitted/ is never written) the ones it lacks: the newest submitted
    file's time, and the submission's secret or a new one."""
    submitted = Path(submitted)
    stamp = (submitted / "timestamp.txt").read_text() if (submitted / "timestamp.txt").is_file() else None
    secret = (submitted / "submission_secret.txt").read_text() if (submitted / "submission_secret.txt").is_file() \
        else None
    if stamp is None:
        newest = max((p.lstat().st_mtime for p in submitted.rglob("*") if p.is_file() and not p.is_symlink()),
                     default=None)
        when = datetime.fromtimestamp(newest, timezone.utc) if newest else datetime.now(timezone.utc)
        stamp = when.strftime(intake.TIMESTAMP_FORMAT)
    secret = secret or secrets.token_hex(64)
    for folder in folders:
        folder = Path(folder)
        if not folder.is_dir():
            continue
        for name, text in (("timestamp.txt", stamp), ("submission_secret.txt", secret)):
            if not os.path.lexists(folder / name):
                (folder / name).write_text(text)
