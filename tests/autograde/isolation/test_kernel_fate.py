"""Whose doing a kernel's end was, and whether its notebook runs once more
(perfaudit/autograde/isolation/kernel_fate.py)."""

import sys
import types

from nbformat.v4 import new_code_cell, new_notebook

from perfaudit.autograde.isolation import kernel_fate
from perfaudit.autograde.isolation.kernel import SandboxedKernelManager
from perfaudit.autograde.isolation.kernel_fate import Fate
from perfaudit.autograde.plugins.execute import NOT_RUN, TrustedExecute


def _records(outside):
    return types.SimpleNamespace(killed_from_outside=lambda: outside)


def test_a_death_the_machine_has_no_record_of_is_the_student_s_doing():
    for records in (None, _records(None)):
        ending = kernel_fate.of_dead_kernel(records)
        assert ending == kernel_fate.Ending(Fate.STUDENTS_DOING, kernel_fate.DIED)
        assert not kernel_fate.run_once_more(ending, runs=1)


def test_a_kernel_the_machine_killed_from_outside_runs_once_more_and_only_once():
    outside = "the kernel log: the OOM killer killed process 7 for the machine's memory"
    ending = kernel_fate.of_dead_kernel(_records(outside))
    assert ending.fate is Fate.KILLED_FROM_OUTSIDE and "process 7" in ending.why
    assert kernel_fate.run_once_more(ending, runs=1)
    assert not kernel_fate.run_once_more(ending, runs=kernel_fate.RUNS)


def test_a_kernel_that_never_started_runs_once_more_and_only_once():
    ending = kernel_fate.of_failed_start(RuntimeError("Kernel died before replying to kernel_info"))
    assert ending == kernel_fate.Ending(
        Fate.NEVER_STARTED, "the kernel did not start (RuntimeError: Kernel died before replying to kernel_info)")
    assert kernel_fate.run_once_more(ending, runs=1)
    assert not kernel_fate.run_once_more(ending, runs=2)


def test_a_run_that_ended_normally_is_not_run_again():
    assert not kernel_fate.run_once_more(None, runs=1)


def _kernels_that_die_before_they_answer(monkeypatch, how_many):
    """The first `how_many` kernels started exit at once, as one given a port another kernel took does."""
    launches = []
    launch = SandboxedKernelManager._async_launch_kernel

    async def dying_first(self, kernel_cmd, **kw):
        launches.append(len(launches) + 1)
        if len(launches) <= how_many:
            kernel_cmd = [sys.executable, "-c", "raise SystemExit('Address already in use')"]
        return await launch(self, kernel_cmd, **kw)

    monkeypatch.setattr(SandboxedKernelManager, "_async_launch_kernel", dying_first)
    return launches


def test_trusted_execute_runs_a_notebook_whose_kernel_never_started_once_more(tmp_path, monkeypatch):
    """Plain nbgrader and the batch alike: the retry is TrustedExecute's, not the batch's."""
    launches = _kernels_that_die_before_they_answer(monkeypatch, 1)
    nb = new_notebook(cells=[new_code_cell("print('ran')")])
    nb, _ = TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert launches == [1, 2]
    assert [o.get("text") for o in nb.cells[0].outputs] == ["ran\n"]


def test_a_kernel_that_never_starts_twice_is_not_tried_a_third_time(tmp_path, monkeypatch):
    launches = _kernels_that_die_before_they_answer(monkeypatch, 2)
    nb = new_notebook(cells=[new_code_cell("print('ran')")])
    nb, _ = TrustedExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert launches == [1, 2]
    [error] = nb.cells[0].outputs
    assert (error.ename, error.evalue) == (
        NOT_RUN, "not run: the kernel did not start (RuntimeError: the kernel died before it bound its sockets)")
