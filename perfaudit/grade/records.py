"""A record behind every grade: what graded each notebook, kept beside the gradebook as JSON Lines.

When a student appeals, the record says exactly what graded their notebook: the sha256 of the submitted file, of the
source notebook (which holds the hidden tests) and of the test cells as the gradebook held them (nbgrader grades
with those), the versions of Python, JAX, jaxlib, NumPy, nbgrader, nbclient, jupyter_client and this package with a
digest of this package's code (an editable install keeps its version number when its code changes), the sandbox's
limits, the machine that graded it, the time and how long grading the notebook took. One JSON object per graded
notebook is appended to records.jsonl in the batch state folder (perfaudit/bookkeeping/statefolder.py), by the one
writer of a grading result (perfaudit/grade/writer.py) whether the batch command or the service graded it: a regrade
appends, nothing is overwritten. Regrading the same files in the same environment writes the same record apart from
VOLATILE.

    python -m perfaudit.grade --export records   # exports/records.jsonl: the record behind each grade held now
"""

import hashlib
import json
import os
import platform
import socket
import time
from functools import cache
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbgrader.api import MissingEntry
from traitlets.config import Config

from perfaudit import ASSIGNMENT
from perfaudit.bookkeeping import statefolder
from perfaudit.bookkeeping import versions
from perfaudit.bookkeeping.coursedir import course_directory, venv_first_on_path
from perfaudit.grade.export import EXPORT_DIR
from perfaudit.grade.gradebook import opened

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

    from perfaudit.autograde.plugins.execute import TrustedExecute
    from perfaudit.autograde.isolation.limits import SandboxLimits

FILE = "records.jsonl"
VOLATILE = ("graded_at", "seconds")  # what differs between two gradings of the same files in one environment
EXPORTED = "records.jsonl"  # under exports/


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@cache
def package_digest() -> str:
    """sha256 of this package's code and data files (names and bytes), as installed where it runs."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".json", ".ipynb") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@cache
def machine() -> dict[str, Any]:
    """What the grading process runs on and with: called on the worker that grades, so a cluster's are its own."""
    try:
        package = metadata.version("perfaudit")
    except metadata.PackageNotFoundError:
        package = None
    return {
        "versions": {**versions.graded_with(), "perfaudit": package},
        "perfaudit_sha256": package_digest(),
        "machine": {"platform": platform.platform(), "hostname": socket.gethostname(), "cpus": os.cpu_count()},
    }


def path_for(autograded_dir: str | Path) -> Path:
    return statefolder.folder(autograded_dir) / FILE


def tests_digests(course_gb: "Gradebook", assignment: str) -> dict[str, str]:
    """{notebook: sha256 of its cells as the gradebook holds them}: the hidden tests nbgrader puts back to grade."""
    found: dict[str, str] = {}
    for nb in course_gb.find_assignment(assignment).notebooks:
        cells = sorted((c.name, c.cell_type, c.locked, c.source) for c in nb.source_cells)
        found[nb.name] = sha256(json.dumps(cells).encode())
    return found


def limits_of(limits: "SandboxLimits", execute: "TrustedExecute") -> dict[str, Any]:
    """The sandbox's limits (a SandboxLimits) and the time limits (the configured TrustedExecute)."""
    found = {name: getattr(limits, name) for name in sorted(limits.trait_names(config=True))}
    found.update(cell_timeout_s=execute.timeout, notebook_timeout_s=execute.notebook_timeout,
                 submission_timeout_s=execute.submission_timeout)
    return found


