"""The service's fair limit (perfaudit/serve/service.py): which submission is graded, and when the next can be."""

import errno
import html
import io
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import switch_user
from nbgrader.coursedir import CourseDirectory
from nbgrader.utils import notebook_hash

from perfaudit import paths
from perfaudit.autograde.isolation import submission
from perfaudit.autograde.plugins import canary
from perfaudit.bookkeeping.coursedir import course_config
from perfaudit.serve import exchange, limits_notes, service
from perfaudit.serve.ledger import Ledger
from perfaudit.serve.service import SKIPPED_NAMED, SKIPPED_RECORDED, Service
from perfaudit.serve.settings import GradingService

HOUR = 3600.0
DUE = 1000 * HOUR


def decider(tmp_path, **limits):
    """A stand-in for the service with its ledger and limits, and a function that records one submission."""
    service = SimpleNamespace(limits=GradingService(**limits), ledger=Ledger(tmp_path / "ledger.json"))

    def arrive(student, at, due=DUE):
        decision, message, next_at = Service.decide(service, student, at, due)
        service.ledger.submissions[f"{student}+{at}"] = {"student": student, "seen_at": at, "decision": decision,
                                                         "status": "queued"}
        return decision, message, next_at

    arrive.limits = service.limits
    return arrive


def test_three_graded_in_any_24_hours_then_limited_until_the_oldest_leaves_the_window(tmp_path):
    arrive = decider(tmp_path, graded_per_window=3, window_hours=24)
    assert [arrive("ada", t * HOUR)[0] for t in (0, 1, 2)] == ["grade"] * 3
    decision, message, next_at = arrive("ada", 3 * HOUR)
    assert (decision, next_at) == ("limit", 24 * HOUR)
    assert message == "You have had 3 graded submission(s) in the last 24 hours, the limit before the deadline."
    assert arrive("ada", 23.9 * HOUR)[0] == "limit", "a limited submission does not count, nor reset the window"
    assert arrive("bob", 4 * HOUR)[0] == "grade", "another student's submissions count for them only"
    assert arrive("ada", 24 * HOUR)[0] == "grade"
    decision, _, next_at = arrive("ada", 24.5 * HOUR)  # graded at 1, 2 and 24 h: the one at 1 h leaves first
    assert (decision, next_at) == ("limit", 25 * HOUR)


def test_after_the_deadline_one_graded_submission(tmp_path):
    arrive = decider(tmp_path, graded_per_window=3, window_hours=24)
    arrive("ada", DUE - HOUR)
    assert arrive("ada", DUE + 1)[0] == "grade"
    decision, message, next_at = arrive("ada", DUE + 2)
    assert decision == "limit" and next_at is None and "graded 1 time(s), and yours was" in message


def test_the_limit_before_the_deadline_follows_the_settings(tmp_path):
    arrive = decider(tmp_path, graded_per_window=1, window_hours=2)
    assert arrive("ada", 0) == ("grade", "Graded submission 1 of the 1 you may have in any 2 hours before the "
                                "deadline.", None)
    assert arrive("ada", HOUR) == ("limit", "You have had 1 graded submission(s) in the last 2 hours, the limit "
                                   "before the deadline.", 2 * HOUR)
    assert arrive("ada", 2 * HOUR)[0] == "grade"
    assert arrive("bob", 5 * HOUR, due=None)[1].startswith("Graded submission 1 of the 1")  # no due date: no deadline
    arrive.limits.graded_per_window, arrive.limits.window_hours = 2, 4
    assert arrive("cyd", 0)[0] == arrive("cyd", HOUR)[0] == "grade"
    arrive.limits.graded_per_window = 1  # lowered while submissions count: the newest leaves the window last
    assert arrive("cyd", 2 * HOUR)[::2] == ("limit", 5 * HOUR)


def test_each_log_line_starts_with_the_time():
    out = io.StringIO()
    service.log(out, "graded ada")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d graded ada\n", out.getvalue())


