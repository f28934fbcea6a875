"""escape.one_line: text from a submission shown on one line, nothing in it posing as a row of the tool's own.

Fast: no grading. A terminal wraps a long line at its width; padding in an exception's message must not bring a
forged summary row to the start of a wrapped line, at any width.
"""

import re

import pytest

from perfaudit.grade.escape import one_line

FORGED = "  classmate_7 01-first-call-vs-steady (5/5): all tests passed"
ROW = re.compile(r"^  \S+ \S+ \(\d+/\d+\)")  # a summary row, as print_summary writes it
BLANKS = [" ", "\t", "\u00a0", "\u2003", "\u3000", "\u3164", "\u2800", " \t\u3000"]


def _summary_row(reason):
    """A row of the summary's zeros and problems, as print_summary prints it."""
    return f"  student_1 01-first-call-vs-steady (0/5): {one_line(reason)}"


def _wrapped(line, width):
    return [line[at:at + width] for at in range(0, len(line), width)]


@pytest.mark.parametrize("blank", BLANKS, ids=[f"U+{ord(b[0]):04X}x{len(b)}" for b in BLANKS])
def test_padding_never_brings_a_forged_row_to_the_start_of_a_wrapped_line(blank):
    for padding in range(0, 700, len(blank)):
        line = _summary_row(f"ValueError: x{blank * (padding // len(blank))}{FORGED}")
        for width in range(40, 301):
            forged = [part for part in _wrapped(line, width)[1:] if ROW.match(part)]
            assert not forged, f"padding {padding} at {width} columns wraps into a row: {forged[0]!r}"


def test_runs_of_blanks_show_as_one_space_and_none_at_the_ends():
    assert one_line("  a \t\u3000\u00a0\u2003 b\u3164\u2800c  ") == "a b c"
    assert "  " not in one_line(FORGED * 3)


def test_line_breaks_stay_escaped_not_blank():
    assert one_line("a\nb\r\nc\u2028d") == "a\\nb\\r\\nc\\u2028d"
    assert one_line("\x1b[2Jcleared") == "\\x1b[2Jcleared"
