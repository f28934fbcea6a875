"""LMS downloads -> nbgrader's submitted/<student>/<assignment>/ layout, byte for byte.

Canvas names each file `<lastfirst>_[LATE_]<user id>_<submission id>_<original name>` and adds `-<n>` before
the extension of a resubmitted file. Moodle downloads a folder (or flattened names) per participant:
`<Full Name>_<participant id>_assignsubmission_file_[/]<original name>`. The student id becomes
`<name>_<id>`: readable, and unique even when two students share a name. A browser that saved a second copy as
`02-retracing (1).ipynb` is read as `02-retracing.ipynb`, and so is that copy resubmitted to Canvas,
`02-retracing (1)-1.ipynb`. Files are read from the download (a folder or a zip) and written as new copies; the
download is not touched.

The download is hostile input: students name their files (and, in Moodle, folders inside their own). So the
LMS's prefix or participant folder is read at the top of the download only; a file is placed for exactly one
student or reported as NOT PLACED with the reason, never written into another student's folder, through a link
or over other bytes. Only notebooks (.ipynb) are placed: any other file beside them could stand in for a module
the grading kernel imports. A name that is not UTF-8 text or holds control characters, a file that fits
neither pattern, that collides with another for the same student and notebook, or whose student folder two LMS
names claim, is reported, not copied. The report escapes every name it shows (perfaudit/grade/escape.py).

A later download replaces a student's submission when its files differ and the LMS gave them a newer time, as
nbgrader's own `collect --update` replaces a whole submission: the older one is moved, never deleted, to
submitted/<student>/.history/<its time>/ (beside the assignment folder, so nbgrader's globs and the batch never
see it). An older or equally old download never overwrites newer work, and one intake already placed (the same
files for the same student) is not placed again: what the instructor changed in submitted/ since (a misnamed
notebook renamed as told) stays as it is.

Beside each student's files goes nbgrader's `timestamp.txt`: the time the LMS gave the newest file (a zip stores
local times without a zone, read in this machine's zone), so the gradebook's due date and nbgrader's late
penalty apply; and `submission_secret.txt`, as nbgrader's own submit writes it, so `nbgrader release_feedback`
works. What the LMS said of each student (its name and ids, Canvas's LATE_ mark) is kept in
submitted/.lms-intake.json, for the grade export and feedback bundle (perfaudit/grade/export.py).
"""

import hashlib
import io
import json
import os
import re
import secrets
import stat
import zipfile
from collections.abc import Container
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from perfaudit.autograde.isolation.submission import MAX_FILE_BYTES
from perfaudit.bookkeeping.coursedir import LMS_RECORD
from perfaudit.grade import names
from perfaudit.grade.errors import NotPlaced
from perfaudit.grade.escape import one_line

