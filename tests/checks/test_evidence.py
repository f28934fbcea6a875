"""The evidence checks (perfaudit/checks/evidence.py): report.json, its schema and scope, the files beside it,
the cost model.

Each check passes on right answers and fails, with a useful message, on wrong ones."""

import jax
import jax.numpy as jnp
import pytest
from evidence_reports import consistent_report, write_evidence

from perfaudit import checks
from perfaudit.answer_key import answers
from perfaudit.autograde import hidden


def workload(x):
    return jnp.tanh(x @ x)


def test_expected_cost_is_the_closed_form():
    checks.check_expected_cost(lambda n: {"flops": 2 * n**3, "transcendentals": n**2}, 37, answers.cost_of(37))
    with pytest.raises(AssertionError, match="flops"):
        checks.check_expected_cost(lambda n: {"flops": 2 * n**3 - n**2, "transcendentals": n**2}, 37,
                                    answers.cost_of(37))


def test_a_report_written_from_constants_does_not_carry_the_evidence(tmp_path):
    evidence = hidden.made_up_evidence()
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


def test_a_report_with_the_reproducibility_fields_follows_the_schema_and_an_old_one_still_does(tmp_path):
    from perfaudit import environment, report

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


@pytest.mark.parametrize("name", ["/etc/passwd", "../report.json", "sub/workload.jaxpr.txt", ".."])
def test_an_artifact_name_outside_the_evidence_folder_is_never_looked_at(tmp_path, name):
    report = consistent_report()
    report["artifacts"]["jaxpr"] = name
    with pytest.raises(AssertionError, match="artifacts.jaxpr should name a file beside report.json"):
        checks.check_evidence_dir(write_evidence(tmp_path, report))
