"""The first call decomposed (perfaudit/decompose.py), its charts, and their place in the report.

Relations only, never absolute times: parts are positive, sums are sums, and neither decomposition outgrows
the first call beyond the tolerance stated in perfaudit/checks.py.
"""

import copy
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import monitoring  # the listener list itself: is ours gone afterwards?

from perfaudit import charts, checks, decompose, environment
from perfaudit.answer_key import answers
from evidence_reports import consistent_report, write_evidence

N = 16


def workload(x):
    return jnp.tanh(x @ x)


@pytest.fixture(scope="module")
def first_call():
    jax.config.update("jax_enable_compilation_cache", False)
    listeners = len(monitoring._event_duration_secs_listeners)
    result = decompose.first_call(workload, jax.device_put(np.eye(N, dtype=np.float32)), answers.time_stages)
    assert len(monitoring._event_duration_secs_listeners) == listeners, "the listener should be removed"
    return result


def _full_report(first_call):
    return {
        **consistent_report(),
        "environment": {**consistent_report()["environment"], **environment.describe()},
        "artifacts": {"jaxpr": "workload.jaxpr.txt", "stablehlo": "workload.stablehlo.txt"},
        **{s: first_call[s] for s in ("decomposition", "cost_analysis", "memory_estimate")},
    }


def _write_full(tmp_path, full, first_call):
    write_evidence(tmp_path, full)
    (tmp_path / "workload.stablehlo.txt").write_text(first_call["stablehlo_text"])
    return tmp_path


def test_decomposition_parts_are_positive_and_within_the_first_call(first_call):
    decomposition = first_call["decomposition"]
    checks.check_decomposition(decomposition)
    assert decomposition["shape"] == [N, N] and decomposition["dtype"] == "float32"
    assert decomposition["rounds"] == len(decomposition["first_call_rounds_s"]) == 3
    observed = decomposition["observed"]
    assert observed["remainder_s"] > 0, "the events happen inside the first call, leaving dispatch and execution"
    assert decomposition["one_time_lowering"]["measured_in"] == "a fresh Python process"


def test_a_second_decomposition_in_the_same_process_holds_together(first_call):
    # New function names each time: the second one's events are its own, its caches fresh.
    again = decompose.first_call(workload, jax.device_put(np.eye(N, dtype=np.float32)), answers.time_stages,
                                 one_time_lowering=False)
    checks.check_decomposition(again["decomposition"])
    assert "one_time_lowering" not in again["decomposition"]


def test_cost_model_counts_the_arithmetic_of_tanh_x_at_x(first_call):
    cost = first_call["cost_analysis"]
    assert cost["flops"] == 2 * N**3  # n multiply-adds for each of n*n entries
    assert cost["transcendentals"] == N**2  # one tanh per entry
    assert cost["bytes_accessed"] >= 2 * N * N * 4  # at least the input read and the output written


def test_memory_estimate_is_labelled_and_sized_like_the_buffers(first_call):
    memory = first_call["memory_estimate"]
    assert memory["is_estimate"] is True
    assert memory["argument_size_in_bytes"] == memory["output_size_in_bytes"] == N * N * 4


def test_stablehlo_holds_the_lowered_ops(first_call):
    assert "stablehlo.dot_general" in first_call["stablehlo_text"]
    assert "stablehlo.tanh" in first_call["stablehlo_text"]


def test_full_report_passes_schema_and_going_further_checks(first_call, tmp_path):
    evidence_dir = _write_full(tmp_path, _full_report(first_call), first_call)
    checks.check_evidence_dir(evidence_dir)
    checks.check_going_further(evidence_dir)


@pytest.mark.parametrize("change, message", [
    (lambda r: r["memory_estimate"].update(is_estimate=False), "memory_estimate.is_estimate"),
    (lambda r: r["environment"].update(persistent_compilation_cache=True), "persistent_compilation_cache"),
    (lambda r: r["decomposition"]["aot"].pop("compile_s"), "decomposition.aot"),
    (lambda r: r["cost_analysis"].update(flops=-1), "cost_analysis.flops"),
    (lambda r: r["decomposition"]["one_time_lowering"].update(measured_in="this process"), "one_time_lowering"),
])
def test_schema_validates_the_new_sections_when_present(first_call, change, message):
    full = copy.deepcopy(_full_report(first_call))
    change(full)
    with pytest.raises(AssertionError, match=message):
        checks.check_report_schema(full)


