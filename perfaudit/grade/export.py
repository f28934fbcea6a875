"""Grades and feedback back to the LMS: a file each LMS imports, matched to the roster the instructor downloaded.

    python -m perfaudit.grade --export canvas --roster canvas-gradebook.csv   # Canvas: Grades > Export
    python -m perfaudit.grade --export moodle --roster moodle-worksheet.csv   # Moodle: Download grading worksheet

Canvas imports a CSV with Student, ID, SIS User ID, SIS Login ID, Section and one column per assignment named
"<assignment> (<id>)"; Moodle imports its offline grading worksheet back with the Grade column filled in. A
student's grade is their total from the gradebook, after nbgrader's late penalty, scaled to the LMS's maximum
where that differs. Students are matched by the id intake put in their student id (`<name>_<id>`: Canvas's user
id, Moodle's participant number). Nobody is guessed: a graded student missing from the roster is listed, an id
two graded students share is exported for neither (listed), and a roster row with no graded submission keeps an
empty grade (the LMS leaves it as it is). Student ids in the lines printed are escaped (perfaudit/grade/escape.py).

The feedback bundle is a zip of each student's feedback HTML, named as the LMS's own download named their files,
so its bulk upload finds the student (Canvas: Re-upload Submissions; Moodle: Upload multiple feedback files in a
zip). Students whose names came from elsewhere than an LMS download (no intake record) are listed, not bundled.
"""

import csv
import io
import json
import re
import zipfile
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT
from perfaudit.bookkeeping.coursedir import course_directory
from perfaudit.grade import gradebook as grades_kept, intake, refused
from perfaudit.grade.escape import one_line

CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_ASSIGNMENT = re.compile(r"^.+ \(\d+\)$")  # Canvas names an assignment's column "<name> (<id>)"
MOODLE_PARTICIPANT = re.compile(r"^Participant (\d+)$")
EXPORT_DIR = "exports"
LAST = ".last-export.json"  # under exports/: what the last --export to each LMS was asked


@dataclass
class Export:
    grades: Path
    feedback: Path | None
    lines: list[str] = field(default_factory=list)  # what the instructor should read


def final_grades(db_url: str, course_id: str) -> dict[str, tuple[float, float]]:
    """{student: (total after the late penalty, maximum)} for the assignment, from the gradebook; a student with a
    notebook not graded (no row: refused at intake) has no total, and is left out."""
    with Gradebook(db_url, course_id) as gradebook:
        assignment = gradebook.find_assignment(ASSIGNMENT)
        held = grades_kept.withheld(gradebook, ASSIGNMENT)
        return {sub.student.id: (sum(nb.score - (nb.late_submission_penalty or 0) for nb in sub.notebooks),
                                 assignment.max_score) for sub in assignment.submissions if sub.student.id not in held}


def lms_id(student: str, record: dict[str, dict[str, Any]]) -> str | None:
    """The LMS's id of a student: intake's record of it, else the digits after the last underscore."""
    if student in record:
        return record[student]["id"]
    tail = student.rsplit("_", 1)[-1]
    return tail if tail.isdigit() else None


def _by_lms_id(grades, record):
    """({LMS id: student} for ids one graded student has, [lines] for ids several share: exported for none of them,
    so a folder named like a classmate's id never takes the classmate's row)."""
    owners: dict[str | None, list[str]] = {}
    for student in sorted(grades):
        owners.setdefault(lms_id(student, record), []).append(student)
    owners.pop(None, None)
    lines = [f"  SAME LMS ID {one_line(id_)} for {', '.join(one_line(s) for s in students)}: not exported for any of "
             "them; rename the folder that is not this student's and grade it again"
             for id_, students in sorted(owners.items()) if len(students) > 1]
    return {id_: students[0] for id_, students in owners.items() if len(students) == 1}, lines


def _scaled(score, maximum, lms_maximum):
    value = score if lms_maximum in (None, maximum) else score / maximum * lms_maximum
    return f"{round(value, 2):g}"


def _read_roster(path):
    with open(path, newline="", encoding="utf-8-sig") as handle:  # LMS exports often start with a BOM
        rows = list(csv.reader(handle))
    if not rows:
        raise SystemExit(f"{path} is empty: download the roster from the LMS again.")
    return rows[0], rows[1:]


