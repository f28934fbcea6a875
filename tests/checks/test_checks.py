"""The checks themselves: each passes on right answers and fails, with a useful message, on wrong ones."""

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evidence_reports import consistent_report, write_evidence

from perfaudit import checks


def workload(x):
    return jnp.tanh(x @ x)


def hardcoded_identity(x):
    return np.where(np.eye(x.shape[0]) == 1, 0.7615941559557649, 0.0)


def test_identity_output_passes_and_reports_the_wrong_entry():
    checks.check_identity_output(jax.jit(workload))
    with pytest.raises(AssertionError, match=r"expected 0\.761594 at \[0, 0\], found 1\.000000"):
        checks.check_identity_output(lambda x: x)


def test_random_output_catches_a_hard_coded_identity():
    checks.check_identity_output(hardcoded_identity)
    checks.check_random_output(jax.jit(workload))
    with pytest.raises(AssertionError, match="tanh\\(A @ A\\)"):
        checks.check_random_output(hardcoded_identity)


def test_time_call_probe_tells_synchronized_from_unsynchronized():
    def synchronized(fn, x):
        start = time.perf_counter()
        fn(x).block_until_ready()
        return time.perf_counter() - start

    def via_jax(fn, x):
        start = time.perf_counter()
        jax.block_until_ready(fn(x))
        return time.perf_counter() - start

    def unsynchronized(fn, x):
        start = time.perf_counter()
        fn(x)
        return time.perf_counter() - start

    checks.check_time_call(synchronized)
    checks.check_time_call(via_jax)
    with pytest.raises(AssertionError, match="block_until_ready"):
        checks.check_time_call(unsynchronized)


def test_timings_relation():
    checks.check_timings(0.05, [1e-5] * 10)
    with pytest.raises(AssertionError, match="slower than the steady median"):
        checks.check_timings(1e-5, [2e-5] * 10)
    with pytest.raises(AssertionError, match="at least 5"):
        checks.check_timings(0.05, [1e-5] * 2)


def test_summarize_check():
    def summarize(samples):
        q1, q3 = np.percentile(samples, [25, 75])
        return {"median_s": np.median(samples), "min_s": min(samples), "max_s": max(samples), "iqr_s": q3 - q1}

    checks.check_summarize(summarize)
    checks.check_summarize(summarize, np.random.default_rng(1).exponential(1e-4, size=37))
    with pytest.raises(AssertionError, match="iqr_s"):
        checks.check_summarize(lambda s: {**summarize(s), "iqr_s": max(s) - min(s)})


@pytest.mark.parametrize("count, hint", [(0, "increment"), (1, "same jitted"), (4, "jax.jit")])
def test_trace_count_hints(count, hint):
    checks.check_trace_count(2)
    with pytest.raises(AssertionError, match=hint):
        checks.check_trace_count(count)


def test_retrace_on_new_shape_needs_jit():
    count = [0]

    def counted(x):
        count[0] += 1
        return jnp.tanh(x @ x)

    checks.check_retrace_on_new_shape(jax.jit(counted), lambda: count[0])
    with pytest.raises(AssertionError, match="Is the function wrapped in jax.jit"):
        checks.check_retrace_on_new_shape(counted, lambda: count[0])


def test_the_trace_counter_must_follow_jits_cache_key_not_a_set_of_shapes():
    count, seen = [0], set()

    def counted(x):
        count[0] += 1
        return jnp.tanh(x @ x)

    def shape_set(x):  # counts each new shape by hand, no jit: right for shapes, wrong for dtypes
        seen.add(x.shape)
        return jnp.tanh(x @ x)

    checks.check_traces_follow_jit(jax.jit(counted), lambda: count[0])
    # The calls come in random order: the first wrong count is the bfloat16 call, or the float32 one after it.
    with pytest.raises(AssertionError, match=r"at \d+x\d+ (bfloat16|float32).* should add 1 trace"):
        checks.check_traces_follow_jit(shape_set, lambda: len(seen))


