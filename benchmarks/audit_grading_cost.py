"""Benchmark: grading notebook 5 (the audit) with the course's trusted grading, against running it plainly.

    python benchmarks/audit_grading_cost.py [--rounds 3] [--sample correct] [--profile]

A temporary course (made as grading_cost.py makes it) holds one submission of notebook 5 alone
(perfaudit/fixtures/samples.py). Each round runs, taking turns (the order reversed every other round):
- plain: nbclient executes the submitted notebook in a plain kernel (this Python's), in a copy of the submission's
  folder: no sandbox, no hidden tests, nothing graded;
- trusted: `nbgrader autograde --force` with the course's nbgrader_config.py (sandboxed kernel, tests in the
  grader), the canary skipped: it is a fixed cost per grading process, not per notebook;
- with the canary: the same, with the canary (the instructor's solution and the release of notebook 5 graded
  through the same pipeline first), as grading one submission in a fresh process costs.
Prints the seconds of each per round, the ratio to plain per round and its median, and the load average.
--profile: then one trusted grading with the canary in a process that times its parts (the canary, kernel starts,
each cell, each hidden test and, within them, the loops they time and the runs with the grader's LoopJit), and one
plain run's cells. Nothing here is a test: timings depend on the machine and on what else runs on it.
"""

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from perfaudit import ASSIGNMENT, paths

# The plain run and the profiled grading run this script in a process of their own: what only the benchmark needs
# (the course's making, nbgrader's commands) is imported in main, so that neither pays for it.

STAGE = 5
NOTEBOOK = paths.STAGES[STAGE]


def plain_run(folder, out):
    """In this process: nbclient runs folder/NOTEBOOK in a plain kernel; writes {"total", "cells"} to out."""
    # the plain run's own process: what it needs, no more
    import nbclient
    import nbformat

    from perfaudit import notebooks

    nb = nbformat.read(Path(folder) / NOTEBOOK, as_version=4)
    # as the student the trusted run grades (submitted/<student>/<assignment>/): their variant, their data
    os.environ["PERFAUDIT_STUDENT"] = Path(folder).resolve().parent.name
    started = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": folder}}).execute()
    total = time.perf_counter() - started
    cells = {}
    for index, cell in enumerate(nb.cells):
        timing = cell.metadata.get("execution", {})
        if cell.cell_type == "code" and "iopub.execute_input" in timing and "shell.execute_reply" in timing:
            began, ended = (datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                            for k in ("iopub.execute_input", "shell.execute_reply"))
            cells[notebooks.nbgrader_meta(cell).get("grade_id") or f"cell {index}"] = (ended - began).total_seconds()
    Path(out).write_text(json.dumps({"total": total, "cells": cells}))


def plain_seconds(folder, out=None):
    """Seconds of a plain run in a new process (as autograde runs in one), and what it wrote."""
    out = out or Path(folder).parent / "plain-run.json"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--plain-run", str(folder), str(out)], capture_output=True,
                          text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the plain run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds, json.loads(Path(out).read_text())


def profiled_autograde(student, out):
    """In this process (the course's folder): `nbgrader autograde` with its parts timed; writes them to out."""
    # the profiled process's own: the timers go in before nbgrader reads its configuration
    from nbgrader.apps.nbgraderapp import main as nbgrader_main

    from perfaudit.autograde.evidence import audit_evidence
    from perfaudit.autograde.plugins import canary, execute, verdicts
    from perfaudit.checks import audit

    spent, calls, order = collections.defaultdict(float), collections.Counter(), []
    where = ["submission"]  # "canary" while the canary runs: its parts are counted under it

    def add(key, seconds):
        key = f"{where[-1]}: {key}"
        if key not in spent:
            order.append(key)
        spent[key] += seconds
        calls[key] += 1

    def timed(owner, name, key, context=None):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            if context:
                where.append(context(*args) if callable(context) else context)
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds = time.perf_counter() - started
                if context:
                    where.pop()
                add(key(*args) if callable(key) else key, seconds)
        setattr(owner, name, wrapper)

    def cell_key(self, cell, resources, index):
        grade_id = execute.nbgrader_meta(cell).get("grade_id") or f"cell {index}"
        return f"{'test in the grader' if verdicts.is_test(cell) else 'cell in the kernel'}: {grade_id}"

    def canary_run(path, *_):
        return "canary, the solution" if Path(path).parts[-3] == "source" else "canary, the release"

    timed(canary, "check_once_per_process", "the canary, whole", context="canary")
    timed(canary, "_graded", "the canary's run, whole", context=canary_run)
    timed(execute.TrustedExecute, "preprocess", "the notebook's run, whole (the canary in it)")
    # nbclient starts kernels by its sync names, bound to the async functions when its class was made
    timed(execute.TrustedExecute, "start_new_kernel", "kernel start (sandbox)")
    timed(execute.TrustedExecute, "start_new_kernel_client", "kernel client, until it answers")
    timed(execute.TrustedExecute, "preprocess_cell", cell_key)
    timed(execute.TrustedExecute, "_take_snapshot", "  within cells: snapshots of what cells bound")
    turn = [0]

    def loop_timed(*args):
        turn[0] += 1  # grader_speedup times the fixed loop, then the handed-out one, each round
        return "  within: fixed loop timed (ROUNDS)" if turn[0] % 2 else "  within: handed-out loop timed (ROUNDS)"
    timed(audit_evidence, "_timed", loop_timed)
    timed(audit_evidence, "_grader_counted", "  within: fixed_train with the grader's LoopJit")
    timed(audit, "check_fixed_train", "  within: fixed_train on batches of one and several sizes")
    timed(audit, "check_count_traces", "  within: count_traces on the test's loops")
    timed(audit, "check_counted", "  within: count_traces counted (handed-out loop and test loops)")
    sys.argv = ["nbgrader", "autograde", ASSIGNMENT, "--force", f"--student={student}"]
    started = time.perf_counter()
    try:
        nbgrader_main()
    except SystemExit as stop:
        if stop.code:
            raise
    finally:
        Path(out).write_text(json.dumps({"total": time.perf_counter() - started, "process_s": time.process_time(),
                                         "parts": [[k, spent[k], calls[k]] for k in order]}))


