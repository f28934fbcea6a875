"""Feedback holds nothing a test handed the kernel: a submission that keeps it and shows it after the test, in every
way a cell can, graded in a real kernel (TrustedExecute) and made into feedback (HideOutputsAfterTests)."""

import json

from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.utils import determine_grade

from perfaudit.autograde.plugins.execute import TrustedExecute
from perfaudit.autograde.plugins.hide_outputs_after_tests import OUTPUT_HIDDEN, HideOutputsAfterTests

STASHING = '''
import threading
import time

from IPython.display import display

stash = []
earlier = display("an earlier output", display_id=True)


def record(fn, evidence):
    """Keep what a test hands in, and time the grader's held result."""
    stash.append(evidence)
    start = time.perf_counter()
    fn(1).block_until_ready()
    stash.append(time.perf_counter() - start)


def leak():
    while True:
        if stash:
            print("THREAD", stash)
        time.sleep(0.05)


threading.Thread(target=leak, daemon=True).start()


def kept():
    """What the kernel holds now (a test reads a name as it was bound: stash itself would read as the empty list)."""
    return len(stash)
'''
TOKEN = "made-up-evidence-token-7f3a"
SHOWN = (TOKEN, "0.218341", "PRINTED", "UPDATED", "HTML", "RAISED", "THREAD")


def _test_cell(source, grade_id):
    cell = new_code_cell(source)
    cell.metadata.nbgrader = {"grade": True, "solution": False, "locked": True, "grade_id": grade_id, "points": 1,
                              "schema_version": 3}
    return cell


def _graded(tmp_path):
    """A submission that keeps what a test hands its function (made-up evidence, the grader's hold as timed) and
    shows it after the test: printed, as an update of an earlier cell's display, as HTML, as the execution count,
    raised, and from a thread that prints while later cells run."""
    nb = new_notebook(cells=[
        new_code_cell(STASHING),
        _test_cell("from perfaudit import checks\n"
                   f"record(checks.SlowFunction([0.2875]), {{'token': {TOKEN!r}, 'first_call_s': 0.218341}})", "hands"),
        new_code_cell("print('PRINTED', stash)\nearlier.update(f'UPDATED {stash}')\ntime.sleep(0.3)"),
        new_code_cell("get_ipython().execution_count = 2875\n"
                      "display({'text/html': f'<b>HTML {stash}</b>'}, raw=True)\nstash"),
        new_code_cell("raise ValueError(f'RAISED {stash}')"),
        _test_cell("assert kept() == 2", "kept"),
    ])
    return TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})[0]


def _shown(nb):
    """Everything of a notebook but the cells' sources (the test's names what it hands in)."""
    return json.dumps([nb.metadata, *[[c.get("outputs"), c.get("execution_count"), c.metadata] for c in nb.cells]])


def test_feedback_shows_nothing_a_test_handed_the_kernel_whatever_a_later_cell_does(tmp_path):
    autograded = _graded(tmp_path)
    assert [determine_grade(autograded.cells[i])[0] for i in (1, 5)] == [1, 1]
    shown = _shown(autograded)
    # The graded copy, the instructor's, keeps what the submission showed (so the check below can fail), except the
    # update of a display in a cell before the test, which TrustedExecute refused.
    assert [word for word in SHOWN if word not in shown] == ["UPDATED"]

    feedback, _ = HideOutputsAfterTests()(autograded, {})
    shown = _shown(feedback)
    assert [word for word in (*SHOWN, "2875") if word in shown] == []
    assert [o.get("data", {}).get("text/plain") for o in feedback.cells[0].outputs] == ["'an earlier output'"]
    for cell in feedback.cells[2:5]:
        assert [o.get("text") for o in cell.outputs] == [OUTPUT_HIDDEN] and cell.execution_count is None
    assert determine_grade(feedback.cells[5])[0] == 1  # a test's own outputs stay: the grader wrote them
