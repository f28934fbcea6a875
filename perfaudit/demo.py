"""The instructor's main job, end to end, on bundled sample submissions.

    python -m perfaudit.demo

source/ --generate_assignment--> notebooks/ (release)
samples --> submitted/<student>/performance-audit/ --autograde--> autograded/ + gradebook.db
gradebook.db --export--> grades.csv, and a per-notebook grade table printed here.
"""

import csv
import shutil
import sys
import time

from perfaudit import ASSIGNMENT, course, paths
from perfaudit.fixtures import samples

DEMO_STUDENTS = ("correct", "partly-right", "untouched")


def grade_table(scores):
    """Rows of (student, score per notebook..., total) with maxima in the header."""
    notebooks = [name.removesuffix(".ipynb") for name in paths.STAGES.values()]
    maxima = next(iter(scores.values()))
    header = ["student"] + [f"{nb} (/{maxima[nb][1]:g})" for nb in notebooks]
    header.append(f"total (/{sum(m for _, m in maxima.values()):g})")
    rows = []
    for student in sorted(scores):
        got = [scores[student][nb][0] for nb in notebooks]
        rows.append([student] + [f"{s:g}" for s in got] + [f"{sum(got):g}"])
    return header, rows


def print_table(header, rows):
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)))


def main():
    root = paths.ROOT
    started = time.perf_counter()
    print(f"1. release: nbgrader generate_assignment {ASSIGNMENT} -> notebooks/{ASSIGNMENT}/")
    course.forget_submissions(root, DEMO_STUDENTS)  # an earlier demo's samples would block a changed release
    course.nbgrader("generate_assignment", ASSIGNMENT, "--force", course_dir=root)

    print(f"2. samples: {', '.join(DEMO_STUDENTS)} -> submitted/")
    for student in DEMO_STUDENTS:
        shutil.rmtree(root / "submitted" / student, ignore_errors=True)
        samples.write_submission(student, root / "submitted")

    print(f"3. autograde: nbgrader autograde {ASSIGNMENT} -> autograded/ and gradebook.db")
    course.nbgrader("autograde", ASSIGNMENT, "--force", course_dir=root)

    print("4. export: nbgrader export -> grades.csv")
    course.nbgrader("export", course_dir=root)

    header, rows = grade_table({s: v for s, v in course.scores(root).items() if s in DEMO_STUDENTS})
    print(f"\nScores per notebook, from gradebook.db ({time.perf_counter() - started:.0f} s in all):\n")
    print_table(header, rows)
    table_csv = root / "autograded" / "grades-by-notebook.csv"
    with table_csv.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
    print(f"\nWrote grades.csv (nbgrader export) and {table_csv.relative_to(root)} (the table above).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
