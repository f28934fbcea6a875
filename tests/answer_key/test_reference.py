"""The grader's own JAXPR of the workload (perfaudit/answer_key/reference.py) against the checks' written-out program:
the two descriptions of tanh(x @ x) agree with this process's JAX, at every size the grader asks for."""

import pytest

from perfaudit import checks
from perfaudit.answer_key.reference import reference_jaxpr


@pytest.mark.parametrize("n", [8, 16, 32])
def test_the_reference_jaxpr_is_the_program_the_checks_expect(n):
    assert checks.jaxpr_program(reference_jaxpr(n)) == checks.workload_program(n)
    checks.check_jaxpr_text(reference_jaxpr(n), n)


def test_the_reference_jaxpr_is_of_its_size_only():
    with pytest.raises(AssertionError, match="at 16x16 float32 should compute"):
        checks.check_jaxpr_text(reference_jaxpr(8))
