"""The loop: notice new submissions in the exchange, decide (the fair limit), collect, grade on Dask, write, release.

Grading is the batch command's own per-student task (perfaudit/grade/task.py: nbgrader autograde with the course's
plug-ins, student code sandboxed, tests decided in the grader, generate_feedback without hidden tests) on a Dask
cluster that lives as long as the service (a local one by default), so each worker process runs the canary once,
before its first student. This process alone writes the gradebook, autograded/, feedback/, the record behind each
grade and the student's batch state, with the batch's own writer (perfaudit/grade/writer.py: `make grade` later
skips a student whose submission is unchanged), and the ledger. The course, the definition, the cluster, the
sandbox line and the record come from the batch's GradingSession (perfaudit/grade/session.py), and what a finished
task means from perfaudit/grade/outcome.py: this loop only acts on it (`act`).

A student's submissions are handled one at a time, in the order they arrived: submitted/<student>/ holds one
submission, and the released feedback must be that submission's. Whether a submission is graded is decided when it
is first seen, by the service's clock (the exchange's timestamp is the student's to write) and the student id the
exchange's owner check vouches for, and kept in the ledger: a restart never decides again.
"""

import os
import pwd
import signal
import sys
import time
from collections import ChainMap, Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timezone
from pathlib import Path
from typing import Any

from distributed import Client, Future

from perfaudit import ASSIGNMENT, paths
from perfaudit.autograde.isolation import sandbox
from perfaudit.autograde.plugins import canary
from perfaudit.bookkeeping import statefolder
from perfaudit.bookkeeping.coursedir import keep_from_other_accounts
from perfaudit.grade import diagnose, engine, gradebook, outcome, run, task
from perfaudit.grade.diagnose import Diagnosis
from perfaudit.grade.outcome import Cause, Kind, Outcome
from perfaudit.grade.session import GradingSession, Output, prepare_this_process
from perfaudit.grade.writer import ResultWriter
from perfaudit.serve import exchange, limits_notes, notes, readiness
from perfaudit.serve.errors import CannotStart, UnreadableSubmission
from perfaudit.serve.ledger import Ledger, path_for
from perfaudit.serve.settings import GradingService


ROOM_SHARE = 0.01  # of a full disk's blocks and inodes, free again: grading paused for it goes on
NOTES_KEPT = 10  # of the limits service's notes, per student: what a page says of them, at most
# Of the odd entries a student leaves in inbound/, those the ledger keeps one by one, and those a page names: the rest
# are counted. A held-out attacker left 110,000 empty files with long names, each a record and a line on every page
# of their next feedback: 5 pages of 117 MB each, the grader's own files, filled the exchange and stopped grading.
SKIPPED_RECORDED = 20
SKIPPED_NAMED = 5
SHOWN_CHARS = 80  # of an entry's name on a student's page
# The assignment's notebooks, the only names a page is released for: known before the gradebook is read, so that a
# service that cannot start still tells each waiting submission.
NOTEBOOKS = frozenset(Path(name).stem for name in paths.STAGES.values())


def log(out: Output, message: str) -> None:
    # A name in the exchange may hold bytes that are no UTF-8 (os.fsdecode's surrogates): written as \x escapes.
    said = message.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {said}", file=out, flush=True)