def test_a_counter_that_imitates_the_cache_key_or_a_script_of_calls_is_caught():
    keys, calls = set(), [0]

    def cache_key_set(x):  # jit's key imitated by hand, float64 conversion included: it has no clear_cache()
        keys.add((x.shape, str(jnp.asarray(x).dtype)))
        return jnp.tanh(x @ x)

    def every_other_call(x):  # new, repeat, new, repeat...: the order the checks once used
        calls[0] += 1
        return jnp.tanh(x @ x)

    with pytest.raises(AssertionError, match="clear_cache"):
        checks.check_traces_follow_jit(cache_key_set, lambda: len(keys))
    with pytest.raises(AssertionError, match="clear_cache"):
        checks.check_retrace_on_new_shape(lambda x: (keys.add(x.shape), jnp.tanh(x @ x))[1], lambda: len(keys))
    rng = np.random.default_rng(0)
    caught = 0
    for _ in range(5):
        try:
            checks.check_retrace_on_new_shape(every_other_call, lambda: (calls[0] + 1) // 2, rng)
        except AssertionError:
            caught += 1
    assert caught == 5


@pytest.mark.parametrize("seconds, message", [
    (float("nan"), "positive, finite"), (float("inf"), "positive, finite"), (-0.01, "positive, finite"),
    (50, "float number of seconds"), (50_000_000, "float number of seconds"), (80.0, "longer than"),
])
def test_seconds_must_be_finite_floats_within_the_callers_clock(seconds, message):
    checks.check_seconds(0.05, "t", outer_s=0.06)
    with pytest.raises(AssertionError, match=message):
        checks.check_seconds(seconds, "t", outer_s=0.06)


def test_time_call_in_milliseconds_or_a_constant_fails():
    def milliseconds(fn, x):
        start = time.perf_counter()
        fn(x).block_until_ready()
        return (time.perf_counter() - start) * 1e3

    with pytest.raises(AssertionError, match="longer than"):
        checks.check_time_call(milliseconds)
    with pytest.raises(AssertionError):
        checks.check_time_call(lambda fn, x: 0.06)


def test_first_call_is_measured_on_a_fresh_jit_under_the_callers_clock():
    def synchronized(fn, x):
        start = time.perf_counter()
        fn(x).block_until_ready()
        return time.perf_counter() - start

    checks.check_first_call_measured(synchronized, workload)
    rng = np.random.default_rng(0)
    with pytest.raises(AssertionError):  # numbers within plausible bounds, but not measured
        checks.check_first_call_measured(lambda fn, x: float(rng.uniform(1e-6, 1e-4)), workload)


def test_a_jaxpr_with_other_operations_fails_and_the_real_one_passes():
    checks.check_jaxpr_text(str(jax.make_jaxpr(jax.jit(workload))(jnp.eye(16))))
    checks.check_jaxpr_text(str(jax.make_jaxpr(lambda x: jnp.tanh(jnp.dot(x, x)))(jnp.eye(16))))
    with pytest.raises(AssertionError, match="should compute dot_general"):
        checks.check_jaxpr_text(str(jax.make_jaxpr(lambda x: jnp.sin(x @ x))(jnp.eye(16))))
    with pytest.raises(AssertionError, match="should compute dot_general"):
        checks.check_jaxpr_text("dot_general tanh lambda f32[16,16]")  # the words, not a program


def test_expected_cost_is_the_closed_form():
    checks.check_expected_cost(lambda n: {"flops": 2 * n**3, "transcendentals": n**2}, n=37)
    with pytest.raises(AssertionError, match="flops"):
        checks.check_expected_cost(lambda n: {"flops": 2 * n**3 - n**2, "transcendentals": n**2}, n=37)


def test_a_report_written_from_constants_does_not_carry_the_evidence(tmp_path):
    evidence = checks.made_up_evidence()
    write_evidence(tmp_path, consistent_report(), jaxpr=evidence["jaxpr_text"])
    with pytest.raises(AssertionError, match="timings.first_call_s"):
        checks.check_report_carries(tmp_path, evidence)


def test_evidence_dir_passes_for_a_consistent_report(tmp_path):
    checks.check_evidence_dir(write_evidence(tmp_path, consistent_report()))


@pytest.mark.parametrize("change, message", [
    (lambda r: r.update(memory_measured=True), "memory_measured"),
    (lambda r: r["tracing"].update(trace_count=3), "exactly 2 traces"),
    (lambda r: r["timings"].update(first_call_s=1e-6), "slower than the steady median"),
    (lambda r: r["timings"]["steady_summary"].update(median_s=1.0), "median of steady_s"),
    (lambda r: r.pop("environment"), "environment"),
])
def test_evidence_dir_fails_for_an_inconsistent_report(tmp_path, change, message):
    report = consistent_report()
    change(report)
    with pytest.raises(AssertionError, match=message):
        checks.check_evidence_dir(write_evidence(tmp_path, report))


def test_evidence_dir_needs_the_jaxpr_file_and_its_ops(tmp_path):
    with pytest.raises(AssertionError, match="this one computes no equations"):
        checks.check_evidence_dir(write_evidence(tmp_path, consistent_report(), jaxpr="dot_general tanh"))
    (tmp_path / "workload.jaxpr.txt").unlink()
    with pytest.raises(AssertionError, match="should exist beside report.json"):
        checks.check_report_agrees(consistent_report(), tmp_path)


def test_missing_report_says_so(tmp_path):
    with pytest.raises(AssertionError, match="does not exist"):
        checks.read_report(tmp_path)


def _notebook_cell(stage, grade_id):
    from perfaudit import notebooks, paths

    nb = notebooks.read(paths.SOURCE / paths.STAGES[stage])
    return next(c.source for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == grade_id)


def test_trace_count_answers_are_what_the_notebooks_sequence_does_and_what_its_solution_predicts():
    import ast

    answers = checks.trace_count_answers()
    assert list(answers) == [*checks.TRACE_CASES_INPUTS, *checks.TRACE_CASES_ARGUMENTS]
    assert set(checks.TRACE_HINTS) == set(answers)
    namespace = {"jax": jax, "jnp": jnp, "np": np}
    exec(_notebook_cell(2, "trace_sequence"), namespace)  # the notebook's make_sequence, as students read it
    assert checks.count_new_traces(*namespace["make_sequence"]()) == answers
    solution = _notebook_cell(2, "predicted_traces")
    predicted = ast.literal_eval(solution[solution.index("= {") + 2:solution.rindex("}") + 1])
    assert predicted == answers
    # What the key concepts teach, as JAX does it here: weak types, static values and pytree structure retrace;
    # a float64 NumPy array (x64 off) and a new jax.jit of the same function do not.
    assert answers["scale_jit(a, two)"] == answers["repeat_jit(a, 3)"] == answers["total_jit([a, a])"] == 1
    assert answers["f(a64)"] == answers["jax.jit(square)(a)"] == 0


def test_trace_predictions_name_each_wrong_call_with_a_hint():
    answers = checks.trace_count_answers()
    checks.check_trace_predictions(dict(answers), answers, checks.TRACE_CASES_INPUTS)
    checks.check_trace_predictions({**answers, "f(a64)": 1}, answers, checks.TRACE_CASES_ARGUMENTS)  # not this part
    with pytest.raises(AssertionError, match=r"(?s)1 of these 6 .*f\(a64\): you predicted 1, JAX traced 0 .*float32"):
        checks.check_trace_predictions({**answers, "f(a64)": 1}, answers, checks.TRACE_CASES_INPUTS)
    with pytest.raises(AssertionError, match="no entry for 'total_jit"):
        checks.check_trace_predictions({k: v for k, v in answers.items() if "total" not in k}, answers,
                                       checks.TRACE_CASES_ARGUMENTS)
    for not_a_count in (True, 1.0, "1"):
        with pytest.raises(AssertionError, match="should be an int"):
            checks.check_trace_predictions({**answers, "f(b)": not_a_count}, answers, checks.TRACE_CASES_INPUTS)
    with pytest.raises(AssertionError, match="should be a dict"):
        checks.check_trace_predictions(list(answers.items()), answers, checks.TRACE_CASES_INPUTS)


def bfloat16_pass(x):
    """What one bfloat16 pass computes (a TPU's default): the inputs rounded to bfloat16, products summed in float32.
    The CPU backend ignores a bfloat16 precision setting and computes in float32, so this makes the error real."""
    xb = x.astype(jnp.bfloat16)
    return jnp.tanh(jnp.matmul(xb, xb, preferred_element_type=jnp.float32))


def test_output_checks_hold_under_bfloat16_matmul_precision():
    rngs = [np.random.default_rng(seed) for seed in range(8)]  # sizes 5..47 drawn by each
    with jax.default_matmul_precision("bfloat16"):
        assert checks.output_tolerance()[0] == checks.MATMUL_TOLERANCE["bfloat16"]
        for fn in (workload, bfloat16_pass):
            checks.check_identity_output(jax.jit(fn))
            for rng in rngs:
                checks.check_random_output(jax.jit(fn), rng=rng)
        with pytest.raises(AssertionError, match="tanh\\(A @ A\\)"):
            checks.check_random_output(hardcoded_identity)
    # Under the float32 products the CPU computes by default, the same bfloat16 error is a wrong answer.
    assert checks.output_tolerance() == (1e-4, "float32 matrix products: jax_default_matmul_precision=None on the "
                                         "cpu backend")
    with pytest.raises(AssertionError, match="tolerance 0.0001 for float32 matrix products"):
        checks.check_random_output(jax.jit(bfloat16_pass), rng=np.random.default_rng(0))


@pytest.mark.parametrize("setting, backend, precision", [
    (None, "cpu", "float32"), (None, "gpu", "tensorfloat32"), (None, "tpu", "bfloat16"), ("default", "tpu", "bfloat16"),
    ("highest", "tpu", "float32"), ("float32", "gpu", "float32"), ("high", "tpu", "tensorfloat32"),
    ("tensorfloat32", "gpu", "tensorfloat32"), ("bfloat16", "cpu", "bfloat16"), ("BF16_BF16_F32", "gpu", "bfloat16"),
    ("BF16_BF16_F32_X3", "tpu", "tensorfloat32"), ("BF16_BF16_F32_X6", "tpu", "float32"),
    ("TF32_TF32_F32_X3", "gpu", "float32"), ("F32_F32_F32", "gpu", "float32"), ("ANY_F8_ANY_F8_F32", "gpu", "bfloat16"),
    (None, "metal", "bfloat16"),
])
def test_the_tolerance_follows_the_matmul_precision_in_effect(setting, backend, precision):
    assert checks.matmul_precision_class(setting, backend) == precision
    tolerances = [checks.MATMUL_TOLERANCE[p] for p in ("float32", "tensorfloat32", "bfloat16")]
    assert tolerances == sorted(tolerances), "a coarser precision never gets a tighter tolerance"


def test_a_report_with_the_reproducibility_fields_follows_the_schema_and_an_old_one_still_does(tmp_path):
    from perfaudit import environment, report

    assert report.load_schema()["properties"]["schema_version"]["const"] == report.SCHEMA_VERSION
    old = consistent_report()
    checks.check_evidence_dir(write_evidence(tmp_path, old))  # version 1: no schema_version, no reproducibility fields
    new = {**old, "schema_version": report.SCHEMA_VERSION,
           "environment": {**old["environment"], **environment.reproducibility()}}
    checks.check_evidence_dir(write_evidence(tmp_path, new))
    with jax.default_matmul_precision("bfloat16"):
        assert environment.reproducibility()["matmul_precision"] == "bfloat16"


@pytest.mark.parametrize("field, value, message", [
    ("timestamp_utc", "2026-01-31 14:05:09", "does not match"),
    ("timestamp_utc", "2026-01-31T14:05:09+01:00", "does not match"),
    ("load_average", [0.5, 0.7], "too short"),
    ("load_average", [-1, 0, 0], "less than the minimum"),
    ("clock_resolution_s", 0, "less than or equal to the minimum"),
    ("environment_variables", {"JAX_PLATFORMS": 1}, "is not of type 'string'"),
])
def test_reproducibility_fields_are_validated_when_present(tmp_path, field, value, message):
    report = consistent_report()
    report["environment"][field] = value
    with pytest.raises(AssertionError, match=message):
        checks.check_evidence_dir(write_evidence(tmp_path, report))


def test_a_clock_started_after_the_call_is_caught():
    def after_the_call(fn, x):
        out = fn(x)
        start = time.perf_counter()
        out.block_until_ready()
        return time.perf_counter() - start

    with pytest.raises(AssertionError, match="start the clock before the call"):
        checks.check_time_call(after_the_call)


def test_a_clock_started_after_the_call_and_padded_by_the_hold_is_caught():
    def padded_by(pad_s):
        def time_call(fn, x):
            out = fn(x)
            start = time.perf_counter()
            out.block_until_ready()
            return time.perf_counter() - start + pad_s

        return time_call

    # The hold timing.py gives each call of the first-call check: the first call's tracing and compiling are missed.
    with pytest.raises(AssertionError, match="time_call's first call reported .* start the clock before the call"):
        checks.check_first_call_measured(padded_by(0.0105), workload)
    # The middle of a time_call probe's holds: right for three holds drawn at random only by luck.
    with pytest.raises(AssertionError):
        checks.check_time_call(padded_by(0.105))


def gather_evidence(steady_calls=50, jit=jax.jit, warm_first=False, synchronize=True, said_traces=None, stall_s=0.0,
                    body=None, arrange=list):
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
    first_call_s = time_call(x16)
    steady_s = [time_call(x16, stall_s) for _ in range(steady_calls)]
    audited(x32).block_until_ready()
    return {"first_call_s": first_call_s, "steady_s": arrange(steady_s), "shape": [16, 16], "dtype": "float32",
            "trace_count": count if said_traces is None else said_traces, "shapes": [[16, 16], [32, 32]],
            "jaxpr_text": str(jax.make_jaxpr(audited)(x16))}


def test_gather_evidence_is_checked_against_the_graders_own_jit():
    checks.check_gather_evidence(gather_evidence)
    with pytest.raises(AssertionError, match="never waited for"):
        checks.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, synchronize=False))
    with pytest.raises(AssertionError,
                       match="first_call_s .* is shorter than the first call of the function you timed"):
        checks.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, warm_first=True))
    with pytest.raises(AssertionError, match="trace_count is 2, but the function you timed was traced another number"):
        checks.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, said_traces=2))  # always 3 or more
    with pytest.raises(AssertionError, match="never called a function made by the jit it was given"):
        checks.check_gather_evidence(lambda k, jit: gather_evidence(k))


