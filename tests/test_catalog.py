"""The cheat catalog and the valid catalog (perfaudit/fixtures/catalog/): exact scores from the gradebook.

Every case is graded twice, by plain `nbgrader autograde` + `generate_feedback` in one course directory and by
`python -m perfaudit.grade` in another: each cheat scores nothing on what it attacks and keeps the rest, each
valid variant keeps full marks, the two graders agree, no cheat reads or writes the gradebook or changes any
file outside the course's output folders, nothing a kernel wrote raw reaches the grader's output, and no
feedback shows a hidden test. A case whose `hole` says the grader gives another score today is expected to
fail (strict: once the grader closes the hole, the test fails until the `hole` note is removed).

Slow (both graders, every case: about 15 minutes on 2 cores). While working on a few cases,
PERFAUDIT_CATALOG=name,name grades only the cases whose names contain one of those words; the others skip.
"""

import hashlib
import html
import io
import os
import re
import tempfile
from pathlib import Path

import nbformat
import pytest
from conftest import hidden_test_lines, make_course
from nbgrader.api import Gradebook
from once_per_run import once_per_run

from perfaudit import ASSIGNMENT, course, notebooks, paths
from perfaudit.fixtures import catalog
from perfaudit.grade.run import Options, run

pytestmark = pytest.mark.slow

SELECTED = [word for word in os.environ.get("PERFAUDIT_CATALOG", "").split(",") if word.strip()]
GRADED = [name for name in catalog.CASES if not SELECTED or any(word.strip() in name for word in SELECTED)]
# What grading writes in a course directory; every other file there must be left as it was.
OUTPUTS = re.compile(r"^(autograded/|feedback/|reports/|gradebook\.db|grades\.csv|autograded$)")
ESCAPED = "escaped-by-a-student.txt"  # what cheat-forged-snapshot-escapes tries to write outside the grader's folder
ESCAPE_SEQUENCE = re.compile(r"\x1b|pwned")


def _notebook(stage):
    return paths.STAGES[stage].removesuffix(".ipynb")


def _expected(name):
    return {_notebook(stage): points for stage, points in catalog.CASES[name].expected.items()}


def _scores(root, name):
    got = course.scores(root).get(name, {})
    return {notebook: got.get(notebook, (None,))[0] for notebook in _expected(name)}


