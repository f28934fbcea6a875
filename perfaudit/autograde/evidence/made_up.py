"""Evidence made up at grading time for the hidden tests, and the folders made for them."""

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfaudit.answer_key import answers

if TYPE_CHECKING:
    import numpy as np

__all__ = ["new_folder", "remove_test_folders", "test_folders", "made_up_evidence", "made_up_report",
           "made_up_first_call"]


# Hidden tests call the student's functions on evidence made up at grading time, in folders made for the test:
# a report written from constants, or copied from elsewhere, cannot carry numbers that exist nowhere else.
_FOLDERS: list[Path] = []
# the list of rmtree's Nones is thrown away
atexit.register(lambda: [shutil.rmtree(f, ignore_errors=True) for f in _FOLDERS])  # type: ignore[func-returns-value]


def new_folder(files: dict[str, str] | None = None) -> Path:
    """A new empty folder (removed when this process ends), holding only `files` ({name: text})."""
    folder = Path(tempfile.mkdtemp(prefix="perfaudit-check-"))
    _FOLDERS.append(folder)
    for name, text in (files or {}).items():
        (folder / name).write_text(text)
    return folder


def remove_test_folders() -> None:
    """Remove the folders new_folder() made (the grader, after each notebook: what they hold is a student's)."""
    while _FOLDERS:
        shutil.rmtree(_FOLDERS.pop(), ignore_errors=True)


def test_folders() -> list[Path]:
    """The folders new_folder() made in this process (the grader hands only these to the student's code)."""
    return [folder.resolve() for folder in _FOLDERS]


def made_up_evidence(rng: "np.random.Generator | None" = None, steady_calls: int | None = None) -> dict[str, Any]:
    """An evidence dict as gather_evidence returns it, with timings and a JAXPR token that exist only here (hidden
    tests only: perfaudit/answer_key/answers.py)."""
    return answers.evidence_of(rng, steady_calls)


def made_up_report(evidence: dict[str, Any], rng: "np.random.Generator | None" = None) -> dict[str, Any]:
    """A stage 3 report of this evidence, as run_audit would return it (hidden tests only: the answer key,
    perfaudit/answer_key/answers.py)."""
    return answers.report_of(evidence, rng)


def made_up_first_call(rng: "np.random.Generator | None" = None) -> dict[str, Any]:
    """What perfaudit.decompose.first_call returns, with consistent numbers that exist only here (hidden tests only:
    perfaudit/answer_key/answers.py)."""
    return answers.first_call_of(rng)
