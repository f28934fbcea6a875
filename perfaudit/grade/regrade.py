"""Regrade diffs: what a grading run changed, student by student and test by test; the scores before it are kept.

Before a run grades anyone the gradebook already holds, their score and failure message on every test is read
(classdata.py) and kept in the batch state folder's history/before-<time>.json. After the run the same students
are read again: each student whose score on any test moved is listed in reports/regrade-<time>.csv, one row per
test that moved (old and new score, old and new message, old and new total), and the terminal summary says how
many totals went up and how many down. The class report shows the newest of these files.
"""

import csv
import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from perfaudit.bookkeeping import statefolder
from perfaudit.grade import classdata, grades_csv
from perfaudit.grade.classdata import ClassData

HISTORY = "history"  # in the batch state folder (perfaudit/bookkeeping/statefolder.py)
PREFIX = "regrade-"
COLUMNS = ["student", "direction", "old_total", "new_total", "notebook", "test", "old_score", "new_score",
           "old_message", "new_message"]


def stamp() -> str:
    """UTC time, to the millisecond (two runs in one second keep two files), sortable as text."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y%m%dT%H%M%S") + f".{now.microsecond // 1000:03d}Z"


def snapshot(url: str, course_id: str, assignment: str, autograded: str | Path, students: list[str],
             when: str) -> ClassData | None:
    """ClassData of the students about to be graded again (None when there are none), kept on disk first."""
    if not students:
        return None
    before = classdata.read(url, course_id, assignment, autograded, students=students)
    if not before.scores:
        return None
    folder = statefolder.folder(autograded) / HISTORY
    folder.mkdir(parents=True, exist_ok=True)
    kept = {"taken_at": when, "scores": before.scores, "messages": before.messages}
    (folder / f"before-{when}.json").write_text(json.dumps(kept, indent=1, sort_keys=True), encoding="utf-8")
    return before


def changes(before: ClassData, after: ClassData) -> list[dict[str, Any]]:
    """[{column: value}] one per test whose score moved, for each student graded in both."""
    rows = []
    for student in sorted(set(before.scores) & set(after.scores)):
        old, new = before.scores[student], after.scores[student]
        moved = [t for t in after.tests if after.graded(student, t.notebook)  # withheld now: no score to compare
                 and old.get(t.key, 0.0) != new.get(t.key, 0.0)]
        if not moved:
            continue
        old_total, new_total = before.final_total(student), after.final_total(student)  # as the summary says them
        direction = "up" if new_total > old_total else "down" if new_total < old_total else "same total"
        for test in moved:
            rows.append({
                "student": student, "direction": direction, "old_total": old_total, "new_total": new_total,
                "notebook": test.notebook, "test": test.name,
                "old_score": old.get(test.key, 0.0), "new_score": new.get(test.key, 0.0),
                "old_message": before.messages.get(student, {}).get(test.key, ""),
                "new_message": after.messages.get(student, {}).get(test.key, ""),
            })
    return rows


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """{"up": students, "down": students, "same total": students}."""
    found: dict[str, set[str]] = {"up": set(), "down": set(), "same total": set()}
    for row in rows:
        found[row["direction"]].add(row["student"])
    return {direction: len(students) for direction, students in found.items()}


def _cell(value):
    """A spreadsheet runs a cell that starts like a formula: a message from a submission never does (grades.csv's
    rule; a number such as -2 is left as it is)."""
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return text if _number(text) else grades_csv.neutral(text)


def _number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def write_csv(reports_dir: str | Path, when: str, rows: list[dict[str, Any]]) -> Path:
    path = Path(reports_dir) / f"{PREFIX}{when}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows([_cell(row[c]) for c in COLUMNS] for row in rows)
    path.write_text(text.getvalue(), encoding="utf-8")
    return path


def newest(reports_dir: str | Path) -> tuple[Path, list[dict[str, str]]] | None:
    """(path, rows as text) of the newest regrade CSV, or None."""
    found = sorted(Path(reports_dir).glob(f"{PREFIX}*.csv"))
    if not found:
        return None
    with found[-1].open(newline="", encoding="utf-8") as handle:
        return found[-1], list(csv.DictReader(handle))


def summary_line(rows: list[dict[str, Any]], path: Path | None) -> str:
    if not rows:
        return "Regrade: no score changed."
    found = counts(rows)
    changed = sum(found.values())
    return (f"Regrade: {changed} student(s)' scores changed: {found['up']} up, {found['down']} down"
            + (f", {found['same total']} with the same total" if found["same total"] else "") + f" ({path})")
