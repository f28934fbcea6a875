"""The cheat catalog and the valid catalog (perfaudit/catalog.py): exact scores from the gradebook.

Every case is graded twice, by plain `nbgrader autograde` + `generate_feedback` in one course directory and by
`python -m perfaudit.grade` in another: each cheat scores nothing on what it attacks, each valid variant keeps
full marks, the two graders agree, no cheat reads or writes the gradebook, and no feedback shows a hidden test.
"""

import html
import io
import os
import re

import nbformat
import pytest
from conftest import hidden_test_lines, make_course
from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT, catalog, confirm, course, paths
from perfaudit.grade import summary
from perfaudit.grade.feedback import HideHiddenTests
from perfaudit.grade.run import Options, run


def _expected(name):
    return {paths.STAGES[stage].removesuffix(".ipynb"): points for stage, points in catalog.CASES[name].expected.items()}


def _scores(root, name):
    got = course.scores(root)[name]
    return {notebook: got[notebook][0] for notebook in _expected(name)}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("catalog-plain"))
    for name in catalog.CASES:
        catalog.write_case(name, root / "submitted")
    course.nbgrader("autograde", ASSIGNMENT, course_dir=root)
    course.nbgrader("generate_feedback", ASSIGNMENT, course_dir=root)
    return root


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("catalog-batch"))
    for name in catalog.CASES:
        catalog.write_case(name, root / "submitted")
    out = io.StringIO()
    run(Options(course_dir=root, workers=os.cpu_count() or 1, progress=False), out=out)
    return root, out.getvalue()


@pytest.mark.parametrize("name", sorted(catalog.CHEATS))
def test_cheat_earns_nothing_on_what_it_attacks(plain, name):
    assert _scores(plain, name) == _expected(name), catalog.CHEATS[name].attacks


@pytest.mark.parametrize("name", sorted(catalog.VALID))
def test_valid_variant_keeps_full_marks(plain, name):
    assert _scores(plain, name) == _expected(name)
    assert _expected(name) == {paths.STAGES[s].removesuffix(".ipynb"): catalog.FULL[s] for s in catalog.VALID[name].expected}


def test_batch_command_gives_the_same_confirmed_scores(plain, batch):
    root, summary = batch
    assert {name: _scores(root, name) for name in catalog.CASES} == {name: _scores(plain, name) for name in catalog.CASES}
    assert "could not be confirmed" in summary  # the instructor sees why a cheat's points did not stand


def test_instructor_reads_why_a_test_was_not_confirmed_and_the_student_a_neutral_message(plain):
    path = plain / "autograded" / "cheat-trace-count-set-by-hand" / ASSIGNMENT / paths.STAGES[2]
    events, _ = summary._kernel_events_and_first_failure(path)
    assert any(e.startswith("'two_traces' could not be confirmed: calls at [") for e in events), events
    feedback, _ = HideHiddenTests().preprocess(nbformat.read(path, as_version=4), {})
    shown = [o for c in feedback.cells for o in c.get("outputs", []) if o.get("ename") == confirm.NOT_CONFIRMED]
    assert shown and all(o.evalue == confirm.STUDENT_MESSAGE and "calls at" not in "".join(o.traceback) for o in shown)


@pytest.mark.parametrize("grader", ["plain", "batch"])
def test_no_cheat_reads_or_writes_the_gradebook(plain, batch, grader):
    root = plain if grader == "plain" else batch[0]
    found = root / "autograded" / "cheat-reads-instructor-files" / ASSIGNMENT / "what-the-cheat-found.txt"
    assert found.read_text() == "nothing", found.read_text()[:2000]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for name in catalog.CASES:
            for notebook in gradebook.find_submission(ASSIGNMENT, name).notebooks:
                assert all(grade.manual_score is None for grade in notebook.grades), (name, notebook.name)


@pytest.mark.parametrize("grader", ["plain", "batch"])
def test_feedback_shows_no_hidden_test(plain, batch, grader):
    root = plain if grader == "plain" else batch[0]
    secret = hidden_test_lines()
    pages = sorted((root / "feedback").glob(f"*/{ASSIGNMENT}/*.html"))
    assert len(pages) == sum(len(case.expected) for case in catalog.CASES.values())
    for page in pages:
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        text = "\n".join(" ".join(line.split()) for line in text.splitlines())
        leaked = [line for line in secret if " ".join(line.split()) in text]
        assert leaked == [], f"{page} shows hidden test lines"