def _decomposition(first=0.1, observed=(0.01, 0.01, 0.07), aot=(0.01, 0.01, 0.07, 0.001)):
    obs = dict(zip(("trace_s", "lower_s", "compile_s"), observed))
    obs.update(sum_s=sum(observed), remainder_s=first - sum(observed))
    parts = dict(zip(("trace_s", "lower_s", "compile_s", "first_run_s"), aot))
    return {"rounds": 3, "first_call_rounds_s": [first * 2, first, first / 2], "aot_sum_rounds_s": [sum(aot)] * 3,
            "first_call_s": first, "observed": obs, "aot": {**parts, "sum_s": sum(aot)}}


def test_decomposition_relations_hold_and_fail_where_they_should():
    checks.check_decomposition(_decomposition())
    # The AOT sum is a separate observation, at another moment: on a busy machine it can be several times the first
    # call (benchmarks/README.md), and it still passes.
    checks.check_decomposition(_decomposition(aot=(0.02, 0.02, 0.2, 0.001)))
    checks.check_decomposition(_decomposition(first=0.07, observed=(0.005, 0.005, 0.05), aot=(0.02, 0.02, 0.2, 0.01)))
    with pytest.raises(AssertionError, match="observed parts add up to"):
        checks.check_decomposition(_decomposition(observed=(0.01, 0.01, 0.09)))
    with pytest.raises(AssertionError, match="observed.compile_s should be positive"):
        checks.check_decomposition(_decomposition(observed=(0.01, 0.01, 0.0)))
    broken = _decomposition()
    broken["observed"]["remainder_s"] = 0.5
    with pytest.raises(AssertionError, match="remainder_s"):
        checks.check_decomposition(broken)
    not_the_median = _decomposition()
    not_the_median["first_call_rounds_s"] = [0.1, 0.3, 0.4]
    with pytest.raises(AssertionError, match="first_call_s should be the median of first_call_rounds_s"):
        checks.check_decomposition(not_the_median)


def test_going_further_check_names_what_is_missing(first_call, tmp_path):
    write_evidence(tmp_path, consistent_report())
    with pytest.raises(AssertionError, match="decomposition, cost_analysis, memory_estimate"):
        checks.check_going_further(tmp_path)
    evidence_dir = _write_full(tmp_path, _full_report(first_call), first_call)
    (evidence_dir / "workload.stablehlo.txt").write_text("module {}")
    with pytest.raises(AssertionError, match="stablehlo.dot_general and stablehlo.tanh"):
        checks.check_going_further(evidence_dir)


def test_expected_cost_check_compares_with_the_closed_form():
    checks.check_expected_cost(lambda n: {"flops": 2 * n**3, "transcendentals": n**2}, 7, answers.cost_of(7))
    with pytest.raises(AssertionError, match=r"\['flops'\] should be 686"):
        checks.check_expected_cost(lambda n: {"flops": n**3, "transcendentals": n**2}, 7, answers.cost_of(7))


def test_charts_are_png_files_in_the_evidence_dir(first_call, tmp_path):
    paths = charts.save_charts(tmp_path, _full_report(first_call))
    assert [p.name for p in paths] == [charts.FIRST_CALL_PNG, charts.STEADY_PNG]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    labels = [label for _, label, _ in charts.first_call_bars(first_call["decomposition"], 3e-5)]
    assert labels[0] == "first call (wall clock)" and labels[-1] == "steady call (median)"
    assert "one-time lowering (fresh process)" in labels


def test_table_shows_both_decompositions_side_by_side(first_call):
    text = decompose.table(first_call["decomposition"])
    assert text.splitlines()[0].split() == ["part", "observed", "ms", "AOT", "ms"]
    assert "one-time lowering cost of a fresh process" in text
    json.dumps(first_call["decomposition"])  # plain JSON types only
