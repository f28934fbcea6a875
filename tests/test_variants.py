"""perfaudit/variants.py: each student's variant of notebook 5 and seed, from their id, found where the notebook
runs; and the checker's --id, which states it in a student's copy."""

from collections import Counter

import pytest

from perfaudit import check, handout, variants


def test_the_rule_is_stable_spreads_the_class_and_changes_with_the_term():
    assert variants.assigned("jdoe") == variants.assigned("jdoe")
    # the rule as the module's docstring states it, so that an instructor can reproduce it
    import hashlib
    digest = hashlib.sha256(f"{variants.TERM}:jdoe".encode()).digest()
    assert variants.assigned("jdoe").variant == handout.VARIANTS[int.from_bytes(digest[:8], "big") % 3]
    spread = Counter(variants.assigned(f"s{n}").variant for n in range(600))
    assert set(spread) == set(handout.VARIANTS) and min(spread.values()) > 150
    moved = sum(variants.assigned(f"s{n}") != variants.assigned(f"s{n}", term="another term") for n in range(60))
    assert moved > 30  # a new term draws again: the seed changes for nearly everyone, the variant for about 2/3


def test_the_grader_s_id_comes_first_then_the_hub_login_then_the_file(tmp_path):
    (tmp_path / "work" / "performance-audit").mkdir(parents=True)
    notebooks = tmp_path / "work" / "performance-audit"
    variants.write_id("  jdoe \n", tmp_path)
    assert variants.student_id({}, notebooks) == ("jdoe", str(tmp_path / variants.ID_FILE))
    assert variants.student_id({variants.HUB_USER_ENV: "hubuser"}, notebooks)[0] == "hubuser"
    both = {variants.HUB_USER_ENV: "hubuser", variants.STUDENT_ENV: "graded"}
    assert variants.student_id(both, notebooks) == ("graded", variants.STUDENT_ENV)
    assert variants.mine(both, notebooks) == variants.assigned("graded")
    assert "the id from PERFAUDIT_STUDENT" in str(variants.mine(both, notebooks))


def test_no_id_says_how_to_state_one(tmp_path):
    with pytest.raises(variants.NoStudentId, match="student-id.txt beside your notebooks .*make id ID=yourid"):
        variants.mine({}, tmp_path)
    (tmp_path / variants.ID_FILE).write_text("x" * 5000)  # no id: the file is not read past MAX_ID_CHARS
    assert variants.student_id({}, tmp_path) is None
    for bad in ("", "two\nlines", "y" * 201):
        with pytest.raises(ValueError, match="one line"):
            variants.write_id(bad, tmp_path)


def test_the_checker_states_the_id_and_says_the_variant(tmp_path_factory):
    copy, elsewhere = tmp_path_factory.mktemp("copy"), tmp_path_factory.mktemp("elsewhere")
    lines = check.state_id(" jdoe ", copy)
    assert (copy / variants.ID_FILE).read_text() == "jdoe\n"
    assert str(variants.assigned("jdoe")) in lines[0]
    # the kernel runs in a folder of its own: the checker passes on the id found from the notebook's folder
    assert check.student_env(copy / "work", instructor=False) == {variants.STUDENT_ENV: "jdoe"}
    assert check.student_env(elsewhere, instructor=False) == {}
    assert check.student_env(elsewhere, instructor=True) == {variants.STUDENT_ENV: variants.INSTRUCTOR}
