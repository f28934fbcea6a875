"""The contract of each source notebook (perfaudit/autograde/plugins/verdicts.py), read from source/ alone: no
kernel."""

import ast

import nbformat
import pytest
from nbgrader import utils

from perfaudit import paths
from perfaudit.autograde.plugins import verdicts

SOURCE = paths.ROOT / "source" / "performance-audit"


def _cells(stage):
    return nbformat.read(SOURCE / paths.STAGES[stage], as_version=4).cells


def _by_kind(cells):
    """(names the student's cells bind, names locked cells bind) among those tests read."""
    contract = verdicts.Contract(cells)
    student, locked = set(), set()
    for index, cell in enumerate(cells):
        names = contract.bound_by.get(verdicts.cell_key(cell, index), set())
        (student if utils.is_solution(cell) else locked).update(names)
    return contract, student, locked


@pytest.mark.parametrize("stage, made", [(1, {"x", "STEADY_CALLS"}), (2, set()), (3, set()), (4, set())])
def test_the_grader_makes_a_locked_cell_s_constants_itself(stage, made):
    """What tests read of a locked cell made of the instructor's imports and constants is the grader's own run of
    it; EVIDENCE_DIR is a folder, which stays the kernel's (where its evidence was written)."""
    contract = verdicts.Contract(_cells(stage))
    namespace = {}
    contract.import_into(namespace)
    got = {}
    for key in contract.made_here:
        values = contract.make_here(key, namespace | got)
        got |= values
    assert {name for name in got if name in contract.names} == made


@pytest.mark.parametrize("stage", [1, 2, 3, 4])
def test_a_test_reads_what_a_locked_cell_made_of_student_code_only_beside_a_check_of_that_code(stage):
    """A name a locked cell binds by calling the student's code is the student's claim: a test that reads it also
    calls a student's function itself, so a forged value can cost that test's point, never earn it."""
    cells = _cells(stage)
    contract, student, locked = _by_kind(cells)
    namespace = {}
    contract.import_into(namespace)
    made = set()
    for key in contract.made_here:
        made |= set(contract.make_here(key, namespace))
    claims = locked - made
    for cell in cells:
        if not (cell.cell_type == "code" and verdicts.is_test(cell)):
            continue
        tree = ast.parse(cell.source)
        read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        if not read & claims:
            continue
        calls_student = [call for call in ast.walk(tree) if isinstance(call, ast.Call) and
                         any(isinstance(a, ast.Name) and a.id in student for a in call.args) or
                         isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in student]
        assert calls_student, f"{cell.metadata.nbgrader['grade_id']} reads {sorted(read & claims)} and checks no " \
                              "student function itself"


class _Namespace(dict):
    """What run_test needs of a student's namespace: names, and a channel with a scratch folder."""

    def __init__(self, scratch, **names):
        super().__init__(names)
        self.channel = type("Channel", (), {"scratch": str(scratch)})()


@pytest.mark.parametrize("kind, shown", [("ValueError", "ValueError"), ("LEAK_218_ms", "Exception")])
def test_an_error_the_student_s_code_raised_in_a_test_shows_its_type_never_its_message(tmp_path, kind, shown):
    """What a kernel writes while a test runs could carry what the test handed it or the grader's holds as its
    clock saw them: the verdict names a common type, or none, and never the message."""
    from perfaudit.autograde.wire.channel import RaisedInKernel, StudentError

    def raising(error):
        def call():
            raise error
        return call

    leak = RaisedInKernel(kind, "LEAK grader held the call 218.2 ms; made-up token 37580608b922df08")
    [failure] = verdicts.run_test("student()", _Namespace(tmp_path, student=raising(leak)))
    assert (failure.ename, failure.evalue) == (shown, verdicts.RAISED)
    assert "LEAK" not in str(failure) and "218" not in str(failure)
    # JAX's own refusal of a result the grader held, passed into a JAX function: the verdict says what to do instead
    from perfaudit.checks import held

    refused_by_jax = RaisedInKernel("ValueError", f"{held.JAX_REFUSAL} is no longer supported. LEAK 218 ms")
    [failure] = verdicts.run_test("student()", _Namespace(tmp_path, student=raising(refused_by_jax)))
    assert failure.evalue == f"{verdicts.RAISED} {held.PASSED_INTO_JAX}" and "LEAK" not in str(failure)
    # what the grader itself says of an answer it refused is shown whole
    refused = StudentError("ValueError", "an answer larger than the grader reads")
    [failure] = verdicts.run_test("student()", _Namespace(tmp_path, student=raising(refused)))
    assert failure.evalue == "in your code: an answer larger than the grader reads"
