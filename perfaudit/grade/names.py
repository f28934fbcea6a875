"""Which names from an LMS download or a submitted folder the grader takes: text it can store, show and pass on.

A name that is not valid UTF-8 reaches Python as a string with lone surrogates (os.fsdecode's surrogateescape):
it cannot be written to a terminal, a JSON record, a gradebook or a zip entry, so one such name used to stop the
whole batch. A control character (a newline, ESC) can forge a line wherever the name is shown. Both are refused
where a name enters, with a reason; everything shown later is escaped all the same (perfaudit/grade/escape.py).
"""

import os
import unicodedata
from pathlib import Path

# A cell that starts with one of these is a formula to a spreadsheet: a student id must not, in grades.csv.
FORMULA_START = ("=", "+", "-", "@")


def problem(name: str) -> str | None:
    """Why a file or folder name is refused (it is not UTF-8 text, or holds control characters), or None."""
    if _not_text(name):
        return "its name is not valid UTF-8 text"
    if any(unicodedata.category(char) == "Cc" for char in name):
        return "its name holds control characters (a newline, a tab, an escape code)"
    return None


def student_folder_problem(name: str) -> str | None:
    """Why a folder of submitted/ cannot be a student id (in the gradebook, grades.csv, the summary), or None."""
    why = problem(name)
    if why is None and name.startswith(FORMULA_START):
        why = f"its name starts with '{name[0]}', which a spreadsheet opening grades.csv would run as a formula"
    return why


def not_text_inside(folder: str | Path) -> list[str]:
    """Every path under folder (relative to it) whose name is not valid UTF-8 text; links are not followed.

    The batch refuses such a submission; a name with control characters is graded and shown escaped.
    """
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(dirs + files):
            if _not_text(name):
                found.append(str((Path(root) / name).relative_to(folder)))
    return found


def _not_text(name):
    return any(unicodedata.category(char) == "Cs" for char in name)
