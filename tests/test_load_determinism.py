"""The same submissions get the same scores on a busy machine: benchmarks/verdicts_under_load.py, small.

The slow test grades the instructor's solution twice with each grader while a busy loop runs; the fast ones check
the load generator (it starts, stops itself, dies with its parent, is gone afterwards) and the report's verdict,
a run that differs included. Never a time: only scores, processes and what is printed.
"""

import importlib.util
import io
import re
import subprocess
import sys
import time

import psutil
import pytest

from perfaudit import paths

SCRIPT = paths.ROOT / "benchmarks" / "verdicts_under_load.py"
_spec = importlib.util.spec_from_file_location("verdicts_under_load", SCRIPT)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def busy_loops_alive(pids):
    """The busy loops among pids still alive (zombies waiting for their parent to reap them do not count)."""
    alive = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE and bench.BUSY_LOOP_MARK in " ".join(process.cmdline()):
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def wait_until_gone(pids, patience_s=30):
    deadline = time.monotonic() + patience_s  # a bound on waiting, not a measured time
    while busy_loops_alive(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return busy_loops_alive(pids)


def test_load_runs_one_busy_loop_per_process_and_leaves_none_behind():
    with bench.Load(2, max_seconds=600, interval=0.2) as load:
        assert len(busy_loops_alive(load.pids)) == 2
        time.sleep(1)
    assert load.still_running_at_end == 2
    assert load.samples, "the load average was sampled"
    assert busy_loops_alive(load.pids) == []


def test_busy_loops_stop_themselves_at_their_deadline():
    with bench.Load(1, max_seconds=0.5) as load:
        # waited on as our child: by its pid's command line, a loop not yet started would look gone already
        load.processes[0].wait(timeout=30)  # a bound on waiting, not a measured time
    assert load.still_running_at_end == 0


def test_busy_loops_stop_when_the_benchmark_dies_without_cleaning_up():
    code = (f"import os, sys; sys.path.insert(0, {str(SCRIPT.parent)!r}); from verdicts_under_load import Load; "
            "load = Load(2, 600).__enter__(); print(*load.pids, flush=True); os._exit(9)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=paths.ROOT)
    pids = [int(pid) for pid in done.stdout.split()]
    assert len(pids) == 2, done.stderr
    assert wait_until_gone(pids) == []


def _result(plain_vectors, batch_vectors):
    result = bench.Result(["correct"], len(plain_vectors), 2, 60)
    result.scores[bench.PLAIN]["correct"] = plain_vectors
    result.scores[bench.BATCH]["correct"] = batch_vectors
    result.seconds = {g: [10.0] * len(plain_vectors) for g in bench.GRADERS}
    result.load, result.load_still_running_at_end = [1.5, 2.0, 2.5], 2
    return result


FULL = (("01-first-call-vs-steady", "correct_summary", 1.0), ("02-retracing", "two_traces", 2.0))
LOST = (("01-first-call-vs-steady", "correct_summary", 0.0), ("02-retracing", "two_traces", 2.0))


def test_report_identical_runs_exit_0():
    out = io.StringIO()
    assert bench.report(_result([FULL, FULL], [FULL, FULL]), out) == 0
    text = out.getvalue()
    assert "load average (1 min) while grading, 3 samples 1 s apart: min 1.50, median 2.00, max 2.50" in text
    assert re.search(r"^  correct +2/2 +2/2  01 1, 02 2 \(total 3\)$", text, re.M), text
    assert "none: every run of every sample scored exactly as its first run" in text
    assert "graders agree run by run: yes" in text


def test_report_a_run_that_differs_exit_1_with_its_scores():
    out = io.StringIO()
    result = _result([FULL, FULL, FULL], [FULL, LOST, FULL])
    why = {("01-first-call-vs-steady", "correct_summary"): "AssertionError: the summary should say ..."}
    result.messages[bench.BATCH]["correct"] = [{}, why, {}]
    assert bench.report(result, out) == 1
    text = out.getvalue()
    assert re.search(r"^  correct +3/3 +2/3  01 1, 02 2 \(total 3\)$", text, re.M), text
    assert f"  {bench.BATCH}, correct: 2 distinct" in text
    assert "    runs 1, 3: 01 1, 02 2 (total 3)" in text
    assert "    runs 2: 01 0, 02 2 (total 2); 01-first-call-vs-steady correct_summary 0.0 (run 1: 1.0)" in text
    assert "      run 2, 01-first-call-vs-steady correct_summary: AssertionError: the summary should say ..." in text
    assert "graders agree run by run: no, on correct" in text


@pytest.mark.slow
def test_the_solution_scores_the_same_every_run_under_load(tmp_path):
    # The solution alone: it passes every test, the timing claims too, so a verdict that a busy machine moves
    # costs it a point (as one did before, benchmarks/README.md). The untouched release's stubs raise, so it fails
    # every test whatever the load: make bench-load grades it, with the other samples, 20 times.
    names = ["correct"]
    # Without the canary: it grades the instructor's solution and the release, the first being this sample; each
    # grading process would grade them once more before its first student, under the same load.
    # One busy loop: in the suite, the other test processes keep the machine busy too, and a loop per core would
    # slow every one of them for the minutes this test takes (make bench-load runs one per core, alone).
    result = bench.measure(names, runs=2, workdir=tmp_path, load_processes=1, warmup_s=0, progress=None,
                           canary=False)
    assert busy_loops_alive(result.load_pids) == [], "the load generator is gone"
    assert len(result.load_pids) == result.load_processes >= 1
    assert result.load_still_running_at_end == result.load_processes, "the machine was busy until the last run"
    assert result.failures == {g: [] for g in bench.GRADERS}
    for grader in bench.GRADERS:
        for name in names:
            vectors = result.scores[grader][name]
            assert len(vectors) == 2 and vectors[0] == vectors[1], (grader, name, vectors)
    totals = {name: sum(score for _, _, score in result.scores[bench.PLAIN][name][0]) for name in names}
    assert totals == {"correct": 26}
    assert result.scores[bench.PLAIN] == result.scores[bench.BATCH], "both graders give the same scores"
    out = io.StringIO()
    assert bench.report(result, out) == 0, out.getvalue()
