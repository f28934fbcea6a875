"""Benchmark: python -m perfaudit.grade on Dask (1 and 2 local workers, a loopback cluster) against plain nbgrader.

    python benchmarks/batch_grading.py [--students 40]

Two temporary course directories hold the same submissions: --students of them (default 40) x 4 notebooks,
cycling through the sample mix of perfaudit/fixtures/samples.py (honest work: correct, untouched, partly right,
the typical mistakes). One is graded by plain serial `nbgrader autograde` 0.9.6 with no course configuration (only
the course id: hidden tests in the student's kernel, no sandbox). The other is graded by this course's command, in
turn with a local cluster of 1 worker, of 2 workers, and on a `dask scheduler` with two `dask worker` processes on
loopback (two simulated machines, started before the clock starts), each run --regrade --no-feedback
--skip-canary (the canary is a fixed cost per worker process, measured by benchmarks/grading_cost.py).

Prints each run's wall time, the busy cores, the throughput ratios, the engine's overhead per notebook (the
grading phase's wall time with 1 worker less the tasks' own time on the worker: cluster start, the assignment's
definition, reading submissions, moving results, writing the gradebook) as a share of a notebook's grading time,
and whether every submission scored as plain nbgrader scored it, notebook by notebook. Nothing here is a test:
timings depend on the machine and on what else runs on it (the load average is printed).
"""

import argparse
import io
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from courses import make_course  # noqa: E402
from grading_cost import make_bare_course  # noqa: E402

from perfaudit import ASSIGNMENT, paths
from perfaudit.fixtures import samples  # noqa: E402
from perfaudit.grade.run import Options, run  # noqa: E402
from perfaudit.instructor import course  # noqa: E402


def _machine_busy_s():
    """CPU seconds every core of this machine has spent busy since boot (Linux /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _env():
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def _fill(root, students):
    mix = sorted(samples.SAMPLES)
    for i in range(students):
        name = mix[i % len(mix)]
        samples.write_submission(name, root / "submitted")
        (root / "submitted" / name).rename(root / "submitted" / f"s{i + 1:02d}-{name}")


def _plain(root):
    cpu, started = _machine_busy_s(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--force"], cwd=root,
                          env=_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"plain nbgrader failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - started, _machine_busy_s() - cpu, None


def _ours(root, **where):
    options = Options(course_dir=root, regrade=True, feedback=False, progress=False, canary=False, **where)
    cpu, started = _machine_busy_s(), time.perf_counter()
    batch = run(options, out=io.StringIO())
    return time.perf_counter() - started, _machine_busy_s() - cpu, batch


class LoopbackCluster:
    """`dask scheduler` and two `dask worker` processes on 127.0.0.1, as docs/grading-at-scale.md starts them."""

    def __enter__(self):
        from distributed import Client

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        dask, quiet = Path(sys.executable).parent / "dask", {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.processes = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                            "--no-dashboard"], env=_env(), **quiet)]
        self.processes += [subprocess.Popen([dask, "worker", self.address, "--nworkers", "1", "--nthreads", "1",
                                             "--host", "127.0.0.1", "--no-dashboard", "--memory-limit", "0"],
                                            env=_env(), **quiet) for _ in range(2)]
        with Client(self.address, timeout="60s", set_as_default=False) as client:
            client.wait_for_workers(2, timeout=120)
        return self

    def __exit__(self, *_):
        for process in reversed(self.processes):
            process.terminate()
        for process in self.processes:
            process.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    args = parser.parse_args()
    notebooks = args.students * len(paths.STAGES)
    rows = {}
    with tempfile.TemporaryDirectory(prefix="perfaudit-bench-") as tmp:
        bare, ours = make_bare_course(Path(tmp) / "bare"), make_course(Path(tmp) / "course")
        _fill(bare, args.students)
        _fill(ours, args.students)
        load_before = os.getloadavg()
        rows["plain nbgrader 0.9.6, no course configuration, serial"] = _plain(bare)
        plain_scores = course.scores(bare)
        scores = {}
        for label, where in (("perfaudit.grade, local cluster, 1 worker", {"workers": 1}),
                             ("perfaudit.grade, local cluster, 2 workers", {"workers": 2})):
            rows[label] = _ours(ours, **where)
            scores[label] = course.scores(ours)
        with LoopbackCluster() as cluster:
            label = "perfaudit.grade, dask scheduler + 2 dask workers, loopback"
            rows[label] = _ours(ours, scheduler=cluster.address)
            scores[label] = course.scores(ours)
        load_after = os.getloadavg()

    print(f"batch grading benchmark: {args.students} submissions x {len(paths.STAGES)} notebooks = {notebooks}, mix "
          f"of {len(samples.SAMPLES)} samples, {os.cpu_count()} cores; canary skipped, feedback not generated")
    print(f"load average (1/5/15 min) before {load_before[0]:.1f}/{load_before[1]:.1f}/{load_before[2]:.1f}, "
          f"after {load_after[0]:.1f}/{load_after[1]:.1f}/{load_after[2]:.1f}")
    for label, (wall, cpu, _) in rows.items():
        print(f"{label + ':':<62} {wall:7.1f} s  {wall / notebooks:5.2f} s/notebook  busy cores {cpu / wall:.2f}")
    walls = {label: wall for label, (wall, _, _) in rows.items()}
    one, two, loop, plain = (walls[k] for k in (
        "perfaudit.grade, local cluster, 1 worker", "perfaudit.grade, local cluster, 2 workers",
        "perfaudit.grade, dask scheduler + 2 dask workers, loopback",
        "plain nbgrader 0.9.6, no course configuration, serial"))
    print(f"throughput, 2 local workers vs 1: {one / two:.2f}x (target >= 1.8x); loopback cluster (2 workers) vs 1 "
          f"local worker: {one / loop:.2f}x; vs plain serial nbgrader: 1 worker {plain / one:.2f}x, 2 workers "
          f"{plain / two:.2f}x, loopback cluster {plain / loop:.2f}x")
    batch = rows["perfaudit.grade, local cluster, 1 worker"][2]
    grading, task = batch.seconds["autograde"], batch.task_seconds
    overhead = (grading - task) / notebooks
    print(f"engine overhead, 1 local worker: grading phase {grading:.1f} s, the tasks' own time {task:.1f} s: "
          f"{overhead:.3f} s/notebook = {100 * overhead / (task / notebooks):.1f}% of a notebook's grading time "
          f"({task / notebooks:.2f} s) (target < 5%)")
    exit_code = 0
    for label, got in scores.items():
        differing = sorted(s for s in plain_scores if plain_scores[s] != got.get(s))
        print(f"identical scores to plain nbgrader, {label}: {len(plain_scores) - len(differing)}/"
              f"{len(plain_scores)} submissions" + (f"; DIFFERENT: {', '.join(differing)}" if differing else ""))
        for student in differing:
            print(f"  {student}: plain {plain_scores[student]}, this course {got.get(student)}")
        exit_code |= bool(differing)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
