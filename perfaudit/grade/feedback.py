"""Feedback and LMS exports brought in line with the gradebook after manual grading (Formgrader), grading nobody.

    python -m perfaudit.grade --feedback-only      # or: make feedback

Each student's feedback pages are written again by nbgrader's generate_feedback (the course's preprocessors, so no
hidden-test source) from the gradebook and autograded/; the students whose pages changed are named; then the last
--export (remembered in exports/) is written again, so the LMS files carry the same scores.
"""

from pathlib import Path

from perfaudit import ASSIGNMENT
from perfaudit.grade import export, gradebook, task, worker
from perfaudit.grade.escape import one_line


def refresh(course_dir, db_url=None):
    """Rewrite every graded student's feedback and the last export; return the lines to print."""
    worker.venv_first_on_path()
    course_dir = Path(course_dir).resolve()
    coursedir = export.course_directory(course_dir, db_url)
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
    last = export.last_export(course_dir)
    if last:
        lms, roster, column = last
        lines += [f"export to {lms} written again (as last asked: --export {lms} --roster {roster})",
                  *export.export(lms, course_dir, roster, column, db_url).lines]
    else:
        lines.append("no LMS export to write again (none made yet: python -m perfaudit.grade --export canvas|moodle "
                     "--roster <the LMS's file>)")
    return changed, failed, lines
