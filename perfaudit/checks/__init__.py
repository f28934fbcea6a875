"""Checks shared by the notebooks' self-checks, their hidden tests and the checker: `from perfaudit import checks`.

Each check raises AssertionError with a message written for the student: what was expected, what was found, and
where to look. No check asserts an absolute time; timing checks compare measurements with each other. One module
per subject a student meets, so a failing check's traceback stays among what it is about:

  outputs.py   the workload's output for the identity and random matrices, at the matrix-product precision
  timing.py    synchronized timings in seconds, the first call apart from the steady calls, their summary
  traces.py    the trace counter, retracing at a new cache key, the prediction exercise, JAXPRs
  evidence.py  report.json, the files beside it, the first call decomposed, the cost model
  stages.py    the form of notebook 4's timings of trace, lower, compile and the compiled program's runs
  audit.py     notebook 5's audit: the trace counter, the loop timer, the findings, the fixed loop, the speed-up
  recorded.py  the checks' own jit for a training loop: each trace with its cache key
  selfcheck.py each notebook's central mistake, caught by its visible self-check (calls counted as traces, a
               warm or unwaited first call, unwaited steady calls, a report's claims against the calls it timed, a
               stage timing that holds another stage, jitted(x) before the stages, a warm first run)
  watched.py   the jit a self-check hands to measuring code: it notes each call and holds each result
  held.py      results whose readiness someone else decides (how a check knows the caller waited)
  failure.py   how a check fails

JAX is imported in the functions that run it, never at a module's top: the batch grader and the grading service
import the checks (through the nbgrader plug-ins) without running JAX, which takes a second or more to import.

Nothing here imports the grader or the answer key (tests/test_layout.py keeps it so): what hidden tests need of
them (the grader's instruments and clock, made-up evidence, the answer key) is perfaudit/autograde/hidden.py.
"""

from perfaudit import unfilled
from perfaudit.checks.audit import (SPEEDUP_MIN, check_count_traces, check_findings, check_fixed_compiles,
                                     check_fixed_train, check_fixed_traces, check_speedup, check_time_loop)
from perfaudit.checks.evidence import (DECOMPOSITION_PARTS, GOING_FURTHER_SECTIONS, OBSERVED_SLACK, SELF_CHECK_COST,
                                       artifact_path, check_decomposition, check_evidence_dir, check_expected_cost,
                                       check_going_further, check_going_further_carries, check_report_agrees,
                                       check_report_carries, check_report_consistent, check_report_schema,
                                       check_report_scope, check_returns_what_it_wrote, read_report)
from perfaudit.checks.held import FreshJit, HeldResult, SlowFunction
from perfaudit.checks.outputs import (BACKEND_DEFAULT_PRECISION, ELEMENTWISE_TOLERANCE, IDENTITY_DIAGONAL,
                                      MATMUL_TOLERANCE, check_identity_output, check_random_output,
                                      elementwise_tolerance, matmul_precision_class, matmul_setting, output_tolerance,
                                      random_matrix)
from perfaudit.checks.selfcheck import (check_audit_is_measured, check_counts_traces_not_calls,
                                        check_first_call_is_cold, check_stages_are_their_own)
from perfaudit.checks.stages import check_stages
from perfaudit.checks.timing import (SELF_CHECK_SAMPLES, SELF_CHECK_SUMMARY, STEADY_CALLS_MIN, SYNC_DELAY_S,
                                     check_first_call_measured, check_seconds, check_summarize, check_time_call,
                                     check_timings)
from perfaudit.checks.traces import (TRACE_CASES_ARGUMENTS, TRACE_CASES_INPUTS, TRACE_HINTS, check_jaxpr_is_of,
                                     check_jaxpr_text, check_retrace_on_new_shape, check_trace_count,
                                     check_trace_predictions, check_traces_follow_jit, clear_cache, count_new_traces,
                                     jaxpr_canonical, jaxpr_of, jaxpr_program, trace_count_answers, trace_sequence,
                                     workload_program)

unfilled.install()  # an unfilled solution cell is named before the traceback, in JupyterLab and Validate