def test_steady_timings_in_any_order_pass_and_one_shorter_than_every_call_left_is_named():
    """Sorted (for a median) or reversed, each timing still covers a call of its own; a made-up one does not."""
    checks.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, arrange=sorted))
    checks.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, arrange=lambda s: s[::-1]))
    made_up = lambda s: [*s[:3], 0.0002, *s[4:]]  # noqa: E731 (shorter than every call the grader holds)
    named = r"steady_s\[3\] \(0\.200 ms\) is shorter than the call it should time"
    with pytest.raises(AssertionError, match=named):
        checks.check_gather_evidence(lambda k, jit: gather_evidence(k, jit, arrange=made_up))
    too_many = (r"steady_s holds \d+ timings, but after its first call the function you timed was called \d+ times "
                r"at \[16, 16\] with its result waited for")
    with pytest.raises(AssertionError, match=too_many):
        checks.check_gather_evidence(lambda k, jit: one_timing_twice(gather_evidence(k - 1, jit)))


def one_timing_twice(evidence):
    """evidence with one more steady timing than calls: its first steady timing counted twice."""
    return {**evidence, "steady_s": [*evidence["steady_s"], evidence["steady_s"][0]]}


def test_honest_timings_pass_however_busy_the_machine():
    """A stall in every steady call (time.sleep inside the timed span, as a busy machine's scheduler would add) makes
    the steady median longer than the first call: still honest timings of the grader's calls, so they pass."""
    jit = checks.grader_jit(np.random.default_rng(1))
    stall = 1.0  # longer than the first call: held 200-300 ms, plus compilation; 405 ms in all at a load average of 6
    started = time.perf_counter()
    evidence = gather_evidence(5, jit, stall_s=stall)
    outer = time.perf_counter() - started
    assert evidence["first_call_s"] < np.median(evidence["steady_s"])
    checks.check_measured_evidence(evidence, jit, 5, outer_s=outer, what="gather_evidence",
                                   jaxpr_text=evidence["jaxpr_text"])