class Recorder:
    """Appends one record per notebook a task graded; built once per run, for the one writer of results."""

    def __init__(self, path: str | Path, spec: dict[str, Any], assignment: str, source_dir: str,
                 limits: dict[str, Any], sandbox: str, tests: dict[str, str], maxima: dict[str, float]) -> None:
        self.path, self.assignment, self.limits, self.sandbox = Path(path), assignment, limits, sandbox
        self.tests, self.maxima = tests, maxima  # {notebook: digest}, {notebook: points}
        self.config_sha256 = sha256(spec["files"]["nbgrader_config.py"])
        prefix = f"{source_dir}/{assignment}/"
        self.sources = {name[len(prefix):-len(".ipynb")]: sha256(data) for name, data in spec["files"].items()
                        if name.startswith(prefix) and name.endswith(".ipynb")}

    def records(self, result: Any) -> list[dict[str, Any]]:
        """The records of one task's GradingResult (plain data from the worker), one per notebook it graded."""
        found: list[dict[str, Any]] = []
        for notebook, graded in sorted((result.results or {}).get("notebooks", {}).items()):
            if f"{notebook}.ipynb" not in result.autograded:
                continue  # not graded (missing, malformed): the gradebook holds its zeros, no record
            scores = {name: score for name, score in sorted(graded["grades"].items())}
            found.append({
                "student": result.student,
                "assignment": self.assignment,
                "notebook": notebook,
                "auto_scores": scores,
                "score": sum(score or 0 for score in scores.values()),
                "max_score": self.maxima.get(notebook),
                "submitted_sha256": result.submitted_sha256.get(f"{notebook}.ipynb"),
                "source_sha256": self.sources.get(notebook),
                "tests_sha256": self.tests.get(notebook),
                "config_sha256": self.config_sha256,
                **result.machine,
                "limits": self.limits,
                "sandbox": self.sandbox,
                "graded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "seconds": round(result.notebook_seconds.get(notebook, 0.0), 3),
            })
        return found

    def append(self, result: Any) -> None:
        """The result's records, one line each, appended to records.jsonl."""
        lines = "".join(json.dumps(r, sort_keys=True) + "\n" for r in self.records(result))
        if lines:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:  # one write: whole lines, appended
                handle.write(lines)


def read(path: str | Path) -> list[dict[str, Any]]:
    """Every record in the file, oldest first ([] when there is none)."""
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def latest(records: Iterable[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """{(student, notebook): the newest record}."""
    return {(r["student"], r["notebook"]): r for r in records}


def export(path: str | Path, graded: Iterable[tuple[str, str]], out_path: str | Path) -> list[str]:
    """Write the record behind each grade held now (graded: {(student, notebook)} with an autograded notebook) to
    out_path; return the lines to print."""
    graded = set(graded)
    newest = latest(read(path))
    kept = [newest[key] for key in sorted(graded) if key in newest]
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept), encoding="utf-8")
    lines = [f"records: {len(kept)} of {len(graded)} graded notebooks in {out_path}"]
    missing = sorted(set(graded) - set(newest))
    if missing:
        lines.append(f"  {len(missing)} graded notebook(s) without a record (graded before records were kept, or "
                     "by plain nbgrader autograde): regrade them with python -m perfaudit.grade --regrade")
    return lines


def recorder(autograded: str | Path, spec: dict[str, Any], course_gb: "Gradebook", source_dir: str,
             limits: "SandboxLimits", sandbox: str, config: Config) -> Recorder:
    """The run's Recorder: what every task of it shares (the definition, the limits, the tests as the gradebook
    holds them), computed once."""
    # the grader's own time limits, as nbgrader reads them
    from perfaudit.autograde.plugins.execute import TrustedExecute

    assignment = spec["assignment"]
    maxima = {nb.name: nb.max_score for nb in course_gb.find_assignment(assignment).notebooks}
    return Recorder(path_for(autograded), spec, assignment, source_dir,
                    limits_of(limits, TrustedExecute(config=config)), sandbox,
                    tests_digests(course_gb, assignment), maxima)


def export_course(course_dir: str | Path, db_url: str | None = None, out_dir: str | Path | None = None) -> list[str]:
    """exports/records.jsonl for a course directory: the record behind each notebook graded now; lines to print."""
    venv_first_on_path()  # nbgrader's Gradebook calls the `alembic` command: the venv's, unactivated or not
    coursedir = course_directory(Path(course_dir).resolve(), db_url=db_url)
    autograded = Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")).resolve()
    with opened(coursedir.db_url, coursedir.course_id) as course_gb:
        try:
            assignment = course_gb.find_assignment(ASSIGNMENT)
        except MissingEntry:
            raise SystemExit(f"The gradebook has no assignment '{ASSIGNMENT}': nothing graded, no records yet.")
        notebooks = [nb.name for nb in assignment.notebooks]
        students = [sub.student.id for sub in assignment.submissions]
    graded = {(s, nb) for s in students for nb in notebooks
              if (autograded / s / ASSIGNMENT / f"{nb}.ipynb").is_file()}
    out_dir = Path(out_dir or Path(course_dir) / EXPORT_DIR)
    return export(path_for(autograded), graded, out_dir / EXPORTED)
