"""The environment check (the canary) once per environment, not once per run.

Grading the instructor's solutions and the untouched release through the pipeline takes minutes on a busy machine;
its verdict depends only on what grades: the course package, source/ and the release, nbgrader_config.py and the
run's settings, requirements-cpu.txt and the installed versions, the Python, JAX_* and XLA_FLAGS, and the sandbox. Their digest is the
environment's fingerprint. A passed check is kept beside the gradebook (gradebook.db.environment.json; with
PostgreSQL autograded/.batch-grading/environment.json) and a run whose fingerprint matches says "passed earlier for
this environment (fingerprint ...)"; any change runs it again before anyone is graded. A Dask cluster's workers
(--scheduler) are other machines the fingerprint cannot see: they still check for themselves.
"""

import hashlib
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy.engine import make_url

import perfaudit
from perfaudit import environment, paths
from perfaudit.autograde import canary, sandbox
from perfaudit.autograde.execute import TrustedExecute
from perfaudit.grade import versions, worker

RECORD_SUFFIX = ".environment.json"


def record_path(db_url, autograded_dir, state_dir):
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        database = Path(url.database)
        return database.with_name(database.name + RECORD_SUFFIX)
    return Path(autograded_dir) / state_dir / "environment.json"


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


def fingerprint(course_dir, coursedir, assignment, settings):
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


def passed_earlier(path, print_):
    """The record of a passed check for this fingerprint, or None."""
    try:
        found = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return found if found.get("fingerprint") == print_ and found.get("passed") else None


def check(course_dir, notebooks, settings):
    """Run the canary on every notebook in this process; GradingEnvironmentError when one fails. Seconds taken."""
    started = time.monotonic()
    config = worker.course_config(course_dir, settings)
    for name in sorted(notebooks):
        canary.check_notebook(name, config, TrustedExecute)
    return time.monotonic() - started


def save(path, print_, seconds):
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"fingerprint": print_, "passed": True, "seconds": round(seconds, 1),
                               "checked_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")},
                              indent=1) + "\n")
    tmp.replace(path)


def once(course_dir, coursedir, assignment, notebooks, settings, record):
    """Check the environment unless this fingerprint passed before; the sentence for the summary."""
    print_ = fingerprint(course_dir, coursedir, assignment, settings)
    earlier = passed_earlier(record, print_)
    if earlier:
        return (f"passed earlier for this environment (fingerprint {print_[:12]}, checked {earlier['checked_at']} in "
                f"{earlier['seconds']:g} s); it runs again when the course package, source/, the release, "
                "nbgrader_config.py, the requirements or the sandbox change")
    seconds = check(course_dir, notebooks, settings)
    save(record, print_, seconds)
    return (f"passed for this environment (fingerprint {print_[:12]}) in {seconds:.1f} s: the instructor's solutions "
            f"score full marks and the release none, through this pipeline; kept in {Path(record).name}")