def test_the_service_refuses_and_collects_what_the_course_grades_not_what_it_ignores(tmp_path):
    """A folder kept in git (more entries than a submission may hold) and a link under runs/: graded, and neither
    reaches submitted/, as under plain nbgrader and the batch."""
    config = course_config(paths.ROOT)
    config.CourseDirectory.root = str(tmp_path / "course")
    stand_in = SimpleNamespace(exchange=tmp_path / "exchange", ledger=Ledger(tmp_path / "ledger.json"),
                               limits=GradingService(check_owner=False), out=io.StringIO(), limits_notes=None,
                               unfinished={}, skipped_unrecorded={}, unrecorded_told={},
                               coursedir=CourseDirectory(config=config), due=lambda: None)
    for method in ("opened", "decide", "folder", "collect", "skip", "skip_all", "forget_skipped_gone", "untold",
                   "record_limits_notes"):
        setattr(stand_in, method, getattr(Service, method).__get__(stand_in))
    for student, ignored in (("ada", ".git/objects"), ("bob", "evidence/.git/objects")):
        folder = stand_in.exchange / "inbound" / f"{student}+performance-audit+2026-01-01 10:00:00.000000 UTC+r1"
        (folder / ignored).mkdir(parents=True)
        for n in range(submission.MAX_ENTRIES + 1):
            (folder / ignored / f"{n:04x}").write_text("an object")
        (folder / "runs").mkdir()
        (folder / "runs" / "latest").symlink_to("/etc")
        (folder / "01-first-call-vs-steady.ipynb").write_text("{}")
        (folder / exchange.SECRET).write_text("s3cret")
    Service.notice(stand_in)
    assert {r["student"]: r["decision"] for r in stand_in.ledger.submissions.values()} == {"ada": "grade",
                                                                                          "bob": "grade"}
    for name in stand_in.ledger.submissions:
        student, submitted = stand_in.collect(name)
        assert sorted(p.name for p in submitted.rglob("*")) == ["01-first-call-vs-steady.ipynb", exchange.SECRET]


# --- odd entries in the exchange's inbound: one student's problem, never the class's -------------------------------
SERVICE, STUDENT, CLASSMATE, LATE = "daemon", "nobody", "bin", "sys"  # accounts every Debian has, in no shared group
WHEN = "2026-01-01 10:00:00.000000 UTC"


def _entry(inbound, name, student, kind="folder", mode=0o770, secret="s3cret"):
    """An entry of inbound/ as the student's account leaves it: theirs, with inbound/'s group (setgid)."""
    path = inbound / name
    owner = pwd.getpwnam(student).pw_uid
    group = inbound.stat().st_gid
    if kind == "link":
        path.symlink_to("/etc")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
        (path / "01-first-call-vs-steady.ipynb").write_text("{}")
        if secret:
            (path / exchange.SECRET).write_text(secret)
        for made in path.iterdir():
            os.chown(made, owner, group)
            made.chmod(0o640)
    os.chown(path, owner, group, follow_symlinks=False)
    if kind == "folder":
        path.chmod(mode)
    return path


@pytest.fixture
def shared_course():
    """A course folder and a real exchange where the service's account (SERVICE) owns the course's folders and
    inbound/ is 3733, as perfaudit/hub/exchange.py makes it; outside pytest's folder, which only root reaches."""
    shared = Path(tempfile.mkdtemp(prefix="perfaudit-inbound-"))
    shared.chmod(0o755)
    service_uid, service_gid = pwd.getpwnam(SERVICE).pw_uid, pwd.getpwnam(SERVICE).pw_gid
    course_exchange = shared / "exchange" / "course101"
    for folder, mode in ((shared / "course", 0o750), (course_exchange, 0o755), (course_exchange / "inbound", 0o3733),
                         (course_exchange / "feedback", 0o711)):
        folder.mkdir(parents=True)
        os.chown(folder, service_uid, service_gid)
        folder.chmod(mode)
    try:
        yield shared
    finally:
        shutil.rmtree(shared)


def _service_of(shared, **limits):
    """The service's own methods on a stand-in with the course's folders and a real ledger (no Dask cluster)."""
    config = course_config(paths.ROOT)
    config.CourseDirectory.root = str(shared / "course")
    stand_in = SimpleNamespace(exchange=shared / "exchange" / "course101", ledger=Ledger(shared / "course" / "l.json"),
                               limits_notes=None, unfinished={}, skipped_unrecorded={}, unrecorded_told={},
                               limits=GradingService(**limits), out=io.StringIO(), in_flight={}, client=None,
                               coursedir=CourseDirectory(config=config), due=lambda: None)
    for name, method in vars(Service).items():
        if callable(method) and not name.startswith("__") and name != "due":
            setattr(stand_in, name, method.__get__(stand_in))
    return stand_in


