"""Benchmark: python -m perfaudit.grade against plain serial `nbgrader autograde`, side by side in one run.

    python benchmarks/batch_grading.py [--students 40] [--workers N]

One temporary course directory, 40 generated submissions x 4 notebooks cycling through the sample mix of
perfaudit/samples.py (correct, untouched, partly right, and the typical mistakes). Plain nbgrader grades
them all, then this command grades them all again (--regrade) in the same course directory; the scores of
every submission must be identical. The floor is bare `python` running each notebook's code (as graded,
hidden tests included, from the correct submission) as a script in a copy of its autograded folder.
Prints wall times, how many cores each grader kept busy, the throughput ratio with the ceiling the machine's
cores leave it, and the per-notebook time against the floor. Nothing here is a test: timings depend on the
machine and on what else runs on it (the load average is printed; the CPU figures assume an idle machine).
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

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import make_course  # noqa: E402

from perfaudit import ASSIGNMENT, course, paths  # noqa: E402
from perfaudit.fixtures import samples  # noqa: E402


def _machine_busy_s():
    """CPU seconds every core of this machine has spent busy since boot (Linux /proc/stat).

    A grader's kernels and sandboxes are not all waited for by the process that started them, so per-process
    accounting misses them; on an otherwise idle machine the whole machine's busy time is the run's.
    """
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def timed(command, cwd, busy=None):
    """Wall seconds of a command; with busy={} also the machine's busy CPU seconds meanwhile."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    cpu_before, started = _machine_busy_s(), time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    if busy is not None:
        busy["cpu_s"] = _machine_busy_s() - cpu_before
    return seconds


def floor_per_notebook(root, student, repeats=2):
    """Bare python running each autograded notebook's code cells as one script: mean seconds per notebook."""
    times = []
    for filename in paths.STAGES.values():
        nb = nbformat.read(root / "autograded" / student / ASSIGNMENT / filename, as_version=4)
        code = "\n\n".join(c.source for c in nb.cells if c.cell_type == "code")
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as folder:
                # the non-notebook files autograde would copy beside the notebook
                no_notebooks = shutil.ignore_patterns("*.ipynb")
                shutil.copytree(root / "source" / ASSIGNMENT, folder, dirs_exist_ok=True, ignore=no_notebooks)
                script = Path(folder) / "notebook_as_script.py"
                script.write_text(code)
                times.append(timed([sys.executable, str(script)], cwd=folder))
    return statistics.mean(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    mix = sorted(samples.SAMPLES)
    notebooks = args.students * len(paths.STAGES)
    with tempfile.TemporaryDirectory(prefix="perfaudit-bench-") as tmp:
        root = make_course(Path(tmp))
        for i in range(args.students):
            name = mix[i % len(mix)]
            folder = samples.write_submission(name, root / "submitted")
            folder.parent.rename(root / "submitted" / f"s{i + 1:02d}-{name}")
        load_before = os.getloadavg()

        plain_cpu, ours_cpu = {}, {}
        plain_s = timed([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--force"], cwd=root, busy=plain_cpu)
        plain = course.scores(root)
        ours_s = timed(
            [sys.executable, "-m", "perfaudit.grade", "--regrade", "--no-feedback", "--no-progress",
             f"--workers={args.workers}"],
            cwd=root,
            busy=ours_cpu,
        )
        ours = course.scores(root)
        floor_s = floor_per_notebook(root, "s01-correct")
        load_after = os.getloadavg()

    differing = sorted(s for s in plain if plain[s] != ours.get(s))
    print(f"batch grading benchmark: {args.students} submissions x {len(paths.STAGES)} notebooks = {notebooks}, "
          f"mix of {len(mix)} samples, {os.cpu_count()} cores, {args.workers} workers")
    print(f"load average (1/5/15 min) before {load_before[0]:.1f}/{load_before[1]:.1f}/{load_before[2]:.1f}, "
          f"after {load_after[0]:.1f}/{load_after[1]:.1f}/{load_after[2]:.1f}")
    print(f"plain nbgrader autograde (serial):   {plain_s:7.1f} s  {plain_s / notebooks:5.2f} s/notebook")
    print(f"python -m perfaudit.grade:           {ours_s:7.1f} s  {ours_s / notebooks:5.2f} s/notebook "
          "(export and summary included, feedback not)")
    print(f"floor, bare python per notebook:                {floor_s:5.2f} s/notebook (correct submission, mean)")
    plain_busy, ours_busy = plain_cpu["cpu_s"] / plain_s, ours_cpu["cpu_s"] / ours_s
    print(f"busy cores (machine CPU seconds per wall second): plain nbgrader {plain_busy:.2f}, perfaudit.grade "
          f"{ours_busy:.2f} of {os.cpu_count()}; CPU per notebook: plain {plain_cpu['cpu_s'] / notebooks:.2f} s, "
          f"perfaudit.grade {ours_cpu['cpu_s'] / notebooks:.2f} s")
    # At best, parallel workers keep every core busy: this run's CPU seconds spread over all cores.
    ceiling = os.cpu_count() * plain_s / ours_cpu["cpu_s"]
    print(f"throughput vs plain nbgrader: {plain_s / ours_s:.2f}x (target >= 3x; ceiling here "
          f"{ceiling:.2f}x = all cores busy with this run's CPU work per notebook)")
    print(f"per-notebook time vs floor: perfaudit.grade {ours_s / notebooks / floor_s:.2f}x (target <= 1.5x), "
          f"plain nbgrader {plain_s / notebooks / floor_s:.2f}x")
    print(f"identical scores: {len(plain) - len(differing)}/{len(plain)} submissions"
          + (f"; DIFFERENT: {', '.join(differing)}" if differing else ""))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
