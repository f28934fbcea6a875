"""Benchmark: what the trusted grading costs per notebook, against plain nbgrader 0.9.6, side by side in one run.

    python benchmarks/grading_cost.py [--rounds 3] [--sample correct]

The canary (perfaudit/autograde/plugins/canary.py) is a fixed cost per grading process, not per notebook: it is
measured apart, and skipped (PERFAUDIT_SKIP_CANARY=1) in the per-notebook comparison.

Two temporary course directories hold the same submission (perfaudit/fixtures/samples.py). One has this course's
nbgrader_config.py: every kernel in bubblewrap with its limits, test cells run in the grader against the kernel
through the channel. The other has a bare configuration (only the course id): plain nbgrader 0.9.6, hidden tests
in the student's own kernel, no sandbox. Each round runs `nbgrader autograde --force` on both, alternating which
goes first. Prints seconds per notebook for each, the ratio per round and its median, and the load average.
Nothing here is a test: timings depend on the machine and on what else runs on it.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
from courses import make_course  # noqa: E402

from perfaudit import ASSIGNMENT, paths
from perfaudit.fixtures import samples  # noqa: E402
from perfaudit.instructor import course  # noqa: E402

# The course's answer keys sit in plain markdown cells, which nbgrader clears only with enforce_metadata off.
BARE_CONFIG = ('c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = "jax-performance-audit"\n'
               "c.ClearSolutions.enforce_metadata = False\n")


def make_bare_course(root):
    """A course directory graded by nbgrader as shipped: no plug-ins, hidden tests in the student's kernel."""
    (root / "source").mkdir(parents=True)
    shutil.copytree(paths.SOURCE, root / "source" / ASSIGNMENT)
    (root / "nbgrader_config.py").write_text(BARE_CONFIG)
    course.nbgrader("generate_assignment", ASSIGNMENT, course_dir=root)
    return root


def autograde_seconds(root, student, canary=True):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    if not canary:  # the canary is a fixed cost per grading process, not per notebook: measured apart
        env["PERFAUDIT_SKIP_CANARY"] = "1"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--force",
                           f"--student={student}"], cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"autograde failed in {root}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample", default="correct")
    args = parser.parse_args(argv)
    notebooks = len(paths.STAGES)
    with tempfile.TemporaryDirectory(prefix="perfaudit-bench-") as scratch:
        trusted = make_course(Path(scratch) / "trusted")
        bare = make_bare_course(Path(scratch) / "bare")
        for root in (trusted, bare):
            samples.write_submission(args.sample, root / "submitted")
        load_before = os.getloadavg()
        rows = []
        for round_ in range(args.rounds):
            order = [("trusted", trusted, False), ("bare", bare, True), ("with canary", trusted, True)]
            order = order if round_ % 2 == 0 else order[::-1]
            seconds = {name: autograde_seconds(root, args.sample, canary) / notebooks for name, root, canary in order}
            rows.append(seconds)
            print(f"round {round_ + 1}: plain nbgrader {seconds['bare']:.2f} s/notebook, this course's grading "
                  f"{seconds['trusted']:.2f} s/notebook (ratio {seconds['trusted'] / seconds['bare']:.3f}), "
                  f"with the canary of one process {seconds['with canary']:.2f} s/notebook", file=sys.stderr)
        scores = {name: course.scores(root)[args.sample] for name, root in (("trusted", trusted), ("bare", bare))}
    ratios = [row["trusted"] / row["bare"] for row in rows]
    print(f"grading cost per notebook: '{args.sample}' submission, {notebooks} notebooks, {args.rounds} rounds, "
          f"{os.cpu_count()} cores")
    print(f"load average (1 min) before {load_before[0]:.1f}, after {os.getloadavg()[0]:.1f}")
    print(f"plain nbgrader 0.9.6 (no course configuration): "
          f"{statistics.median(r['bare'] for r in rows):.3f} s/notebook")
    print(f"this course's grading (sandbox, tests in the grader): "
          f"{statistics.median(r['trusted'] for r in rows):.3f} s/notebook")
    canary = statistics.median((r["with canary"] - r["trusted"]) * notebooks for r in rows)
    print(f"the canary, once per grading process (the solution and the release of each notebook): {canary:.1f} s")
    print(f"ratio per round: {', '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f} "
          "(target <= 1.15)")
    print(f"scores: this course {sum(s for s, _ in scores['trusted'].values()):g}, plain nbgrader "
          f"{sum(s for s, _ in scores['bare'].values()):g} of {sum(m for _, m in scores['bare'].values()):g}")


if __name__ == "__main__":
    main()