def _state(root):
    """{path: (sha256, mtime)} of every file in the course that is not grading's output."""
    state = {}
    for path in sorted(Path(root).rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not OUTPUTS.match(relative):
            state[relative] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return state


def _course_with_cases(root):
    make_course(root)
    for case in GRADED:
        catalog.write_case(case, root / "submitted")
    return root


def _grade_plainly(root):
    _course_with_cases(root)
    before = _state(root)
    output = course.nbgrader("autograde", ASSIGNMENT, course_dir=root)
    output += course.nbgrader("generate_feedback", ASSIGNMENT, course_dir=root)
    return before, output


def _grade_in_batch(root):
    _course_with_cases(root)
    before = _state(root)
    out = io.StringIO()
    here = os.getcwd()
    os.chdir(root)  # where an instructor runs it, as nbgrader: in the course directory
    try:
        run(Options(course_dir=root, workers=os.cpu_count() or 1, progress=False), out=out)
    finally:
        os.chdir(here)
    return before, out.getvalue()


# Each grader grades the catalog once per test run, in whichever test process asks first (once_per_run): the
# tests of each grader form a group of their own, so that two processes grade the two at the same time.
@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    root, (before, output) = once_per_run(tmp_path_factory, "catalog-plain", _grade_plainly)
    return root, before, output


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root, (before, output) = once_per_run(tmp_path_factory, "catalog-batch", _grade_in_batch)
    return root, before, output


@pytest.fixture(params=[pytest.param("plain", marks=pytest.mark.xdist_group("catalog-plain")),
                        pytest.param("batch", marks=pytest.mark.xdist_group("catalog-batch"))])
def graded(request):
    """(course root, state of its files before grading, what the grader printed), for each grader."""
    return request.getfixturevalue(request.param)


def _params(names):
    """The cases, a case with a known hole marked as an expected failure that says what happens today (strict: the
    test fails once the grader closes the hole, until its `hole` note goes)."""
    return [pytest.param(name, marks=[pytest.mark.xfail(strict=True, reason=catalog.CASES[name].hole)]
                         if catalog.CASES[name].hole else []) for name in sorted(names)]


def _graded_only(name):
    if name not in GRADED:
        pytest.skip(f"not graded: PERFAUDIT_CATALOG={','.join(SELECTED)}")


def _autograded(root, name, stage):
    return nbformat.read(root / "autograded" / name / ASSIGNMENT / paths.STAGES[stage], as_version=4)


def _printed(nb):
    """What the notebook's student and instructor cells printed, as one text."""
    return "".join(str(o.get("text", "")) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_every_class_of_attack_has_cheats_named_by_what_they_do():
    kinds = {case.kind for case in catalog.CHEATS.values()}
    assert kinds == set(catalog.KINDS)
    assert all(name.startswith("cheat-") and case.attacks for name, case in catalog.CHEATS.items())
    assert all(name.startswith("valid-") and not case.hole for name, case in catalog.VALID.items())
    assert sum(case.kind == catalog.INVENTIONS for case in catalog.CHEATS.values()) >= 3


@pytest.mark.parametrize("name", _params(catalog.CHEATS))
def test_cheat_earns_nothing_on_what_it_attacks(graded, name):
    _graded_only(name)
    root, _, _ = graded
    assert _scores(root, name) == _expected(name), catalog.CHEATS[name].attacks


@pytest.mark.parametrize("name", _params(catalog.VALID))
def test_valid_variant_keeps_full_marks(graded, name):
    _graded_only(name)
    root, _, _ = graded
    assert _expected(name) == {_notebook(stage): catalog.FULL[stage] for stage in catalog.VALID[name].expected}
    assert _scores(root, name) == _expected(name)


def test_no_cheat_reads_or_writes_the_gradebook(graded):
    root, _, _ = graded
    if "cheat-reads-instructor-files" in GRADED:
        printed = _printed(_autograded(root, "cheat-reads-instructor-files", 1))
        assert "what the cheat found: nothing" in printed, printed[:2000]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for name in GRADED:
            for notebook in gradebook.find_submission(ASSIGNMENT, name).notebooks:
                assert all(grade.manual_score is None for grade in notebook.grades), (name, notebook.name)


def test_grading_changes_no_file_outside_its_output_folders(graded):
    """Other students' submissions, source/, the release and the configuration: byte for byte and mtime for mtime
    as before grading; nothing new beside them; nothing a kernel tried to escape to."""
    root, before, _ = graded
    after = _state(root)
    assert {k: v for k, v in after.items() if before.get(k) != v} == {}
    assert sorted(set(before) - set(after)) == []
    for folder in (root, root.parent, Path(tempfile.gettempdir()), Path("/")):
        assert not (folder / ESCAPED).exists(), folder / ESCAPED
    assert not list(root.rglob(ESCAPED))


def test_what_a_kernel_writes_raw_never_reaches_the_grader_s_output(graded):
    root, _, printed = graded
    assert not ESCAPE_SEQUENCE.search(printed), ESCAPE_SEQUENCE.search(printed)
    if "cheat-raw-bytes-on-fd-1-and-2" in GRADED:
        path = root / "autograded" / "cheat-raw-bytes-on-fd-1-and-2" / ASSIGNMENT / paths.STAGES[1]
        # The notebook keeps at most TrustedExecute.max_output_bytes (10 MiB) of output, then a note. (What the
        # kernel echoes of its own fd 1 and 2 into its cell's output is the student's output, like a print.)
        assert path.stat().st_size < 12 * 2**20
        assert "the grader dropped the rest of this output" in _printed(nbformat.read(path, as_version=4))
        for page in (root / "feedback" / "cheat-raw-bytes-on-fd-1-and-2").rglob("*.html"):
            assert page.stat().st_size < 24 * 2**20


def test_a_limit_that_kills_a_process_costs_no_other_student_anything(graded):
    """The hogs met the memory limit (a process was killed), and the kernel went on: its later test counted."""
    _graded_only("cheat-memory-hogs-in-processes")
    root, _, _ = graded
    printed = _printed(_autograded(root, "cheat-memory-hogs-in-processes", 1))
    assert re.search(r"the hogs exited with \[.*-9", printed), printed[-2000:]


def test_feedback_shows_no_hidden_test(graded):
    root, _, _ = graded
    secret = {" ".join(line.split()) for line in hidden_test_lines()}
    pages = sorted((root / "feedback").glob(f"*/{ASSIGNMENT}/*.html"))
    assert len(pages) == sum(len(catalog.CASES[name].expected) for name in GRADED)
    for page in pages:
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        text = "\n".join(" ".join(line.split()) for line in text.splitlines())
        leaked = [line for line in secret if line in text]
        assert leaked == [], f"{page} shows hidden test lines"


def test_student_cells_of_the_autograded_notebooks_show_no_hidden_test(graded):
    """What the kernel printed (a cheat searched the whole file system it can read) holds no hidden-test line."""
    root, _, _ = graded
    secret = {" ".join(line.split()) for line in hidden_test_lines()}
    for name in GRADED:
        for stage in catalog.CASES[name].expected:
            nb = _autograded(root, name, stage)
            cells = [c for c in nb.cells if not notebooks.nbgrader_meta(c).get("grade")]
            student = nbformat.v4.new_notebook(cells=cells)
            text = "\n".join(" ".join(line.split()) for line in _printed(student).splitlines())
            assert [line for line in secret if line in text] == [], (name, stage)


@pytest.mark.xdist_group("catalog-plain")  # last of its group: by then the other process has graded the batch
def test_batch_command_gives_the_same_scores(plain, batch):
    assert {name: _scores(batch[0], name) for name in GRADED} == {name: _scores(plain[0], name) for name in GRADED}
