"""The fair limit and the ledger on their own, without a service: which submission is graded, when the next is."""

from types import SimpleNamespace

from perfaudit.serve.ledger import Ledger, percentile, status_lines
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


def test_the_ledger_survives_a_reload_and_reports_the_queue_and_times(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    for index, (status, wait) in enumerate([("graded", 10), ("graded", 30), ("limited", 2), ("queued", None)]):
        ledger.submissions[f"s{index}"] = {"student": f"s{index}", "seen_at": 100.0, "submitted_at_s": 100.0,
                                           "status": status, **({"released_at": 100.0 + wait} if wait else {})}
    ledger.save()
    again = Ledger(tmp_path / "ledger.json")
    assert again.submissions == ledger.submissions and not list(tmp_path.glob("*.tmp"))
    lines = status_lines(again, now=160.0)
    assert lines[0] == "submissions: queued 1, grading 0, graded 2, limited 1, failed 0, refused 0"
    assert "  queued   s3 waiting 60 s (s3)" in lines
    assert "submit -> feedback, all feedback (3): median 10.0 s, 95th percentile 30.0 s" in lines
    assert "submit -> feedback, graded (2): median 20.0 s, 95th percentile 30.0 s" in lines
    assert [percentile(range(1, 21), q) for q in (0.5, 0.95, 1.0)] == [10, 19, 20]
