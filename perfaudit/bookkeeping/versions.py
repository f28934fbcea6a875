"""What a grading run graded with: this interpreter's versions of the packages that decide a grade, against the pins.

A class graded under another jax, numpy, nbgrader or kernel client (nbclient, jupyter_client) than the one the
course was written for can lose points for reasons that are not the students': the batch grader records the versions
it graded with beside the gradebook and warns, at the start and in the summary, about each one that differs from
requirements-cpu.txt. Versions are read from the installed distributions' metadata (nothing is imported: jax is not
started here).
"""

import json
import os
import platform
import re
import socket
import time
from importlib import metadata
from pathlib import Path

from perfaudit import paths
from perfaudit.bookkeeping import statefolder

# the packages a grade depends on, after Python itself: nbclient and jupyter_client run every kernel the grader starts
PACKAGES = ("jax", "jaxlib", "numpy", "nbgrader", "nbclient", "jupyter-client")
REQUIREMENTS = paths.ROOT / "requirements-cpu.txt"
RECORD_SUFFIX = ".versions.json"  # beside a sqlite gradebook: gradebook.db -> gradebook.db.versions.json

_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*([^\s;#]+)")
# pip cannot pin Python itself: requirements-cpu.txt names it in its header comment, "(Python 3.11; ...".
_PYTHON_IN_COMMENT = re.compile(r"#.*\bPython\s+(\d+(?:\.\d+){0,2})\b", re.IGNORECASE)


def normalized(name: str) -> str:
    """A distribution name as pip compares them (PEP 503): Jinja2 == jinja2, typing_extensions == typing-extensions."""
    return re.sub(r"[-_.]+", "-", name).lower()


def graded_with() -> dict[str, str | None]:
    """{"python", *PACKAGES}: their versions in this interpreter (None: not installed)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def pinned(requirements_path: str | Path = REQUIREMENTS) -> dict[str, str]:
    """{normalized name: version} for every exact pin `name==version` in a requirements file.

    Python's version, which pip cannot pin, comes from the first comment naming it ("Python 3.11") when there is
    one, under "python"; without such a comment Python is left out (and never reported as drift).
    """
    pins: dict[str, str] = {}
    for line in Path(requirements_path).read_text().splitlines():
        python = _PYTHON_IN_COMMENT.search(line)
        if python and "python" not in pins:
            pins["python"] = python.group(1)
        pin = _PIN.match(line.split("#", 1)[0])
        if pin:
            pins[normalized(pin.group(1))] = pin.group(2)
    return pins


def _matches(name, found, pin):
    if name == "python":  # the comment names a series ("3.11"): any 3.11.x matches
        return found.split(".")[: len(pin.split("."))] == pin.split(".")
    return found == pin


def drift(found: dict[str, str | None], pins: dict[str, str], source: str = REQUIREMENTS.name) -> list[str]:
    """One sentence per package whose version here differs from its pin; packages without a pin are left out."""
    sentences = []
    for name, version in found.items():
        pin = pins.get(normalized(name))
        if pin is None:
            continue
        if version is None:
            sentences.append(f"{name} not installed, {source} pins {pin}")
        elif not _matches(name, version, pin):
            sentences.append(f"{name} {version} graded, {source} pins {pin}")
    return sentences


def check(requirements_path: str | Path = REQUIREMENTS) -> tuple[dict[str, str | None], list[str]]:
    """(versions graded with, drift sentences): what a grading run prints and records."""
    found = graded_with()
    path = Path(requirements_path)
    if not path.is_file():
        return found, [f"no {path.name} at {path}: versions not compared with any pins"]
    return found, drift(found, pinned(path), source=path.name)


def summary_lines(found: dict[str, str | None], drifts: list[str]) -> list[str]:
    """'Graded with: python 3.11.7, jax 0.10.2, ...' and one 'WARNING: ...' line per drift."""
    listed = ", ".join(f"{name} {version or 'not installed'}" for name, version in found.items())
    return [f"Graded with: {listed}"] + [f"WARNING: {sentence}" for sentence in drifts]


def record_path(db_url: str, autograded_dir: str | Path | None) -> Path:
    """Where a run's versions are recorded: beside a sqlite gradebook file, else in the batch state folder."""
    return statefolder.beside_gradebook(db_url, autograded_dir, RECORD_SUFFIX, "versions.json")


def record(path: str | Path, found: dict[str, str | None], drifts: list[str], students_graded: int) -> Path:
    """Append this run to the record at path (a JSON list of runs, newest last), written atomically."""
    path = Path(path)
    runs = json.loads(path.read_text()) if path.exists() else []
    runs.append({
        "graded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": socket.gethostname(),
        "students_graded": students_graded,
        "versions": found,
        "drift": drifts,
    })
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(runs, indent=1) + "\n")
    tmp.replace(path)
    return path