def run_audit(evidence_dir, steady_calls, jit, stall_s=0.0, check_with_jit=False):
    """notebook 4's run_audit: gather_evidence, then the report and the JAXPR file written beside it; with
    `check_with_jit`, it first checks the workload's output through a function of the jit it was given."""
    from perfaudit import answers

    if check_with_jit:
        checks.check_identity_output(jit(workload))
    evidence = gather_evidence(steady_calls, jit, stall_s=stall_s)
    report = answers.report_of(evidence)
    report["tracing"]["trace_count"] = evidence["trace_count"]
    (Path(evidence_dir) / "workload.jaxpr.txt").write_text(evidence["jaxpr_text"])
    (Path(evidence_dir) / "report.json").write_text(json.dumps(report))
    return report


def test_run_audit_is_judged_call_by_call_not_by_the_median():
    checks.check_run_audit(run_audit)
    checks.check_run_audit(lambda folder, k, jit: run_audit(folder, k, jit, stall_s=0.35))
    with pytest.raises(AssertionError, match="first_call_s .* is shorter than the first call"):
        checks.check_run_audit(lambda folder, k, jit: run_audit(folder, k, lambda fn: _warmed(jit(fn))))


def test_other_functions_made_with_the_same_jit_do_not_move_the_audited_one_s_calls():
    """Calls and traces are the audited function's own: a sanity check of the output through a function of the same
    jit, before the audit, is honest work."""
    checks.check_run_audit(lambda folder, k, jit: run_audit(folder, k, jit, check_with_jit=True))


