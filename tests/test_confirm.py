"""Verdicts confirmed outside the kernel (perfaudit/confirm.py): cheats score nothing on the tests they attack.

End to end with plain nbgrader autograde on a few fixture submissions, and the protocol on its own: a harness
that hangs or dies after a confirmed test keeps that confirmation.
"""

import copy
import time

import nbformat
import pytest
from nbformat.notebooknode import NotebookNode
from nbgrader import utils

from perfaudit import ASSIGNMENT, confirm, course, execute, paths, samples
from perfaudit.grade import summary
from perfaudit.grade.feedback import HideHiddenTests

NB1, NB2, NB3, NB4 = "01-first-call-vs-steady", "02-retracing", "03-evidence", "04-integrated-audit"


def test_every_graded_test_in_source_has_a_rule():
    graded = []
    for filename in paths.STAGES.values():
        nb = execute.read(paths.SOURCE / filename)
        graded += [cell.metadata.nbgrader["grade_id"] for _, cell in confirm.graded_tests(nb)]
    assert len(graded) == len(set(graded)), "graded test ids must be unique across the notebooks"
    assert set(graded) == set(confirm.RULES)


# ----- fixture submissions: {student: ({stage: notebook}, in-kernel scores, confirmed scores)} -----

PATCHED_CHECKS = '''
import numpy.testing
from perfaudit import checks as _checks

# Every check that could notice the wrong workload below now passes.
numpy.testing.assert_allclose = lambda *args, **kwargs: None
_checks.check_identity_output = lambda *args, **kwargs: None
_checks.check_random_output = lambda *args, **kwargs: None


def workload(x):
    return jnp.tanh(x @ x) + 1.0
'''

CHEATS_ONLY_WHEN_GRADED = '''
import os


def workload(x):
    return jnp.tanh(x @ x)


if os.environ.get("NBGRADER_EXECUTION"):  # only while nbgrader grades: patch the checks, submit a wrong workload
    from perfaudit import checks as _checks

    _checks.check_identity_output = lambda *args, **kwargs: None
    _checks.check_random_output = lambda *args, **kwargs: None

    def workload(x):
        return x @ x
'''

TRACES_RETURN_TWO = '''
audited = jax.jit(lambda x: jnp.tanh(x @ x))


def traces():
    return 2
'''

CONSTANT_REPORT = '''

def write_evidence(evidence_dir, evidence):
    """Writes the same numbers whatever the evidence says."""
    evidence_dir = Path(evidence_dir)
    evidence_dir.mkdir(parents=True, exist_ok=True)
    report = build_report({"first_call_s": 0.25, "steady_s": [0.001, 0.0011, 0.0012, 0.0009, 0.001],
                           "shape": [16, 16], "dtype": "float32", "trace_count": 2,
                           "shapes": [[16, 16], [32, 32]], "jaxpr_text": ""})
    (evidence_dir / "workload.jaxpr.txt").write_text("{ lambda ; a:f32[16,16]. let b = dot_general a a; c = tanh b }")
    (evidence_dir / "report.json").write_text(json.dumps(report, indent=2) + "\\n")
    return report
'''

SKIP_LATER_CELLS = '''
def workload(x):
    return x


def _skip_the_rest(lines):
    return ["pass\\n"]


get_ipython().input_transformers_cleanup.append(_skip_the_rest)  # every later cell, hidden tests too
'''

CLASS_COUNTER = '''
class Counter:
    def __init__(self):
        self.count = 0


counter = Counter()


@jax.jit
def audited(x):
    counter.count += 1
    return jnp.tanh(jnp.dot(x, x))


def traces():
    return counter.count
'''


def _with_extras(nb):
    """Extra student cells (a magic, a print) after every solution cell, and old outputs left in everywhere."""
    cells = []
    for number, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="an old output\n")]
            cell.execution_count = 100 - number  # run out of order before submission
        cells.append(cell)
        if execute.nbgrader_meta(cell).get("solution"):
            cells.append(nbformat.v4.new_code_cell("%time _ = 1 + 1\nprint('my own check')"))
    nb.cells = cells
    return nb


