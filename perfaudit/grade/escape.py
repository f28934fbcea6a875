"""Text that came from a submission, made safe to show on one line of the instructor's terminal or in a report.

Students choose their file names, their folder names and the messages of their exceptions. Shown as they are, an
escape code can clear or recolour the terminal, and a newline can start a line that looks like the tool's own
("  classmate_7 01-first-call-vs-steady (0/5): ..."). Here every character that is not printable is shown as its
Python escape (a newline as \\n, ESC as \\x1b, a right-to-left override as \\u202e), a byte of a file name that is
not UTF-8 as \\xNN, and the text is cut to a length one line can hold. A run of blank characters (spaces, tabs,
Unicode spaces, the fillers that print as nothing) is shown as one space and none is kept at either end: padding
could otherwise push a forged row, indented like the tool's own, to the start of a line the terminal wraps, at
whatever width the terminal has.

A log message may be many lines (a traceback): control_free keeps its newlines and tabs and escapes every other
character one_line would. The course's nbgrader_config.py puts EscapeControlCharacters on the handler that prints
nbgrader's log (its own lines and the plug-ins'), so plain `nbgrader autograde` shows a cell's grade_id, a notebook's
file name or a student's error message the same way.
"""

import logging
import re

MAX_CHARS = 2000  # a bound on what one line may print, far above any reason the grader gives
# Printable characters that show as nothing: Hangul fillers and the blank braille pattern.
INVISIBLE = "\u115f\u1160\u2800\u3164\uffa0"
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # shown escaped (\\n), never as a space: the line stays whole
_BLANK_RUN = re.compile(f"(?:[^\\S{LINE_BREAKS}]|[{INVISIBLE}])+")


def one_line(text: object, limit: int = MAX_CHARS) -> str:
    """Text from anywhere as one printable line: nothing in it can pose as a line of the tool's own."""
    text = _BLANK_RUN.sub(" ", str(text)).strip(" ")
    cut = len(text) - limit
    shown = "".join(_shown(char) for char in (text[:limit] if cut > 0 else text))
    return f"{shown} ... [{cut} more characters]" if cut > 0 else shown


KEPT = "\n\t"  # what control_free leaves as it is: a log message's lines, and its indents


def control_free(text: object) -> str:
    """Text from anywhere with every character a terminal acts on or cannot show escaped (ESC as \\x1b, a carriage
    return as \\r), newlines and tabs kept: the lines of a log message, none of which can move the cursor or recolour
    the terminal."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(char if char in KEPT or char.isprintable() else _shown(char) for char in text)


CONTINUED = "\n    | "  # how a log record's later lines start: never as one of the tool's own lines does


def log_lines(text: object) -> str:
    """A log record's text control_free, each line after the first marked as its continuation (CONTINUED): a
    newline in a student's grade_id or error message cannot start a line that reads as the tool's own
    ("[AutogradeApp | INFO] ...")."""
    return control_free(text).replace("\n", CONTINUED)


class EscapeControlCharacters(logging.Filter):
    """A handler's filter that passes every record with its final message (msg % args) and its traceback's text
    as log_lines: what the handler prints holds no escape code and no line a student started, whoever logged it
    and whatever they logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = log_lines(record.getMessage()), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = log_lines(record.exc_text)
        if record.stack_info:
            record.stack_info = log_lines(record.stack_info)
        return True


def _shown(char):
    if "\udc80" <= char <= "\udcff":  # a byte that was not UTF-8, as Python reads it from a file name
        return f"\\x{ord(char) - 0xdc00:02x}"
    return char if char.isprintable() else repr(char)[1:-1]