def _warmed(audited):
    """audited, called once before anyone times it."""
    audited(jnp.eye(16)).block_until_ready()
    return audited


def test_the_graders_first_call_at_each_shape_stands_apart_from_later_ones():
    """A call made before the timed first call takes its place: the grader holds the first call at each shape at
    least 200 ms and every later call at most 40 ms, and never retraces at a first call."""
    for seed in range(20):
        jit = checks.grader_jit(np.random.default_rng(seed))
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
        jit = checks.grader_jit(np.random.default_rng(seed))
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
            checks.check_gather_evidence(cheaper_first, np.random.default_rng(seed))


def _workload_entries(inner, x, salt, seed):
    """An answer to the grader's first-call question with tanh(A @ A) computed in NumPy, whatever the function."""
    from perfaudit.autograde import instruments

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
    from perfaudit.autograde import instruments

    monkeypatch.setattr(instruments, "_probe", answer)

    def cheaper_first(k, jit):
        cheap = jit(lambda v: v)
        start = time.perf_counter()
        cheap(jnp.eye(16)).block_until_ready()
        return {**gather_evidence(k, jit), "first_call_s": time.perf_counter() - start}

    for seed in range(6):
        with pytest.raises(AssertionError):
            checks.check_gather_evidence(cheaper_first if timed == "cheaper" else
                                         lambda k, jit: gather_evidence(k, jit, warm_first=True),
                                         np.random.default_rng(seed))


