"""The answer key (perfaudit/answer_key/answers.py): reference answers, and made-up evidence that holds together."""

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest

from perfaudit import report
from perfaudit.answer_key import answers
from perfaudit.answer_key.reference import reference_jaxpr


def test_the_summary_is_numpy_s_median_range_and_interquartile_range():
    assert answers.summary_of([5.0, 1.0, 2.0, 4.0, 3.0]) == {"median_s": 3.0, "min_s": 1.0, "max_s": 5.0,
                                                              "iqr_s": 2.0}


@pytest.mark.parametrize("n", [3, 16])
def test_the_cost_is_xla_s_count_of_tanh_x_at_x(n):
    compiled = jax.jit(lambda x: jnp.tanh(x @ x)).lower(jnp.ones((n, n), jnp.float32)).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    assert answers.cost_of(n) == {"flops": cost["flops"], "transcendentals": cost["transcendentals"]}


def test_made_up_evidence_is_new_each_draw_and_its_report_follows_the_schema():
    evidence = answers.evidence_of(np.random.default_rng(3), 7)
    assert len(evidence["steady_s"]) == 7 and all(1e-5 <= s <= 1e-3 for s in evidence["steady_s"])
    assert 0.05 <= evidence["first_call_s"] <= 0.5 and evidence["jaxpr_text"].startswith(reference_jaxpr())
    assert answers.evidence_of(np.random.default_rng(4))["jaxpr_text"] != evidence["jaxpr_text"]
    assert 5 <= len(answers.evidence_of(np.random.default_rng(5))["steady_s"]) < 20
    made = answers.report_of(evidence, np.random.default_rng(3))
    jsonschema.validate(made, report.load_schema())
    assert made["timings"]["steady_summary"] == pytest.approx(answers.summary_of(evidence["steady_s"]))
    assert made["timings"]["first_call_s"] == evidence["first_call_s"]


def test_a_made_up_first_call_s_parts_add_up():
    made = answers.first_call_of(np.random.default_rng(1))["decomposition"]
    observed, aot = made["observed"], made["aot"]
    assert observed["sum_s"] == pytest.approx(observed["trace_s"] + observed["lower_s"] + observed["compile_s"])
    assert observed["sum_s"] + observed["remainder_s"] == pytest.approx(made["first_call_s"])
    assert aot["sum_s"] == pytest.approx(sum(aot[k] for k in ("trace_s", "lower_s", "compile_s", "first_run_s")))
    assert made["first_call_s"] in made["first_call_rounds_s"] and observed["sum_s"] < made["first_call_s"]


def test_the_instructor_s_time_stages_times_each_stage_of_one_compiled_program():
    x = jnp.ones((4, 4), jnp.float32)
    found = answers.time_stages(jax.jit(lambda v: jnp.tanh(v @ v)), x, steady_runs=3)
    assert sorted(found) == ["compile_s", "first_run_s", "lower_s", "steady_run_s", "trace_s"]
    assert len(found["steady_run_s"]) == 3 and all(s > 0 for s in [*found["steady_run_s"], found["trace_s"],
                                                                   found["lower_s"], found["compile_s"]])
