"""The instructor's main job, end to end, on bundled sample submissions, in a course folder of its own.

    python -m perfaudit.instructor.demo                 # in demo/ beside the course
    python -m perfaudit.instructor.demo --course DIR    # in DIR/demo/

demo/ is made afresh from the course's source/ and nbgrader_config.py each time, so the samples never enter the
class's gradebook.db, grades.csv, submitted/ or autograded/, and the class's release in notebooks/ is left as it is:
source/ --generate_assignment--> demo/notebooks/ (release)
samples --> demo/submitted/<student>/performance-audit/ --autograde--> demo/autograded/ + demo/gradebook.db
demo/gradebook.db --export--> demo/grades.csv, and a per-notebook grade table printed here.
"""

import argparse
import csv
import os
import shutil
import sys
import time
from pathlib import Path

from perfaudit import ASSIGNMENT, paths
from perfaudit.autograde.isolation import sandbox
from perfaudit.fixtures import samples
from perfaudit.instructor import course

DEMO_DIR = "demo"

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


def make_demo_course(course_dir):
    """demo/ made afresh: the course's source/ and nbgrader_config.py, nothing of the class's."""
    demo = Path(course_dir) / DEMO_DIR
    if demo.exists():
        course.make_writable(demo)  # nbgrader leaves autograded files read-only
        shutil.rmtree(demo)
    shutil.copytree(Path(course_dir) / "source", demo / "source")
    shutil.copy(Path(course_dir) / "nbgrader_config.py", demo)
    return demo


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m perfaudit.instructor.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--course", type=Path, default=paths.ROOT, help="the course directory (default: this one)")
    root = make_demo_course(parser.parse_args(argv).course.resolve())
    sandboxed, why = sandbox.available()
    if not sandboxed:  # the samples are the course's own, trusted; a class's work is never graded without it
        print(f"No sandbox here ({why}): the demo grades its bundled samples without one. Grading students needs "
              "it: sudo apt-get install bubblewrap")
        os.environ[sandbox.UNSANDBOXED] = "1"
    started = time.perf_counter()
    print(f"The demo grades in {root}/, a course folder of its own, made afresh: the class's gradebook.db, "
          "grades.csv, submitted/ and notebooks/ are not touched.")
    print(f"1. release: nbgrader generate_assignment {ASSIGNMENT} -> {DEMO_DIR}/notebooks/{ASSIGNMENT}/")
    course.nbgrader("generate_assignment", ASSIGNMENT, course_dir=root)

    print(f"2. samples: {', '.join(DEMO_STUDENTS)} -> {DEMO_DIR}/submitted/")
    for student in DEMO_STUDENTS:
        samples.write_submission(student, root / "submitted")

    print(f"3. autograde: nbgrader autograde {ASSIGNMENT} -> {DEMO_DIR}/autograded/ and {DEMO_DIR}/gradebook.db")
    course.nbgrader("autograde", ASSIGNMENT, course_dir=root)

    print(f"4. export: nbgrader export -> {DEMO_DIR}/grades.csv")
    course.nbgrader("export", course_dir=root)

    header, rows = grade_table(course.scores(root))
    print(f"\nScores per notebook, from {DEMO_DIR}/gradebook.db ({time.perf_counter() - started:.0f} s in all):\n")
    print_table(header, rows)
    table_csv = root / "autograded" / "grades-by-notebook.csv"
    with table_csv.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
    print(f"\nWrote {DEMO_DIR}/grades.csv (nbgrader export) and {table_csv.relative_to(root.parent)} "
          "(the table above).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
