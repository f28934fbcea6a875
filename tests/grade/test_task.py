"""The grading task's edges, without a cluster: what it carries in, what it writes, what it lets back."""

import pytest

from perfaudit import ASSIGNMENT, paths
from perfaudit.grade import gradebook, task


def test_the_definition_carries_the_config_the_solutions_and_the_release(course_dir, tmp_path):
    template = tmp_path / "template.db"
    gradebook.make_template(gradebook.sqlite_url(course_dir / "gradebook.db"), template, "jax-performance-audit")
    spec = task.definition(course_dir, ASSIGNMENT, ["02-retracing", "01-first-call-vs-steady"], template)
    names = {f"{folder}/{ASSIGNMENT}/{name}" for folder in ("source", "notebooks") for name in paths.STAGES.values()}
    assert set(spec["files"]) == {"nbgrader_config.py", *names}
    assert spec["notebooks"] == ["01-first-call-vs-steady", "02-retracing"]
    assert task.is_plain(spec) and spec["template"] == template.read_bytes()
    assert task.definition(course_dir, ASSIGNMENT, ["02-retracing"], template)["digest"] == spec["digest"]


def test_files_written_on_a_worker_stay_in_their_folder(tmp_path):
    task.write_tree({"a/b.ipynb": b"{}"}, tmp_path / "into")
    assert (tmp_path / "into" / "a" / "b.ipynb").read_bytes() == b"{}"
    for escape in ("../outside.txt", "/etc/passwd-copy", "a/../../outside.txt"):
        with pytest.raises(ValueError, match="outside the folder"):
            task.write_tree({escape: b"x"}, tmp_path / "into")
    assert not (tmp_path / "outside.txt").exists()


def test_only_plain_data_is_accepted_back():
    assert task.is_plain({"scores": {"a": 1.0, "b": None}, "files": {"x.html": b"<p>"}, "ok": [True, "why"]})

    class Score(float):  # what student code could make if it could reach the result: a number that is not one
        pass

    assert not task.is_plain({"score": Score(1.0)})
    assert not task.is_plain({"f": print})
    assert not task.is_plain({1: "key not a string"})


def test_links_in_a_folder_are_not_read(tmp_path):
    (tmp_path / "secret.txt").write_text("secret")
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "01.ipynb").write_text("{}")
    (folder / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert task.read_tree(folder) == {"01.ipynb": b"{}"}


def test_a_folder_swapped_for_a_link_while_it_is_read_leads_nowhere_else(tmp_path, monkeypatch):
    """A student's folder changes while the service reads it: right after the walk has listed `work/`, the student
    renames it and leaves a link to a folder of someone else's in its place. Each file is opened in the folder the
    walk opened, so what is read is the student's own file, never the other folder's."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "answers.py").write_text("the answer key")
    folder = tmp_path / "submission"
    (folder / "work").mkdir(parents=True)
    (folder / "work" / "00big").write_text("x" * 1000)
    (folder / "work" / "answers.py").write_text("mine")
    ignored = task.submission.ignored

    def swapping(name, ignore):  # called for each file before it is opened: the student's moment
        if name == "answers.py" and not (folder / "moved").exists():
            (folder / "work").rename(folder / "moved")
            (folder / "work").symlink_to(theirs)
        return ignored(name, ignore)

    monkeypatch.setattr(task.submission, "ignored", swapping)
    assert task.read_tree(folder) == {"work/00big": b"x" * 1000, "work/answers.py": b"mine"}