def canvas(roster_path: str | Path, grades: dict[str, tuple[float, float]], record: dict[str, dict[str, Any]],
           column: str | None = None) -> tuple[str, list[str]]:
    """(CSV text, lines to print) for Canvas's gradebook import."""
    header, rows = _read_roster(roster_path)
    if header[:len(CANVAS_FIXED)] != CANVAS_FIXED:
        raise SystemExit(f"{roster_path} does not start with Canvas's columns {', '.join(CANVAS_FIXED)}: "
                         "export the gradebook from Canvas (Grades > Export > CSV).")
    if column is None:
        candidates = [name for name in header if CANVAS_ASSIGNMENT.match(name)]
        if len(candidates) != 1:
            raise SystemExit(f"Name the assignment's column with --lms-column; the roster has {len(candidates)}: "
                             f"{'; '.join(candidates)}")
        column = candidates[0]
    if column not in header:
        raise SystemExit(f"{roster_path} has no column {column!r}.")
    at = header.index(column)
    out, matched, students = [CANVAS_FIXED + [column]], set(), 0
    by_id, shared = _by_lms_id(grades, record)
    lms_maximum = None
    for row in rows:
        row = row + [""] * (len(header) - len(row))
        if not row[1].strip():  # Canvas's "Points Possible" (and posting) rows carry no student id
            if row[0].strip() == "Points Possible":
                lms_maximum = float(row[at]) if row[at].strip() else None
                out.append(row[:len(CANVAS_FIXED)] + [row[at]])
            continue
        students += 1  # the roster's students: its Points Possible row is none
        student = by_id.get(row[1].strip())
        grade = _scaled(*grades[student], lms_maximum) if student else ""
        matched.add(student)
        out.append(row[:len(CANVAS_FIXED)] + [grade])
    return _csv(out), _match_lines(grades, matched, students, lms_maximum, shared)


def moodle(roster_path: str | Path, grades: dict[str, tuple[float, float]],
           record: dict[str, dict[str, Any]]) -> tuple[str, list[str]]:
    """(CSV text, lines to print): Moodle's grading worksheet with the Grade column filled in."""
    header, rows = _read_roster(roster_path)
    if not {"Identifier", "Grade", "Maximum Grade"} <= set(header):
        raise SystemExit(f"{roster_path} is not Moodle's grading worksheet (Identifier, Grade, Maximum Grade): "
                         "download it from the assignment (View all submissions > Download grading worksheet).")
    identifier, grade_at, maximum_at = (header.index(n) for n in ("Identifier", "Grade", "Maximum Grade"))
    by_id, shared = _by_lms_id(grades, record)
    out, matched, maxima = [header], set(), set()
    for row in rows:
        row = row + [""] * (len(header) - len(row))
        participant = MOODLE_PARTICIPANT.match(row[identifier].strip())
        student = by_id.get(participant[1]) if participant else None
        if student:
            lms_maximum = float(row[maximum_at]) if row[maximum_at].strip() else None
            maxima.add(lms_maximum)
            row[grade_at] = _scaled(*grades[student], lms_maximum)
            matched.add(student)
        out.append(row)
    lms_maximum = next(iter(maxima)) if len(maxima) == 1 else None
    return _csv(out), _match_lines(grades, matched, len(rows), lms_maximum, shared)


def _match_lines(grades, matched, roster_rows, lms_maximum, shared):
    maximum = next(iter(grades.values()))[1] if grades else None
    lines = [f"{len(matched - {None})} of {len(grades)} graded students matched to the roster's {roster_rows} "
             f"student{'' if roster_rows == 1 else 's'}"]
    if lms_maximum not in (None, maximum):
        lines.append(f"  scaled: {maximum:g} points here are {lms_maximum:g} in the LMS")
    lines += shared
    lines += [f"  NOT IN ROSTER {one_line(s)}: {grades[s][0]:g}/{grades[s][1]:g} not exported"
              for s in sorted(set(grades) - matched)]
    return lines


def _csv(rows):
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    return text.getvalue()


def feedback_name(lms: str, fields: dict[str, Any], notebook_stem: str) -> str:
    """The name an LMS's bulk upload matches to the student: its download's own prefix, then the notebook."""
    if lms == "canvas":
        return f"{fields['name']}_{fields['id']}_{fields['submission']}_{notebook_stem}-feedback.html"
    return f"{fields['name']}_{fields['id']}_assignsubmission_file_{notebook_stem}-feedback.html"


