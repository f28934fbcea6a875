"""The roster make hub-users reads: one `name role` a line; a name that is no Linux account name is refused."""

import pytest

from perfaudit.hub import accounts


def test_a_roster_lists_names_and_roles(tmp_path):
    roster = tmp_path / "roster.txt"
    roster.write_text("# course 101\nalovelace instructor\ns2403117  student\ns-24_03118\n\n")
    assert accounts.read_roster(roster) == [("alovelace", "instructor"), ("s2403117", "student"),
                                            ("s-24_03118", "student")]


@pytest.mark.parametrize("line", ["Ada student", "ada teacher", "ada/../root student", "ada;rm student",
                                  "-oroot student", "2403117 student"])
def test_a_roster_line_that_is_not_an_account_is_refused(tmp_path, line):
    roster = tmp_path / "roster.txt"
    roster.write_text(f"{line}\n")
    with pytest.raises(SystemExit, match="roster.txt:1: expected"):
        accounts.read_roster(roster)