class Service:
    def __init__(self, course_dir: str | Path, workers: int = 1, scheduler: str | None = None, canary: bool = True,
                 out: Output = sys.stdout, limits_notes: Path | None = None) -> None:
        keep_from_other_accounts()  # first: the state folder below is made in autograded/
        self.course_dir, self.workers, self.scheduler, self.out = Path(course_dir).resolve(), workers, scheduler, out
        # the course, the definition, the cluster and the record behind each grade, as the batch command has them
        self.session = GradingSession(self.course_dir, {} if canary else {"TrustedExecute.canary": False},
                                      scheduler=scheduler)
        self.limits = GradingService(config=self.session.config)
        self.coursedir = self.session.coursedir
        self.url, self.course_id = self.session.url, self.session.course_id
        self.exchange = exchange.course_path(self.session.config, self.coursedir)
        self.autograded = self.session.autograded
        self.ledger = Ledger(path_for(self.url, self.autograded))
        self.batch_state = statefolder.State(self.autograded)
        # {future: (inbound name, started (monotonic), diagnosis, fingerprint)}
        self.in_flight: dict[Future, tuple[str, float, Diagnosis, str]] = {}
        self.stopping = False
        self.client: Client | None = None  # the Dask client, while run() runs
        self.limits_notes = limits_notes  # where the hub's limits service leaves notes for students, or None
        self.unfinished: dict[str, tuple[int, int]] = {}  # inbound folders seen without their secret (exchange.scan)
        # Odd entries beyond a student's SKIPPED_RECORDED, {name: student}: known to the scan, counted, not recorded;
        # and, per student, how many of them their pages have told of (after a restart, counted and told again).
        self.skipped_unrecorded: dict[str, str] = {}
        self.unrecorded_told: dict[str, int] = {}

    # --- where things are -------------------------------------------------------------------------------------
    def folder(self, kind: str, student: str) -> Path:
        return Path(self.coursedir.format_path(kind, student, ASSIGNMENT))

    def opened(self, name: str) -> AbstractContextManager[exchange.Entry]:
        """The submission's folder in inbound/, as the service noticed it (exchange.opened)."""
        noticed = self.ledger.submissions.get(name, {}).get("folder")
        return exchange.opened(self.exchange / "inbound", name, noticed)

    def due(self) -> float | None:
        """The gradebook's due date for the assignment, as seconds since the epoch, or None."""
        with gradebook.opened(self.url, self.course_id) as course_gb:
            duedate = course_gb.find_assignment(ASSIGNMENT).duedate
        return duedate.replace(tzinfo=timezone.utc).timestamp() if duedate else None

    # --- the fair limit ---------------------------------------------------------------------------------------
    def decide(self, student: str, now: float, due: float | None) -> tuple[str, str, float | None]:
        """("grade" or "limit", what the student is told, when the next graded submission is possible or None)."""
        counted = sorted(r["seen_at"] for r in self.ledger.of_student(student) if r["decision"] == "grade")
        if due is not None and now > due:
            after = [seen for seen in counted if seen > due]
            if len(after) >= self.limits.graded_after_deadline:
                return ("limit", f"After the deadline ({notes.when(due)}) a submission is graded "
                        f"{self.limits.graded_after_deadline} time(s), and yours was.", None)
            return "grade", "This submission came after the deadline: it is your graded one.", None
        window = self.limits.window_hours * 3600
        recent = [seen for seen in counted if now - seen < window]
        allowed = self.limits.graded_per_window
        if len(recent) >= allowed:
            next_at = recent[len(recent) - allowed] + window
            return ("limit", f"You have had {allowed} graded submission(s) in the last {self.limits.window_hours:g} "
                    "hours, the limit before the deadline.", next_at)
        return ("grade", f"Graded submission {len(recent) + 1} of the {allowed} you may have in any "
                f"{self.limits.window_hours:g} hours before the deadline.", None)

    def notice(self) -> None:
        """Add every new complete submission of the exchange's inbound to the ledger, decided; and every odd entry
        there (a link, a FIFO, a folder its student closed), skipped."""
        found, odd = exchange.scan(self.exchange / "inbound", ASSIGNMENT,
                                   ChainMap[str, Any](self.ledger.submissions, self.skipped_unrecorded),
                                   self.limits.unreadable_after_s, self.unfinished)
        self.skip_all(odd)
        gone = self.forget_skipped_gone()
        if odd or gone:
            self.ledger.save()  # once for all: saved at each entry, thousands of odd entries stalled the service
        self.record_limits_notes()
        due = self.due() if found else None
        impostors = []  # folders named for a student another account made: its maker's odd entries
        for name, student, stamped in found:
            now = time.time()
            submitted_at = min(stamped.replace(tzinfo=timezone.utc).timestamp(), now)
            record: dict[str, Any] = {"student": student, "seen_at": now, "submitted_at_s": submitted_at,
                                      "status": "queued", "gradings": 0}
            try:
                with self.opened(name) as folder:
                    claimed_by, unsafe = exchange.owner(folder), exchange.unsafe(folder, self.coursedir.ignore)
                    record["folder"] = list(folder.identity)  # each later step reads this folder, or nothing
            except FileNotFoundError:
                continue  # its student removed it since the scan: nothing to grade or tell
            except UnreadableSubmission as error:  # swapped for a link or closed since the scan: its maker's problem
                self.skip(exchange.Odd(name, exchange.maker(self.exchange / "inbound", name), str(error)))
                self.ledger.save()
                continue
            if self.limits.check_owner and claimed_by != student:
                impostors.append(exchange.Odd(name, claimed_by, f"submitted under the name {student!r:.40} by the "
                                                                "account that made it (the exchange's owner check)"))
                continue
            if unsafe:
                record.update(decision="refuse", status="queued", message=f"This submission was not graded: {unsafe}.")
            else:
                decision, message, next_at = self.decide(student, now, due)
                record.update(decision=decision, message=message, next_at=next_at)
            record["message"] = " ".join([*self.untold(student), record["message"]])
            self.ledger.submissions[name] = record
            self.ledger.save()
            log(self.out, f"new submission {name}: {record['decision']}")
        if impostors:  # 3,000 made in half a second, each saved on its own, held the service 5 minutes
            self.skip_all(impostors)
            self.ledger.save()

    def skip_all(self, entries: list[exchange.Odd]) -> None:
        """skip() each entry, up to SKIPPED_RECORDED of each account's in the ledger; the rest counted, in memory and
        in one line of the log each account. The caller saves the ledger."""
        recorded = Counter(r["student"] for r in self.ledger.submissions.values() if r["status"] == "skipped")
        unrecorded = Counter[str]()
        for entry in entries:
            if recorded[entry.account] < SKIPPED_RECORDED:
                self.skip(entry)
                recorded[entry.account] += 1
            else:
                self.skipped_unrecorded[entry.name] = entry.account
                unrecorded[entry.account] += 1
        for account, count in sorted(unrecorded.items()):
            log(self.out, f"SKIPPED {count} more entries in the exchange's inbound, made by {account}: counted, not "
                          "recorded one by one")

    def skip(self, entry: exchange.Odd) -> None:
        """An entry of inbound/ the service does not read: recorded under the account that made it, whose next
        submission's page says so (without its secret, no page of this one can reach them), and logged. The caller
        saves the ledger."""
        self.ledger.submissions[entry.name] = {"student": entry.account, "seen_at": time.time(), "status": "skipped",
                                               "decision": "skip", "why": entry.why, "told": False, "gradings": 0}
        log(self.out, f"SKIPPED {exchange.shown(entry.name)} in the exchange's inbound, made by {entry.account}: "
                      f"{entry.why}")

    def forget_skipped_gone(self) -> int:
        """Drop the records of skipped entries no longer in inbound/ (their maker removed them): kept, odd entries
        made and removed by the thousand grew the ledger without end, and every save with it. Returns how many."""
        try:
            present = set(os.listdir(self.exchange / "inbound"))
        except FileNotFoundError:
            return 0
        gone = [name for name, record in self.ledger.submissions.items()
                if record["status"] == "skipped" and name not in present]
        for name in gone:
            del self.ledger.submissions[name]
        for name in set(self.skipped_unrecorded) - present:
            del self.skipped_unrecorded[name]
        return len(gone)

    def record_limits_notes(self) -> None:
        """The hub's limits service's notes (a process of a student's stopped), kept in the ledger until told."""
        if self.limits_notes is None:
            return
        found = limits_notes.read(self.limits_notes)
        for note in found:
            self.ledger.notes.setdefault(note.name, {"student": note.student, "said": note.said, "at": note.at,
                                                     "told": False})
        if found:
            self.keep_newest_notes({note.student for note in found})
            self.ledger.save()  # once for all, before the files go: each note is in one place or the other
        for note in found:
            limits_notes.remove(self.limits_notes, note)

    def keep_newest_notes(self, students: set[str]) -> None:
        """Each student's NOTES_KEPT newest notes, the rest dropped: a student whose hundreds of writers were stopped
        every few seconds left a note each, each saved in the ledger at once, and the ledger's saves stalled grading
        for the class."""
        for student in students:
            theirs = sorted((record["at"], name) for name, record in self.ledger.notes.items()
                            if record["student"] == student)
            for _, name in theirs[:-NOTES_KEPT]:
                del self.ledger.notes[name]

    def untold(self, student: str) -> list[str]:
        """What the student's next page says, once each (marked told): of their entries the service skipped, and of
        their processes the hub's limits service stopped."""
        said = []
        for record in sorted(self.ledger.notes.values(), key=lambda record: record["at"]):
            if record["student"] == student and not record["told"]:
                said.append(f"On {notes.when(record['at'])}: {record['said']}")
                record["told"] = True
        skipped = [name for name in self.ledger.in_state("skipped")
                   if self.ledger.submissions[name]["student"] == student and not self.ledger.submissions[name]["told"]]
        for name in skipped[:SKIPPED_NAMED]:
            parts = name.rsplit("+", 3)
            what = f"Your submission of {parts[2]}" if len(parts) >= 3 and name.isprintable() else \
                f"What you left in the exchange as {exchange.shown(name, SHOWN_CHARS)}"
            said.append(f"{what} was not read: {self.ledger.submissions[name]['why'][:SHOWN_CHARS]}.")
        for name in skipped:
            self.ledger.submissions[name]["told"] = True
        more = len(skipped[SKIPPED_NAMED:])
        unrecorded = sum(1 for account in self.skipped_unrecorded.values() if account == student)
        more += max(0, unrecorded - self.unrecorded_told.get(student, 0))
        self.unrecorded_told[student] = unrecorded
        if more:
            said.append(f"{more} more entries you left in the exchange's inbound were not read either: nothing but "
                        "your submissions belongs there.")
        return said

    # --- handing out work -------------------------------------------------------------------------------------
    def dispatch(self, client: Client, slots: int) -> None:
        busy = {self.ledger.submissions[name]["student"] for name, *_ in self.in_flight.values()}
        for name in self.ledger.fairly_queued(time.time(), self.limits.window_hours * 3600):
            record = self.ledger.submissions[name]
            if record["student"] in busy:
                continue  # the student's earlier submission first
            busy.add(record["student"])
            try:
                self.handle(client, slots, name, record)
            except FileNotFoundError as error:  # its folder left the exchange: nothing to grade or tell
                self.ledger.update(name, status="failed", failure=f"gone from the exchange ({error})")
                log(self.out, f"FAILED {name}: gone from the exchange ({error})")
            except UnreadableSubmission as error:  # its student closed it since it was noticed: theirs alone
                why = f"This submission was not graded: {error}."
                self.release_pages(name, lambda nb: notes.not_graded(nb, why))
                self.ledger.update(name, status="refused", failure=str(error), released_at=time.time())
                log(self.out, f"REFUSED {name}: {error}")
            except Exception as error:  # noqa: BLE001 - the service's own step failed (a full disk)
                self.pause(client, name, f"the service could not handle {name} ({type(error).__name__}: {error})",
                           canary.disk_full(error))

    def handle(self, client: Client, slots: int, name: str, record: dict[str, Any]) -> None:
        """The next step of the student's oldest queued submission: release a limit or refusal, or start grading."""
        if record["decision"] == "limit":
            self.collect(name)
            self.release_pages(name, lambda nb: notes.limited(nb, record["message"], record["next_at"]))
            self.ledger.update(name, status="limited", released_at=time.time())
            log(self.out, f"limited {name}: feedback says when to come back")
        elif record["decision"] == "refuse":
            self.release_pages(name, lambda nb: notes.not_graded(nb, record["message"]))
            self.ledger.update(name, status="refused", released_at=time.time())
        elif self.ledger.paused:
            if not record.get("repair_notice"):
                self.release_pages(name, notes.repair)
                self.ledger.update(name, repair_notice=True)
                log(self.out, f"not graded yet (grading stopped) {name}: told the grader is being repaired")
        elif len(self.in_flight) < slots:
            self.start(name)

    def collect(self, name: str) -> tuple[str, Path]:
        student = self.ledger.submissions[name]["student"]
        submitted = self.folder(self.coursedir.submitted_directory, student)
        with self.opened(name) as entry:
            exchange.collect(entry, submitted, self.coursedir.ignore)
        return student, submitted

    def start(self, name: str) -> None:
        student, submitted = self.collect(name)
        try:
            found = diagnose.diagnose(submitted, self.session.expected, self.coursedir.ignore)
        except (OSError, MemoryError):
            raise  # the disk or the machine, not the notebook: the environment's fault
        except Exception as error:  # noqa: BLE001 - the student's files broke their reading: theirs alone, no pause
            raise UnreadableSubmission(f"its notebooks could not be read as notebooks ({type(error).__name__})") \
                from error
        if not found.gradable:
            self.write_and_release(name, found, run.fingerprint(submitted, self.coursedir.ignore), None)
            return
        files = task.submitted_files(submitted, self.coursedir.ignore)
        future = self.session.submit(student, files, found.gradable, True, key_prefix="serve")
        self.in_flight[future] = (name, time.monotonic(), found, run.fingerprint(submitted, self.coursedir.ignore))
        self.ledger.update(name, status="grading", started_at=time.time())
        log(self.out, f"grading {name}")

    # --- results ----------------------------------------------------------------------------------------------
    def harvest(self, client: Client) -> None:
        """Act on each finished grading task's outcome, and stop each that ran past task_timeout_s."""
        for future in [f for f in self.in_flight if f.done()]:
            name, _, found, fingerprint = self.in_flight.pop(future)
            self.act(client, name, found, fingerprint, outcome.of_future(future, found.gradable))
        for future, (name, started, found, fingerprint) in list(self.in_flight.items()):
            if time.monotonic() - started > self.limits.task_timeout_s:
                del self.in_flight[future]
                self.restart_worker(client, future)
                self.act(client, name, found, fingerprint,
                         outcome.classify(found.gradable, timed_out_after_s=self.limits.task_timeout_s))

    def act(self, client: Client, name: str, found: Diagnosis, fingerprint: str, done: Outcome) -> None:
        """The service's action for each kind of outcome (perfaudit/grade/outcome.py's table): graded, written and
        released; zero, written and told; not graded or stop, the environment's fault: grading pauses."""
        if done.kind is Kind.ZERO:
            self.fail(name, found, fingerprint, done.said)
        elif done.kind is Kind.GRADED:
            try:
                self.write_and_release(name, found, fingerprint, done.result)
            except Exception as error:  # noqa: BLE001 - writing failed (a full disk, the gradebook): not theirs
                self.pause(client, name, f"writing the result failed ({type(error).__name__}: {error})",
                           canary.disk_full(error))
        else:  # never a 0: the grader or its environment failed
            self.pause(client, name, done.said, done.cause is Cause.DISK_FULL)

    def restart_worker(self, client: Client, future: Future) -> None:
        """The worker grading a task that hangs: restarted, so it takes the next submission."""
        try:
            where = client.run_on_scheduler(_processing_on, future.key)
            future.cancel()
            if where:
                client.restart_workers([where], raise_for_error=False)
        except Exception as error:  # noqa: BLE001 - the next task waits for that worker; the service goes on
            log(self.out, f"could not restart the worker of {future.key}: {type(error).__name__}: {error}")

    def fail(self, name: str, found: Diagnosis, fingerprint: str, why: str) -> None:
        """The submission crashed or hung its worker: 0 with the reason, told to the student; the service goes on."""
        log(self.out, f"FAILED {name}: {why}")
        try:
            self.write_and_release(name, found, fingerprint, None, why)
        except Exception as error:  # noqa: BLE001 - writing failed (a full disk, the gradebook): not theirs
            self.pause(self.client, name, f"writing the result failed ({type(error).__name__}: {error})",
                       canary.disk_full(error))

    def write_and_release(self, name: str, found: Diagnosis, fingerprint: str, result: task.GradingResult | None,
                          failure: str | None = None) -> None:
        """The batch's one writer (gradebook, autograded/, feedback/, the record, the batch state), then the release."""
        student = self.ledger.submissions[name]["student"]
        with gradebook.opened(self.url, self.course_id) as course_gb:
            writer = ResultWriter(course_gb, self.coursedir, ASSIGNMENT, self.batch_state, self.session.recorder)
            failures = {nb: failure for nb in found.gradable} if failure and not result else None
            reasons = writer.write_result(student, found, fingerprint, result, failures, graded_by="perfaudit.serve")
            scores = gradebook.scores(course_gb, ASSIGNMENT)[student]
        record = self.ledger.submissions[name]
        pages = result.feedback if result else {}

        def page(nb):
            if f"{nb}.html" in pages:
                return notes.with_banner(pages[f"{nb}.html"], record["message"])
            made = result.feedback_failure if result else None
            why = failure or "; ".join(reasons.get(nb) or [
                f"its feedback page could not be made ({made})" if made else "it is not part of the assignment"])
            return notes.not_graded(nb, why)

        self.release_pages(name, page)
        score, max_score = (sum(s[i] for s in scores.values()) for i in (0, 1))
        self.ledger.update(name, status="failed" if failure else "graded", score=score, max_score=max_score,
                           released_at=time.time(), gradings=record["gradings"] + 1, failure=failure)
        log(self.out, f"graded {name}: {score:g}/{max_score:g}, feedback released")

    def release_pages(self, name: str, page_for: Callable[[str], bytes]) -> None:
        """Each notebook's page, where the submission's own secret sends it; none where its folder is not the one
        noticed (a link to a classmate's folder would send the pages to the classmate's)."""
        try:
            with self.opened(name) as entry:
                secret, names = exchange.secret(entry), exchange.notebooks(entry, NOTEBOOKS)
        except (OSError, UnreadableSubmission) as error:
            log(self.out, f"no feedback released for {name}: its folder or secret cannot be read ({error})")
            return
        for nb in names:
            exchange.release(self.exchange, secret, nb, page_for(nb))

    def tell_waiting(self) -> int:
        """Every complete submission in the exchange not yet answered gets the page "not graded yet: the grader is
        being repaired" (the service cannot start, or stopped on a fault): nobody waits on a silent Fetch Feedback.
        The same page each time; grading, once repaired, replaces it. Returns how many were told."""
        answered = {name for name, record in self.ledger.submissions.items() if record.get("released_at")}
        waiting = exchange.arrivals(self.exchange / "inbound", ASSIGNMENT, answered)
        for name, *_ in waiting:
            self.release_pages(name, notes.repair)
        return len(waiting)

    def preflight(self) -> list[str]:
        """What this account cannot do of the service's work (perfaudit/serve/readiness.py): [] when it can grade."""
        feedback = Path(self.coursedir.format_path(self.coursedir.feedback_directory, ".", ".")).resolve()
        return readiness.problems(self.course_dir, [self.autograded, feedback], self.exchange / "inbound",
                                  sandboxed=not self.scheduler)

    def pause(self, client: Client | None, name: str, why: str, disk_full: bool = False) -> None:
        """An environment fault: grading stops, the submissions in hand go back to the queue, students are told. A
        full disk (disk_full: told by the error's kind, never its words) ends by itself (resume_when_room)."""
        then = ("It goes on by itself once the course's and the exchange's disks have room again." if disk_full else
                "Repair it and restart the service.")
        log(self.out, f"GRADING STOPPED: the grading environment failed: {why}. Students are told 'not graded yet: "
                      f"the grader is being repaired'. {then}")
        self.ledger.paused, self.ledger.paused_for_disk = why, disk_full
        self.ledger.update(name, status="queued")
        for future, (other, *_) in list(self.in_flight.items()):
            future.cancel()
            self.ledger.update(other, status="queued")
        self.in_flight.clear()

    def resume_when_room(self) -> None:
        """Grading paused for a full disk goes on once the course's and the exchange's disks have room again: a
        held-out attacker filled the exchange (its blocks, or its inodes), removed what they had put there, and
        grading stayed stopped for the class until someone restarted the service by hand."""
        if self.ledger.paused and self.ledger.paused_for_disk and all(
                has_room(folder) for folder in (Path(self.coursedir.root), self.exchange)):
            log(self.out, f"the disks have room again: grading again (stopped for: {self.ledger.paused})")
            self.ledger.paused, self.ledger.paused_for_disk = None, False
            self.ledger.save()

    # --- the loop ---------------------------------------------------------------------------------------------
    def run(self, until_idle: bool = False) -> None:
        """Serve until SIGTERM or SIGINT (or, with until_idle, until nothing is queued or grading)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: setattr(self, "stopping", True))
        if not self.scheduler:
            sandbox.require()
        prepare_this_process()
        found = self.preflight()
        if found:
            raise CannotStart(readiness.one_line(pwd.getpwuid(os.geteuid()).pw_name, found))
        interrupted = self.ledger.in_state("grading")
        for name in interrupted:  # the service stopped while grading it: nothing of it was written
            self.ledger.update(name, status="queued")
        if self.ledger.paused:
            log(self.out, f"restarted after an environment fault ({self.ledger.paused}): grading again")
            self.ledger.paused, self.ledger.paused_for_disk = None, False
            self.ledger.save()
        # As the batch does: a gradebook without the assignment (a fresh course: make release writes none) records it
        # from source/ first, instead of failing on every submission.
        session = self.session
        session.record_assignment(self.out)
        session.make_definition()
        with session.cluster(self.workers, log=self.batch_state.dir / "serve-workers.log") as client:
            self.client = client
            session.sandbox_of_workers()  # a cluster's worker without a sandbox refuses: the service does not start
            session.start_recording()
            log(self.out, f"serving {self.exchange / 'inbound'}; grading on: {engine.describe(client)}; "
                          f"{interrupted and f'{len(interrupted)} interrupted grading(s) queued again; ' or ''}"
                          f"limit: {self.limits.graded_per_window} graded per {self.limits.window_hours:g} h")
            slots = sum(client.nthreads().values())
            while not self.stopping:
                self.resume_when_room()
                self.notice()
                self.harvest(client)
                self.dispatch(client, slots)  # after harvest: a pause tells the queued students at once
                if until_idle and not self.ledger.in_state("queued", "grading") and not self.in_flight:
                    break
                if until_idle and self.ledger.paused and not self.in_flight:
                    break
                time.sleep(self.limits.poll_seconds)
        log(self.out, "stopped")


def has_room(folder: Path, share: float = ROOM_SHARE) -> bool:
    """Whether folder's file system has at least share of its blocks and of its inodes free for this account."""
    try:
        found = os.statvfs(folder)
    except OSError:
        return False
    blocks = found.f_bavail >= share * found.f_blocks
    inodes = found.f_files == 0 or found.f_favail >= share * found.f_files  # some file systems count none
    return blocks and inodes


def _processing_on(key, dask_scheduler=None):  # Dask passes the scheduler by keyword
    state = dask_scheduler.tasks.get(key)
    return state.processing_on.address if state is not None and state.processing_on is not None else None
