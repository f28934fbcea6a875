"""What hidden tests use that a student's copy never holds: `from perfaudit.autograde import hidden` in a test's
hidden part. The checks shared with visible tests stay in perfaudit/checks/ (student-facing, importing nothing of
the grader's or the answer key); these need the grader's instruments, its made-up evidence or the answer key."""

from collections.abc import Callable, Iterable
from typing import Any

from perfaudit import checks
from perfaudit.answer_key import answers
from perfaudit.autograde.evidence.audit_evidence import (check_fixed_traces, check_fixed_values,
                                                        check_original_traces, check_problems_named,
                                                        check_speedup_measured)
from perfaudit.autograde.evidence.made_up import made_up_evidence, made_up_first_call, made_up_report, new_folder
from perfaudit.autograde.evidence.measured import check_gather_evidence, check_run_audit, check_time_stages

__all__ = ["check_fixed_traces", "check_fixed_values", "check_gather_evidence", "check_original_traces",
           "check_problems_named", "check_speedup_measured", "check_run_audit", "check_summarize", "check_time_stages",
           "made_up_evidence", "made_up_first_call", "made_up_report", "new_folder"]


def check_summarize(summarize: Callable[[list[float]], Any], samples: Iterable[float]) -> None:
    """checks.check_summarize on samples the test chose, against the answer key's summary of them."""
    samples = [float(s) for s in samples]
    checks.check_summarize(summarize, samples, answers.summary_of(samples))
