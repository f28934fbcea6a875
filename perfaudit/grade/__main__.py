"""python -m perfaudit.grade: from a pile of submissions to grades.csv, feedback and a summary.

    python -m perfaudit.grade                       # grade submitted/*/performance-audit/
    python -m perfaudit.grade --from canvas.zip     # sort an LMS download into submitted/ first
    python -m perfaudit.grade --regrade             # grade everyone again, graded or not
    python -m perfaudit.grade --scheduler tcp://host:8786   # grade on a running Dask cluster
    python -m perfaudit.grade --export canvas --roster gradebook.csv   # grades and feedback back to the LMS
    python -m perfaudit.grade --feedback-only       # after Formgrader: feedback and each LMS export again
    python -m perfaudit.grade --report              # reports/class-report.html and similarity.html (every run too)
    python -m perfaudit.grade --export records      # exports/records.jsonl: what graded each notebook
"""

import argparse
import os
import sys
from pathlib import Path

try:
    from perfaudit.bookkeeping import coursedir
    from perfaudit.grade import classreport, export, feedback, records, variant_list
    from perfaudit.grade.errors import NothingToGrade, SchedulerUnreachable
    from perfaudit.grade.run import Options, run
    from perfaudit.autograde.plugins.canary import GradingEnvironmentError, disk_full
    from perfaudit.autograde.isolation.sandbox import SandboxUnavailable
except ImportError as missing:  # the grader's own Python lacks a package: say so, never a traceback
    print(f"Grading stopped before it began: this Python cannot import what the grader needs "
          f"({type(missing).__name__}: {missing}). No student was graded. Install the course's pinned packages into "
          "it (pip install -r requirements-cpu.txt, or make .venv/installed) and run again.", file=sys.stderr)
    sys.exit(2)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = command_line()
    args = parser.parse_args(argv)
    if args.export in ("canvas", "moodle") and not args.roster:
        parser.error("--export needs --roster: the file the LMS gives you to fill in")
    return args


def command_line() -> argparse.ArgumentParser:
    """The command's options (tests/test_docs_commands.py checks every option the docs show against it)."""
    parser = argparse.ArgumentParser(prog="python -m perfaudit.grade", description=__doc__.splitlines()[0])
    parser.add_argument("--course-dir", type=Path, default=Path.cwd(), help="course directory (default: here)")
    parser.add_argument("--from", dest="download", type=Path, help="a Canvas or Moodle download: zip or folder")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="worker processes of the local cluster started here (default: cores; never more than "
                        "submissions to grade)")
    parser.add_argument("--scheduler", help="grade on a running Dask cluster: its scheduler's address "
                        "(tcp://host:8786, tls://...) or scheduler file (docs/grading-at-scale.md)")
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
    parser.add_argument("--feedback-only", action="store_true", help="grade nobody: write every student's feedback "
                        "again from the gradebook (after manual grading in Formgrader) and the last --export to each "
                        "LMS again")
    lms = parser.add_argument_group("reports and exports (no grading: they read the gradebook, autograded/ and "
                                    "feedback/)")
    lms.add_argument("--report", action="store_true", help="write reports/class-report.html: score histograms, each "
                     "test's pass rate, discrimination and commonest failures, the last regrade's changes, time per "
                     "notebook, who was not graded; and reports/similarity.html, pairs of submissions whose code is "
                     "alike (every grading run writes both)")
    lms.add_argument("--variants", action="store_true", help="list who audits which variant of notebook 5 (drawn "
                     "from each student's id: perfaudit/variants.py)")
    lms.add_argument("--export", choices=["canvas", "moodle", "records"], help="canvas, moodle: write "
                     "exports/<lms>-grades.csv to import and exports/<lms>-feedback.zip to upload; records: write "
                     "exports/records.jsonl, the record behind each grade (sha256 of the submitted and source "
                     "notebooks, versions, sandbox limits, machine, time, duration)")
    lms.add_argument("--roster", type=Path, help="the LMS's own file: Canvas's gradebook export (CSV), or Moodle's "
                     "grading worksheet")
    lms.add_argument("--lms-column", help="Canvas: the assignment's column, e.g. 'Performance audit (98765)' "
                     "(default: the roster's only one)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if coursedir.not_a_course(args.course_dir):
        print(coursedir.not_a_course(args.course_dir), file=sys.stderr)
        return 2
    if coursedir.root_in_anothers_course(args.course_dir):
        print(coursedir.root_in_anothers_course(args.course_dir), file=sys.stderr)
        return 2
    if args.roster and not args.roster.is_file():
        print(f"No roster at {args.roster}: name the file you downloaded from the LMS (Canvas: Grades > Export; "
              "Moodle: Download grading worksheet). Nothing was exported.", file=sys.stderr)
        return 2
    if args.download and not args.download.exists():
        print(f"No LMS download at {args.download}: name the zip or folder the LMS gave you. Nothing was graded.",
              file=sys.stderr)
        return 2
    if args.report:
        path, seconds = classreport.build_for(args.course_dir, args.db_url)
        print(f"Class report: {path} (built in {seconds:.1f} s)")
        return 0
    if args.variants:
        print("\n".join(variant_list.lines(args.course_dir, args.db_url)))
        return 0
    if args.export == "records":
        print("\n".join(records.export_course(args.course_dir, args.db_url)))
        return 0
    if args.feedback_only:
        changed, failed, lines = feedback.refresh(args.course_dir, args.db_url)
        print("\n".join(lines))
        return 3 if failed else 0
    if args.export:
        done = export.export(args.export, args.course_dir, args.roster, args.lms_column, args.db_url)
        print("\n".join(done.lines))
        return 0
    options = {k: v for k, v in vars(args).items()
               if k not in ("export", "roster", "lms_column", "report", "feedback_only", "variants")}
    try:
        batch = run(Options(**options))
    except (SandboxUnavailable, GradingEnvironmentError, SchedulerUnreachable, NothingToGrade) as refusal:
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
    # The command's process only (tests call main() in theirs): make grade, make feedback as the course's owner.
    coursedir.keep_from_other_accounts()
    sys.exit(main())
