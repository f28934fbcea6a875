"""LMS downloads -> nbgrader's submitted/<student>/<assignment>/ layout, byte for byte.

Canvas names each file `<lastfirst>_[LATE_]<user id>_<submission id>_<original name>` and adds `-<n>` before
the extension of a resubmitted file. Moodle downloads a folder (or flattened names) per participant:
`<Full Name>_<participant id>_assignsubmission_file_[/]<original name>`. The student id becomes
`<name>_<id>`: readable, and unique even when two students share a name. A file that fits neither
pattern, or that collides with another file for the same student and notebook, is reported, not copied.
A browser that saved a second copy as `02-retracing (1).ipynb` is read as `02-retracing.ipynb`.
Files are read from the download (a folder or a zip) and written as new copies; the download is not touched.

Beside each student's files goes nbgrader's `timestamp.txt`: the time the LMS gave the newest file (a zip stores
local times without a zone, read in this machine's zone), so the gradebook's due date and nbgrader's late
penalty apply; and `submission_secret.txt`, as nbgrader's own submit writes it, so `nbgrader release_feedback`
works. What the LMS said of each student (its name and ids, Canvas's LATE_ mark) is kept in
submitted/.lms-intake.json, for the grade export and feedback bundle (perfaudit/grade/export.py).
"""

import json
import re
import secrets
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

CANVAS = re.compile(r"^(?P<name>[a-z0-9]+)_(?P<late>LATE_)?(?P<id>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>[^_/]+)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_/?(?P<file>.+)$")
CANVAS_RESUBMISSION = re.compile(r"^(?P<stem>.+)-\d+(?P<ext>\.ipynb)$")
BROWSER_COPY = re.compile(r"^(?P<stem>.+) \(\d+\)(?P<ext>\.ipynb)$")  # a second download of the same file
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"  # nbgrader's Exchange.timestamp_format, as its collect writes it
RECORD = ".lms-intake.json"  # under submitted/: a file, so nbgrader's student globs and the batch skip it


@dataclass
class Intake:
    placed: dict = field(default_factory=dict)  # {student: [file names placed in submitted/]}
    unattributed: list = field(default_factory=list)  # [(entry in the download, why)]
    students: dict = field(default_factory=dict)  # {student: what the LMS said: lms, name, ids, late, submitted_at}

    def report(self):
        lines = [f"intake: {sum(map(len, self.placed.values()))} files for {len(self.placed)} students"]
        lines += [f"  LATE (the LMS says so) {student}: submitted {record['submitted_at']}"
                  for student, record in sorted(self.students.items()) if record["late"]]
        lines += [f"  NOT PLACED {entry}: {why}" for entry, why in self.unattributed]
        return "\n".join(lines)


def _entries(download):
    """(name relative to the download, bytes reader, the time the LMS gave it, UTC) for every file in a folder or zip."""
    download = Path(download)
    if zipfile.is_zipfile(download):
        archive = zipfile.ZipFile(download)
        for info in archive.infolist():
            if not info.is_dir():
                stamped = datetime(*info.date_time).astimezone(timezone.utc)  # a naive local time, read here
                yield info.filename, (lambda info=info: archive.read(info)), stamped
    else:
        for path in sorted(p for p in download.rglob("*") if p.is_file()):
            stamped = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
            yield path.relative_to(download).as_posix(), path.read_bytes, stamped


def attribute(entry, notebooks):
    """(student id, file name) for one entry of an LMS download, or None when it fits no pattern."""
    found = lms_fields(entry, notebooks)
    return (found["student"], found["file"]) if found else None


def lms_fields(entry, notebooks):
    """What an entry's name says: student id, notebook name, and the LMS's own fields, or None."""
    parts = PurePosixPath(entry).parts
    for candidate in ("/".join(parts[-2:]), parts[-1]):  # Moodle's folder form, then the flat form
        for lms, pattern in (("moodle", MOODLE), ("canvas", CANVAS)):
            found = pattern.match(candidate)
            if found and "/" not in found["file"]:
                name = re.sub(r"[^a-z0-9]+", "-", found["name"].lower()).strip("-")
                fields = {"lms": lms, "name": found["name"], "id": found["id"], "late": False}
                if lms == "canvas":
                    fields.update(late=bool(found["late"]), submission=found["submission"])
                return {"student": f"{name}_{found['id']}", "file": _original_name(found["file"], notebooks),
                        "fields": fields}
    return None


def _original_name(filename, notebooks):
    """The notebook's own name when a browser (` (1)`), the LMS (`-1`) or both changed it; else the name as it is."""
    candidates = [filename]
    for pattern in (BROWSER_COPY, CANVAS_RESUBMISSION):  # a browser's copy of a resubmission: both, in this order
        renamed = pattern.match(candidates[-1])
        if renamed:
            candidates.append(renamed["stem"] + renamed["ext"])
    return next((name for name in candidates if name in notebooks), filename)


def sort_into_submitted(download, submitted_dir, assignment, notebooks):
    """Copy an LMS download's files into submitted/; return what went where and what could not be placed."""
    intake = Intake()
    wanted, newest = {}, {}
    for entry, read, stamped in _entries(download):
        if PurePosixPath(entry).name.startswith(".") or "__MACOSX" in entry:
            continue
        found = lms_fields(entry, notebooks)
        if found is None:
            intake.unattributed.append((entry, "the name fits neither Canvas's nor Moodle's pattern"))
            continue
        wanted.setdefault((found["student"], found["file"]), []).append((entry, read))
        record = intake.students.setdefault(found["student"], found["fields"])
        record["late"] = record["late"] or found["fields"]["late"]
        newest[found["student"]] = max(stamped, newest.get(found["student"], stamped))
    for (student, filename), copies in sorted(wanted.items()):
        if len(copies) > 1:
            for entry, _ in copies:
                intake.unattributed.append((entry, f"{len(copies)} files claim {student}/{filename}; pick one"))
            continue
        target = Path(submitted_dir) / student / assignment / filename
        data = copies[0][1]()
        if target.exists() and target.read_bytes() != data:
            intake.unattributed.append((copies[0][0], f"{target} exists with other content; not overwritten"))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        intake.placed.setdefault(student, []).append(filename)
    for student in intake.placed:
        intake.students[student]["submitted_at"] = newest[student].strftime(TIMESTAMP_FORMAT)
        _write_nbgrader_files(Path(submitted_dir) / student / assignment, intake.students[student]["submitted_at"])
    intake.students = {s: r for s, r in intake.students.items() if s in intake.placed}
    _save_record(Path(submitted_dir), intake.students)
    return intake


def _write_nbgrader_files(folder, submitted_at):
    """timestamp.txt (the newest file's time) and submission_secret.txt, as nbgrader's collect leaves them."""
    (folder / "timestamp.txt").write_text(submitted_at)
    secret = folder / "submission_secret.txt"
    if not secret.exists():  # the name of released feedback depends on it: keep it across intakes
        secret.write_text(secrets.token_hex(64))


def _save_record(submitted_dir, students):
    path = submitted_dir / RECORD
    kept = json.loads(path.read_text()) if path.exists() else {}
    kept.update(students)
    submitted_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")


def lms_record(submitted_dir):
    """{student: what the LMS said of them} from every intake so far."""
    path = Path(submitted_dir) / RECORD
    return json.loads(path.read_text()) if path.exists() else {}
