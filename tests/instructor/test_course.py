"""A course directory for the instructor's tools (perfaudit/instructor/course.py): its gradebook read, its files."""

import contextlib
import os

from perfaudit import ASSIGNMENT
from perfaudit.instructor import course


def test_scores_and_totals_are_read_from_the_course_s_sqlite_gradebook(tmp_path, monkeypatch):
    opened = []

    @contextlib.contextmanager
    def gradebook(url):
        opened.append(url)
        yield "the gradebook"
    monkeypatch.setattr(course, "Gradebook", gradebook)
    monkeypatch.setattr(course.gradebook, "scores", lambda gb, assignment: ("scores", gb, assignment))
    monkeypatch.setattr(course.gradebook, "totals", lambda gb, assignment: ("totals", gb, assignment))
    assert course.scores(tmp_path) == ("scores", "the gradebook", ASSIGNMENT)
    assert course.totals(str(tmp_path)) == ("totals", "the gradebook", ASSIGNMENT)
    assert opened == [f"sqlite:///{tmp_path / 'gradebook.db'}"] * 2


def test_files_nbgrader_made_read_only_become_removable_and_links_are_left_alone(tmp_path):
    folder = tmp_path / "autograded"
    (folder / "ann").mkdir(parents=True)
    (folder / "ann" / "01.ipynb").write_text("{}")
    (folder / "ann" / "outside").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").write_text("not the course's")
    (tmp_path / "elsewhere").chmod(0o400)
    (folder / "ann" / "01.ipynb").chmod(0o444)
    (folder / "ann").chmod(0o555)
    folder.chmod(0o500)
    course.make_writable(folder)
    assert oct(folder.stat().st_mode & 0o777) == "0o755"
    assert oct((folder / "ann").stat().st_mode & 0o777) == "0o755"
    assert oct((folder / "ann" / "01.ipynb").stat().st_mode & 0o777) == "0o644"
    assert oct(os.stat(tmp_path / "elsewhere").st_mode & 0o777) == "0o400"