def _serve_once(stand_in, slots=0):
    """One turn of the service's loop (notice, then dispatch), as the service's account: its ledger and log."""
    stand_in.notice()
    stand_in.dispatch(None, slots)
    return {"submissions": stand_in.ledger.submissions, "paused": stand_in.ledger.paused,
            "log": stand_in.out.getvalue()}


def test_an_odd_entry_in_inbound_is_skipped_recorded_and_told_and_the_class_is_graded(shared_course):
    """A student's folder they closed (0740, 0700), a link, a FIFO, a name nbgrader never writes, a folder inside a
    submission the service may not open and a notebook it may not read: none stops or pauses the service, each is
    recorded under the account that made it, and the classmate's submission is decided as usual. Where the secret
    can be read the student's feedback page says why; otherwise their next page does."""
    inbound = shared_course / "exchange" / "course101" / "inbound"
    a = "performance-audit"
    closed = _entry(inbound, f"{STUDENT}+{a}+{WHEN}+closed", STUDENT, mode=0o740)
    _entry(inbound, f"{STUDENT}+{a}+{WHEN}+private", STUDENT, mode=0o700)
    _entry(inbound, f"{STUDENT}+{a}+{WHEN}+link", STUDENT, kind="link")
    _entry(inbound, f"{STUDENT}+{a}+{WHEN}+fifo", STUDENT, kind="fifo")
    weird = os.fsdecode(f"{STUDENT}+{a}+".encode() + b"\xff\n" + b"+r5")
    _entry(inbound, weird, STUDENT)
    zone = f"{STUDENT}+{a}+2026-01-01 10:00:00 ..+zone"  # python-dateutil raises its own warning class for '..'
    _entry(inbound, zone, STUDENT)
    deep = _entry(inbound, f"{STUDENT}+{a}+{WHEN}+deep", STUDENT)
    (deep / "evidence").mkdir()
    (deep / "evidence" / "report.json").write_text("{}")
    (deep / "02-tracing.ipynb").write_text("{}")
    for made, mode in ((deep / "evidence" / "report.json", 0o640), (deep / "evidence", 0o740),
                       (deep / "02-tracing.ipynb", 0o600)):
        os.chown(made, pwd.getpwnam(STUDENT).pw_uid, inbound.stat().st_gid)
        made.chmod(mode)
    fine = _entry(inbound, f"{CLASSMATE}+{a}+{WHEN}+fine", CLASSMATE)
    # A folder closed a moment ago may be a submission still being copied: left for a later look, not skipped.
    waited = switch_user.run_as(SERVICE, _serve_once, _service_of(shared_course, unreadable_after_s=3600))
    assert closed.name not in waited["submissions"] and fine.name in waited["submissions"], waited["log"]
    shared_course.joinpath("course", "l.json").unlink()
    stand_in = _service_of(shared_course, unreadable_after_s=0)

    served = switch_user.run_as(SERVICE, _serve_once, stand_in)
    found = served["submissions"]
    assert served["paused"] is None, served["log"]
    assert found[fine.name]["decision"] == "grade" and found[fine.name]["status"] == "queued", served["log"]
    skipped = {name: record for name, record in found.items() if record["status"] == "skipped"}
    assert sorted(skipped) == sorted([closed.name, f"{STUDENT}+{a}+{WHEN}+private", f"{STUDENT}+{a}+{WHEN}+link",
                                      f"{STUDENT}+{a}+{WHEN}+fifo", weird, zone]), served["log"]
    assert {record["student"] for record in skipped.values()} == {STUDENT}  # the account that made it
    assert "the grader may not open it (mode 0o740" in skipped[closed.name]["why"]
    assert "a FIFO" in skipped[f"{STUDENT}+{a}+{WHEN}+fifo"]["why"]
    assert "a symbolic link" in skipped[f"{STUDENT}+{a}+{WHEN}+link"]["why"]
    assert "a name nbgrader's submit does not write" in skipped[weird]["why"]
    assert "its time cannot be read" in skipped[zone]["why"]
    assert repr(weird) in served["log"] and served["log"].count("SKIPPED") == 6, served["log"]
    # The secret could be read: the student's feedback page says what the grader may not read, and nothing is graded;
    # it also tells them, once, of the entries skipped, whose pages nobody could find without their secrets.
    assert found[deep.name]["status"] == "refused", served["log"]
    page = html.unescape((shared_course / "exchange" / "course101" / "feedback" /
                          f"{notebook_hash(secret='s3cret', notebook_id='01-first-call-vs-steady')}.html").read_text())
    assert "'evidence' is a folder the grader may not open (mode 0o740)" in page, page
    assert "'02-tracing.ipynb' is a file the grader may not read (mode 0o600)" in page, page
    assert page.count("was not read") == SKIPPED_NAMED, page  # the first five named, the sixth counted
    assert "1 more entries you left in the exchange's inbound were not read either" in page, page
    assert all(found[name]["told"] for name in skipped)

    again = _entry(inbound, f"{STUDENT}+{a}+2026-01-02 10:00:00.000000 UTC+again", STUDENT)
    stand_in = _service_of(shared_course, unreadable_after_s=0)
    found = switch_user.run_as(SERVICE, _serve_once, stand_in)["submissions"]
    assert found[again.name]["decision"] == "grade" and "was not read" not in found[again.name]["message"]


