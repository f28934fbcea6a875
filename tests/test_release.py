"""The student release: generated from source/, current, runnable, and free of solutions and hidden tests."""

import json
import re

import pytest
from courses import make_course

from perfaudit import ASSIGNMENT, notebooks, paths
from perfaudit.instructor import course

NOTEBOOKS = sorted(paths.STAGES.values())


def _cells(path):
    return json.loads(path.read_text())["cells"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_release_equals_fresh_generate_assignment(course_dir, name):
    fresh = course_dir / "notebooks" / ASSIGNMENT / name
    assert json.loads((paths.RELEASE / name).read_text()) == json.loads(fresh.read_text()), (
        f"notebooks/{ASSIGNMENT}/{name} is stale: run `make release` and commit it."
    )


def test_release_holds_only_the_notebooks():
    assert sorted(p.name for p in paths.RELEASE.iterdir()) == NOTEBOOKS


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_source_notebooks_carry_no_outputs(name):
    code = [c for c in _cells(paths.SOURCE / name) if c["cell_type"] == "code"]
    assert all(not c["outputs"] and c["execution_count"] is None for c in code)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_release_holds_no_solution_or_hidden_test_line(name):
    released = "\n".join("".join(c["source"]) for c in _cells(paths.RELEASE / name))
    secret = re.compile(r"### BEGIN (?:SOLUTION|HIDDEN TESTS)\n(.*?)### END", re.S)
    source = "\n".join(c.source for c in notebooks.read(paths.SOURCE / name).cells)
    shown = {line.strip() for line in secret.sub("", source).splitlines()}  # lines the release may repeat
    secret_lines = {line.strip() for block in secret.findall(source) for line in block.splitlines()}
    secret_lines = {line for line in secret_lines - shown if len(line) > 12}
    assert secret_lines, "the source notebook should hold solutions and hidden tests"
    leaked = sorted(line for line in secret_lines if line in released)
    assert not leaked, f"the release shows instructor-only lines: {leaked[:3]}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_graded_cell_says_what_it_checks_and_hides_a_test(name):
    for cell in notebooks.read(paths.SOURCE / name).cells:
        meta = notebooks.nbgrader_meta(cell)
        if meta.get("grade"):
            assert cell.source.startswith("# Check: "), meta["grade_id"]
            assert "### BEGIN HIDDEN TESTS" in cell.source, meta["grade_id"]
            assert meta["points"] > 0


def test_nbgrader_validate_passes_on_source_and_invert_passes_on_release(tmp_path):
    # Run on a temporary course's copies so nothing is written into the repository, nor into the course other
    # tests share (running the notebooks writes their evidence beside them, in runs/).
    course_dir = make_course(tmp_path)
    source = sorted(str(p) for p in (course_dir / "source" / ASSIGNMENT).glob("*.ipynb"))
    release = sorted(str(p) for p in (course_dir / "notebooks" / ASSIGNMENT).glob("*.ipynb"))
    out = course.nbgrader("validate", *source, course_dir=course_dir)
    assert out.count("Success! Your notebook passes all the tests.") == len(NOTEBOOKS), out
    out = course.nbgrader("validate", "--invert", *release, course_dir=course_dir)
    assert out.count("Success! The notebook does not pass any tests.") == len(NOTEBOOKS), out
