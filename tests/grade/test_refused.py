"""A notebook refused at intake stays "not graded" until resolved (perfaudit/grade/refused.py)."""

from perfaudit.grade import refused


def test_a_refusal_holds_until_the_file_is_in_the_submitted_folder_and_reaches_what_reuses_it(tmp_path):
    said = {"refused": {"03-evidence.ipynb": "two files claim it"}}
    found = refused.unresolved(tmp_path, said)
    assert found["03-evidence"] == "not graded: two files claim it"
    assert found["04-integrated-audit"].startswith("not graded: it reuses 03-evidence.ipynb")
    (tmp_path / "03-evidence.ipynb").write_text("{}")
    assert refused.unresolved(tmp_path, said) == {}
    assert refused.unresolved(tmp_path, None) == {}


def test_grades_csv_gives_no_score_to_a_student_with_a_notebook_not_graded(tmp_path):
    path = tmp_path / "grades.csv"
    path.write_text("assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,"
                    "late_submission_penalty,score,max_score\n"
                    "hw,None,None,ann_1,Doe, Ann,None,5.0,0.0,5.0,5.0\n"  # a comma in a name: nbgrader writes it so
                    "hw,None,None,eve_2,Two,Eve,None,2.0,0.0,2.0,5.0\n")
    refused.mark_grades_csv(path, {"eve_2": {"b": "not graded: 2 files claim eve_2/b.ipynb; pick one",
                                             "c": 'not graded: it reuses b, "pick one"'}})
    assert path.read_text().splitlines() == [
        "assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,late_submission_penalty,score,"
        "max_score,not_graded",
        "hw,None,None,ann_1,Doe, Ann,None,5.0,0.0,5.0,5.0,",
        'hw,None,None,eve_2,Two,Eve,None,,,,5.0,"b: not graded: 2 files claim eve_2/b.ipynb; pick one; c: not '
        'graded: it reuses b, ""pick one"""']
