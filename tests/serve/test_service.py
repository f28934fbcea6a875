"""The service's fair limit (perfaudit/serve/service.py): which submission is graded, and when the next can be."""

import io
import re
from types import SimpleNamespace

from nbgrader.coursedir import CourseDirectory

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
    for method in ("inbound", "decide", "folder", "collect"):
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