def test_a_submission_closed_after_it_was_noticed_is_refused_not_a_pause(shared_course):
    """Between the service noticing a submission and collecting it, its student closes it: refused and told, and
    grading goes on for everyone else (before, the PermissionError paused the service for the class)."""
    inbound = shared_course / "exchange" / "course101" / "inbound"
    ledger = Ledger(shared_course / "course" / "l.json")  # LATE had a graded submission an hour ago
    ledger.submissions["earlier"] = {"student": LATE, "seen_at": time.time() - HOUR, "decision": "grade",
                                     "status": "graded", "released_at": time.time() - HOUR}
    ledger.save()
    os.chown(ledger.path, pwd.getpwnam(SERVICE).pw_uid, -1)
    late = _entry(inbound, f"{LATE}+performance-audit+{WHEN}+late", LATE)
    stand_in = _service_of(shared_course, graded_per_window=1)  # so this one is limited: collected, not graded
    stand_in.notice()  # as root: it is noticed while readable
    late.chmod(0o740)
    served = switch_user.run_as(SERVICE, _serve_once, stand_in, 1)
    assert served["paused"] is None, served["log"]
    record = served["submissions"][late.name]
    assert record["status"] == "refused" and "the grader may not open" in record["failure"], served["log"]


def test_a_student_whose_process_the_hub_stopped_reads_why_on_their_next_page_and_a_classmate_s_note_waits(
        shared_course):
    """The hub's limits service (as root) leaves a note for each student whose process it stopped; the service
    records it and the student's next feedback page says it, once. A classmate's note, left meanwhile, waits for
    their own page: nothing of it on this one, nor marked told."""
    inbound = shared_course / "exchange" / "course101" / "inbound"
    folder = shared_course / "limits-notes"
    limits_notes.prepare(folder, pwd.getpwnam(SERVICE).pw_uid)
    limits_notes.leave(folder, STUDENT, "your process 4242 (python hog.py, 900 MB) was stopped: your processes held "
                                        "1100 MB of memory, over the 1024 MB each student may have.")
    limits_notes.leave(folder, CLASSMATE, "your process 4343 (python writer.py) was stopped, writing in the exchange")
    ledger = Ledger(shared_course / "course" / "l.json")  # STUDENT had a graded submission an hour ago
    ledger.submissions["earlier"] = {"student": STUDENT, "seen_at": time.time() - HOUR, "decision": "grade",
                                     "status": "graded", "released_at": time.time() - HOUR}
    ledger.save()
    os.chown(ledger.path, pwd.getpwnam(SERVICE).pw_uid, -1)
    _entry(inbound, f"{STUDENT}+performance-audit+{WHEN}+mine", STUDENT)
    stand_in = _service_of(shared_course, graded_per_window=1)  # limited: its page released without grading
    stand_in.limits_notes = folder
    served = switch_user.run_as(SERVICE, _serve_once, stand_in)
    page = html.unescape((shared_course / "exchange" / "course101" / "feedback" /
                          f"{notebook_hash(secret='s3cret', notebook_id='01-first-call-vs-steady')}.html").read_text())
    assert "your process 4242 (python hog.py, 900 MB) was stopped" in page, served["log"]
    assert "over the 1024 MB each student may have" in page and "4343" not in page, page
    notes = Ledger(shared_course / "course" / "l.json").notes
    assert {(r["student"], r["told"]) for r in notes.values()} == {(STUDENT, True), (CLASSMATE, False)}, notes
    assert os.listdir(folder) == [], "a note recorded is removed from the folder"


