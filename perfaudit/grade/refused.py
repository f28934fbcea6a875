"""A notebook refused at intake is never a score: it stays "not graded" until the instructor resolves it.

Intake records, per student, each notebook of the download it could not place (two files claiming it, ...). Until
a file of that name is in the student's submitted folder (the instructor copied the right one there), that notebook
is not graded, nor one that reuses it (notebook 4 runs notebook 3's functions: another copy of notebook 3 would
grade it against work that is not the student's choice); the student is listed under "needs you" and no grade of
theirs is exported. Nor is it a 0: the gradebook holds no row for it (perfaudit/grade/gradebook.py withhold), so
no view counts it in a total, a test's pass count or a distribution, and the student has no total until then.
"""

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perfaudit.grade.diagnose import Diagnosis

REUSES = {"04-integrated-audit": "03-evidence"}  # {notebook: the notebook whose functions it runs}
NOT_GRADED = "not graded: "
AGAIN = f"{NOT_GRADED}its file is in place now: grade it again (make grade)"  # no row, nothing refused
NO_SCORE = 3  # grades.csv's raw_score, late_submission_penalty and score: before its last column, max_score


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


def mark_grades_csv(path: str | Path, not_graded: dict[str, dict[str, str]]) -> None:
    """grades.csv as nbgrader's CSV export wrote it, with a last column not_graded ("notebook: why; ..."): a student
    with a notebook not graded has no raw_score, late_submission_penalty or score there (nor a sum of what was graded).

    nbgrader writes each row as its values joined by commas (names unquoted, so the row is not split as CSV here):
    the student id is the fourth value (names.py keeps commas out of it), the scores the last four."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines:
        return
    out = [lines[0] + ",not_graded"]
    for line in lines[1:]:
        student = line.split(",", 4)[3] if line.count(",") >= 4 else ""
        why = "; ".join(f"{nb}: {reason}" for nb, reason in sorted(not_graded.get(student, {}).items()))
        if why:
            head, *_, maximum = line.rsplit(",", NO_SCORE + 1)
            line = ",".join([head, *[""] * NO_SCORE, maximum])
        cell = io.StringIO()
        csv.writer(cell, lineterminator="").writerow([why] if why else [])  # quoted where it holds a comma or quote
        out.append(f"{line},{cell.getvalue()}")
    Path(path).write_text("\n".join(out) + "\n", encoding="utf-8")