def profile(root, student, plain_folder):
    from perfaudit.autograde.plugins.canary import SKIP  # the benchmark's process only, as in main

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop(SKIP, None)
    out = root / "profile.json"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--profiled-autograde", student, str(out)], cwd=root, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the profiled autograde failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    found = json.loads(out.read_text())
    print(f"profile, trusted grading with the canary: {wall:.1f} s in all, {found['total']:.1f} s in nbgrader's "
          f"main (the rest: Python and imports)")
    whole = sum(s for k, s, _ in found["parts"] if k == "submission: the notebook's run, whole (the canary in it)")
    print(f"  {'nbgrader outside the notebook run (start, gradebook, other preprocessors)':72} "
          f"{found['total'] - whole:7.2f} s")
    for key, seconds, n in found["parts"]:
        print(f"  {key:72} {seconds:7.2f} s" + (f"  ({n} calls)" if n > 1 else ""))
    plain_wall, plain = plain_seconds(plain_folder)
    cells = sum(plain["cells"].values())
    print(f"profile, plain run: {plain_wall:.1f} s in all, {plain['total']:.1f} s in nbclient's execute, of which "
          f"cells {cells:.2f} s (kernel start and the rest {plain['total'] - cells:.2f} s)")
    for key, seconds in plain["cells"].items():
        if seconds >= 0.05:
            print(f"  {'cell: ' + key:72} {seconds:7.2f} s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample", default="correct")
    parser.add_argument("--profile", action="store_true", help="then one profiled grading and one plain run")
    parser.add_argument("--plain-run", nargs=2, metavar=("FOLDER", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--profiled-autograde", nargs=2, metavar=("STUDENT", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.plain_run:
        return plain_run(*args.plain_run)
    if args.profiled_autograde:
        return profiled_autograde(*args.profiled_autograde)
    # the benchmark's process only (see the imports above)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
    from courses import make_course
    from grading_cost import autograde_seconds  # this folder is on the path when the script runs

    from perfaudit.fixtures import samples
    from perfaudit.instructor import course

    with tempfile.TemporaryDirectory(prefix="perfaudit-bench-") as scratch:
        root = make_course(Path(scratch) / "course")
        submitted = samples.write_submission(args.sample, root / "submitted", stages={STAGE})
        plain_folder = Path(scratch) / "plain" / ASSIGNMENT
        shutil.copytree(submitted, plain_folder)
        load_before = os.getloadavg()
        rows = []
        for round_ in range(args.rounds):
            order = [("plain", None), ("trusted", False), ("with the canary", True)]
            order = order if round_ % 2 == 0 else order[::-1]
            seconds = {name: plain_seconds(plain_folder)[0] if canary_ is None
                       else autograde_seconds(root, args.sample, canary_) for name, canary_ in order}
            rows.append(seconds)
            print(f"round {round_ + 1}: plain {seconds['plain']:.1f} s, trusted {seconds['trusted']:.1f} s (ratio "
                  f"{seconds['trusted'] / seconds['plain']:.2f}), with the canary {seconds['with the canary']:.1f} s "
                  f"(ratio {seconds['with the canary'] / seconds['plain']:.2f}); load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
        load_after = os.getloadavg()
        if rows:
            scores = {n: s for n, s in course.scores(root)[args.sample].items() if n == Path(NOTEBOOK).stem}
            ratios = [r["trusted"] / r["plain"] for r in rows]
            with_canary = [r["with the canary"] / r["plain"] for r in rows]
            print(f"grading cost of notebook 5: '{args.sample}' submission, {args.rounds} rounds, {os.cpu_count()} "
                  "cores")
            print(f"load average (1/5/15 min) before {'/'.join(f'{x:.1f}' for x in load_before)}, after "
                  f"{'/'.join(f'{x:.1f}' for x in load_after)}")
            for name in ("plain", "trusted", "with the canary"):
                print(f"{name:16} median {statistics.median(r[name] for r in rows):6.1f} s, per round "
                      f"{', '.join(f'{r[name]:.1f}' for r in rows)}")
            print(f"ratio trusted / plain per round: {', '.join(f'{r:.2f}' for r in ratios)}; median "
                  f"{statistics.median(ratios):.2f} (aim <= 2)")
            print(f"ratio with the canary / plain per round: {', '.join(f'{r:.2f}' for r in with_canary)}; median "
                  f"{statistics.median(with_canary):.2f}")
            print(f"score of notebook 5: {sum(s for s, _ in scores.values()):g} of "
                  f"{sum(m for _, m in scores.values()):g}")
        if args.profile:
            profile(root, args.sample, plain_folder)


if __name__ == "__main__":
    main()
