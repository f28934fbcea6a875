"""The student's working copy (perfaudit/workcopy.py): made from the release, never overwritten."""

from perfaudit import workcopy


def test_released_notebooks_are_copied_in_once_and_a_student_s_edits_are_kept(tmp_path):
    release = workcopy.release_dir(tmp_path)
    release.mkdir(parents=True)
    (release / "01-first.ipynb").write_text("release 1")
    work, copied = workcopy.ensure(tmp_path)
    assert work == workcopy.assignment_dir(tmp_path) and copied == ["01-first.ipynb"]
    (work / "01-first.ipynb").write_text("the student's work")
    (release / "01-first.ipynb").write_text("release 2")
    (release / "02-second.ipynb").write_text("new in release 2")
    assert workcopy.ensure(tmp_path) == (work, ["02-second.ipynb"])
    assert (work / "01-first.ipynb").read_text() == "the student's work"
