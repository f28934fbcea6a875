"""Benchmark: the same submissions get the same scores, run after run, while the machine is busy.

    python benchmarks/verdicts_under_load.py [--runs 20] [--samples correct,untouched] [--load-processes N]
                                             [--skip-canary]

Two temporary course directories, each with one submission per sample of perfaudit/fixtures/samples.py (all of them by
default: the instructor's solution, `correct`, and the typical mistakes). While one busy-loop Python process per
core keeps the machine busy, each course is graded R times, both graders of a run at once (each loads the other
too, and both see the same machine): plain serial `nbgrader autograde --force` in one, `python -m perfaudit.grade
--regrade` in the other. After every run the exact score of every test is read from that course's gradebook.
Prints, per grader and sample, how many runs scored exactly as the first run did, every distinct set of scores if
some did not (with the runs that got it and the tests that differ), the load average seen while grading (1-minute,
sampled every second), and the wall times. Exits 1 when any run's scores differ from the first run's or a grader
failed.

The busy loops stop themselves after --max-load-s seconds or as soon as this script is gone, and are killed on
the way out whatever happens. Times depend on the machine; only the scores are a verdict.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
from courses import make_course  # noqa: E402

from perfaudit import ASSIGNMENT  # noqa: E402
from perfaudit.autograde.plugins.canary import SKIP as SKIP_CANARY  # noqa: E402
from perfaudit.fixtures import samples  # noqa: E402

DEFAULT_RUNS = 20
DEFAULT_MAX_LOAD_S = 6 * 3600  # a backstop: the busy loops are killed when the runs end
PLAIN, BATCH = "plain nbgrader autograde (serial)", "python -m perfaudit.grade"
GRADERS = (PLAIN, BATCH)
COMMANDS = {
    PLAIN: ["-m", "nbgrader", "autograde", ASSIGNMENT, "--force"],
    BATCH: ["-m", "perfaudit.grade", "--regrade", "--no-feedback", "--no-progress"],
}

BUSY_LOOP_MARK = "perfaudit-busy-loop"
BUSY_LOOP = f"""# {BUSY_LOOP_MARK}
import os, sys, time
end, parent = time.monotonic() + float(sys.argv[1]), int(sys.argv[2])
while time.monotonic() < end and os.getppid() == parent:  # stops at the deadline, or when its parent is gone
    for _ in range(100_000):
        pass
