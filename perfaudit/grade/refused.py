"""A notebook refused at intake is never a score: it stays "not graded" until the instructor resolves it.

Intake records, per student, each notebook of the download it could not place (two files claiming it, ...). Until
a file of that name is in the student's submitted folder (the instructor copied the right one there), that notebook
is not graded, nor one that reuses it (notebook 4 runs notebook 3's functions: another copy of notebook 3 would
grade it against work that is not the student's choice); the student is listed under "needs you" and no grade of
theirs is exported. Nor is it a 0: the gradebook holds no row for it (perfaudit/grade/gradebook.py withhold), so
no view counts it in a total, a test's pass count or a distribution, and the student has no total until then.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfaudit.grade import gradebook, intake

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

    from perfaudit.grade.diagnose import Diagnosis

REUSES = {"04-integrated-audit": "03-evidence"}  # {notebook: the notebook whose functions it runs}
NOT_GRADED = "not graded: "
AGAIN = f"{NOT_GRADED}its file is in place now: grade it again (make grade)"  # no row, nothing refused


def unresolved(work: str | Path, said: dict[str, Any] | None) -> dict[str, str]:
    """{notebook: "not graded: why"} for the student whose submitted folder is `work`, from what intake said of them
    (lms_record's entry, or None)."""
    found = {Path(filename).stem: f"{NOT_GRADED}{why}" for filename, why in ((said or {}).get("refused") or {}).items()
             if not (Path(work) / filename).is_file()}
    for notebook, reused in REUSES.items():
        if reused in found and notebook not in found:
            found[notebook] = (f"{NOT_GRADED}it reuses {reused}.ipynb, which is not graded until you resolve it "
                               f"({found[reused][len(NOT_GRADED):]})")
    return found


def withhold(diagnosis: "Diagnosis", refused: dict[str, str]) -> None:
    """Take the refused notebooks out of what is graded; their reasons go where the summary reads them."""
    diagnosis.gradable = [name for name in diagnosis.gradable if name not in refused]
    diagnosis.withheld = sorted(refused)
    for notebook, why in sorted(refused.items()):
        diagnosis.reasons[notebook] = [why]  # the only thing to say of a notebook nobody graded


def needs_you(submitted: str | Path, record: dict[str, dict[str, Any]], assignment: str) -> dict[str, dict[str, str]]:
    """{student: {notebook: "not graded: why"}} for every student of submitted/ with a refusal not resolved yet."""
    found: dict[str, dict[str, str]] = {}
    for student, said in sorted(record.items()):
        refused = unresolved(Path(submitted) / student / assignment, said)
        if refused:
            found[student] = refused
    return found


def held_back(course_gb: "Gradebook", submitted: str | Path, assignment: str) -> dict[str, dict[str, str]]:
    """{student: {notebook: "not graded: why"}} for every notebook not graded: refused at intake and not resolved
    (intake's reason), or resolved and not graded since (no row in the gradebook: AGAIN)."""
    held = needs_you(submitted, intake.lms_record(submitted), assignment)
    for student, notebooks in gradebook.withheld(course_gb, assignment).items():
        for notebook in notebooks:
            held.setdefault(student, {}).setdefault(notebook, AGAIN)
    return held
