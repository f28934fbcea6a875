"""A submission may hold regular files only: anything else is refused with its reason, and never read."""

import os

import pytest

from perfaudit.autograde import submission
from perfaudit.grade import diagnose, run

EXPECTED = {"01-first-call-vs-steady": ["workload"]}


def _folder(tmp_path):
    folder = tmp_path / "submitted" / "someone" / "performance-audit"
    folder.mkdir(parents=True)
    (folder / "01-first-call-vs-steady.ipynb").write_text('{"cells": [], "nbformat": 4}')
    return folder


@pytest.mark.parametrize("make, kind", [
    (lambda f: os.symlink("/etc/passwd", f / "notes.txt"), "a symbolic link"),
    (lambda f: os.symlink("/dev/zero", f / "data.bin"), "a symbolic link"),
    (lambda f: os.mkfifo(f / "pipe"), "a FIFO"),
    (lambda f: os.link(f / "01-first-call-vs-steady.ipynb", f / "copy.ipynb"), "a hard link"),
])
def test_anything_but_a_regular_file_is_refused_with_its_name_and_kind(tmp_path, make, kind):
    folder = _folder(tmp_path)
    make(folder)
    found = submission.problems(folder)
    assert found and kind in submission.describe(found)
    with pytest.raises(submission.UnsafeSubmission, match=kind):
        submission.stage(folder, tmp_path / "staged")
    assert not (tmp_path / "staged").exists() or not any((tmp_path / "staged").iterdir())
    result = diagnose.diagnose(folder, EXPECTED)
    assert result.gradable == [] and kind in result.reasons["01-first-call-vs-steady"][0]
    run.fingerprint(folder)  # reads no link and opens no FIFO: returns at once


def test_a_file_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    monkeypatch.setattr(submission, "MAX_FILE_BYTES", 10)
    assert "over the" in submission.describe(submission.problems(folder))


def test_regular_files_are_staged_and_ignored_names_left_out(tmp_path):
    folder = _folder(tmp_path)
    (folder / "runs").mkdir()
    (folder / "runs" / "report.json").write_text("{}")
    (folder / "data").mkdir()
    (folder / "data" / "x.txt").write_text("x")
    submission.stage(folder, tmp_path / "staged", ignore=["runs"])
    staged = sorted(str(p.relative_to(tmp_path / "staged")) for p in (tmp_path / "staged").rglob("*"))
    assert staged == ["01-first-call-vs-steady.ipynb", "data", "data/x.txt"]
