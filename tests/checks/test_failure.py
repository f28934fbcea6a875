"""How a check fails (perfaudit/checks/failure.py): its message, and the traceback a student sees of it."""

import sys

import pytest

from perfaudit.checks import failure


def _caught(function, *args):
    """(value, traceback) of what function(*args) raised."""
    try:
        function(*args)
    except Exception:
        return sys.exc_info()[1:]
    raise AssertionError("nothing was raised")


def _students_cell(message):
    failure.fail(message)


def test_fail_raises_an_assertion_error_with_the_message_alone():
    with pytest.raises(AssertionError) as raised:
        failure.fail("expected 3 traces, found 1: look at how you count")
    assert raised.value.args == ("expected 3 traces, found 1: look at how you count",)


def test_an_error_is_a_check_s_when_its_innermost_frame_is_in_the_checks_folder():
    assert failure.raised_by_a_check(_caught(_students_cell, "a check's message")[1])

    def own_assert():
        assert 1 == 2, "the student's own"
    assert not failure.raised_by_a_check(_caught(own_assert)[1])
    assert not failure.raised_by_a_check(None)


def test_the_student_s_traceback_stops_at_the_check_and_wraps_its_message():
    message = "found " + " ".join(["word"] * 40)
    value, tb = _caught(_students_cell, message)
    lines = failure.student_traceback(value, tb)
    assert lines[0] == "Traceback (most recent call last):"
    shown = "\n".join(lines)
    assert "_students_cell" in shown and "failure.fail(message)" in shown
    assert "checks/failure.py" not in shown and "raise AssertionError" not in shown
    assert "(the check's own code is left out: its message says what it found)" in lines
    wrapped = lines[lines.index("(the check's own code is left out: its message says what it found)") + 1:]
    assert wrapped[0].startswith("AssertionError: found word")
    assert all(len(line) <= failure.LINE_CHARS for line in wrapped) and len(wrapped) > 1
    assert all(line.startswith("  ") for line in wrapped[1:])
    assert " ".join(line.strip() for line in wrapped) == f"AssertionError: {message}"

