"""LMS downloads -> nbgrader's submitted/<student>/<assignment>/ layout, byte for byte.

Canvas names each file `<lastfirst>_[LATE_]<user id>_<submission id>_<original name>` and adds `-<n>` before
the extension of a resubmitted file. Moodle downloads a folder (or flattened names) per participant:
`<Full Name>_<participant id>_assignsubmission_file_[/]<original name>`. The student id becomes
`<name>_<id>`: readable, and unique even when two students share a name. A file that fits neither
pattern, or that collides with another file for the same student and notebook, is reported, not copied.
Files are read from the download (a folder or a zip) and written as new copies; the download is not touched.
"""

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

CANVAS = re.compile(r"^(?P<name>[a-z0-9]+)_(?:LATE_)?(?P<id>\d+)_\d+_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>[^_/]+)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_/?(?P<file>.+)$")
CANVAS_RESUBMISSION = re.compile(r"^(?P<stem>.+)-\d+(?P<ext>\.ipynb)$")


@dataclass
class Intake:
    placed: dict = field(default_factory=dict)  # {student: [file names placed in submitted/]}
    unattributed: list = field(default_factory=list)  # [(entry in the download, why)]

    def report(self):
        lines = [f"intake: {sum(map(len, self.placed.values()))} files for {len(self.placed)} students"]
        lines += [f"  NOT PLACED {entry}: {why}" for entry, why in self.unattributed]
        return "\n".join(lines)


def _entries(download):
    """(name relative to the download, bytes reader) for every file in a folder or zip."""
    download = Path(download)
    if zipfile.is_zipfile(download):
        archive = zipfile.ZipFile(download)
        for info in archive.infolist():
            if not info.is_dir():
                yield info.filename, (lambda info=info: archive.read(info))
    else:
        for path in sorted(p for p in download.rglob("*") if p.is_file()):
            yield path.relative_to(download).as_posix(), path.read_bytes


def attribute(entry, notebooks):
    """(student id, file name) for one entry of an LMS download, or None when it fits no pattern."""
    parts = PurePosixPath(entry).parts
    for candidate in ("/".join(parts[-2:]), parts[-1]):  # Moodle's folder form, then the flat form
        for pattern in (MOODLE, CANVAS):
            found = pattern.match(candidate)
            if found and "/" not in found["file"]:
                name = re.sub(r"[^a-z0-9]+", "-", found["name"].lower()).strip("-")
                return f"{name}_{found['id']}", _original_name(found["file"], notebooks)
    return None


def _original_name(filename, notebooks):
    resubmitted = CANVAS_RESUBMISSION.match(filename)
    if filename not in notebooks and resubmitted and resubmitted["stem"] + resubmitted["ext"] in notebooks:
        return resubmitted["stem"] + resubmitted["ext"]
    return filename


def sort_into_submitted(download, submitted_dir, assignment, notebooks):
    """Copy an LMS download's files into submitted/; return what went where and what could not be placed."""
    intake = Intake()
    wanted = {}
    for entry, read in _entries(download):
        if PurePosixPath(entry).name.startswith(".") or "__MACOSX" in entry:
            continue
        attributed = attribute(entry, notebooks)
        if attributed is None:
            intake.unattributed.append((entry, "the name fits neither Canvas's nor Moodle's pattern"))
            continue
        wanted.setdefault(attributed, []).append((entry, read))
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
    return intake