SUBMISSIONS = {
    # student: (sample, stages submitted, extra changes, in-kernel scores, confirmed scores)
    "cheat-patched-checks": (samples.Sample(replaced={(1, "workload"): PATCHED_CHECKS}), (1,), None,
                             {NB1: 5}, {NB1: 3}),
    "cheat-only-when-graded": (samples.Sample(replaced={(1, "workload"): CHEATS_ONLY_WHEN_GRADED}), (1,), None,
                               {NB1: 5}, {NB1: 3}),
    "cheat-traces-return-two": (samples.Sample(replaced={(2, "counted_workload"): TRACES_RETURN_TWO}), (2,), None,
                                {NB2: 3}, {NB2: 1}),
    "cheat-constant-report": (samples.Sample(replaced={(3, "write_evidence"): lambda s: s + CONSTANT_REPORT}), (3,),
                              None, {NB3: 4}, {NB3: 0}),
    "cheat-skips-later-cells": (samples.Sample(replaced={(1, "workload"): SKIP_LATER_CELLS}), (1,), None,
                                {NB1: 5}, {NB1: 0}),
    "valid-variants-with-extras": (samples.Sample(replaced={
        (1, "workload"): "def workload(x):\n    return jnp.tanh(jnp.matmul(x, x))",
        (2, "counted_workload"): CLASS_COUNTER,
    }), (1, 2, 3, 4), _with_extras, {NB1: 5, NB2: 4, NB3: 4, NB4: 5}, {NB1: 5, NB2: 4, NB3: 4, NB4: 5}),
}


def _kernel_scores(root, student):
    """What each notebook scored in the kernel: the confirmed score plus the points of unconfirmed tests."""
    scores = {}
    for path in sorted((root / "autograded" / student / ASSIGNMENT).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        total = 0
        for _, cell in confirm.graded_tests(nb):
            kernel = copy.deepcopy(cell)
            kernel.outputs = [o for o in kernel.outputs if o.get("ename") != confirm.NOT_CONFIRMED]
            total += utils.determine_grade(kernel)[0]
        scores[path.stem] = total
    return scores


@pytest.fixture(scope="module")
def graded(course_dir):
    for student, (sample, stages, change, _, _) in SUBMISSIONS.items():
        folder = course_dir / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for stage in stages:
            nb = samples.submission(sample, stage)
            nbformat.write(change(nb) if change else nb, folder / paths.STAGES[stage])
    for student in SUBMISSIONS:
        course.nbgrader("autograde", ASSIGNMENT, f"--student={student}", "--force", course_dir=course_dir)
    return course_dir


@pytest.mark.parametrize("student", sorted(SUBMISSIONS))
def test_in_kernel_and_confirmed_scores(graded, student):
    *_, in_kernel, confirmed = SUBMISSIONS[student]
    got = {nb: score for nb, (score, _) in course.scores(graded)[student].items() if nb in confirmed}
    assert (_kernel_scores(graded, student), got) == (in_kernel, confirmed)


def test_instructor_sees_why_and_the_student_a_neutral_message(graded):
    path = graded / "autograded" / "cheat-traces-return-two" / ASSIGNMENT / f"{NB2}.ipynb"
    events, _ = summary._kernel_events_and_first_failure(path)
    assert any(e.startswith("'two_traces' could not be confirmed: calls at [") for e in events), events

    nb = nbformat.read(path, as_version=4)
    hidden, _ = HideHiddenTests().preprocess(nb, {})
    shown = [o for c in hidden.cells for o in c.get("outputs", []) if o.get("ename") == confirm.NOT_CONFIRMED]
    assert shown and all(o.evalue == confirm.STUDENT_MESSAGE and "calls at" not in "".join(o.traceback)
                         for o in shown)


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
