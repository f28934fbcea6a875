"""The hidden tests' checks against the grader's own clock (perfaudit/autograde/evidence/measured.py): gather_evidence
and run_audit measured through the grader's jit, each timing of a call of its own, the timed function the workload."""

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from perfaudit import checks
from perfaudit.answer_key.reference import reference_jaxpr
from perfaudit.autograde.evidence import measured


def workload(x):
    return jnp.tanh(x @ x)


def gather_evidence(steady_calls=50, jit=jax.jit, warm_first=False, synchronize=True, said_traces=None, stall_s=0.0,
                    body=None, arrange=list, compile_ahead=False):
    """notebook 3's gather_evidence, with the mistakes a student makes switched on one at a time; `stall_s`: each
    steady call takes that much longer, as on a machine busy with other work; `arrange`: what is done to the steady
    timings before they are returned."""
    count = 0

    def counted_workload(x):
        nonlocal count
        count += 1
        return (body or workload)(x)

    audited = jit(counted_workload)
    x16, x32 = jnp.eye(16), jnp.eye(32)

    def time_call(x, stall_s=0.0):
        start = time.perf_counter()
        time.sleep(stall_s)
        out = audited(x)
        if synchronize:
            out.block_until_ready()
        return time.perf_counter() - start

    if warm_first:
        audited(x16).block_until_ready()
    if compile_ahead:
        audited.lower(x16).compile()
    first_call_s = time_call(x16)
    steady_s = [time_call(x16, stall_s) for _ in range(steady_calls)]
    audited(x32).block_until_ready()
    return {"first_call_s": first_call_s, "steady_s": arrange(steady_s), "shape": [16, 16], "dtype": "float32",
            "trace_count": count if said_traces is None else said_traces, "shapes": [[16, 16], [32, 32]],
            "jaxpr_text": str(jax.make_jaxpr(audited)(x16))}


def test_gather_evidence_is_checked_against_the_graders_own_jit():
    measured.check_gather_evidence(gather_evidence)
    with pytest.raises(AssertionError, match="never waited for"):
        measured.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, synchronize=False))
    with pytest.raises(AssertionError, match="first_call_s .* is shorter than the first call of the function you"):
        measured.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, warm_first=True))
    with pytest.raises(AssertionError, match="compiled ahead of the call you timed as its first"):
        measured.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, compile_ahead=True))
    with pytest.raises(AssertionError, match="trace_count is 2, but the function you timed was traced another number"):
        measured.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, said_traces=2))  # always 3 or more
    with pytest.raises(AssertionError, match="never called a function made by the jit it was given"):
        measured.check_gather_evidence(lambda k, jit: gather_evidence(k))


def test_steady_timings_in_any_order_pass_and_one_shorter_than_every_call_left_is_named():
    """Sorted (for a median) or reversed, each timing still covers a call of its own; a made-up one does not."""
    measured.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, arrange=sorted))
    measured.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, arrange=lambda s: s[::-1]))
    made_up = lambda s: [*s[:3], 0.0002, *s[4:]]  # noqa: E731 (shorter than every call the grader holds)
    named = r"steady_s\[3\] \(0\.200 ms\) is shorter than the call it should time"
    with pytest.raises(AssertionError, match=named):
        measured.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, arrange=made_up))
    too_many = (r"steady_s holds \d+ timings, but after its first call the function you timed was called \d+ times "
                r"at \[16, 16\] with its result waited for")
    with pytest.raises(AssertionError, match=too_many):
        measured.check_gather_evidence(lambda k, jit: one_timing_twice(gather_evidence(k - 1, jit)))


def one_timing_twice(evidence):
    """evidence with one more steady timing than calls: its first steady timing counted twice."""
    return {**evidence, "steady_s": [*evidence["steady_s"], evidence["steady_s"][0]]}


