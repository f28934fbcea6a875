"""statefolder: the one place that knows where grading keeps its own files. Fast: no grading."""

import pytest

from perfaudit.bookkeeping import statefolder


@pytest.mark.parametrize(("url", "where"), [
    ("sqlite:////course/gradebook.db", "/course/gradebook.db.versions.json"),
    ("sqlite://", "/course/autograded/.batch-grading/versions.json"),  # in memory: no file to sit beside
    ("postgresql://grader@db.example/course", "/course/autograded/.batch-grading/versions.json"),
])
def test_beside_a_sqlite_gradebook_else_in_the_batch_state_folder(url, where):
    assert str(statefolder.beside_gradebook(url, "/course/autograded", ".versions.json", "versions.json")) == where


def test_a_students_state_is_kept_in_the_folder_and_read_back(tmp_path):
    state = statefolder.State(tmp_path / "autograded")
    assert state.record("ana") is None
    state.save("ana", {"fingerprint": "abc", "reasons": {"02-retracing": ["missing"]}})
    assert statefolder.State(tmp_path / "autograded").record("ana")["reasons"] == {"02-retracing": ["missing"]}
    assert sorted(p.name for p in statefolder.folder(tmp_path / "autograded").iterdir()) == ["ana.json"]