def test_the_timed_function_must_compute_the_workload():
    """Real timings of a function that is not the workload, with the workload's JAXPR saved beside them."""
    def of_nothing(k, jit):
        return {**gather_evidence(k, jit, body=lambda x: x), "jaxpr_text": checks.reference_jaxpr()}

    with pytest.raises(AssertionError, match="did not give tanh"):
        checks.check_gather_evidence(of_nothing)


def test_the_saved_jaxpr_must_be_the_timed_function_s():
    def other_jaxpr(k, jit):
        evidence = gather_evidence(k, jit)
        return {**evidence, "jaxpr_text": str(jax.make_jaxpr(lambda x: jnp.tanh(x @ x) + 0.0)(jnp.eye(16)))}

    with pytest.raises(AssertionError):
        checks.check_gather_evidence(other_jaxpr)


@pytest.mark.parametrize("text", [
    str(jax.make_jaxpr(jax.jit(workload))(jnp.eye(16))),
    str(jax.jit(workload).trace(jnp.eye(16)).jaxpr),
    str(jax.make_jaxpr(lambda x: jnp.tanh(jnp.einsum("ij,jk->ik", x, x)))(jnp.eye(16))),
])
def test_jaxprs_of_the_same_program_read_alike(text):
    assert checks.jaxpr_canonical(text) == checks.jaxpr_canonical(checks.reference_jaxpr())


