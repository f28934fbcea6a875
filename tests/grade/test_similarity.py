"""The similarity page (perfaudit/grade/similaritypage.py) on a class of real notebook 05 submissions.

Three students answer honestly, each in their own way; two copy: one renames a classmate's variables, one puts a
classmate's functions in another order; a third copy has a hostile id and plants markup in its code. Others send
what a class sends: an untouched release, a file that is not JSON, one with no cells, a huge cell, a folder whose
name holds an escape code. Read from submitted/ directly (no kernel, no gradebook): seconds.
"""

import re

import pytest
from similar_submissions import HONEST_A, HONEST_B, HONEST_C, NOTEBOOK, RELEASE, filled, functions_reordered, \
    release_notebook, renamed, submit

from perfaudit.grade import classreport, similarity, similaritypage, solutions

HOSTILE_ID = "<script>alert(1)"  # a folder name intake lets through: no control character, comma or quote
PLANTED = '<script>alert(2)</script><img src="http://127.0.0.1:9/x.png">'
RENAMES = {"traces": "n_traces", "counting_jit": "my_jit", "counted": "wrapper", "start": "t_start",
           "size": "max_len", "err": "residual", "x_padded": "xp", "y_padded": "yp", "losses": "loss_list"}
MARKDOWN = {"cell_type": "markdown", "metadata": {}, "source": "I measured the loop twice and found it retraced " * 20}


@pytest.fixture(scope="module")
def submitted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("course") / "submitted"
    for student, answers in [("honest_a", HONEST_A), ("honest_b", HONEST_B), ("honest_c", HONEST_C)]:
        notebook = filled(answers)
        notebook["cells"].append(dict(MARKDOWN))  # the same markdown answer: never compared
        submit(folder, student, notebook)
    submit(folder, "copy_renames_a", filled(renamed(HONEST_A, RENAMES)))
    submit(folder, "copy_reorders_b", filled(functions_reordered(HONEST_B)))
    with_markup = {**HONEST_C, "time_loop": HONEST_C["time_loop"] + f"# {PLANTED}\nNOTE = '{PLANTED}'\n"}
    submit(folder, HOSTILE_ID, filled(with_markup))
    submit(folder, "unfilled_1", release_notebook())  # two untouched releases: alike only in the course's code
    submit(folder, "unfilled_2", release_notebook())
    submit(folder, "not_json", "{'cells': [")
    submit(folder, "no_cells", {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    submit(folder, "huge_cell", filled({"time_loop": "x = 1\n" * (solutions.MAX_CELL_CHARS // 6 + 1)}))
    submit(folder, "escape\x1b[2Jcode", filled(HONEST_A))
    return folder


@pytest.fixture(scope="module")
def page(submitted, tmp_path_factory):
    path, _ = similaritypage.build(tmp_path_factory.mktemp("reports"), submitted, RELEASE)
    return path.read_text(encoding="utf-8")


def _pairs(submitted):
    found = solutions.read(submitted, RELEASE)
    every_pair = similarity.similar_pairs(found.code[NOTEBOOK], found.release[NOTEBOOK].course_code, 0.0, 0)
    return found, every_pair


def test_the_copies_pair_with_their_source_and_honest_answers_do_not(submitted):
    found, every_pair = _pairs(submitted)
    listed = {(p.first, p.second) for p in every_pair
              if p.larger_share >= similarity.THRESHOLD and p.matched_chars >= similarity.MIN_MATCHED_CHARS}
    assert listed == {("copy_renames_a", "honest_a"), ("copy_reorders_b", "honest_b"), (HOSTILE_ID, "honest_c")}
    honest = {"honest_a", "honest_b", "honest_c"}
    honest_shares = [p.larger_share for p in every_pair if {p.first, p.second} <= honest]
    copy_shares = [p.larger_share for p in every_pair if (p.first, p.second) in listed]
    assert len(honest_shares) == 3 and max(honest_shares) < similarity.THRESHOLD <= min(copy_shares)


def test_the_course_code_is_left_out(submitted):
    """Two untouched releases share every line, all of it the course's: no fingerprint is left to match."""
    _, every_pair = _pairs(submitted)
    unfilled = [p for p in every_pair if (p.first, p.second) == ("unfilled_1", "unfilled_2")]
    assert unfilled == [] or unfilled[0].larger_share == 0


def test_only_solution_cells_are_compared(submitted):
    found, _ = _pairs(submitted)
    code = found.code[NOTEBOOK]["honest_a"]
    assert "def fixed_train" in code and "I measured the loop" not in code  # markdown left out
    assert "checks.check_count_traces" not in code  # the release's other cells left out


def test_the_page_lists_pairs_with_their_figures_and_code(page):
    section = page.split("<h2>05-audit</h2>")[1].split("<h2")[0]
    assert "3 pair(s) over the threshold" in section
    assert "copy_renames_a" in section and "honest_a" in section and "copy_reorders_b" in section
    assert "100%" in section and "<mark>" in section and "my_jit" in section  # the copy's own code, marked
    assert f"{similarity.THRESHOLD:.0%}" in page and "changes no grade" in page
    for other in ("01-first-call-vs-steady", "02-retracing", "03-evidence", "04-integrated-audit"):
        assert f"<h2>{other}</h2>\n<p class=\"note\">0 submission(s) compared, 0 pair(s)" in page


def test_broken_submissions_are_named_and_skipped(page, submitted):
    skipped = page.split('<h2 id="skipped">')[1]
    for student, why in [("not_json", "not JSON"), ("no_cells", "no cells"), ("huge_cell", "over the 20000"),
                         ("escape\\x1b[2Jcode", "control characters")]:
        assert re.search(rf"<td>{re.escape(student)}</td><td>[^<]*</td><td class=\"msg\">[^<]*{why}", skipped), student
    assert "\x1b" not in page


def test_no_student_text_becomes_markup_and_no_request_is_made(page):
    assert "<script" not in page.lower()  # neither the planted script nor the id; the page has no script of its own
    assert "&lt;script&gt;alert(1)" in page and "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert not re.search(r"<img", page)
    targets = re.findall(r"(?:href|src)=\"([^\"]*)\"", page)
    assert targets and all(t.startswith("#") or t == "class-report.html" for t in targets), targets
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)[1]
    assert policy == classreport.POLICY and "default-src 'none'" in policy


def test_the_class_report_links_the_page_and_survives_its_failure(submitted, tmp_path):
    link = classreport.similarity_link(tmp_path, submitted, RELEASE)
    assert 'href="similarity.html"' in link and (tmp_path / similaritypage.PAGE).is_file()
    broken_release = tmp_path / "release"
    broken_release.mkdir()
    (broken_release / f"{NOTEBOOK}.ipynb").write_text("not a notebook")
    failed = classreport.similarity_link(tmp_path / "other", submitted, broken_release)
    assert "was not written (JSONDecodeError" in failed and "<script" not in failed
