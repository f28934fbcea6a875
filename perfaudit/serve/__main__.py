"""python -m perfaudit.serve: grade each submission in nbgrader's exchange as it arrives, and release its feedback.

    python -m perfaudit.serve                      # serve this course directory until stopped (Ctrl-C)
    python -m perfaudit.serve --status             # queued, grading, graded, limited; submit -> feedback times
    python -m perfaudit.serve --scheduler tcp://host:8786   # grade on a running Dask cluster
    python -m perfaudit.serve --check              # whether this account can run what the service runs (make hub)
"""

import argparse
import os
import pwd
import sys
import traceback
from pathlib import Path
from typing import TextIO

from perfaudit.autograde.isolation.sandbox import SandboxUnavailable
from perfaudit.autograde.plugins.canary import GradingEnvironmentError
from perfaudit.bookkeeping import coursedir
from perfaudit.grade.engine import SchedulerUnreachable
from perfaudit.serve import readiness
from perfaudit.serve.errors import CannotStart
from perfaudit.serve.ledger import status_lines
from perfaudit.serve.service import Service


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m perfaudit.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--course-dir", type=Path, default=Path.cwd(), help="course directory (default: here)")
    parser.add_argument("--status", action="store_true", help="print the queue and the times, then exit")
    parser.add_argument("--check", action="store_true", help="check that this account can run every command the "
                        "service runs and write where it writes; one line, then exit (2 when it cannot grade)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="worker processes of the local cluster started here (default: cores)")
    parser.add_argument("--scheduler", help="grade on a running Dask cluster (docs/grading-at-scale.md)")
    parser.add_argument("--skip-canary", dest="canary", action="store_false",
                        help="do not grade the instructor's solutions and the release first in each worker process")
    parser.add_argument("--limits-notes", type=Path, help="the folder where the hub's limits service leaves notes "
                        "for students (a process of theirs stopped): told on their next feedback page")
    parser.add_argument("--until-idle", action="store_true",
                        help="stop once nothing is queued or grading (a benchmark's or a cron job's run)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if coursedir.not_a_course(args.course_dir):
        print(coursedir.not_a_course(args.course_dir), file=sys.stderr)
        return 2
    try:
        service = Service(args.course_dir, args.workers, args.scheduler, args.canary,
                          limits_notes=args.limits_notes)
    except OSError as error:  # its state folder in autograded/ cannot be made: this account cannot grade here
        if not args.check:
            raise
        account = pwd.getpwuid(os.geteuid()).pw_name
        print(readiness.one_line(account, [f"cannot make {error.filename} ({error.strerror})"]))
        return 2
    if args.status:
        print(f"ledger: {service.ledger.path}")
        print(f"log: {service.batch_state.dir / LOG_NAME}")
        print("\n".join(status_lines(service.ledger)))
        return 0
    if args.check:
        found = service.preflight()
        account = pwd.getpwuid(os.geteuid()).pw_name
        print(readiness.one_line(account, found) if found else f"The grading service can grade as {account}.")
        return 2 if found else 0
    # On a hub the service's output goes to the hub's own: the instructor reads it in a file of the course as well.
    with open(service.batch_state.dir / LOG_NAME, "a", encoding="utf-8") as log:
        service.out = Tee(sys.stdout, log)
        try:
            service.run(until_idle=args.until_idle)
        except (SandboxUnavailable, GradingEnvironmentError, SchedulerUnreachable, CannotStart) as refusal:
            print(refusal, file=service.out)
            print(refusal, file=sys.stderr)
            tell_waiting(service)
            return 2
        except BaseException as error:
            traceback.print_exc(file=log)  # a crash the hub restarts from: its cause in the course's log too
            if not isinstance(error, KeyboardInterrupt):
                tell_waiting(service)
            raise
    return 3 if service.ledger.paused else 0


def tell_waiting(service: Service) -> None:
    """Students who submitted while the service cannot grade read so on their feedback page."""
    try:
        told = service.tell_waiting()
    except Exception as error:  # noqa: BLE001 - the exchange itself is out of reach: the log says so
        print(f"could not tell the waiting students ({type(error).__name__}: {error})", file=service.out)
        return
    if told:
        print(f"{told} waiting submission(s) told 'not graded yet: the grader is being repaired'", file=service.out)


LOG_NAME = "serve.log"  # in the batch state folder, beside serve-workers.log


class Tee:
    """Text written to each of several streams (the service's output: its terminal, and the course's log file)."""

    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


if __name__ == "__main__":
    sys.exit(main())
