"""LMS downloads sorted into submitted/: Canvas and Moodle names, zip or folder, the download never touched."""

import hashlib
import json
import os
import shutil
import time
import zipfile
from datetime import datetime, timezone

import pytest
from nbgrader.utils import parse_utc

from perfaudit import ASSIGNMENT
from perfaudit.grade import intake, refused

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
    # A browser's second download of the same file: alone, after Canvas's resubmission suffix, and before it (a
    # browser's copy resubmitted to Canvas): each suffix is read from the outside in.
    "Bo Li_888_assignsubmission_file_01-first-call-vs-steady (1).ipynb": ("bo-li_888", "01-first-call-vs-steady.ipynb"),
    "kimlee_333_678905_01-first-call-vs-steady-1 (2).ipynb": ("kimlee_333", "01-first-call-vs-steady.ipynb"),
    "kimlee_333_678906_02-retracing (1)-1.ipynb": ("kimlee_333", "02-retracing.ipynb"),
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
    # Nothing was placed for her, yet the refusal is kept: she needs the instructor, and is never forgotten.
    why = "2 files claim doejane_12345/02-retracing.ipynb; pick one"
    assert intake.lms_record(tmp_path / "submitted")["doejane_12345"]["refused"] == {"02-retracing.ipynb": why}
    assert refused.needs_you(tmp_path / "submitted", intake.lms_record(tmp_path / "submitted"), ASSIGNMENT) == {
        "doejane_12345": {"02-retracing": f"not graded: {why}"}}


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
    assert report.report().splitlines()[1] == ("  LATE (the LMS says so) roefrank_222: submitted "
                                               "2025-03-11 13:33:20.000000 UTC")
    record = json.loads((submitted / intake.RECORD).read_text())
    assert record["roefrank_222"] == {"lms": "canvas", "name": "roefrank", "id": "222", "submission": "3", "late": True,
                                      "digest": intake._digest({"02-retracing.ipynb": b"late"}),
                                      "submitted_at": "2025-03-11 13:33:20.000000 UTC"}
    assert record["ana-lopez_777"] == {"lms": "moodle", "name": "Ana Lopez", "id": "777", "late": False,
                                       "digest": intake._digest({"01-first-call-vs-steady.ipynb": b"moodle"}),
                                       "submitted_at": "2025-03-09 06:00:00.000000 UTC"}


def _timed_download(folder, entries):
    """A download folder of {entry: (bytes, epoch seconds)}: the times the LMS gave the files."""
    for entry, (data, epoch) in entries.items():
        _write(folder, {entry: data})
        os.utime(folder / entry, (epoch, epoch))
    return folder


FIRST, LATER = 1_741_600_000, 1_741_700_000  # 2025-03-10 09:46:40 and 2025-03-11 13:33:20 UTC


def test_a_newer_download_replaces_the_submission_and_keeps_the_older_one(tmp_path):
    submitted = tmp_path / "submitted"
    jane = submitted / "doejane_12345" / ASSIGNMENT
    first = _timed_download(tmp_path / "first", {"doejane_12345_1_01-first-call-vs-steady.ipynb": (b"nb1 v1", FIRST),
                                                 "doejane_12345_1_02-retracing.ipynb": (b"nb2 v1", FIRST)})
    intake.sort_into_submitted(first, submitted, ASSIGNMENT, NOTEBOOKS)
    secret = (jane / "submission_secret.txt").read_text()
    later = _timed_download(tmp_path / "later", {"doejane_12345_2_01-first-call-vs-steady-1.ipynb": (b"nb1 v1", LATER),
                                                 "doejane_12345_2_02-retracing-1.ipynb": (b"nb2 v2", LATER)})
    report = intake.sort_into_submitted(later, submitted, ASSIGNMENT, NOTEBOOKS)

    assert report.report().splitlines() == [
        "intake: 2 files for 1 student",
        "  RESUBMITTED doejane_12345: the files of 2025-03-11 13:33:20.000000 UTC replace those of "
        "2025-03-10 09:46:40.000000 UTC, kept in submitted/doejane_12345/.history/2025-03-10T094640.000000Z"]
    assert _files(submitted) == {"doejane_12345": ["01-first-call-vs-steady.ipynb", "02-retracing.ipynb",
                                                   "submission_secret.txt", "timestamp.txt"]}
    assert (jane / "02-retracing.ipynb").read_bytes() == b"nb2 v2"
    assert (jane / "timestamp.txt").read_text() == "2025-03-11 13:33:20.000000 UTC"
    assert (jane / "submission_secret.txt").read_text() == secret  # released feedback keeps its name
    kept = submitted / "doejane_12345" / intake.HISTORY / "2025-03-10T094640.000000Z"
    assert {p.name: p.read_bytes() for p in kept.iterdir() if p.suffix != ".txt" or p.name == "timestamp.txt"} == {
        "01-first-call-vs-steady.ipynb": b"nb1 v1", "02-retracing.ipynb": b"nb2 v1",
        "timestamp.txt": b"2025-03-10 09:46:40.000000 UTC"}

    # The first download again, older: nothing of the newer work moves.
    again = intake.sort_into_submitted(first, submitted, ASSIGNMENT, NOTEBOOKS)
    assert (jane / "02-retracing.ipynb").read_bytes() == b"nb2 v2"
    assert (jane / "timestamp.txt").read_text() == "2025-03-11 13:33:20.000000 UTC"
    assert "NOT PLACED doejane_12345_1_02-retracing.ipynb: older than the submission in" in again.report()
    assert "(2025-03-11 13:33:20.000000 UTC): the newer work is kept, nothing overwritten" in again.report()
    assert sorted(p.name for p in kept.parent.iterdir()) == ["2025-03-10T094640.000000Z"]


