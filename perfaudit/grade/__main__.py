"""python -m perfaudit.grade: from a pile of submissions to grades.csv, feedback and a summary.

    python -m perfaudit.grade                       # grade submitted/*/performance-audit/
    python -m perfaudit.grade --from canvas.zip     # sort an LMS download into submitted/ first
    python -m perfaudit.grade --regrade             # grade everyone again, graded or not
"""

import argparse
import os
import sys
from pathlib import Path

from perfaudit.grade.run import Options, run
from perfaudit.autograde.canary import GradingEnvironmentError, disk_full
from perfaudit.autograde.sandbox import SandboxUnavailable


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m perfaudit.grade", description=__doc__.splitlines()[0])
    parser.add_argument("--course-dir", type=Path, default=Path.cwd(), help="course directory (default: here)")
    parser.add_argument("--from", dest="download", type=Path, help="a Canvas or Moodle download: zip or folder")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: cores)")
    parser.add_argument("--regrade", action="store_true", help="grade students already graded, too")
    parser.add_argument("--db", dest="db_url", help="gradebook URL, e.g. postgresql://user@host/db (default: config)")
    parser.add_argument("--cell-timeout", type=int, help="seconds per cell (default: Execute.timeout)")
    parser.add_argument("--notebook-timeout", type=int, help="seconds per notebook (default: config)")
    parser.add_argument("--memory-mb", type=int, help="memory of one submission's processes together (default: "
                        "nbgrader_config.py's SandboxLimits.memory_mb)")
    parser.add_argument("--no-feedback", dest="feedback", action="store_false", help="skip generate_feedback")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    parser.add_argument("--skip-canary", dest="canary", action="store_false",
                        help="do not grade the instructor's solutions and the release first (the summary says so)")
    return Options(**vars(parser.parse_args(argv)))


def main(argv=None):
    try:
        batch = run(parse(argv))
    except (SandboxUnavailable, GradingEnvironmentError) as refusal:
        print(refusal, file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - a full disk can strike any write; anything else is a bug
        if not disk_full(error):
            raise
        print(f"Grading stopped: the disk is full ({type(error).__name__}: {error}). Students graded before it keep "
              "their grades; nobody else was graded. Free some space and run again: it grades those not graded "
              "yet.", file=sys.stderr)
        return 3
    if batch.environment:
        print(f"{len(batch.environment)} student(s) not graded: the grading environment failed (see above). Fix "
              "it and run again: they will be graded then.", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
