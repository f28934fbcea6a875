"""Benchmark: what confirming verdicts outside the kernel costs, side by side in one run.

    python benchmarks/confirmation_cost.py [--rounds 3]

One temporary course directory with the correct sample; plain `nbgrader autograde` of its four notebooks with
ConfirmVerdicts switched off and on, alternating, so both see the same machine. Prints each round's wall times
and their ratio, and the scores (they must be the same). Nothing here is a test: times depend on the machine.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import make_course  # noqa: E402

from perfaudit import ASSIGNMENT, course, samples  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfaudit-confirm-cost-") as tmp:
        root = make_course(Path(tmp))
        samples.write_submission("correct", root / "submitted")
        print(f"autograde of the correct sample's 4 notebooks, {os.cpu_count()} cores, "
              f"load average before {os.getloadavg()[0]:.1f}")
        scores = set()
        for round_number in range(1, args.rounds + 1):
            seconds = {}
            for enabled in (False, True):
                started = time.perf_counter()
                course.nbgrader("autograde", ASSIGNMENT, "--force", f"--ConfirmVerdicts.enabled={enabled}",
                                course_dir=root)
                seconds[enabled] = time.perf_counter() - started
                scores.add(tuple(score for score, _ in course.scores(root)["correct"].values()))
            print(f"round {round_number}: without confirmation {seconds[False]:5.1f} s, with {seconds[True]:5.1f} s, "
                  f"ratio {seconds[True] / seconds[False]:.2f}")
        print(f"scores (each notebook), every run: {sorted(scores)}")
    return 0 if len(scores) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