def test_the_same_download_again_leaves_what_the_instructor_renamed(tmp_path):
    submitted = tmp_path / "submitted"
    download = _timed_download(tmp_path / "download", {"doejane_12345_1_retracing.ipynb": (b"nb2", FIRST)})
    intake.sort_into_submitted(download, submitted, ASSIGNMENT, NOTEBOOKS)
    folder = submitted / "doejane_12345" / ASSIGNMENT
    (folder / "retracing.ipynb").rename(folder / "02-retracing.ipynb")  # as the summary tells the instructor
    report = intake.sort_into_submitted(download, submitted, ASSIGNMENT, NOTEBOOKS)
    assert report.report() == "intake: 0 files for 0 students, 1 unchanged since an earlier intake"
    assert _files(submitted) == {"doejane_12345": ["02-retracing.ipynb", "submission_secret.txt", "timestamp.txt"]}
    shutil.rmtree(submitted / "doejane_12345")  # a folder removed by hand is placed again from the download
    assert intake.sort_into_submitted(download, submitted, ASSIGNMENT, NOTEBOOKS).placed == {
        "doejane_12345": ["retracing.ipynb"]}


def test_work_after_the_due_date_is_reported_late_for_moodle_too(tmp_path):
    download = _timed_download(tmp_path / "download", {
        "Ana Lopez_777_assignsubmission_file_/01-first-call-vs-steady.ipynb": (b"late", LATER),
        "Bo Li_888_assignsubmission_file_02-retracing.ipynb": (b"on time", FIRST)})
    due = datetime(2025, 3, 10, 12, 0)
    report = intake.sort_into_submitted(download, tmp_path / "submitted", ASSIGNMENT, NOTEBOOKS, due=due)
    assert report.report().splitlines() == [
        "intake: 2 files for 2 students",
        "  LATE (after the due date, 2025-03-10 12:00:00 UTC) ana-lopez_777: submitted 2025-03-11 13:33:20.000000 UTC"]


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


# Hostile names. Each entry of the download -> where it must land (student, file), or None: placed nowhere.
HONEST_JANE = "Jane Doe_777_assignsubmission_file_/01-first-call-vs-steady.ipynb"
CROSSING_INTO_A_CLASSMATE = {
    HONEST_JANE: ("jane-doe_777", "01-first-call-vs-steady.ipynb"),
    "Mallory Roe_999_assignsubmission_file_/02-retracing.ipynb": ("mallory-roe_999", "02-retracing.ipynb"),
    # Folders Mallory made inside her own, named like Jane's participant folder or a Canvas prefix.
    "Mallory Roe_999_assignsubmission_file_/Jane Doe_777_assignsubmission_file_/jax.py": None,
    "Mallory Roe_999_assignsubmission_file_/Jane Doe_777_assignsubmission_file_/01-first-call-vs-steady.ipynb": None,
    "Mallory Roe_999_assignsubmission_file_/notes/Jane Doe_777_assignsubmission_file_02-retracing.ipynb": None,
    "Mallory Roe_999_assignsubmission_file_/notes/doejane_12345_1_02-retracing.ipynb": None,
    # A file of hers named like Jane's flat entry: hers, under that name.
    "Mallory Roe_999_assignsubmission_file_Jane Doe_777_assignsubmission_file_03-evidence.ipynb": (
        "mallory-roe_999", "Jane Doe_777_assignsubmission_file_03-evidence.ipynb"),
}