@pytest.mark.parametrize("target", ["a classmate's submission", "inbound itself", "a folder it may not search"])
def test_a_submission_swapped_for_a_link_after_it_was_noticed_is_refused_and_reaches_nothing(shared_course, target):
    """A student's own queued submission, swapped for a link once noticed: to a classmate's folder (the classmate's
    secret sent the student's "limit" page over the classmate's graded one), to inbound/ itself (the refusal named
    a classmate's folder), to a folder the service may not search (the PermissionError paused grading for the
    class). Refused, its student's problem; nothing is read or written through the link."""
    inbound = shared_course / "exchange" / "course101" / "inbound"
    ledger = Ledger(shared_course / "course" / "l.json")
    theirs = _entry(inbound, f"{CLASSMATE}+performance-audit+{WHEN}+theirs", CLASSMATE, secret="classmate's")
    ledger.submissions[theirs.name] = {"student": CLASSMATE, "seen_at": time.time() - HOUR, "decision": "grade",
                                       "status": "graded", "released_at": time.time() - HOUR}
    ledger.submissions["earlier"] = {"student": STUDENT, "seen_at": time.time() - HOUR, "decision": "grade",
                                     "status": "graded", "released_at": time.time() - HOUR}
    ledger.save()
    os.chown(ledger.path, pwd.getpwnam(SERVICE).pw_uid, -1)
    page = exchange.release(shared_course / "exchange" / "course101", "classmate's", "01-first-call-vs-steady",
                            b"the classmate's graded page")
    mine = _entry(inbound, f"{STUDENT}+performance-audit+{WHEN}+mine", STUDENT)
    stand_in = _service_of(shared_course, graded_per_window=1)  # limited: collected and released, not graded
    stand_in.notice()
    mine.rename(shared_course / "moved")
    mine.symlink_to({"a classmate's submission": theirs, "inbound itself": inbound,
                     "a folder it may not search": Path("/root")}[target])
    os.chown(mine, pwd.getpwnam(STUDENT).pw_uid, inbound.stat().st_gid, follow_symlinks=False)
    served = switch_user.run_as(SERVICE, _serve_once, stand_in)
    assert served["paused"] is None, served["log"]
    record = served["submissions"][mine.name]
    assert record["status"] == "refused" and "no longer a folder the grader may open" in record["failure"], \
        served["log"]
    assert page.read_bytes() == b"the classmate's graded page"
    assert sorted(os.listdir(page.parent)) == [page.name], "no page sent anywhere through the link"


def test_skipped_entries_removed_by_their_maker_leave_the_ledger(shared_course):
    """Odd entries made by the thousand and removed, round after round, grew the ledger without end (35 MB, a save
    of 15 s at every change, every classmate's feedback later). A skipped entry's record goes with the entry; one
    still there stays recorded, so it is neither skipped nor logged again."""
    inbound = shared_course / "exchange" / "course101" / "inbound"
    made = [_entry(inbound, f"odd-{n}", STUDENT, kind="fifo") for n in range(12)]
    stand_in = _service_of(shared_course)
    served = switch_user.run_as(SERVICE, _serve_once, stand_in)
    assert sum(r["status"] == "skipped" for r in served["submissions"].values()) == 12, served["log"]
    for path in made[1:]:
        path.unlink()
    served = switch_user.run_as(SERVICE, _serve_once, _service_of(shared_course))  # the ledger as saved
    assert list(served["submissions"]) == ["odd-0"], served["log"]
    assert "SKIPPED" not in served["log"], "the one left is not skipped again"
    assert list(Ledger(shared_course / "course" / "l.json").submissions) == ["odd-0"]


