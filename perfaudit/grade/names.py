"""Which names from an LMS download or a submitted folder the grader takes: text it can store, show and pass on.

A name that is not valid UTF-8 reaches Python as a string with lone surrogates (os.fsdecode's surrogateescape):
it cannot be written to a terminal, a JSON record, a gradebook or a zip entry, so one such name used to stop the
whole batch. A control character (a newline, ESC) can forge a line wherever the name is shown. Both are refused
where a name enters (an LMS download's file, a folder of submitted/), with a reason; everything shown later is
escaped all the same (perfaudit/grade/escape.py). A student id is written into every file the course makes (grades.csv,
the LMS's files, the summary, Formgrader's pages) by writers that quote their own way: a folder whose name holds a
comma or a double quote, or starts like a spreadsheet formula, is refused at the door, so that no reader can take
it for more than a name. An LMS name is only shown: taken as it is (grades.csv quotes it: grade/grades_csv.py). A
file a submission holds beside its notebooks is the grader's concern only as plain nbgrader's: it is copied as
bytes, whatever its name, and costs nothing.
"""

import unicodedata

# A cell that starts with one of these is a formula to a spreadsheet: a student id must not, in grades.csv.
FORMULA_START = ("=", "+", "-", "@")
CSV_SEPARATORS = (",", '"')  # what a CSV writer must quote


def problem(name: str) -> str | None:
    """Why a file or folder name is refused (it is not UTF-8 text, or holds control characters), or None."""
    if _not_text(name):
        return "its name is not valid UTF-8 text"
    if any(unicodedata.category(char) == "Cc" for char in name):
        return "its name holds control characters (a newline, a tab, an escape code)"
    return None


def student_id_problem(text: str) -> str | None:
    """Why text cannot be a student id, which every file of the course's carries (grades.csv, the LMS's), or None."""
    if any(separator in text for separator in CSV_SEPARATORS):
        return "its name holds a comma or a double quote, which a CSV file must quote: a student id never needs one"
    if text.startswith(FORMULA_START):
        return f"its name starts with '{text[0]}', which a spreadsheet opening grades.csv would take for a formula"
    return None


def student_folder_problem(name: str) -> str | None:
    """Why a folder of submitted/ cannot be a student id (in the gradebook, grades.csv, the summary), or None."""
    return problem(name) or student_id_problem(name)


def _not_text(name):
    return any(unicodedata.category(char) == "Cs" for char in name)
