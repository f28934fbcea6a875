"""Feedback brought in line with the gradebook (perfaudit/grade/feedback.py): the files release_feedback needs."""

import contextlib
import os
import types
from datetime import datetime, timezone

from perfaudit.grade import feedback, intake


def _folders(tmp_path):
    submitted, autograded, pages = tmp_path / "submitted", tmp_path / "autograded", tmp_path / "feedback"
    for folder in (submitted, autograded, pages):
        folder.mkdir()
    return submitted, autograded, pages


def test_the_submission_s_timestamp_and_secret_go_beside_each_page(tmp_path):
    submitted, autograded, pages = _folders(tmp_path)
    (submitted / "timestamp.txt").write_text("2026-01-02 10:00:00.000000 UTC")
    (submitted / "submission_secret.txt").write_text("s3cret")
    feedback.stamp_for_release(submitted, autograded, pages, tmp_path / "absent")
    for folder in (autograded, pages):
        assert (folder / "timestamp.txt").read_text() == "2026-01-02 10:00:00.000000 UTC"
        assert (folder / "submission_secret.txt").read_text() == "s3cret"
    assert not (tmp_path / "absent").exists()
    assert sorted(os.listdir(submitted)) == ["submission_secret.txt", "timestamp.txt"]  # never written


def test_a_folder_placed_by_hand_is_stamped_with_its_newest_file_and_a_new_secret(tmp_path):
    submitted, autograded, pages = _folders(tmp_path)
    for name, when in (("01.ipynb", 1767348000), ("02.ipynb", 1767261600)):
        (submitted / name).write_text("{}")
        os.utime(submitted / name, (when, when))
    (pages / "timestamp.txt").write_text("kept")
    feedback.stamp_for_release(submitted, autograded, pages)
    newest = datetime.fromtimestamp(1767348000, timezone.utc).strftime(intake.TIMESTAMP_FORMAT)
    assert (autograded / "timestamp.txt").read_text() == newest and (pages / "timestamp.txt").read_text() == "kept"
    secret = (autograded / "submission_secret.txt").read_text()
    assert len(secret) == 128 and (pages / "submission_secret.txt").read_text() == secret
    feedback.stamp_for_release(submitted, tmp_path)
    assert (tmp_path / "submission_secret.txt").read_text() != secret  # each call's own when none was submitted


def test_refresh_names_the_students_whose_pages_changed_and_those_it_could_not_write(tmp_path, monkeypatch):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.course_id = 'course'\n")
    students = ["ann", "bob", "cyd\nx"]

    @contextlib.contextmanager
    def opened(url, course_id):
        assignment = types.SimpleNamespace(submissions=[types.SimpleNamespace(student=types.SimpleNamespace(id=s))
                                                        for s in reversed(students)])
        yield types.SimpleNamespace(find_assignment=lambda name: assignment)

    def generate(course_dir, assignment, student, settings):
        asked.append((student, settings))
        folder = tmp_path / "feedback" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        if student == "ann":
            (folder / "01.html").write_text("new page")
        return {"failure": "no autograded notebook\nsecond line" if student.startswith("cyd") else None}
    asked = []
    monkeypatch.setattr(feedback.gradebook, "opened", opened)
    monkeypatch.setattr(feedback.worker, "feedback", generate)
    monkeypatch.setattr(feedback.export, "export_again", lambda course, db_url: [f"exports again: {db_url}"])
    changed, failed, lines = feedback.refresh(tmp_path, "sqlite:///elsewhere.db")
    assert asked == [(s, {"CourseDirectory.db_url": "sqlite:///elsewhere.db"}) for s in students]
    assert changed == ["ann"] and failed == lines[1:2] == [
        "  feedback NOT written for cyd\\nx: no autograded notebook\\nsecond line"]
    assert lines[0] == "feedback: written again for 3 students from the gradebook; changed for ann"
    assert lines[2:] == ["exports again: sqlite:///elsewhere.db"]
