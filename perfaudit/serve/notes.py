"""The feedback pages the service writes itself, and the line it adds above nbgrader's own feedback.

Each says what happened to this submission and what the student can do; none holds anything of the tests. The
same submission always gets the same words: every time in them comes from the ledger, never from the clock.
"""

import html
import re
from datetime import datetime, timezone

REPAIR = ("Not graded yet: the grader is being repaired. This submission is kept and will be graded then; you lose "
          "nothing.")
STYLE = "font-family: sans-serif; max-width: 50em; margin: 2em auto; line-height: 1.4"
BANNER_STYLE = "font-family: sans-serif; border: 1px solid #888; background: #f4f4f4; padding: 0.6em 1em; margin: 1em"


def when(epoch: float) -> str:
    """A moment as students read it: UTC, to the minute."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def page(notebook: str, title: str, *paragraphs: str) -> bytes:
    """A small feedback page of its own: the notebook's name, a title, the paragraphs (plain text, escaped)."""
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(notebook)}</title></head>"
            f"<body style=\"{STYLE}\"><h1>{html.escape(notebook)} ({html.escape(title)})</h1>{body}</body></html>\n"
            ).encode("utf-8", "replace")  # a note may quote bytes a student chose (a process's name): never a failure


def limited(notebook: str, why: str, next_at: float | None) -> bytes:
    if next_at is None:
        return page(notebook, "not graded: limit reached", why,
                    "This submission was collected and is kept: the instructor's final grading after the deadline "
                    "grades your last submission.")
    return page(notebook, "not graded: limit reached", why,
                f"Your next submission will be graded if you submit after {when(next_at)}.",
                "This submission was collected and is kept: the instructor's final grading after the deadline "
                "grades your last submission.")


def not_graded(notebook: str, why: str) -> bytes:
    return page(notebook, "not graded", why, "Fix it and submit again.")


def repair(notebook: str) -> bytes:
    return page(notebook, "not graded yet", REPAIR)


def with_banner(feedback_page: bytes, text: str) -> bytes:
    """nbgrader's feedback page with one line of the service's above it."""
    banner = f"<div style=\"{BANNER_STYLE}\">{html.escape(text)}</div>"
    said = feedback_page.decode("utf-8")
    found = re.search(r"<body[^>]*>", said)
    at = found.end() if found else 0
    return (said[:at] + banner + said[at:]).encode("utf-8", "replace")
