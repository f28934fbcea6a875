"""The feedback pages the service writes itself (perfaudit/serve/notes.py), and its line above nbgrader's own."""

import time

from perfaudit.serve import notes

NEXT = 1767225600.0 + 90  # 2026-01-01 00:01:30 UTC


def test_a_moment_is_read_in_utc_to_the_minute_whatever_the_machine_s_zone(monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert notes.when(NEXT) == "2026-01-01 00:01 UTC"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_page_shows_the_notebook_the_title_and_each_paragraph_escaped():
    page = notes.page("01-timing<b>", "not graded", "a < b & c", "second").decode()
    assert page.startswith("<!DOCTYPE html>\n<html>") and page.endswith("</body></html>\n")
    assert "<title>01-timing&lt;b&gt;</title>" in page
    assert "<h1>01-timing&lt;b&gt; (not graded)</h1><p>a &lt; b &amp; c</p><p>second</p></body>" in page


def test_a_limited_submission_is_told_when_the_next_one_is_graded_and_that_it_is_kept():
    page = notes.limited("01-timing", "3 graded in 24 hours", NEXT).decode()
    assert "(not graded: limit reached)" in page and "<p>3 graded in 24 hours</p>" in page
    assert "Your next submission will be graded if you submit after 2026-01-01 00:01 UTC." in page
    assert "This submission was collected and is kept" in page
    last = notes.limited("01-timing", "one after the deadline", None).decode()
    assert "Your next submission" not in last and "This submission was collected and is kept" in last


def test_a_submission_not_graded_says_why_and_what_to_do():
    page = notes.not_graded("02-tracing", "'evidence' is a symbolic link").decode()
    assert "(not graded)</h1><p>&#x27;evidence&#x27; is a symbolic link</p><p>Fix it and submit again.</p>" in page
    assert f"(not graded yet)</h1><p>{notes.REPAIR}</p>" in notes.repair("02-tracing").decode()


def test_the_banner_goes_first_in_the_body_of_nbgrader_s_page():
    page = notes.with_banner('<html><body class="x">Score: 3 ü</body></html>'.encode(), "graded <again>")
    assert page.decode() == (f'<html><body class="x"><div style="{notes.BANNER_STYLE}">graded &lt;again&gt;</div>'
                             "Score: 3 ü</body></html>")
    assert notes.with_banner(b"no body", "line").decode() == f'<div style="{notes.BANNER_STYLE}">line</div>no body'
