"""The service's fair limit (perfaudit/serve/service.py): which submission is graded, and when the next can be."""

import html
import io
import os
import pwd
import re
import shutil
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
from perfaudit.bookkeeping.coursedir import course_config
from perfaudit.serve import exchange, service
from perfaudit.serve.ledger import Ledger
from perfaudit.serve.service import Service
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
                               limits=GradingService(check_owner=False), out=io.StringIO(),
                               coursedir=CourseDirectory(config=config), due=lambda: None)
    for method in ("inbound", "decide", "folder", "collect", "skip", "untold"):
        setattr(stand_in, method, getattr(Service, method).__get__(stand_in))
    for student, ignored in (("ada", ".git/objects"), ("bob", "evidence/.git/objects")):
        folder = stand_in.inbound(f"{student}+performance-audit+2026-01-01 10:00:00.000000 UTC+r1")
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
                                      f"{STUDENT}+{a}+{WHEN}+fifo", weird]), served["log"]
    assert {record["student"] for record in skipped.values()} == {STUDENT}  # the account that made it
    assert "the grader may not open it (mode 0o740" in skipped[closed.name]["why"]
    assert "a FIFO" in skipped[f"{STUDENT}+{a}+{WHEN}+fifo"]["why"]
    assert "a symbolic link" in skipped[f"{STUDENT}+{a}+{WHEN}+link"]["why"]
    assert "a name nbgrader's submit does not write" in skipped[weird]["why"]
    assert repr(weird) in served["log"] and served["log"].count("SKIPPED") == 5, served["log"]
    # The secret could be read: the student's feedback page says what the grader may not read, and nothing is graded;
    # it also tells them, once, of the entries skipped, whose pages nobody could find without their secrets.
    assert found[deep.name]["status"] == "refused", served["log"]
    page = html.unescape((shared_course / "exchange" / "course101" / "feedback" /
                          f"{notebook_hash(secret='s3cret', notebook_id='01-first-call-vs-steady')}.html").read_text())
    assert "'evidence' is a folder the grader may not open (mode 0o740)" in page, page
    assert "'02-tracing.ipynb' is a file the grader may not read (mode 0o600)" in page, page
    assert page.count("was not read") == 5 and "the grader may not open it (mode 0o740" in page, page
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
