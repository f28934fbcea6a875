"""Notebook 5's hidden tests (perfaudit/autograde/evidence/audit_evidence.py), run in one process: the findings against
the answer key, the trace counts on the grader's data, the speed-up on the grader's clock."""

import time

import numpy as np
import pytest
from loops import count_traces, fixed_train

from perfaudit import handout
from perfaudit.answer_key import answers
from perfaudit.autograde import hidden
from perfaudit.autograde.evidence import audit_evidence

EVIDENCE = "measured: the trace count and JAX's explanation of each miss"
COMPILE_S = 0.3  # a fixed loop's one compilation per call, as a stand-in


def _measured(variant, batches, one_size, lr0):
    """What the notebook measures of the handed-out loop of `variant`, as its cells would (the answer key's trace
    counts; what compiles outside the step and what the benchmark misses, as each variant's code does)."""
    return {"original_traces": answers.original_traces(variant, batches, lr0),
            "one_size_traces": answers.original_traces(variant, one_size, lr0),
            "eager_compiles": [] if variant == "C" else ["jit(_mean)"],
            "missed_s": 0.0001 if variant == "B" else 0.25, "pending_s": 0.3}


@pytest.mark.parametrize("variant", handout.VARIANTS)
def test_the_planted_problems_backed_by_the_loop_s_measurements_pass(variant):
    rng = np.random.default_rng(7)
    batches, lr0 = handout.data_for(variant, rng)
    one_size = handout.make_batches(rng, [len(batches[0][1])] * len(batches))
    measured = _measured(variant, batches, one_size, lr0)
    findings = dict.fromkeys(answers.PLANTED[variant], EVIDENCE)
    hidden.check_problems_named(findings, measured, variant, batches, lr0, one_size)
    # a count off by one that backs the same findings: A's trace count still above its one at one size, B's and
    # C's one more at one size and over the notebook's batches alike
    moved = {"A": ("original_traces",), "B": ("original_traces", "one_size_traces"),
             "C": ("original_traces", "one_size_traces")}[variant]
    for off in ({name: measured[name] + 1 for name in moved}, {"one_size_traces": measured["one_size_traces"] + 1}):
        if variant == "A" and "one_size_traces" in off:
            continue  # A's count at one size is 1: one more would back another finding
        with pytest.raises(AssertionError, match=f"measured\\['{next(iter(off))}'\\] is .* traces its step"):
            hidden.check_problems_named(findings, {**measured, **off}, variant, batches, lr0, one_size)
    # measurements made up to back one problem more (every cache key new, something compiled, the clock early)
    everything = {**measured, "original_traces": 9, "one_size_traces": 8, "eager_compiles": ["jit(_mean)"],
                  "missed_s": 0.25}
    with pytest.raises(AssertionError, match="it does not hide: the measurements they rest on are not"):
        hidden.check_problems_named(dict.fromkeys(handout.PROBLEMS, EVIDENCE), everything, variant, batches, lr0,
                                    one_size)
    with pytest.raises(AssertionError, match="leaves it out"):
        hidden.check_problems_named(dict(list(findings.items())[1:]), measured, variant, batches, lr0, one_size)


def test_trace_counts_on_the_grader_s_data():
    hidden.check_original_traces(count_traces, handout.train_of("C"), handout.train_once, "C")
    hidden.check_fixed_traces(count_traces, fixed_train, handout.train_once)
    with pytest.raises(AssertionError, match="count_traces"):
        hidden.check_fixed_traces(lambda *_: 1, fixed_train, handout.train_once)


def test_the_grader_s_clock_finds_the_fix_faster_and_the_original_not():
    original = handout.train_of("B")
    speedup = 5.0 / 1.0
    hidden.check_speedup_measured(original, fixed_train, speedup, [5.0] * 3, [1.0] * 3, "B")
    with pytest.raises(AssertionError, match="timed by the grader"):
        hidden.check_speedup_measured(original, original, speedup, [5.0] * 3, [1.0] * 3, "B")


def test_a_busy_machine_in_two_rounds_of_three_fails_no_fixed_loop():
    """Other work on the grading machine (another grader compiling, a kernel starting) slows some rounds: the grader
    compares the fastest round of each loop, so a fixed loop slowed in two of its three long rounds, by far more than
    the retrace limit, still passes, where the medians' ratio would call it a loop that retraces. The loop's time on
    the grader's clock is a sleep here (its compilation, the same for one step or eight), so the machine's own load
    moves it by milliseconds only; its trace count is the real fixed loop's."""
    long_rounds = []

    def fixed_on_a_busy_machine(w, batches, lr0, jit=None):
        if jit is not None:  # the trace counter's call: the real loop, counted
            return fixed_train(w, batches, lr0, jit)
        if len(batches) > 1:
            long_rounds.append(len(batches))
        busy = 2.0 if len(batches) > 1 and len(long_rounds) <= 2 else 0.0  # far over RETRACE_RATIO times one step
        time.sleep(COMPILE_S + busy)
        return np.asarray(w), [np.float32(0.0)] * len(batches)

    hidden.check_fixed_traces(count_traces, fixed_on_a_busy_machine, handout.train_once)
    assert long_rounds == [audit_evidence.LONG_STEPS] * audit_evidence.ROUNDS


def test_a_step_found_compiled_in_one_round_fails_no_fixed_loop():
    """A fixed loop whose step is jitted once for the module finds it compiled in a later round: that round's one
    step costs nothing next to the others. The loop it is measured against counts by its median, so that one round
    does not make eight steps look like a retrace."""
    one_step_rounds = []

    def fixed_with_a_shared_cache(w, batches, lr0, jit=None):
        if jit is not None:  # the trace counter's call: the real loop, counted
            return fixed_train(w, batches, lr0, jit)
        if len(batches) == 1:
            one_step_rounds.append(1)
        found_compiled = len(batches) == 1 and len(one_step_rounds) == 2
        time.sleep(0.001 if found_compiled else COMPILE_S)
        return np.asarray(w), [np.float32(0.0)] * len(batches)

    hidden.check_fixed_traces(count_traces, fixed_with_a_shared_cache, handout.train_once)
    assert len(one_step_rounds) == audit_evidence.ROUNDS