def test_a_flood_of_odd_entries_is_counted_not_recorded_nor_named_one_by_one(shared_course):
    """The held-out attacker's way to fill the exchange with the grader's own files: 110,000 empty files with long
    names, each a record in the ledger (570 MB in the end) and a line on each page of the next feedback (5 pages of
    117 MB). Here 300: the ledger records SKIPPED_RECORDED of them, the log says how many more, the student's next
    page names SKIPPED_NAMED and counts the rest; the next scan and the next page add nothing."""
    inbound = shared_course / "exchange" / "course101" / "inbound"
    uid, gid = pwd.getpwnam(STUDENT).pw_uid, inbound.stat().st_gid
    long_name = b"\x01" * 200
    for n in range(300):
        path = inbound / os.fsdecode(long_name + str(n).encode())
        path.touch()
        os.chown(path, uid, gid)
    served = switch_user.run_as(SERVICE, _serve_and_tell_twice, _service_of(shared_course))
    skipped = [r for r in served["submissions"].values() if r["status"] == "skipped"]
    assert len(skipped) == SKIPPED_RECORDED and served["paused"] is None, served["log"]
    more = f"SKIPPED {300 - SKIPPED_RECORDED} more entries in the exchange's inbound, made by {STUDENT}"
    assert more in served["log"], served["log"]
    assert served["log"].count("SKIPPED") == SKIPPED_RECORDED + 1  # the second scan logs nothing
    said = served["said"]
    assert len(said) == SKIPPED_NAMED + 1 and sum(len(line) for line in said) < 2000, said
    assert said[-1].startswith(f"{300 - SKIPPED_NAMED} more entries you left in the exchange's inbound"), said[-1]
    assert served["said again"] == []
    assert (shared_course / "course" / "l.json").stat().st_size < 100_000


def _serve_and_tell_twice(stand_in):
    """Two turns of the service's loop, and what the student's next page says after each, as the service's
    account."""
    _serve_once(stand_in)
    said = stand_in.untold(STUDENT)
    return {**_serve_once(stand_in), "said": said, "said again": stand_in.untold(STUDENT)}


def test_a_name_that_is_no_utf_8_never_pauses_grading(shared_course):
    """A hand-made submission holding a file named n\\xff.ipynb and a FIFO, and a limits note quoting a process named
    with such bytes: every page and log line written of them failed (UnicodeEncodeError), which paused grading for
    the class at every restart. The submission is refused for its FIFO and told; no page goes to the odd name; the
    note is told as well as its bytes allow."""
    inbound = shared_course / "exchange" / "course101" / "inbound"
    folder = shared_course / "limits-notes"
    limits_notes.prepare(folder, pwd.getpwnam(SERVICE).pw_uid)
    limits_notes.leave(folder, STUDENT, "your process 4242 (" + os.fsdecode(b"\xff-evil") + ") was stopped")
    mine = _entry(inbound, f"{STUDENT}+performance-audit+{WHEN}+mine", STUDENT)
    odd = mine / os.fsdecode(b"n\xff.ipynb")
    odd.write_text("{}")
    os.chown(odd, pwd.getpwnam(STUDENT).pw_uid, inbound.stat().st_gid)
    os.mkfifo(mine / "pipe")
    stand_in = _service_of(shared_course)
    stand_in.limits_notes = folder
    served = switch_user.run_as(SERVICE, _serve_once, stand_in)
    assert served["paused"] is None, served["log"]
    assert served["submissions"][mine.name]["status"] == "refused", served["log"]
    page = html.unescape((shared_course / "exchange" / "course101" / "feedback" /
                          f"{notebook_hash(secret='s3cret', notebook_id='01-first-call-vs-steady')}.html").read_text())
    assert "'pipe' is a FIFO" in page, page
    assert len(os.listdir(shared_course / "exchange" / "course101" / "feedback")) == 1, "no page for n\\xff.ipynb"
    assert "your process 4242 (" in page and "-evil) was stopped" in page, page


def test_a_flood_of_limits_notes_keeps_each_student_s_newest_and_saves_once(shared_course, monkeypatch):
    """320 stops in 40 s (an attacker's writers, stopped as fast as they were started): each note was saved into the
    ledger at once and kept for ever, and the ledger's saves stalled grading. A look saves once; each student keeps
    their NOTES_KEPT newest notes, and a classmate's note is untouched."""
    folder = shared_course / "limits-notes"
    limits_notes.prepare(folder, os.getuid())
    for n in range(50):
        limits_notes.leave(folder, STUDENT, f"your process {n} was stopped")
    limits_notes.leave(folder, CLASSMATE, "your process 7 was stopped")
    stand_in = _service_of(shared_course)
    stand_in.limits_notes = folder
    saves = []
    monkeypatch.setattr(stand_in.ledger, "save", lambda: saves.append(1))
    stand_in.record_limits_notes()
    kept = sorted((r["student"], r["said"]) for r in stand_in.ledger.notes.values())
    assert kept == sorted([(CLASSMATE, "your process 7 was stopped")] +
                          [(STUDENT, f"your process {n} was stopped") for n in range(40, 50)])
    assert len(saves) == 1 and os.listdir(folder) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="a small file system of the test's own is mounted by root")