def _download(tmp_path, form, contents):
    """The entries {name: bytes} as an LMS download: a folder, or a zip of it."""
    folder = tmp_path / "download"
    _write(folder, contents)
    if form == "folder":
        return folder
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for entry, data in contents.items():
            handle.writestr(entry, data)
    return archive


def _files(submitted):
    """{student: sorted names in their assignment folder}: everything intake wrote."""
    return {folder.name: sorted(p.name for p in (folder / ASSIGNMENT).iterdir())
            for folder in sorted(submitted.iterdir()) if folder.is_dir()}


def _assert_landed(report, submitted, contents, expected):
    placed = {}
    for entry, target in expected.items():
        if target is None:
            assert entry in [e for e, _ in report.unattributed], entry
        else:
            assert (submitted / target[0] / ASSIGNMENT / target[1]).read_bytes() == contents[entry]
            placed.setdefault(target[0], []).append(target[1])
    assert _files(submitted) == {s: sorted(names + ["submission_secret.txt", "timestamp.txt"])
                                 for s, names in placed.items()}


@pytest.mark.parametrize("form", ["folder", "zip"])
def test_a_participant_s_folder_never_writes_into_a_classmate_s(tmp_path, form):
    contents = {entry: f"file {i}".encode() for i, entry in enumerate(CROSSING_INTO_A_CLASSMATE)}
    download = _download(tmp_path, form, contents)
    report = intake.sort_into_submitted(download, tmp_path / "submitted", ASSIGNMENT, NOTEBOOKS | {"03-evidence.ipynb"})
    _assert_landed(report, tmp_path / "submitted", contents, CROSSING_INTO_A_CLASSMATE)
    assert ("Mallory Roe_999_assignsubmission_file_/Jane Doe_777_assignsubmission_file_/jax.py: inside a folder in "
            "Mallory Roe_999_assignsubmission_file_/: only the files at the top") in report.report()


ONLY_NOTEBOOKS = {
    "doejane_12345_1_01-first-call-vs-steady.ipynb": ("doejane_12345", "01-first-call-vs-steady.ipynb"),
    "doejane_12345_2_jax.py": None,
    "doejane_12345_3_sitecustomize.py": None,
    "doejane_12345_4_timestamp.txt": None,
    "doejane_12345_5_notes (1).ipynb": ("doejane_12345", "notes (1).ipynb"),  # a notebook: diagnosed later
    "Ana Lopez_777_assignsubmission_file_/numpy.py": None,
    "Ana Lopez_777_assignsubmission_file_/02-retracing.ipynb": ("ana-lopez_777", "02-retracing.ipynb"),
    "Ana Lopez_777_assignsubmission_onlinetext_/onlinetext.html": None,
}


def test_only_notebooks_are_placed(tmp_path):
    contents = {entry: f"file {i}".encode() for i, entry in enumerate(ONLY_NOTEBOOKS)}
    report = intake.sort_into_submitted(_download(tmp_path, "folder", contents), tmp_path / "submitted", ASSIGNMENT,
                                        NOTEBOOKS)
    _assert_landed(report, tmp_path / "submitted", contents, ONLY_NOTEBOOKS)
    assert "NOT PLACED doejane_12345_2_jax.py: not a notebook, so not placed for doejane_12345" in report.report()


def test_a_student_folder_two_lms_names_claim_gets_nothing(tmp_path):
    claimed_twice = {
        "Jane Doe_777_assignsubmission_file_/01-first-call-vs-steady.ipynb": None,
        "JANE DOE_777_assignsubmission_file_/02-retracing.ipynb": None,  # the same folder, jane-doe_777
        "Doe_42_assignsubmission_file_01-first-call-vs-steady.ipynb": None,
        "doe_42_5001_02-retracing.ipynb": None,  # Canvas's doe_42 and Moodle's Doe_42: one folder, two people
        "Bo Li_888_assignsubmission_file_/01-first-call-vs-steady.ipynb": (
            "bo-li_888", "01-first-call-vs-steady.ipynb"),
    }
    contents = {entry: f"file {i}".encode() for i, entry in enumerate(claimed_twice)}
    report = intake.sort_into_submitted(_download(tmp_path, "folder", contents), tmp_path / "submitted", ASSIGNMENT,
                                        NOTEBOOKS)
    _assert_landed(report, tmp_path / "submitted", contents, claimed_twice)
    assert ("the folder jane-doe_777 is claimed by more than one LMS name (moodle 'JANE DOE' id 777; moodle "
            "'Jane Doe' id 777, counting earlier intakes): nothing placed for it") in report.report()