def test_honest_timings_pass_however_busy_the_machine():
    """A stall in every steady call (time.sleep inside the timed span, as a busy machine's scheduler would add) makes
    the steady median longer than the first call: still honest timings of the grader's calls, so they pass."""
    jit = measured.grader_jit(np.random.default_rng(1))
    stall = 1.0  # longer than the first call: held 200-300 ms, plus compilation; 405 ms in all at a load average of 6
    started = time.perf_counter()
    evidence = gather_evidence(5, jit, stall_s=stall)
    outer = time.perf_counter() - started
    assert evidence["first_call_s"] < np.median(evidence["steady_s"])
    measured.check_measured_evidence(evidence, jit, 5, outer_s=outer, what="gather_evidence",
                                   jaxpr_text=evidence["jaxpr_text"])


def run_audit(evidence_dir, steady_calls, jit, stall_s=0.0, check_with_jit=False):
    """notebook 4's run_audit: gather_evidence, then the report and the JAXPR file written beside it; with
    `check_with_jit`, it first checks the workload's output through a function of the jit it was given."""
    from perfaudit.answer_key import answers

    if check_with_jit:
        checks.check_identity_output(jit(workload))
    evidence = gather_evidence(steady_calls, jit, stall_s=stall_s)
    report = answers.report_of(evidence)
    report["tracing"]["trace_count"] = evidence["trace_count"]
    (Path(evidence_dir) / "workload.jaxpr.txt").write_text(evidence["jaxpr_text"])
    (Path(evidence_dir) / "report.json").write_text(json.dumps(report))
    return report


def test_run_audit_is_judged_call_by_call_not_by_the_median():
    measured.check_run_audit(run_audit)
    measured.check_run_audit(lambda folder, k, jit: run_audit(folder, k, jit, stall_s=0.35))
    with pytest.raises(AssertionError, match="first_call_s .* is shorter than the first call"):
        measured.check_run_audit(lambda folder, k, jit: run_audit(folder, k, lambda fn: _warmed(jit(fn))))


def test_other_functions_made_with_the_same_jit_do_not_move_the_audited_one_s_calls():
    """Calls and traces are the audited function's own: a sanity check of the output through a function of the same
    jit, before the audit, is honest work."""
    measured.check_run_audit(lambda folder, k, jit: run_audit(folder, k, jit, check_with_jit=True))


def _warmed(audited):
    """audited, called once before anyone times it."""
    audited(jnp.eye(16)).block_until_ready()
    return audited


def test_the_graders_first_call_at_each_shape_stands_apart_from_later_ones():
    """A call made before the timed first call takes its place: the grader holds the first call at each shape at
    least 200 ms and every later call at most 40 ms, and never retraces at a first call."""
    for seed in range(20):
        jit = measured.grader_jit(np.random.default_rng(seed))
        evidence = gather_evidence(8, jit)
        (record,) = jit.functions
        holds = [call.ready_hold_s for call in record.calls]
        assert holds[0] >= 0.2 and holds[-1] >= 0.2  # 16x16 first, and the 32x32 call
        assert all(hold <= 0.040 for hold in holds[1:-1])
        assert record.calls[0].salt == 0 and record.calls[-1].salt == record.calls[-2].salt
        assert all(call.span_s >= call.ready_hold_s for call in record.calls)
        assert evidence["trace_count"] == record.traces >= 3  # at least one retrace besides the two shapes


def test_a_first_call_is_held_long_only_where_the_function_computes_the_workload():
    """The grader holds a first call 200-300 ms when the function gives tanh(A @ A) on a matrix the grader draws, and
    1-3 ms otherwise: the first call of another, cheaper function of the same jit never stands in for the workload's.
    Asking costs no trace, whatever the input's dtype or kind."""
    for seed, x in enumerate([jnp.eye(16), np.eye(16, dtype=np.float32), jnp.eye(16, dtype=jnp.bfloat16),
                              jax.device_put(jnp.eye(16), jax.devices()[0]), np.eye(16)] * 2):
        jit = measured.grader_jit(np.random.default_rng(seed))
        traced = []
        cheap = [jit(lambda v: v), jit(lambda v: v @ v), jit(jnp.tanh)]
        audited = jit(lambda v: traced.append(1) or workload(v))
        for fn in (*cheap, audited):
            fn(x).block_until_ready()
        *cheap_records, audited_record = jit.functions
        assert all(record.calls[0].ready_hold_s <= 0.003 for record in cheap_records), x
        assert audited_record.calls[0].ready_hold_s >= 0.2, x
        assert len(traced) == audited_record.traces == 1, x


