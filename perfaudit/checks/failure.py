"""How every check fails: an AssertionError whose message is written for the student, shown as that message."""

import os
import textwrap
import traceback
from pathlib import Path

CHECKS_DIR = Path(__file__).resolve().parent
LINE_CHARS = 78  # Validate in a terminal (nbgrader validate) indents by 4 and cuts each line past 87 - 3 characters


def fail(message):
    """Fail the check with `message`: what was expected, what was found, and where to look."""
    raise AssertionError(message)


def _in_checks(frame_summary):
    try:
        return Path(frame_summary.filename).resolve().is_relative_to(CHECKS_DIR)
    except (OSError, ValueError):
        return False


def _in_ipython(frame_summary):
    return f"{os.sep}IPython{os.sep}" in frame_summary.filename


def raised_by_a_check(tb):
    """Whether the innermost frame of the traceback is a check's own code (this folder)."""
    frames = traceback.extract_tb(tb)
    return bool(frames) and _in_checks(frames[-1])


def student_traceback(value, tb):
    """A failed check as the student needs it: the lines of their cell down to the check it called, then the
    check's whole message wrapped to fit Validate's terminal lines; the check's own frames are left out."""
    frames = traceback.extract_tb(tb)
    cut = next((i for i, frame in enumerate(frames) if _in_checks(frame)), len(frames))
    start = next((i for i, frame in enumerate(frames[:cut]) if not _in_ipython(frame)), 0)  # IPython's exec first
    lines = ["Traceback (most recent call last):"]
    lines += [line.rstrip("\n") for entry in traceback.format_list(frames[start:cut]) for line in entry.splitlines()]
    lines.append("(the check's own code is left out: its message says what it found)")
    message = textwrap.wrap(f"{type(value).__name__}: {value}", LINE_CHARS, subsequent_indent="  ") or [
        type(value).__name__]
    return lines + message