def feedback_bundle(lms: str, feedback_dir: str | Path, record: dict[str, dict[str, Any]], zip_path: str | Path,
                    held: Container[str] = ()) -> list[str]:
    """Zip every student's feedback HTML named for the LMS, but those `held` (needs you); return lines to print."""
    bundled, left_out = 0, []
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder in sorted(Path(feedback_dir).glob(f"*/{ASSIGNMENT}")):
            student = folder.parent.name
            if student in held:
                continue
            fields = record.get(student)
            if not fields or fields["lms"] != lms:
                left_out.append(student)
                continue
            for page in sorted(folder.glob("*.html")):
                archive.write(page, feedback_name(lms, fields, page.stem))
                bundled += 1
    lines = [f"feedback: {bundled} pages in {zip_path}"]
    if left_out:
        lines.append(f"  not in a {lms} download, not bundled: {', '.join(one_line(s) for s in left_out)}")
    return lines


def export(lms: str, course_dir: str | Path, roster: str | Path, column: str | None = None, db_url: str | None = None,
           out_dir: str | Path | None = None) -> Export:
    """Write exports/<lms>-grades.csv and exports/<lms>-feedback.zip; return the Export."""
    coursedir = course_directory(Path(course_dir).resolve(), db_url=db_url)
    grades = final_grades(coursedir.db_url, coursedir.course_id)
    submitted = coursedir.format_path(coursedir.submitted_directory, ".", ".")
    record = intake.lms_record(submitted)
    with Gradebook(coursedir.db_url, coursedir.course_id) as gradebook:  # not graded: nothing exported
        held = refused.held_back(gradebook, submitted, ASSIGNMENT)
    grades = {student: grade for student, grade in grades.items() if student not in held}
    text, lines = canvas(roster, grades, record, column) if lms == "canvas" else moodle(roster, grades, record)
    lines += [f"  NEEDS YOU {one_line(student)}: nothing exported until you resolve it; {nb} {one_line(why)}"
              for student, notebooks in sorted(held.items()) for nb, why in sorted(notebooks.items())]
    out_dir = Path(out_dir or Path(course_dir) / EXPORT_DIR)
    out_dir.mkdir(parents=True, exist_ok=True)
    grades_path = out_dir / f"{lms}-grades.csv"
    grades_path.write_text(text, encoding="utf-8")
    feedback_dir = Path(coursedir.format_path(coursedir.feedback_directory, ".", ".")).resolve()
    bundle = out_dir / f"{lms}-feedback.zip"
    lines = [f"grades: {grades_path}", *lines, *feedback_bundle(lms, feedback_dir, record, bundle, held)]
    if out_dir == Path(course_dir) / EXPORT_DIR:  # remembered, per LMS: --feedback-only writes each again
        made = {entry["lms"]: entry for entry in _remembered(course_dir)}
        made[lms] = {"lms": lms, "roster": str(Path(roster).resolve()), "column": column}
        (out_dir / LAST).write_text(json.dumps(sorted(made.values(), key=lambda e: e["lms"]), indent=1) + "\n")
    return Export(grades_path, bundle, lines)


def _remembered(course_dir):
    path = Path(course_dir) / EXPORT_DIR / LAST
    if not path.is_file():
        return []
    found = json.loads(path.read_text())
    return [found] if isinstance(found, dict) else found  # a dict: the one export an older version remembered


def exports_made(course_dir: str | Path) -> list[tuple[str, Path, str | None]]:
    """[(lms, roster, column)] of the last --export to each LMS in this course, Canvas before Moodle."""
    return [(entry["lms"], Path(entry["roster"]), entry["column"]) for entry in _remembered(course_dir)]


def export_again(course_dir: str | Path, db_url: str | None = None) -> list[str]:
    """Every LMS export made in this course written again from the gradebook; the lines to print."""
    lines = []
    for lms, roster, column in exports_made(course_dir):
        lines += [f"export to {lms} written again (as last asked: --export {lms} --roster {roster})",
                  *export(lms, course_dir, roster, column, db_url).lines]
    return lines or ["no LMS export to write again (none made yet: python -m perfaudit.grade --export canvas|moodle "
                     "--roster <the LMS's file>)"]
