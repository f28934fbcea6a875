"""The ledger on its own, without a service (perfaudit/serve/ledger.py): kept across a reload, the queue and times."""

import os
import stat

from perfaudit.serve.ledger import Ledger, percentile, status_lines


def test_the_ledger_survives_a_reload_and_reports_the_queue_and_times(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    for index, (status, wait) in enumerate([("graded", 10), ("graded", 30), ("limited", 2), ("queued", None)]):
        ledger.submissions[f"s{index}"] = {"student": f"s{index}", "seen_at": 100.0, "submitted_at_s": 100.0,
                                           "status": status, **({"released_at": 100.0 + wait} if wait else {})}
    ledger.submissions["odd"] = {"student": "eve", "seen_at": 100.0, "status": "skipped", "why": "a FIFO"}
    ledger.save()
    again = Ledger(tmp_path / "ledger.json")
    assert again.submissions == ledger.submissions and not list(tmp_path.glob("*.tmp"))
    lines = status_lines(again, now=160.0)
    assert lines[0] == "submissions: queued 1, grading 0, graded 2, limited 1, failed 0, refused 0, skipped 1"
    assert "  queued   s3 waiting 60 s (s3)" in lines
    assert "  skipped  eve: a FIFO ('odd')" in lines  # what the instructor may want to tell eve
    assert "submit -> feedback, all feedback (3): median 10.0 s, 95th percentile 30.0 s" in lines
    assert "submit -> feedback, graded (2): median 20.0 s, 95th percentile 30.0 s" in lines
    assert [percentile(range(1, 21), q) for q in (0.5, 0.95, 1.0)] == [10, 19, 20]


def test_the_ledger_is_the_course_owners_alone_whatever_the_umask(tmp_path):
    # It names every submission's inbound folder, whose random part keeps classmates out of it.
    previous = os.umask(0)
    try:
        ledger = Ledger(tmp_path / "gradebook.db.serve.json")
        ledger.save()
        ledger.save()  # a second write replaces the first: still closed
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "gradebook.db.serve.json").stat().st_mode) == 0o600


def test_a_student_whose_gradings_ran_long_waits_behind_classmates_then_the_oldest_goes_first(tmp_path):
    """Two students whose submissions slept until their time limits (one still grading) go behind three classmates,
    whatever their order of arrival; a grading older than the window counts only within it."""
    now, hour = 100_000.0, 3600.0
    ledger = Ledger(tmp_path / "ledger.json")

    def add(name, student, seen, status, **times):
        ledger.submissions[name] = {"student": student, "seen_at": seen, "status": status, **times}

    add("sleeper-1", "sleeper", now - 2 * hour, "graded", started_at=now - 2 * hour, released_at=now - hour)
    add("sleeper-2", "sleeper", now - 50, "queued")
    add("looper-1", "looper", now - 30 * 60, "grading", started_at=now - 30 * 60,
        released_at=now - 31 * 60)  # graded again after a restart: its first release is older than this start
    add("looper-2", "looper", now - 40, "queued")
    add("old-1", "old", now - 30 * hour, "graded", started_at=now - 30 * hour, released_at=now - 25 * hour)
    add("old-2", "old", now - 10, "queued")
    add("honest", "honest", now - 20, "queued")
    add("quick-1", "quick", now - 3 * hour, "graded", started_at=now - 3 * hour, released_at=now - 3 * hour + 40)
    add("quick-2", "quick", now - 5, "queued")
    # old's five hours of grading ended a day ago: outside the 24-hour window, like no grading at all
    assert ledger.fairly_queued(now, 24 * hour) == ["honest", "old-2", "quick-2", "looper-2", "sleeper-2"]
    assert ledger.in_state("queued") == ["sleeper-2", "looper-2", "honest", "old-2", "quick-2"]  # arrival order