"""


class Load:
    """`processes` busy-loop Python processes, each stopping itself after max_seconds, and the load average.

    Used as a context manager: the processes start on entry and are killed and reaped on exit; meanwhile a thread
    samples the 1-minute load average every `interval` seconds into `samples`.
    """

    def __init__(self, processes, max_seconds, interval=1.0):
        self.count, self.max_seconds, self.interval = processes, max_seconds, interval
        self.processes, self.samples = [], []
        self.still_running_at_end = 0
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    @property
    def pids(self):
        return [p.pid for p in self.processes]

    def _sample(self):
        while not self._stop.wait(self.interval):
            self.samples.append(os.getloadavg()[0])

    def restart_samples(self):
        """Forget the samples so far (the busy loops' own ramp-up): the figures are those of the runs."""
        self.samples.clear()

    def __enter__(self):
        try:
            for _ in range(self.count):
                argv = [sys.executable, "-c", BUSY_LOOP, str(self.max_seconds), str(os.getpid())]
                self.processes.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        except BaseException:
            self._kill()
            raise
        self._sampler.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._sampler.join()
        self.still_running_at_end = sum(p.poll() is None for p in self.processes)
        self._kill()
        return False

    def _kill(self):
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for process in self.processes:
            process.wait()


def prepare_course(root, sample_names):
    """A course made as tests/helpers/courses.make_course makes one, with one submission per sample, named after it."""
    root = make_course(Path(root))
    for name in sample_names:
        samples.write_submission(name, root / "submitted")
    return root


def grade(grader, root, canary=True):
    """Run one grader over the whole course: (wall seconds, exit status, the end of its output)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if not canary:  # both graders read it
        env[SKIP_CANARY] = "1"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *COMMANDS[grader]], cwd=root, env=env, capture_output=True, text=True)
    return time.perf_counter() - started, done.returncode, (done.stdout + done.stderr)[-3000:]


def read_scores(root):
    """{student: ((notebook, test, score), ...)}: every test's exact score, from the course's sqlite gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{Path(root) / 'gradebook.db'}") as gradebook:
        return {
            submission.student.id: tuple(sorted(
                (nb.name, grade.name, grade.score) for nb in submission.notebooks for grade in nb.grades
            ))
            for submission in gradebook.find_assignment(ASSIGNMENT).submissions
        }


def read_failed_tests(root):
    """{student: {(notebook, test): its error, one line}}: what each failed test said, from autograded/."""
    failed = defaultdict(dict)
    for path in sorted(Path(root, "autograded").glob(f"*/{ASSIGNMENT}/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            test = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
            if test and error is not None:
                failed[path.parts[-3]][(path.stem, test)] = f"{error.get('ename')}: {error.get('evalue')}"[:400]
    return failed


@dataclass
class Result:
    sample_names: list
    runs: int
    load_processes: int
    max_load_s: float
    canary: bool = True
    scores: dict = field(default_factory=lambda: {g: defaultdict(list) for g in GRADERS})  # {grader: {sample: [..]}}
    seconds: dict = field(default_factory=lambda: {g: [] for g in GRADERS})  # {grader: [wall s of each run]}
    failures: dict = field(default_factory=lambda: {g: [] for g in GRADERS})  # {grader: [(run, status, output)]}
    # {grader: {sample: [{(notebook, test): the failed test's error} of each run]}}: why a point was lost
    messages: dict = field(default_factory=lambda: {g: defaultdict(list) for g in GRADERS})
    load: list = field(default_factory=list)  # 1-minute load averages, one a second, while grading
    load_pids: list = field(default_factory=list)
    load_still_running_at_end: int = 0
    wall_s: float = 0.0


def measure(sample_names, runs, workdir, load_processes=None, max_load_s=DEFAULT_MAX_LOAD_S, warmup_s=10.0,
            progress=sys.stderr, canary=True):
    """Grade every sample `runs` times with each grader under load; return the Result (nothing is printed to stdout)."""
    load_processes = (os.cpu_count() or 1) if load_processes is None else load_processes
    result = Result(list(sample_names), runs, load_processes, max_load_s, canary)
    courses = {g: prepare_course(Path(workdir) / f"course-{i}", sample_names) for i, g in enumerate(GRADERS)}
    with Load(load_processes, max_load_s) as load:
        result.load_pids = load.pids
        time.sleep(warmup_s)  # the busy loops alone first: grading starts on a machine that is already busy
        load.restart_samples()
        started = time.monotonic()
        for run in range(1, runs + 1):
            with ThreadPoolExecutor(len(GRADERS)) as pool:  # at once: both graders see the same machine
                graded = dict(zip(GRADERS, pool.map(lambda g: grade(g, courses[g], canary), GRADERS)))
            for grader in GRADERS:
                seconds, status, output = graded[grader]
                result.seconds[grader].append(seconds)
                if status != 0:
                    result.failures[grader].append((run, status, output))
                scores, failed = read_scores(courses[grader]), read_failed_tests(courses[grader])
                for name in sample_names:
                    result.scores[grader][name].append(scores.get(name))
                    result.messages[grader][name].append(failed.get(name, {}))
                if progress:
                    print(f"run {run}/{runs} {grader}: {seconds:.1f} s, exit {status}, "
                          f"load average {os.getloadavg()[0]:.1f}", file=progress, flush=True)
        result.wall_s = time.monotonic() - started
    result.load = list(load.samples)
    result.load_still_running_at_end = load.still_running_at_end
    return result


def _totals(vector):
    """'01 5, 02 4, 03 4, 04 5 (total 18)' from per-test scores."""
    if vector is None:
        return "not in the gradebook"
    per_notebook = defaultdict(float)
    for notebook, _, score in vector:
        per_notebook[notebook] += score or 0
    listed = ", ".join(f"{nb.split('-')[0]} {score:g}" for nb, score in sorted(per_notebook.items()))
    return f"{listed} (total {sum(per_notebook.values()):g})"


def _changed_tests(first, other):
    """{(notebook, test): 'notebook test score (run 1: score)'} of the tests whose score differs from the first
    run's."""
    before = {(nb, test): score for nb, test, score in first or ()}
    return {(nb, test): f"{nb} {test} {score} (run 1: {before.get((nb, test), 'no such test')})"
            for nb, test, score in other or () if before.get((nb, test)) != score}


def distinct(vectors):
    """[(vector, [runs that got it])] in order of first appearance."""
    runs_of = {}
    for run, vector in enumerate(vectors, start=1):
        runs_of.setdefault(vector, []).append(run)
    return list(runs_of.items())


def report(result, out=sys.stdout):
    """Print the figures; return the exit status: 1 when any run differs from the first or a grader failed."""
    names = result.sample_names
    print(f"verdicts under load: {result.runs} runs x {len(names)} samples ({', '.join(names)}), "
          f"{len(GRADERS)} graders, {os.cpu_count()} cores", file=out)
    running, started = result.load_still_running_at_end, result.load_processes
    alive = f"all {started} busy until the end" if running == started else f"only {running} of {started} at the end"
    print(f"load: {result.load_processes} busy-loop processes (each stops itself after {result.max_load_s:g} s): "
          f"{alive}; all stopped", file=out)
    print("canary: " + ("run by each grading process before its first student" if result.canary else
                        f"skipped ({SKIP_CANARY}=1): the samples correct and untouched are its verdicts"), file=out)
    if result.load:
        print(f"load average (1 min) while grading, {len(result.load)} samples 1 s apart: min {min(result.load):.2f}, "
              f"median {statistics.median(result.load):.2f}, max {max(result.load):.2f}", file=out)
    for grader in GRADERS:
        seconds = result.seconds[grader]
        print(f"{grader + ':':36} {sum(seconds):7.1f} s in all, per run min {min(seconds):.1f} / median "
              f"{statistics.median(seconds):.1f} / max {max(seconds):.1f} s", file=out)
    print(f"wall time of the runs: {result.wall_s:.1f} s", file=out)

    print(f"\nruns whose scores are identical to the first run's, of {result.runs}:", file=out)
    width = max(len(n) for n in [*names, "sample"])
    print(f"  {'sample':<{width}}  {'plain nbgrader':>14}  {'perfaudit.grade':>15}  first run's scores", file=out)
    differ = False
    for name in names:
        same = {}
        for grader in GRADERS:
            vectors = result.scores[grader][name]
            same[grader] = sum(v == vectors[0] for v in vectors)
            differ |= same[grader] != len(vectors)
        print(f"  {name:<{width}}  {f'{same[PLAIN]}/{result.runs}':>14}  {f'{same[BATCH]}/{result.runs}':>15}  "
              f"{_totals(result.scores[PLAIN][name][0])}", file=out)

    print("\ndistinct score vectors:", file=out)
    any_listed = False
    for grader in GRADERS:
        for name in names:
            kinds = distinct(result.scores[grader][name])
            if len(kinds) < 2:
                continue
            any_listed = True
            print(f"  {grader}, {name}: {len(kinds)} distinct", file=out)
            first = kinds[0][0]
            for vector, runs in kinds:
                changed = _changed_tests(first, vector)
                print(f"    runs {', '.join(map(str, runs))}: {_totals(vector)}"
                      + (f"; {'; '.join(changed.values())}" if changed else ""), file=out)
                messages = result.messages[grader][name]  # empty where a Result was made without them
                for run in runs if messages else ():
                    for notebook, test in changed:
                        if (notebook, test) in messages[run - 1]:
                            print(f"      run {run}, {notebook} {test}: {messages[run - 1][notebook, test]}", file=out)
    if not any_listed:
        print("  none: every run of every sample scored exactly as its first run", file=out)

    disagree = [n for n in names if result.scores[PLAIN][n] != result.scores[BATCH][n]]
    print(f"\ngraders agree run by run: {'yes' if not disagree else 'no, on ' + ', '.join(disagree)}", file=out)
    failed = False
    for grader in GRADERS:
        for run, status, output in result.failures[grader]:
            failed = True
            print(f"FAILED: {grader}, run {run}, exit status {status}; its output ends:\n{output}", file=out)
    return 1 if differ or failed else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help=f"runs of each grader (default {DEFAULT_RUNS})")
    parser.add_argument("--samples", default=",".join(["correct", *sorted(set(samples.SAMPLES) - {"correct"})]),
                        help="comma-separated names from perfaudit/fixtures/samples.py (default: all, correct first)")
    parser.add_argument("--load-processes", type=int, default=os.cpu_count() or 1,
                        help="busy-loop processes (default: one per core; 0: an idle machine, for comparison)")
    parser.add_argument("--max-load-s", type=float, default=DEFAULT_MAX_LOAD_S,
                        help=f"each busy loop stops itself after this many seconds (default {DEFAULT_MAX_LOAD_S})")
    parser.add_argument("--warmup-s", type=float, default=10.0, help="busy loops alone before the first run")
    parser.add_argument("--skip-canary", dest="canary", action="store_false",
                        help="grade without the canary (it grades the solution and the release in every grading "
                             "process, as the samples correct and untouched do: the same verdicts, for less time)")
    args = parser.parse_args(argv)
    names = [n for n in args.samples.split(",") if n]
    unknown = sorted(set(names) - set(samples.SAMPLES))
    if unknown or not names or args.runs < 1:
        parser.error(f"--samples must name samples of perfaudit/fixtures/samples.py "
                     f"({', '.join(sorted(samples.SAMPLES))}) "
                     f"and --runs be at least 1; unknown: {', '.join(unknown) or 'none'}")
    with tempfile.TemporaryDirectory(prefix="perfaudit-load-") as workdir:
        result = measure(names, args.runs, workdir, args.load_processes, args.max_load_s, args.warmup_s,
                         canary=args.canary)
    return report(result)


if __name__ == "__main__":
    sys.exit(main())
