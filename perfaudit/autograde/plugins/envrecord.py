"""The environment check's record: a passed check is kept for a fingerprint of everything its verdict depends on.

The batch command checks and writes the record (perfaudit/grade/envcheck.py); plain `nbgrader autograde` reads it
(perfaudit/autograde/plugins/canary.py) and skips its own canary where the fingerprint matches, as the batch command's
next run does.
"""

import hashlib
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

import perfaudit
from perfaudit import ASSIGNMENT, environment, paths
from perfaudit.autograde.isolation import sandbox
from perfaudit.bookkeeping import statefolder, versions

RECORD_SUFFIX = ".environment.json"
# What plain nbgrader's settings may change of a grade: given on its command line, they are not in the fingerprint.
GRADING_SECTIONS = ("Execute", "TrustedExecute", "SandboxLimits")


def record_path(db_url: str, autograded_dir: str | Path | None) -> Path:
    """Beside a sqlite gradebook (gradebook.db.environment.json), else in the batch command's state folder."""
    return statefolder.beside_gradebook(db_url, autograded_dir, RECORD_SUFFIX, "environment.json")


def _files(folder, suffixes=None):
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and (suffixes is None or p.suffix in suffixes))


def _name(path, course_dir):
    """A course file by its path in the course (a copy of the course elsewhere has the same), any other absolutely."""
    try:
        return path.relative_to(course_dir).as_posix()
    except ValueError:
        return str(path)


def fingerprint(course_dir: str | Path, coursedir: CourseDirectory, assignment: str, settings: dict[str, Any]) -> str:
    """The digest of everything the check's verdict depends on. The course's own files count by their path in the
    course: a course directory copied or moved elsewhere (a backup restored, a folder renamed) keeps its record."""
    digest = hashlib.sha256()
    course_dir = Path(course_dir).resolve()
    package = Path(perfaudit.__file__).parent
    inputs = [*_files(package, {".py", ".json"}),
              *_files(course_dir / coursedir.source_directory / assignment),
              *_files(course_dir / coursedir.release_directory / assignment),
              course_dir / "nbgrader_config.py", paths.ROOT / "requirements-cpu.txt"]
    for path in inputs:
        name = _name(path, course_dir)
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"(none)") + b"\0")
    bwrap = sandbox._bwrap_path()
    said = {"python": sys.executable, "versions": versions.graded_with(), "settings": sorted(settings.items()),
            # settings that change what JAX does without a line of code, and where Python finds packages
            "variables": environment.environment_settings(), "pythonpath": os.environ.get("PYTHONPATH"),
            "sandbox": [bwrap, sandbox.available(), os.getuid(), os.environ.get(sandbox.UNSANDBOXED)]}
    digest.update(json.dumps(said, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def passed_earlier(path: str | Path, print_: str) -> dict[str, Any] | None:
    """The record of a passed check for this fingerprint, or None."""
    try:
        found = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return found if found.get("fingerprint") == print_ and found.get("passed") else None


def save(path: str | Path, print_: str, seconds: float) -> None:
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"fingerprint": print_, "passed": True, "seconds": round(seconds, 1),
                               "checked_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")},
                              indent=1) + "\n")
    tmp.replace(path)


def earlier_in_this_process(config: Config) -> dict[str, Any] | None:
    """The record of a passed check for the environment plain nbgrader grades in with `config`, or None: a sqlite
    gradebook's record, for nbgrader_config.py as it is (settings given on the command line run the canary)."""
    coursedir = CourseDirectory(config=config)
    if statefolder.sqlite_file(coursedir.db_url) is None:
        return None
    course_dir = Path(coursedir.root)
    as_written = PyFileConfigLoader("nbgrader_config.py", path=str(course_dir)).load_config()
    if any(dict(config.get(section, {})) != dict(as_written.get(section, {})) for section in GRADING_SECTIONS):
        return None
    record = record_path(coursedir.db_url, None)
    return passed_earlier(record, fingerprint(course_dir, coursedir, ASSIGNMENT, {}))