def test_grading_paused_for_a_full_disk_goes_on_once_there_is_room_again(tmp_path):
    """A student filled the exchange's inodes with empty files, then removed them: grading, paused on the full disk,
    stayed stopped for the class until the service was restarted by hand. A pause for a full disk now ends by itself
    once the disk has room (blocks and inodes); a pause for another fault still waits for a repair."""
    exchange_disk = tmp_path / "exchange"
    exchange_disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=64", "tmpfs", str(exchange_disk)], check=True)
    try:
        stand_in = SimpleNamespace(exchange=exchange_disk, coursedir=SimpleNamespace(root=str(tmp_path)),
                                   ledger=Ledger(tmp_path / "l.json"), out=io.StringIO(), in_flight={})
        resume = Service.resume_when_room.__get__(stand_in)
        made = 0
        with pytest.raises(OSError, match="No space left on device"):
            while True:
                (exchange_disk / f"empty-{made}").touch()
                made += 1
        stand_in.ledger.submissions["s"] = {"status": "grading"}
        full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        Service.pause(stand_in, None, "s", "writing the result failed (OSError)", canary.disk_full(full))
        assert stand_in.ledger.paused_for_disk and "goes on by itself" in stand_in.out.getvalue()
        said = stand_in.out.getvalue()
        resume()
        assert stand_in.ledger.paused and stand_in.out.getvalue() == said  # no inode free: still stopped
        for path in exchange_disk.iterdir():
            path.unlink()
        resume()
        assert (stand_in.ledger.paused, stand_in.ledger.paused_for_disk) == (None, False)
        assert "the disks have room again: grading again" in stand_in.out.getvalue()
        assert Ledger(tmp_path / "l.json").paused is None  # saved
        stand_in.ledger.paused = "the environment check failed"
        resume()
        assert stand_in.ledger.paused == "the environment check failed"  # another fault: a repair, then a restart
    finally:
        subprocess.run(["umount", str(exchange_disk)], check=True)


def test_folders_made_under_a_classmate_s_name_are_their_maker_s_counted_past_twenty(shared_course):
    """A held-out attacker made 3,000 folders named for a classmate, each with a secret: each refused by the owner
    check and saved on its own, they held the service 5 minutes, and their records outlived the folders. They are
    now their maker's odd entries: recorded up to SKIPPED_RECORDED, the rest counted, saved once, gone with the
    folders; the classmate's own submission is decided as usual."""
    inbound = shared_course / "exchange" / "course101" / "inbound"
    a = "performance-audit"
    for n in range(30):
        _entry(inbound, f"{CLASSMATE}+{a}+{WHEN}+fake{n}", STUDENT)
    own = _entry(inbound, f"{CLASSMATE}+{a}+{WHEN}+own", CLASSMATE)
    served = switch_user.run_as(SERVICE, _serve_once, _service_of(shared_course))
    found = served["submissions"]
    assert found[own.name]["decision"] == "grade", served["log"]
    skipped = [record for record in found.values() if record["status"] == "skipped"]
    assert len(skipped) == SKIPPED_RECORDED and {r["student"] for r in skipped} == {STUDENT}, served["log"]
    assert "owner check" in skipped[0]["why"] and "SKIPPED 10 more entries" in served["log"]
    for n in range(30):
        (inbound / f"{CLASSMATE}+{a}+{WHEN}+fake{n}" / "01-first-call-vs-steady.ipynb").unlink()
        (inbound / f"{CLASSMATE}+{a}+{WHEN}+fake{n}" / exchange.SECRET).unlink()
        (inbound / f"{CLASSMATE}+{a}+{WHEN}+fake{n}").rmdir()
    served = switch_user.run_as(SERVICE, _serve_once, _service_of(shared_course))
    assert [name for name, r in served["submissions"].items() if r["status"] == "skipped"] == []