CANVAS = re.compile(r"^(?P<name>[a-z0-9]+)_(?P<late>LATE_)?(?P<id>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
# Moodle's prefix; with nothing after it, the name of a participant's folder.
MOODLE = re.compile(r"^(?P<name>[^_/]+)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_(?P<file>.*)$")
CANVAS_RESUBMISSION = re.compile(r"^(?P<stem>.+)-\d+(?P<ext>\.ipynb)$")
BROWSER_COPY = re.compile(r"^(?P<stem>.+) \(\d+\)(?P<ext>\.ipynb)$")  # a second download of the same file
NOTEBOOK_SUFFIX = ".ipynb"
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"  # nbgrader's Exchange.timestamp_format, as its collect writes it
RECORD = LMS_RECORD  # under submitted/ (perfaudit/bookkeeping/coursedir.py)
UTF8_NAME_FLAG = 0x800  # a zip entry's general-purpose flag: its name is UTF-8
HISTORY = ".history"  # under submitted/<student>/: earlier submissions; a dot folder nbgrader's globs skip


@dataclass
class Intake:
    placed: dict[str, list[str]] = field(default_factory=dict)  # {student: [file names placed in submitted/]}
    unattributed: list[tuple[str, str]] = field(default_factory=list)  # [(entry in the download, why)]
    # {student: what the LMS said: lms, name, ids, late, submitted_at}
    students: dict[str, dict[str, Any]] = field(default_factory=dict)
    # {student: (older time, where the older files went)}
    resubmitted: dict[str, tuple[str, str]] = field(default_factory=dict)
    unchanged: list[str] = field(default_factory=list)  # students whose files an earlier intake placed already
    # {student: why late}: the LMS's mark, or after the gradebook's due date
    late: dict[str, str] = field(default_factory=dict)

    def report(self) -> str:
        """What intake did, for the terminal: every name from the download escaped, one line each."""
        files = sum(map(len, self.placed.values()))
        lines = [f"intake: {files} file{'' if files == 1 else 's'} for {len(self.placed)} "
                 f"student{'' if len(self.placed) == 1 else 's'}"
                 + (f", {len(self.unchanged)} unchanged since an earlier intake" if self.unchanged else "")]
        lines += [f"  RESUBMITTED {one_line(student)}: the files of {self.students[student]['submitted_at']} replace "
                  f"those of {older}, kept in {one_line(kept)}"
                  for student, (older, kept) in sorted(self.resubmitted.items())]
        lines += [f"  LATE ({why}) {one_line(student)}: submitted {self.students[student]['submitted_at']}"
                  for student, why in sorted(self.late.items())]
        lines += [f"  NOT PLACED {one_line(entry)}: {one_line(why)}" for entry, why in self.unattributed]
        return "\n".join(lines)


def _entries(download):
    """(name relative to the download, bytes reader, the time the LMS gave it in UTC, why not to read it or None)
    for every entry of a folder or zip that is not a folder; names are str, bytes that are not UTF-8 as
    os.fsdecode reads them."""
    download = Path(download)
    if zipfile.is_zipfile(download):
        archive, not_utf8 = _open_zip(download)
        for info in archive.infolist():
            if not info.is_dir():
                stamped = datetime(*info.date_time).astimezone(timezone.utc)  # a naive local time, read here
                too_big = info.file_size > MAX_FILE_BYTES
                yield (not_utf8.get(info.orig_filename, info.filename), (lambda info=info: archive.read(info)),
                       stamped, _too_big(info.file_size) if too_big else None)
        return
    for root, dirs, files in os.walk(download):  # never follows a linked folder
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            info = path.lstat()
            why = None if stat.S_ISREG(info.st_mode) else "not a regular file (a link, a FIFO): not followed"
            if why is None and info.st_size > MAX_FILE_BYTES:
                why = _too_big(info.st_size)
            stamped = datetime.fromtimestamp(info.st_mtime, timezone.utc)
            yield path.relative_to(download).as_posix(), (lambda path=path: _read_no_link(path)), stamped, why


def _too_big(size):
    return f"{size} bytes, over the {MAX_FILE_BYTES // 2**20} MB a submitted file may have"


def _read_no_link(path):
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as handle:
        return handle.read(MAX_FILE_BYTES + 1)


def _open_zip(path):
    """(the ZipFile, {name as zipfile read it: name as os.fsdecode reads it} for names that are not UTF-8).

    zipfile refuses a whole archive when one entry is marked UTF-8 and is not; such an entry is read here with
    the mark cleared, so it can be refused on its own and the rest of the class placed.
    """
    try:
        return zipfile.ZipFile(path), {}
    except UnicodeDecodeError:
        data, not_utf8 = _clear_false_utf8_marks(Path(path).read_bytes())
    try:
        return zipfile.ZipFile(io.BytesIO(data)), {raw.decode("cp437"): os.fsdecode(raw) for raw in not_utf8}
    except UnicodeDecodeError:
        raise SystemExit(f"{path}: a name in this zip is not UTF-8 though the zip says it is, and its layout is one "
                         "intake cannot mend (zip64, or data before the archive). Unzip it (unzip keeps the names' "
                         "bytes) and give intake the folder: --from <folder>. Nothing was placed.")


def _clear_false_utf8_marks(data):
    """The zip's bytes with the UTF-8 mark cleared in the central directory on each entry whose name is not UTF-8
    (zipfile then reads that name as cp437), and the raw names of those entries."""
    found: list[bytes]
    data, found = bytearray(data), []
    end = data.rfind(b"PK\x05\x06")
    if end < 0:
        return bytes(data), found
    count, size = (int.from_bytes(data[end + a:end + b], "little") for a, b in ((10, 12), (12, 16)))
    at = end - size  # the central directory ends where the end record starts (no zip64, as LMSs write them)
    for _ in range(count):
        if data[at:at + 4] != b"PK\x01\x02":
            break
        flags = int.from_bytes(data[at + 8:at + 10], "little")
        name_length, extra_length, comment_length = (int.from_bytes(data[at + k:at + k + 2], "little")
                                                     for k in (28, 30, 32))
        raw = bytes(data[at + 46:at + 46 + name_length])
        if flags & UTF8_NAME_FLAG and not _is_utf8(raw):
            data[at + 8:at + 10] = (flags & ~UTF8_NAME_FLAG).to_bytes(2, "little")
            found.append(raw)
        at += 46 + name_length + extra_length + comment_length
    return bytes(data), found


def _is_utf8(raw):
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def lms_fields(entry: str, notebooks: Container[str]) -> dict[str, Any]:
    """What an entry's name says: student id, notebook name, and the LMS's own fields; NotPlaced says why not.

    Only the LMS writes the start of a name: Canvas's prefix, Moodle's prefix or participant folder at the top of
    the download. It is read there and nowhere else, so nothing a student names (a file, a folder inside their
    own) is ever read as a participant: a student's file lands in that student's folder or in none.
    """
    parts = entry.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise NotPlaced("not a plain path inside the download (an empty part, '.' or '..')")
    for part in parts:
        why = names.problem(part)
        if why:
            raise NotPlaced(f"{why}: rename it in the download (or ask the student to submit it again under a "
                            "plain name) and run intake again")
    folder = MOODLE.match(parts[0]) if len(parts) > 1 else None
    if folder and not folder["file"] and len(parts) == 2:
        lms, found, filename = "moodle", folder, parts[1]
    elif folder and not folder["file"]:
        raise NotPlaced(f"inside a folder in {parts[0]}/: only the files at the top of a participant's folder are "
                        "placed")
    elif len(parts) > 1:
        raise NotPlaced("the name fits neither Canvas's nor Moodle's pattern at the top of the download (if the "
                        "LMS's files are inside another folder, give intake that folder)")
    else:  # a flat name: the two prefixes cannot both fit (Canvas's id is followed by digits, Moodle's by a word)
        matches = [(lms, p.match(parts[0])) for lms, p in (("moodle", MOODLE), ("canvas", CANVAS))]
        lms, found = next(((lms, m) for lms, m in matches if m and m["file"]),  # type: ignore[assignment]
                          (None, None))  # None: refused just below
        if found is None:
            raise NotPlaced("the name fits neither Canvas's nor Moodle's pattern")
        filename = found["file"]
    name = re.sub(r"[^a-z0-9]+", "-", found["name"].lower()).strip("-")
    student = f"{name}_{found['id']}"
    filename = _original_name(filename, notebooks)
    if not filename.endswith(NOTEBOOK_SUFFIX):
        raise NotPlaced(f"not a notebook, so not placed for {student}: only .ipynb files are (any other file in the "
                        "folder the kernel grades in could stand in for a module the notebook imports)")
    fields = {"lms": lms, "name": found["name"], "id": found["id"], "late": False}
    if lms == "canvas":
        fields.update(late=bool(found["late"]), submission=found["submission"])
    return {"student": student, "file": filename, "fields": fields}


def _original_name(filename, notebooks):
    """The notebook's own name when a browser (` (1)`), the LMS (`-1`) or both changed it; else the name as it is.

    Each suffix is peeled from the outside in, whichever was added last: Canvas's `-1` on a browser's copy
    (`02-retracing (1)-1.ipynb`) first, and a browser's ` (2)` on a Canvas resubmission (`... -1 (2).ipynb`) first.
    """
    candidates = [filename]
    while renamed := (CANVAS_RESUBMISSION.match(candidates[-1]) or BROWSER_COPY.match(candidates[-1])):
        candidates.append(renamed["stem"] + renamed["ext"])  # shorter each time: the loop ends
    return next((name for name in candidates if name in notebooks), filename)


def _identity(fields):
    """Who the LMS says a student is: the same LMS, name and id, or another person."""
    return fields["lms"], fields["name"], fields["id"]


def sort_into_submitted(download: str | Path, submitted_dir: str | Path, assignment: str, notebooks: Container[str],
                        due: datetime | None = None) -> Intake:
    """Copy an LMS download's notebooks into submitted/; return what went where and what could not be placed.

    due: the gradebook's due date (a naive UTC datetime) or None: a student who submitted after it is reported
    late whatever the LMS (Moodle's names say nothing of lateness).
    """
    intake = Intake()
    submitted_dir = Path(submitted_dir)
    earlier = lms_record(submitted_dir)
    wanted: dict[tuple[str, str], list[tuple[str, Any]]]
    newest: dict[str, datetime]
    claims: dict[str, dict[tuple[str, str, str], list[str]]]
    wanted, newest, claims = {}, {}, {}  # claims: {student: {identity: [entries]}}
    for entry, read, stamped, unreadable in _entries(download):
        if entry.rsplit("/", 1)[-1].startswith(".") or "__MACOSX" in entry:
            continue
        try:
            found = lms_fields(entry, notebooks)
        except NotPlaced as refusal:
            intake.unattributed.append((entry, str(refusal)))
            continue
        if unreadable:
            intake.unattributed.append((entry, unreadable))
            continue
        claims.setdefault(found["student"], {}).setdefault(_identity(found["fields"]), []).append(entry)
        wanted.setdefault((found["student"], found["file"]), []).append((entry, read))
        record = intake.students.setdefault(found["student"], found["fields"])
        record["late"] = record["late"] or found["fields"]["late"]
        newest[found["student"]] = max(stamped, newest.get(found["student"], stamped))
    disputed = _disputed(claims, earlier, intake)
    # {student: {file name: (entry, read)}}: one file per notebook, the rest reported
    by_student: dict[str, dict[str, tuple[str, Any]]] = {}
    for (student, filename), copies in sorted(wanted.items()):
        if student in disputed:
            continue
        if len(copies) > 1:
            why = f"{len(copies)} files claim {student}/{filename}; pick one"
            intake.unattributed += [(entry, why) for entry, _ in copies]
            intake.students[student].setdefault("refused", {})[filename] = why  # not graded until resolved (refused.py)
            continue
        by_student.setdefault(student, {})[filename] = copies[0]
    for student, files in sorted(by_student.items()):
        submitted_at = newest[student].strftime(TIMESTAMP_FORMAT)
        folder = submitted_dir / student / assignment
        try:
            contents = {name: _read_entry(read) for name, (_, read) in files.items()}
        except NotPlaced as refusal:
            intake.unattributed += [(entry, str(refusal)) for entry, _ in files.values()]
            continue
        digest = _digest(contents)
        if earlier.get(student, {}).get("digest") == digest and folder.is_dir():  # placed before: left as it is now
            intake.unchanged.append(student)
            continue
        try:
            older = _make_room(folder, contents, newest[student])
            for filename, data in sorted(contents.items()):
                _place(folder, filename, data)
        except NotPlaced as refusal:
            intake.unattributed += [(entry, str(refusal)) for entry, _ in files.values()]
            continue
        if older:
            intake.resubmitted[student] = older
        intake.placed[student] = sorted(contents)
        intake.students[student].update(submitted_at=submitted_at, digest=digest)
        _write_nbgrader_files(folder, submitted_at)
    # A refusal is kept for a student nothing was placed for (their one notebook came twice): the run lists them
    # under "Needs you" and the export leaves their row alone, instead of forgetting them (refused.py).
    refused = {s: {**earlier.get(s, {}), **r} for s, r in intake.students.items()
               if s not in intake.placed and r.get("refused")}
    intake.students = {s: r for s, r in intake.students.items() if s in intake.placed}
    for student, record in intake.students.items():
        if record["late"]:
            intake.late[student] = "the LMS says so"
        elif due is not None and newest[student].replace(tzinfo=None) > due:
            intake.late[student] = f"after the due date, {due.strftime('%Y-%m-%d %H:%M:%S')} UTC"
    _save_record(submitted_dir, {**intake.students, **refused})
    return intake


def _read_entry(read):
    try:
        data = read()
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError, EOFError) as error:
        raise NotPlaced(f"could not be read from the download ({type(error).__name__}: {error})")
    if len(data) > MAX_FILE_BYTES:
        raise NotPlaced(_too_big(len(data)))
    return data


