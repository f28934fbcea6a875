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
