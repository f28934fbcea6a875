"""Text from anywhere, made safe to show a person (perfaudit/autograde/text.py)."""

from perfaudit.autograde.text import printable


def test_control_characters_are_escaped_and_newlines_and_tabs_kept():
    assert printable("a\x1b]0;title\x07b\n\tc") == "a\\x1b]0;title\\x07b\n\tc"


def test_long_text_is_cut_with_a_note_of_how_much():
    assert printable("x" * 12, limit=10) == "x" * 10 + " ... [2 more characters cut by the grader]"
