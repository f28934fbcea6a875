"""Notebook 5's checks (perfaudit/checks/audit.py): each passes a right answer and fails, with a message for the
student, a wrong one."""

import re

import numpy as np
import pytest
from audit_misconceptions import MISCONCEPTIONS, cells, run_cells
from loops import count_traces, fixed_train, time_loop

from perfaudit import checks, handout
from perfaudit.answer_key import answers

EVIDENCE = "measured: the trace count and JAX's explanation of each miss"


STAGED = (handout.train_static_argnums, handout.train_static_argnames)
# The notebook's cells up to each self-check of its tools and its fix, in order.
TOOL_CELLS = ("setup", "handout", "count_traces", "selfcheck_count_traces", "time_loop", "selfcheck_time_loop",
              "fixed_train", "selfcheck_fixed_train", "count_fixed")
# ... and up to the self-check of the findings, through the cells that measure the handed-out loop.
FINDINGS_CELLS = ("setup", "handout", "count_traces", "time_loop", "count_original", "compile_log", "compare_benchmark",
                  "problems", "measurements", "findings", "selfcheck_findings")


def test_a_counter_of_traces_passes_and_a_counter_of_steps_or_a_constant_fails():
    checks.check_count_traces(count_traces, handout.train_once, STAGED, eager=handout.train_eager_loss)

    def steps(train, w, batches, lr0):
        return len(batches)

    with pytest.raises(AssertionError, match="traces its step 1 time.* is the number of steps"):
        checks.check_count_traces(steps, handout.train_once)
    with pytest.raises(AssertionError, match="traces its step 3 time"):
        checks.check_count_traces(lambda *_: 1, handout.train_once)
    with pytest.raises(AssertionError, match="as an int"):
        checks.check_count_traces(lambda *_: 1.0, handout.train_once)


def test_a_loop_timer_that_waits_for_everything_passes():
    checks.check_time_loop(time_loop)


def test_the_fix_passes_and_a_fix_that_counts_the_padding_fails():
    checks.check_fixed_train(fixed_train)
    checks.check_fixed_traces(count_traces, fixed_train)
    checks.check_fixed_compiles(fixed_train)

    def mean_over_padding(w, batches, lr0, jit=None):
        return fixed_train(w, batches, lr0, mean_over_padding=True)

    with pytest.raises(AssertionError, match="the mean counts the padded rows"):
        checks.check_fixed_train(mean_over_padding)


@pytest.mark.parametrize("variant", handout.VARIANTS)
def test_a_handed_out_loop_is_no_fix(variant):
    with pytest.raises(AssertionError, match="should trace once per loop. What changed between its traces: step's"):
        checks.check_fixed_traces(count_traces, handout.train_of(variant))


def test_a_count_traces_that_miscounts_a_fix_that_traced_once_is_blamed_not_the_fix():
    def doubled(train, w, batches, lr0):
        return 2 * count_traces(train, w, batches, lr0)

    with pytest.raises(AssertionError, match="which the check counted 1 trace of\\) is 2"):
        checks.check_fixed_traces(doubled, fixed_train)


def test_the_notebook_s_solution_passes_its_self_checks_of_its_tools_its_fix_and_its_findings():
    namespace = run_cells(TOOL_CELLS)
    assert namespace["fixed_traces"] == 1
    assert set(run_cells(FINDINGS_CELLS)["findings"]) == {"retrace-new-shape", "jnp-outside-jit", "timed-before-ready"}


@pytest.mark.parametrize("name", sorted(MISCONCEPTIONS))
def test_each_misconception_fails_its_visible_self_check_named_for_its_mistake(name):
    """The fixture replaces one solution cell of the source notebook: every self-check before the one its name
    gives passes, that one fails with a message naming the mistake and none of the words that would blame what is
    right."""
    misconception = MISCONCEPTIONS[name]
    failing = name.split("-")[1]
    with pytest.raises(AssertionError) as failed:
        run_cells(FINDINGS_CELLS if failing == "selfcheck_findings" else TOOL_CELLS, misconception)
    assert f"<05-audit.ipynb: {failing}>" in [entry.frame.code.path for entry in failed.traceback]
    message = str(failed.value)
    assert re.search(misconception.message, message), message
    assert not [words for words in misconception.blames_not if words in message], message


