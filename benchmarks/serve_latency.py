"""Time from submit to feedback when many submissions reach the grading service together.

    python benchmarks/serve_latency.py                     # 20 submissions of all four notebooks, 2 workers
    python benchmarks/serve_latency.py --submissions 8 --stages 1

A course with its exchange is made in a temporary folder. The service (`python -m perfaudit.serve`, a subprocess)
starts and grades one warm-up submission, so each worker process has run the canary (a fixed cost per worker, once
per service's life), unless --cold. Then N submissions of the sample (nbgrader submit, one student id each:
`--student`, the owner check off since one account submits them all) are made aside and moved into the exchange's
inbound in one go: they arrive together. Each one's time is from that moment to the moment its feedback was released
(the service's ledger). Prints the median, the 95th percentile (nearest rank) and the maximum, and the service's
own `--status`.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
from serve_course import Service, course_with_exchange, ledger, student_home, submit  # noqa: E402

import nbformat  # noqa: E402

from perfaudit import ASSIGNMENT, paths
from perfaudit.fixtures import samples  # noqa: E402
from perfaudit.instructor import course  # noqa: E402
from perfaudit.serve.ledger import percentile  # noqa: E402


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=20)
    parser.add_argument("--stages", type=int, default=4, help="notebooks 1..N in the assignment (default 4: all)")
    parser.add_argument("--sample", default="correct", help="a sample of perfaudit/fixtures/samples.py")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cold", action="store_true", help="no warm-up: the canary falls on the first submissions")
    parser.add_argument("--timeout-s", type=int, default=3600)
    return parser.parse_args(argv)


def wait(root, predicate, service, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = ledger(root)
        if predicate(found):
            return found
        if service.process.poll() is not None:
            raise SystemExit(f"the service stopped:\n{service.log()}")
        time.sleep(0.2)
    raise SystemExit(f"timed out:\n{service.log()}")


def main(argv=None):
    args = parse(argv)
    stages = tuple(range(1, args.stages + 1))
    settings = ("c.GradingService.poll_seconds = 0.5\nc.GradingService.check_owner = False\n"
                f"c.GradingService.graded_per_window = {args.submissions + 1}")
    with tempfile.TemporaryDirectory(prefix="serve-latency-") as tmp:
        tmp = Path(tmp)
        root = course_with_exchange(tmp / "course", stages, settings)
        inbound = root / "exchange" / "jax-performance-audit" / "inbound"
        aside = tmp / "aside"  # an exchange of the same course that the service does not watch
        (aside / "jax-performance-audit").mkdir(parents=True)
        (aside / "jax-performance-audit" / "inbound").mkdir()
        os.symlink(root / "exchange" / "jax-performance-audit" / "outbound",
                   aside / "jax-performance-audit" / "outbound")
        student = student_home(tmp / "student", root / "exchange")
        made = student_home(tmp / "students", aside)
        load_before = os.getloadavg()
        service = Service(root, "--workers", str(args.workers))
        try:
            if not args.cold:
                started = time.monotonic()
                submit(student, args.sample, stages)
                wait(root, lambda f: f and all(r["status"] == "graded" for r in f.values()), service, args.timeout_s)
                print(f"warm-up (service start, canary in each worker, one grading): "
                      f"{time.monotonic() - started:.1f} s")
            for index in range(args.submissions):
                _submit_as(made, f"s{index:02d}", args.sample, stages)
            names = {p.name for p in (aside / "jax-performance-audit" / "inbound").iterdir()}
            arrived = time.time()
            for name in sorted(names):
                os.rename(aside / "jax-performance-audit" / "inbound" / name, inbound / name)
            found = wait(root, lambda f: all(f.get(n, {}).get("released_at") for n in names), service,
                         args.timeout_s)
            status = subprocess.run([sys.executable, "-m", "perfaudit.serve", "--status"], cwd=root,
                                    capture_output=True, text=True).stdout
        finally:
            service.stop()
        waits = sorted(found[n]["released_at"] - arrived for n in names)
        scores = sorted({found[n]["score"] for n in names})
        print(f"serve latency: {len(names)} submissions of '{args.sample}' ({args.stages} notebook(s) each) arriving "
              f"together, {args.workers} worker(s), {os.cpu_count()} cores, {'cold' if args.cold else 'warm'} service")
        print(f"load average (1/5/15 min) before {'/'.join(f'{x:.1f}' for x in load_before)}, after "
              f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
        print(f"submit -> feedback: median {statistics.median(waits):.1f} s, 95th percentile "
              f"{percentile(waits, 0.95):.1f} s, first {waits[0]:.1f} s, last {waits[-1]:.1f} s; scores {scores}")
        print(status)
        print(json.dumps({"median_s": statistics.median(waits), "p95_s": percentile(waits, 0.95),
                          "max_s": waits[-1], "n": len(waits)}))


def _submit_as(student, student_id, sample, stages):
    """`nbgrader submit --student=<id>`: one account submitting as many students, into the exchange set aside."""
    work = student / ASSIGNMENT
    work.mkdir(exist_ok=True)
    for stage in stages:
        nbformat.write(samples.submission(samples.SAMPLES[sample], stage), work / paths.STAGES[stage])
    course.nbgrader("submit", ASSIGNMENT, f"--student={student_id}", course_dir=student)


if __name__ == "__main__":
    main()