def test_a_later_download_cannot_claim_a_folder_an_earlier_one_filled(tmp_path):
    submitted = tmp_path / "submitted"
    first = {"Jane Doe_777_assignsubmission_file_/01-first-call-vs-steady.ipynb": b"Jane's"}
    intake.sort_into_submitted(_download(tmp_path / "first", "folder", first), submitted, ASSIGNMENT, NOTEBOOKS)
    second = {"Jane.Doe_777_assignsubmission_file_/02-retracing.ipynb": b"someone else's"}
    report = intake.sort_into_submitted(_download(tmp_path / "second", "folder", second), submitted, ASSIGNMENT,
                                        NOTEBOOKS)
    assert _files(submitted) == {"jane-doe_777": ["01-first-call-vs-steady.ipynb", "submission_secret.txt",
                                                  "timestamp.txt"]}
    assert "is claimed by more than one LMS name (moodle 'Jane Doe' id 777; moodle 'Jane.Doe' id 777" in report.report()
    assert intake.lms_record(submitted)["jane-doe_777"]["name"] == "Jane Doe"


def _report_lines_are_the_tool_s_own(report):
    """One line per thing intake says, each printable text: nothing from a name can start a line or colour one."""
    text = report.report()
    text.encode("utf-8")  # a name that is not UTF-8 reaches the terminal escaped, never as a surrogate
    lines = text.split("\n")
    assert len(lines) == 1 + sum(r["late"] for r in report.students.values()) + len(report.unattributed)
    assert all(char.isprintable() for line in lines for char in line), text
    assert all(line.startswith(("intake: ", "  LATE ", "  NOT PLACED ")) for line in lines)


def test_names_that_are_not_text_are_refused_one_at_a_time_in_a_folder(tmp_path):
    download = tmp_path / "download"
    entries = {
        b"doejane_12345_1_01-first-call-vs-steady.ipynb": b"honest",
        b"roefrank_222_2_02-retracing\xff.ipynb": b"a file name that is not UTF-8",
        b"R\xf6e Frank_223_assignsubmission_file_/02-retracing.ipynb": b"a Latin-1 participant folder",
        b"kimlee_333_3_02-retracing\x1b[2J\n  LATE (the LMS says so) doejane_12345: forged.ipynb": b"controls",
    }
    for raw, data in entries.items():
        path = os.path.join(os.fsencode(download), raw)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    report = intake.sort_into_submitted(download, tmp_path / "submitted", ASSIGNMENT, NOTEBOOKS)
    assert _files(tmp_path / "submitted") == {
        "doejane_12345": ["01-first-call-vs-steady.ipynb", "submission_secret.txt", "timestamp.txt"]}
    assert len(report.unattributed) == 3
    _report_lines_are_the_tool_s_own(report)
    assert ("NOT PLACED roefrank_222_2_02-retracing\\xff.ipynb: its name is not valid UTF-8 text: rename it in the "
            "download") in report.report()
    # escaped, and its padding shown as one space: "LATE" cannot pass for an indented line of the report
    assert "NOT PLACED kimlee_333_3_02-retracing\\x1b[2J\\n LATE (the LMS says so)" in report.report()