def test_a_jaxpr_of_another_product_is_not_the_workload_s():
    with pytest.raises(AssertionError, match="transpose"):
        checks.check_jaxpr_text(str(jax.make_jaxpr(lambda x: jnp.tanh(x @ x.T))(jnp.eye(16))))
    with pytest.raises(AssertionError, match="should compute"):
        checks.check_jaxpr_text(str(jax.make_jaxpr(lambda x, y: jnp.tanh(x @ y))(jnp.eye(16), jnp.eye(16))))


@pytest.mark.parametrize("name", ["/etc/passwd", "../report.json", "sub/workload.jaxpr.txt", ".."])
def test_an_artifact_name_outside_the_evidence_folder_is_never_looked_at(tmp_path, name):
    report = consistent_report()
    report["artifacts"]["jaxpr"] = name
    with pytest.raises(AssertionError, match="artifacts.jaxpr should name a file beside report.json"):
        checks.check_evidence_dir(write_evidence(tmp_path, report))


def test_an_audited_that_computes_nothing_and_forges_its_trace_is_caught():
    """A jit around a body that returns its input, whose trace() is another function's: the trace checks and the
    JAXPR check call it with the grader's matrices, so the counter counts nothing worth counting."""
    count = [0]

    def counted(x):
        count[0] += 1
        return x

    class Audited:
        def __init__(self, fn):
            self._jit = jax.jit(fn)

        def __call__(self, x):
            return self._jit(x)

        def clear_cache(self):
            self._jit.clear_cache()

        def trace(self, x):
            return jax.jit(lambda v: jnp.tanh(v @ v)).trace(x)

    audited = Audited(counted)
    for check in (checks.check_retrace_on_new_shape, checks.check_traces_follow_jit):
        with pytest.raises(AssertionError, match=r"audited should compute tanh\(x @ x\)"):
            check(audited, lambda: count[0])
    with pytest.raises(AssertionError, match=r"audited should compute tanh\(x @ x\)"):
        checks.check_jaxpr_is_of(audited, checks.reference_jaxpr())


def test_one_clock_for_every_steady_call_padded_off_the_clock_is_caught():
    """One timing of the whole loop of steady calls reported for each, and a sleep after the calls so that their sum
    fits the grader's clock around the call: each timing must fit a call of its own from above too."""
    def loop_timed_once(k, jit):
        evidence = gather_evidence(k, jit)
        loop_s = sum(evidence["steady_s"])
        time.sleep(loop_s * k)
        return {**evidence, "steady_s": [loop_s] * k}

    with pytest.raises(AssertionError, match="do not each fit one call of their own"):
        checks.check_gather_evidence(loop_timed_once)