def _digest(contents):
    digest = hashlib.sha256()
    for name, data in sorted(contents.items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def _notebooks_in(folder):
    """{name: bytes} of the notebooks a student's folder holds now; NotPlaced when one is not a regular file."""
    found: dict[str, bytes] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.iterdir()):
        if path.name.endswith(NOTEBOOK_SUFFIX):
            if path.is_symlink() or not path.is_file():
                raise NotPlaced(f"{path} exists with other content; not overwritten")
            found[path.name] = _read_no_link(path)
    return found


def _make_room(folder, contents, submitted):
    """Clear the folder for a newer submission: None when nothing is there (or the same files are), else (the older
    submission's time, where it went). NotPlaced when what is there is as new or newer, or says not when it was."""
    for path in (folder.parent, folder):
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise NotPlaced(f"{path} is a link or a file, not a folder of its own: nothing written through it")
    there = _notebooks_in(folder)
    if not there or all(there.get(name) == data for name, data in contents.items()):
        return None
    stamp = folder / "timestamp.txt"
    if stamp.is_symlink() or not stamp.is_file():
        changed = next(name for name, data in sorted(contents.items()) if there.get(name) != data)
        raise NotPlaced(f"{folder / changed} exists with other content; not overwritten (no timestamp.txt says when "
                        "it was submitted, so which is newer is unknown)")
    older_text = stamp.read_text().strip()
    try:
        older = datetime.strptime(older_text, TIMESTAMP_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        older = datetime.fromisoformat(older_text.replace(" UTC", "")).replace(tzinfo=timezone.utc)
    if submitted <= older:
        raise NotPlaced(f"older than the submission in {folder} ({older_text}): the newer work is kept, nothing "
                        "overwritten")
    kept = folder.parent / HISTORY / older.strftime("%Y-%m-%dT%H%M%S.%fZ")
    kept.parent.mkdir(exist_ok=True)
    os.rename(folder, kept)  # moves links as links: nothing is followed, nothing deleted
    folder.mkdir()
    secret = kept / "submission_secret.txt"
    if secret.is_file() and not secret.is_symlink():  # released feedback is named after it: the same student's
        (folder / secret.name).write_bytes(secret.read_bytes())
    return older_text, str(kept.relative_to(folder.parent.parent.parent))


def _disputed(claims, earlier, intake):
    """Students whose folder two LMS identities claim (in this download, or this one and an earlier intake):
    nothing is placed for them, every entry is reported; the instructor decides who is who."""
    disputed = set()
    for student, identities in sorted(claims.items()):
        known = set(identities) | ({_identity(earlier[student])} if student in earlier else set())
        if len(known) < 2:
            continue
        disputed.add(student)
        said = "; ".join(f"{lms} '{name}' id {id_}" for lms, name, id_ in sorted(known))
        for entry in (e for entries in identities.values() for e in entries):
            intake.unattributed.append((entry, f"the folder {student} is claimed by more than one LMS name ({said}, "
                                               "counting earlier intakes): nothing placed for it; check which is the "
                                               "LMS's own and sort that download alone"))
    return disputed


def _place(folder, filename, data):
    """Write one notebook into a student's folder as a new file; never through a link, never over other bytes."""
    target = folder / filename
    if os.path.lexists(target):
        if target.is_symlink() or not target.is_file() or _read_no_link(target) != data:
            raise NotPlaced(f"{target} exists with other content; not overwritten")
        return
    folder.mkdir(parents=True, exist_ok=True)
    with os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), "wb") as handle:
        handle.write(data)


def _write_nbgrader_files(folder, submitted_at):
    """timestamp.txt (the newest file's time) and submission_secret.txt, as nbgrader's collect leaves them."""
    stamp = folder / f".timestamp.txt.{os.getpid()}"
    stamp.write_text(submitted_at)
    stamp.replace(folder / "timestamp.txt")  # replaces a link there, never writes through it
    secret = folder / "submission_secret.txt"
    if not os.path.lexists(secret):  # the name of released feedback depends on it: keep it across intakes
        with os.fdopen(os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), "w") as handle:
            handle.write(secrets.token_hex(64))


def _save_record(submitted_dir, students):
    path = submitted_dir / RECORD
    kept = json.loads(path.read_text()) if path.exists() else {}
    kept.update(students)
    submitted_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")


def lms_record(submitted_dir: str | Path) -> dict[str, dict[str, Any]]:
    """{student: what the LMS said of them} from every intake so far."""
    path = Path(submitted_dir) / RECORD
    return json.loads(path.read_text()) if path.exists() else {}