def test_a_first_call_timed_on_a_cheaper_function_is_not_the_workload_s():
    def cheaper_first(k, jit):
        cheap = jit(lambda v: v)
        start = time.perf_counter()
        cheap(jnp.eye(16)).block_until_ready()
        first = time.perf_counter() - start
        return {**gather_evidence(k, jit), "first_call_s": first}

    for seed in range(3):
        with pytest.raises(AssertionError, match="first_call_s .* is shorter than the first call"):
            measured.check_gather_evidence(cheaper_first, np.random.default_rng(seed))


def _workload_entries(inner, x, salt, seed):
    """An answer to the grader's first-call question with tanh(A @ A) computed in NumPy, whatever the function."""
    from perfaudit.autograde.evidence import instruments

    n = np.shape(x)[0]
    every = np.arange(n)
    a = instruments.probe_entries(seed, every[:, None], every[None, :], n).astype(np.float32).astype(np.float64)
    out = np.tanh(a @ a)
    return "".join(f" {out[i, j]:.5g}" for i, j in instruments.probed_at(seed, n))


@pytest.mark.parametrize("answer, timed", [(_workload_entries, "cheaper"), (lambda *args: "", "warm")])
def test_a_changed_answer_to_the_first_call_question_never_passes(monkeypatch, answer, timed):
    """The answer a first call gives must agree with what its function computes: answered for a function that is
    not the workload (its first call then held as the workload's), or left unanswered for the workload (held
    briefly, so that a warm call would outlast it), the evidence fails whatever the grader drew."""
    from perfaudit.autograde.evidence import instruments

    monkeypatch.setattr(instruments, "_probe", answer)

    def cheaper_first(k, jit):
        cheap = jit(lambda v: v)
        start = time.perf_counter()
        cheap(jnp.eye(16)).block_until_ready()
        return {**gather_evidence(k, jit), "first_call_s": time.perf_counter() - start}

    for seed in range(6):
        with pytest.raises(AssertionError):
            measured.check_gather_evidence(cheaper_first if timed == "cheaper" else
                                         lambda k, jit: gather_evidence(k, jit, warm_first=True),
                                         np.random.default_rng(seed))


def test_the_timed_function_must_compute_the_workload():
    """Real timings of a function that is not the workload, with the workload's JAXPR saved beside them."""
    def of_nothing(k, jit):
        return {**gather_evidence(k, jit, body=lambda x: x), "jaxpr_text": reference_jaxpr()}

    with pytest.raises(AssertionError, match="did not give tanh"):
        measured.check_gather_evidence(of_nothing)


def test_the_grader_calls_the_timed_function_itself_with_a_matrix_of_its_own():
    """The same output check as the visible one (checks.check_random_output), its messages naming the function timed."""
    measured._check_timed_output(jax.jit(workload), "gather_evidence")
    with pytest.raises(AssertionError, match=r"^gather_evidence: the function you timed should be tanh\(A @ A\) "):
        measured._check_timed_output(jax.jit(lambda v: v), "gather_evidence")
    with pytest.raises(AssertionError, match="never reported the function it made"):
        measured._check_timed_output(None, "gather_evidence")


def test_the_saved_jaxpr_must_be_the_timed_function_s():
    def other_jaxpr(k, jit):
        evidence = gather_evidence(k, jit)
        return {**evidence, "jaxpr_text": str(jax.make_jaxpr(lambda x: jnp.tanh(x @ x) + 0.0)(jnp.eye(16)))}

    with pytest.raises(AssertionError):
        measured.check_gather_evidence(other_jaxpr)


def test_one_clock_for_every_steady_call_padded_off_the_clock_is_caught():
    """One timing of the whole loop of steady calls reported for each, and a sleep after the calls so that their sum
    fits the grader's clock around the call: each timing must fit a call of its own from above too."""
    def loop_timed_once(k, jit):
        evidence = gather_evidence(k, jit)
        loop_s = sum(evidence["steady_s"])
        time.sleep(loop_s * k)
        return {**evidence, "steady_s": [loop_s] * k}

    with pytest.raises(AssertionError, match="do not each fit one call of their own"):
        measured.check_gather_evidence(loop_timed_once)
