"""Verdicts confirmed outside the kernel (perfaudit/confirm.py): a rule for every test, and the protocol on its
own: a harness that hangs or dies after a confirmed test keeps that confirmation. The cheats and valid variants
graded end to end are the catalogs of tests/test_catalog.py."""

import time

import nbformat
import pytest
from nbformat.notebooknode import NotebookNode

from perfaudit import confirm, execute, paths, samples

def test_every_graded_test_in_source_has_a_rule():
    graded = []
    for filename in paths.STAGES.values():
        nb = execute.read(paths.SOURCE / filename)
        graded += [cell.metadata.nbgrader["grade_id"] for _, cell in confirm.graded_tests(nb)]
    assert len(graded) == len(set(graded)), "graded test ids must be unique across the notebooks"
    assert set(graded) == set(confirm.RULES)


# ----- the protocol on its own: confirm() on notebooks whose tests passed in the kernel -----


def _stage1(*extra_after):
    """Notebook 1 solved, every test passing as if in the kernel, with extra cells after the given grade ids."""
    nb = samples.submission(samples.Sample(), 1)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        for grade_id, source in extra_after:
            if execute.nbgrader_meta(cell).get("grade_id") == grade_id:
                cells.append(nbformat.v4.new_code_cell(source))
    nb.cells = cells
    return nb


def _verdicts(nb, tmp_path, cell_timeout=20, notebook_timeout=120):
    verdicts = confirm.confirm(nb, tmp_path, confirm.harness_env(tmp_path), cell_timeout, notebook_timeout)
    return {execute.nbgrader_meta(nb.cells[i])["grade_id"]: reason for i, reason in verdicts.items()}


def test_a_harness_that_hangs_after_a_confirmed_test_keeps_that_confirmation(tmp_path):
    verdicts = _verdicts(_stage1(("correct_random_output", "while True:\n    pass")), tmp_path, cell_timeout=5)
    assert verdicts["correct_identity_output"] is None and verdicts["correct_random_output"] is None
    for later in ("synchronized_time_call", "first_call_slower", "correct_summary"):
        assert verdicts[later].startswith("the confirmation run stopped: no answer within 5 s in cell"), verdicts


def test_a_harness_that_exits_keeps_what_it_confirmed_and_says_how_it_ended(tmp_path):
    verdicts = _verdicts(_stage1(("correct_identity_output", "import os\nos._exit(7)")), tmp_path)
    assert verdicts["correct_identity_output"] is None
    assert "exit code 7" in verdicts["correct_random_output"], verdicts


def test_the_harness_stops_after_the_last_test_that_passed_in_the_kernel(tmp_path):
    nb = _stage1(("correct_summary", "while True:\n    pass"))
    error = NotebookNode(output_type="error", ename="AssertionError", evalue="failed", traceback=[])
    for _, cell in confirm.graded_tests(nb):
        if cell.metadata.nbgrader["grade_id"] != "correct_identity_output":
            cell.outputs = [error]  # failed in the kernel: nothing to confirm
    started = time.monotonic()
    assert _verdicts(nb, tmp_path, cell_timeout=60) == {"correct_identity_output": None}
    assert time.monotonic() - started < 30


def test_the_notebook_time_limit_bounds_the_whole_run(tmp_path):
    nb = _stage1(("correct_random_output", "import time\nfor _ in range(4):\n    time.sleep(1)"),
                 ("synchronized_time_call", "time.sleep(60)"))
    verdicts = _verdicts(nb, tmp_path, cell_timeout=30, notebook_timeout=12)
    assert verdicts["correct_random_output"] is None
    assert "no answer within" in verdicts["first_call_slower"] or "time limit" in verdicts["first_call_slower"]


def test_a_graded_test_without_a_rule_stops_grading(tmp_path):
    nb = _stage1()
    test = next(cell for _, cell in confirm.graded_tests(nb))
    test.metadata.nbgrader["grade_id"] = "a_test_nobody_wrote_a_rule_for"
    with pytest.raises(confirm.MissingConfirmationRule, match="a_test_nobody_wrote_a_rule_for"):
        confirm.ConfirmVerdicts().preprocess(nb, {})
