"""Which names from an LMS download or a submitted folder the grader takes: text it can store, show and pass on.

A name that is not valid UTF-8 reaches Python as a string with lone surrogates (os.fsdecode's surrogateescape):
it cannot be written to a terminal, a JSON record, a gradebook or a zip entry, so one such name used to stop the
whole batch. A control character (a newline, ESC) can forge a line wherever the name is shown. Both are refused
where a name enters (an LMS download's file, a folder of submitted/), with a reason; everything shown later is
escaped all the same (perfaudit/grade/escape.py). A file a submission holds beside its notebooks is the grader's
concern only as plain nbgrader's: it is copied as bytes, whatever its name, and costs nothing.
"""

import unicodedata

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


def _not_text(name):
    return any(unicodedata.category(char) == "Cs" for char in name)
