"""LMS downloads sorted into submitted/: Canvas and Moodle names, zip or folder, the download never touched."""

import hashlib
import json
import os
import time
import zipfile
from datetime import datetime, timezone

import pytest
from nbgrader.utils import parse_utc

from perfaudit import ASSIGNMENT
from perfaudit.grade import intake

NOTEBOOKS = {"01-first-call-vs-steady.ipynb", "02-retracing.ipynb"}

# Entry in the download -> where it must land (student, file), or None when it cannot be attributed.
ENTRIES = {
    "doejane_12345_678901_01-first-call-vs-steady.ipynb": ("doejane_12345", "01-first-call-vs-steady.ipynb"),
    "doejane_12345_678902_02-retracing-1.ipynb": ("doejane_12345", "02-retracing.ipynb"),  # Canvas resubmission
    "roefrank_LATE_222_678903_02-retracing.ipynb": ("roefrank_222", "02-retracing.ipynb"),
    "Ana Lopez_777_assignsubmission_file_/01-first-call-vs-steady.ipynb": (
        "ana-lopez_777", "01-first-call-vs-steady.ipynb"
    ),  # Moodle, one folder per participant
    "Bo Li_888_assignsubmission_file_02-retracing.ipynb": ("bo-li_888", "02-retracing.ipynb"),  # Moodle, flat
    "roefrank_222_678904_notes (1).ipynb": ("roefrank_222", "notes (1).ipynb"),  # kept as is: diagnosed later
    # A browser's second download of the same file, alone and after Canvas's resubmission suffix.
    "Bo Li_888_assignsubmission_file_01-first-call-vs-steady (1).ipynb": ("bo-li_888", "01-first-call-vs-steady.ipynb"),
    "kimlee_333_678905_01-first-call-vs-steady-1 (2).ipynb": ("kimlee_333", "01-first-call-vs-steady.ipynb"),
    "grades-export.csv": None,
    "random folder/01-first-call-vs-steady.ipynb": None,
}


def _write(download, entries):
    for entry, data in entries.items():
        (download / entry).parent.mkdir(parents=True, exist_ok=True)
        (download / entry).write_bytes(data)


def _contents():
    return {entry: f"notebook of {entry}".encode() for entry in ENTRIES}


@pytest.mark.parametrize("form", ["folder", "zip"])
def test_each_file_lands_with_its_student_or_is_reported(tmp_path, form):
    contents = _contents()
    download = tmp_path / "download"
    _write(download, contents)
    if form == "zip":
        archive = tmp_path / "download.zip"
        with zipfile.ZipFile(archive, "w") as handle:
            for entry, data in contents.items():
                handle.writestr(entry, data)
        download = archive
    before = hashlib.sha256(download.read_bytes()).hexdigest() if form == "zip" else None

    report = intake.sort_into_submitted(download, tmp_path / "submitted", ASSIGNMENT, NOTEBOOKS)

    for entry, target in ENTRIES.items():
        if target is None:
            assert entry in [e for e, _ in report.unattributed]
        else:
            student, filename = target
            assert (tmp_path / "submitted" / student / ASSIGNMENT / filename).read_bytes() == contents[entry]
    assert "NOT PLACED grades-export.csv: the name fits neither" in report.report()
    if form == "zip":
        assert hashlib.sha256(download.read_bytes()).hexdigest() == before
    else:
        assert all((download / e).read_bytes() == d for e, d in contents.items())


def test_two_files_for_one_notebook_are_reported_not_guessed(tmp_path):
    download = tmp_path / "download"
    _write(download, {
        "doejane_12345_1_02-retracing.ipynb": b"first",
        "doejane_12345_2_02-retracing-1.ipynb": b"second",
    })
    report = intake.sort_into_submitted(download, tmp_path / "submitted", ASSIGNMENT, NOTEBOOKS)
    assert not (tmp_path / "submitted" / "doejane_12345" / ASSIGNMENT / "02-retracing.ipynb").exists()
    assert len(report.unattributed) == 2 and "2 files claim doejane_12345/02-retracing.ipynb" in report.report()


def test_an_existing_submission_is_never_overwritten(tmp_path):
    kept = tmp_path / "submitted" / "doejane_12345" / ASSIGNMENT / "02-retracing.ipynb"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"already there")
    download = tmp_path / "download"
    _write(download, {"doejane_12345_1_02-retracing.ipynb": b"different"})
    report = intake.sort_into_submitted(download, tmp_path / "submitted", ASSIGNMENT, NOTEBOOKS)
    assert kept.read_bytes() == b"already there"
    assert "exists with other content" in report.report()


def test_each_student_gets_nbgrader_s_timestamp_and_the_lms_late_mark(tmp_path):
    download = tmp_path / "download"
    _write(download, {
        "doejane_12345_1_01-first-call-vs-steady.ipynb": b"on time",
        "doejane_12345_2_02-retracing.ipynb": b"on time, later",
        "roefrank_LATE_222_3_02-retracing.ipynb": b"late",
        "Ana Lopez_777_assignsubmission_file_/01-first-call-vs-steady.ipynb": b"moodle",
    })
    times = {"doejane_12345_1_01-first-call-vs-steady.ipynb": 1_741_600_000,
             "doejane_12345_2_02-retracing.ipynb": 1_741_617_045.5,  # the newest of her files decides
             "roefrank_LATE_222_3_02-retracing.ipynb": 1_741_700_000,
             "Ana Lopez_777_assignsubmission_file_/01-first-call-vs-steady.ipynb": 1_741_500_000}
    for entry, epoch in times.items():
        os.utime(download / entry, (epoch, epoch))
    submitted = tmp_path / "submitted"
    report = intake.sort_into_submitted(download, submitted, ASSIGNMENT, NOTEBOOKS)

    stamp = (submitted / "doejane_12345" / ASSIGNMENT / "timestamp.txt").read_text()
    assert stamp == "2025-03-10 14:30:45.500000 UTC"
    assert parse_utc(stamp) == datetime.fromtimestamp(1_741_617_045.5, timezone.utc).replace(tzinfo=None)
    assert len((submitted / "doejane_12345" / ASSIGNMENT / "submission_secret.txt").read_text()) == 128
    assert report.report().splitlines()[1] == "  LATE (the LMS says so) roefrank_222: submitted 2025-03-11 13:33:20.000000 UTC"
    record = json.loads((submitted / intake.RECORD).read_text())
    assert record["roefrank_222"] == {"lms": "canvas", "name": "roefrank", "id": "222", "submission": "3", "late": True,
                                      "submitted_at": "2025-03-11 13:33:20.000000 UTC"}
    assert record["ana-lopez_777"] == {"lms": "moodle", "name": "Ana Lopez", "id": "777", "late": False,
                                       "submitted_at": "2025-03-09 06:00:00.000000 UTC"}


def test_a_zip_entry_s_time_is_read_in_this_machine_s_zone(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        archive = tmp_path / "download.zip"
        with zipfile.ZipFile(archive, "w") as handle:
            handle.writestr(zipfile.ZipInfo("doejane_12345_1_02-retracing.ipynb", (2025, 1, 15, 9, 30, 0)), b"nb")
        intake.sort_into_submitted(archive, tmp_path / "submitted", ASSIGNMENT, NOTEBOOKS)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    stamp = tmp_path / "submitted" / "doejane_12345" / ASSIGNMENT / "timestamp.txt"
    assert stamp.read_text() == "2025-01-15 14:30:00.000000 UTC"  # 9:30 in New York, winter time
