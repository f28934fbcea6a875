"""Notebook 5's checks (perfaudit/checks/audit.py): each passes a right answer and fails, with a message for the
student, a wrong one."""

import numpy as np
import pytest
from loops import count_traces, fixed_train

from perfaudit import checks, handout

EVIDENCE = "measured: the trace count and JAX's explanation of each miss"


def test_a_counter_of_traces_passes_and_a_counter_of_steps_or_a_constant_fails():
    checks.check_count_traces(count_traces, handout.train_once)

    def steps(train, w, batches, lr0):
        return len(batches)

    with pytest.raises(AssertionError, match="traces its step 1 time"):
        checks.check_count_traces(steps, handout.train_once)
    with pytest.raises(AssertionError, match="traces its step 3 time"):
        checks.check_count_traces(lambda *_: 1, handout.train_once)
    with pytest.raises(AssertionError, match="as an int"):
        checks.check_count_traces(lambda *_: 1.0, handout.train_once)


def test_the_fix_passes_and_a_fix_that_counts_the_padding_fails():
    checks.check_fixed_train(fixed_train)
    checks.check_fixed_traces(count_traces, fixed_train)

    def mean_over_padding(w, batches, lr0, jit=None):
        return fixed_train(w, batches, lr0, mean_over_padding=True)

    with pytest.raises(AssertionError, match="a padded row must count for nothing"):
        checks.check_fixed_train(mean_over_padding)


@pytest.mark.parametrize("variant", handout.VARIANTS)
def test_a_handed_out_loop_is_no_fix(variant):
    with pytest.raises(AssertionError, match="should trace once per loop"):
        checks.check_fixed_traces(count_traces, handout.train_of(variant))


def test_findings_are_named_from_the_list_each_with_evidence_backed_by_the_counts():
    checks.check_findings({"retrace-new-shape": EVIDENCE, "jnp-outside-jit": EVIDENCE}, 4, 1)
    for findings, original, fixed, message in (
            ({"retrace-new-shape": EVIDENCE, "slow": EVIDENCE}, 4, 1, "use the names"),
            ({"retrace-new-shape": EVIDENCE}, 4, 1, "names one"),
            ({"retrace-new-shape": EVIDENCE, "jnp-outside-jit": "slow"}, 4, 1, "in a sentence"),
            ({"retrace-new-shape": EVIDENCE, "jnp-outside-jit": EVIDENCE}, 1, 1, "count the handed-out loop"),
            ({"retrace-new-shape": EVIDENCE, "jnp-outside-jit": EVIDENCE}, 4, 4, "trace once per loop"),
            (["retrace-new-shape"], 4, 1, "should be a dict")):
        with pytest.raises(AssertionError, match=message):
            checks.check_findings(findings, original, fixed)


def test_the_speedup_is_the_ratio_of_the_medians_and_at_least_the_minimum():
    original, fixed = [0.5, 0.4, 0.6], [0.1, 0.05, 0.2]
    checks.check_speedup(float(np.median(original) / np.median(fixed)), original, fixed)
    with pytest.raises(AssertionError, match="should be median"):
        checks.check_speedup(10.0, original, fixed)
    with pytest.raises(AssertionError, match="at least 2x as fast"):
        checks.check_speedup(1.0, [0.1, 0.1, 0.1], [0.1, 0.1, 0.1])
    with pytest.raises(AssertionError, match="at least 3 timings"):
        checks.check_speedup(5.0, [0.5], [0.1])
