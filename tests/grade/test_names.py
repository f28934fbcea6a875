"""Which names the grader takes (perfaudit/grade/names.py): UTF-8 text, no control characters, no formulas."""

import os

from perfaudit.grade import names


def test_names_that_are_not_text_or_hold_control_characters_are_refused_with_a_reason():
    assert names.problem("alice") is None
    assert "not valid UTF-8" in names.problem(os.fsdecode(b"bad\xff"))
    assert "control characters" in names.problem("two\nlines")
    assert "formula" in names.student_folder_problem("=HYPERLINK(1)")
    assert names.student_folder_problem("alice") is None and names.problem("=ok-as-a-file") is None



def test_a_folder_a_csv_file_must_quote_is_refused_as_a_student_id():
    """'mallory,,,,20.0,0.0,20.0,20.0' as a student id: every reader of every file the course writes must get its
    quoting right; refused at the door, none has to."""
    assert "comma or a double quote" in names.student_folder_problem("mallory,,,,20.0,0.0,20.0,20.0")
    assert "comma or a double quote" in names.student_folder_problem('quoted"name')
    assert names.student_id_problem("Ann Lee") is None and "formula" in names.student_id_problem("+cmd")