MEASURED_A = {"original_traces": 4, "one_size_traces": 1, "eager_compiles": ["jit(_mean)"], "missed_s": 0.2,
              "pending_s": 0.25}
FOUND_A = dict.fromkeys(("retrace-new-shape", "jnp-outside-jit", "timed-before-ready"), EVIDENCE)


def test_findings_are_named_from_the_list_each_with_evidence_and_exactly_those_the_measurements_back():
    checks.check_findings(FOUND_A, MEASURED_A)
    waited = {**MEASURED_A, "missed_s": 0.0, "one_size_traces": 8, "original_traces": 8}  # B's measurements
    checks.check_findings({"retrace-static-argument": EVIDENCE, "jnp-outside-jit": EVIDENCE}, waited)
    for findings, measured, message in (
            ({**FOUND_A, "slow": EVIDENCE}, MEASURED_A, "use the names"),
            ({**FOUND_A, "jnp-outside-jit": "slow"}, MEASURED_A, "in a sentence"),
            (FOUND_A, {**MEASURED_A, "eager_compiles": []}, "names 'jnp-outside-jit', but what you measured does not "
                                                            "back it: compiled outside the jitted step: nothing"),
            (FOUND_A, waited, "names 'retrace-new-shape', but .* traced 8 times over the notebook's batches and 8"),
            ({**FOUND_A, "retrace-static-argument": EVIDENCE}, MEASURED_A, "over batches of one size the loop traced "
                                                                           "1 time"),
            (dict(list(FOUND_A.items())[:2]), MEASURED_A, "backs 'timed-before-ready' .* leaves it out"),
            (FOUND_A, {**MEASURED_A, "missed_s": 0.0}, "names 'timed-before-ready', but what you measured does not "
                                                       "back it: the results were ready when the benchmark's clock "
                                                       "stopped"),
            (FOUND_A, {**MEASURED_A, "one_size_traces": 1.0}, r"measured\['one_size_traces'\] should be an int"),
            (["retrace-new-shape"], MEASURED_A, "should be a dict")):
        with pytest.raises(AssertionError, match=message):
            checks.check_findings(findings, measured)


def test_the_speedup_is_the_ratio_of_the_medians_and_at_least_the_minimum():
    original, fixed = [0.5, 0.4, 0.6], [0.1, 0.05, 0.2]
    checks.check_speedup(float(np.median(original) / np.median(fixed)), original, fixed)
    with pytest.raises(AssertionError, match="should be median"):
        checks.check_speedup(10.0, original, fixed)
    with pytest.raises(AssertionError, match="1.00x as fast .*medians 100.0 ms and 100.0 ms.* at least 2x as fast"):
        checks.check_speedup(1.0, [0.1, 0.1, 0.1], [0.1, 0.1, 0.1])
    with pytest.raises(AssertionError, match="at least 3 timings"):
        checks.check_speedup(5.0, [0.5], [0.1])


@pytest.mark.slow  # the whole notebook three times, about a minute each on two busy cores
@pytest.mark.parametrize("variant", handout.VARIANTS)
def test_the_solution_passes_every_check_hidden_ones_included_in_every_variant(variant):
    """The whole source notebook in one process, its hidden tests included (the source holds them), as a student
    whose variant is each variant: a student who does what the notebook says, whatever their variant, passes every
    check. The findings cell's solution names the variant's problems from its own measurements."""
    namespace = run_cells(list(cells()), variant=variant)
    assert namespace["AUDIT_VARIANT"] == variant and namespace["fixed_traces"] == 1
    assert set(namespace["findings"]) == answers.PLANTED[variant]