def _zip_with_raw_names(path, entries):
    """A zip whose entries {raw name bytes: data} are all marked UTF-8, as LMSs mark them, valid or not."""
    stand_ins = {raw: "ABCDEFGH"[i].encode() * len(raw) for i, raw in enumerate(entries)}
    with zipfile.ZipFile(path, "w") as archive:
        for raw, data in entries.items():
            archive.writestr(zipfile.ZipInfo(stand_ins[raw].decode(), (2025, 3, 1, 12, 0, 0)), data)
    data = bytearray(path.read_bytes())
    for raw, stand_in in stand_ins.items():
        # The name follows its local header (flags at 6 of its 30 bytes), then its central one (flags at 8 of 46).
        for header, name_at, flags_at in ((b"PK\x03\x04", 30, 6), (b"PK\x01\x02", 46, 8)):
            at = data.index(stand_in) - name_at  # the first left: replaced below, so next time the central one
            assert data[at:at + 4] == header
            flags = int.from_bytes(data[at + flags_at:at + flags_at + 2], "little") | intake.UTF8_NAME_FLAG
            data[at + flags_at:at + flags_at + 2] = flags.to_bytes(2, "little")
            data[at + name_at:at + name_at + len(raw)] = raw
    path.write_bytes(bytes(data))


def test_names_that_are_not_text_are_refused_one_at_a_time_in_a_zip(tmp_path):
    archive = tmp_path / "download.zip"
    _zip_with_raw_names(archive, {
        b"doejane_12345_1_01-first-call-vs-steady.ipynb": b"honest",
        b"roefrank_222_2_02-retracing\xff.ipynb": b"a file name that is not UTF-8",
        b"R\xf6e Frank_223_assignsubmission_file_/02-retracing.ipynb": b"a Latin-1 participant folder",
        "Bo Li_888_assignsubmission_file_/02-retracing\u202e.ipynb".encode(): b"UTF-8, with a right-to-left override",
    })
    with pytest.raises(UnicodeDecodeError):
        zipfile.ZipFile(archive)  # what stopped the class: zipfile refuses the whole archive
    report = intake.sort_into_submitted(archive, tmp_path / "submitted", ASSIGNMENT, NOTEBOOKS)
    honest = tmp_path / "submitted" / "doejane_12345" / ASSIGNMENT / "01-first-call-vs-steady.ipynb"
    assert honest.read_bytes() == b"honest"
    assert (tmp_path / "submitted" / "bo-li_888" / ASSIGNMENT / "02-retracing\u202e.ipynb").exists()  # shown escaped
    assert sorted(_files(tmp_path / "submitted")) == ["bo-li_888", "doejane_12345"]
    _report_lines_are_the_tool_s_own(report)
    assert "NOT PLACED R\\xf6e Frank_223_assignsubmission_file_/02-retracing.ipynb: its name is not valid UTF-8" in (
        report.report())


@pytest.mark.parametrize("entry", ["../Jane Doe_777_assignsubmission_file_/01-first-call-vs-steady.ipynb",
                                   "/Jane Doe_777_assignsubmission_file_/01-first-call-vs-steady.ipynb",
                                   "Jane Doe_777_assignsubmission_file_//01-first-call-vs-steady.ipynb",
                                   "Jane Doe_777_assignsubmission_file_/../01-first-call-vs-steady.ipynb",
                                   "Jane Doe_777_assignsubmission_file_.."])
def test_a_zip_entry_that_is_not_a_plain_path_is_not_placed(tmp_path, entry):
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr(entry, b"anything")
    report = intake.sort_into_submitted(archive, tmp_path / "submitted", ASSIGNMENT, NOTEBOOKS)
    assert [e for e, _ in report.unattributed] == [entry] and _files(tmp_path / "submitted") == {}


def test_intake_never_writes_through_a_link_in_submitted(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outside = tmp_path / "outside.ipynb"
    outside.write_bytes(b"not intake's")
    submitted = tmp_path / "submitted"
    (submitted / "doejane_12345").mkdir(parents=True)
    (submitted / "doejane_12345" / ASSIGNMENT).symlink_to(elsewhere)
    (submitted / "roefrank_222" / ASSIGNMENT).mkdir(parents=True)
    (submitted / "roefrank_222" / ASSIGNMENT / "02-retracing.ipynb").symlink_to(outside)
    download = tmp_path / "download"
    _write(download, {"doejane_12345_1_01-first-call-vs-steady.ipynb": b"Jane's",
                      "roefrank_222_2_02-retracing.ipynb": b"Frank's"})
    report = intake.sort_into_submitted(download, submitted, ASSIGNMENT, NOTEBOOKS)
    assert list(elsewhere.iterdir()) == [] and outside.read_bytes() == b"not intake's"
    assert "is a link or a file, not a folder of its own: nothing written through it" in report.report()
    assert "roefrank_222/performance-audit/02-retracing.ipynb exists with other content; not overwritten" in (
        report.report())
