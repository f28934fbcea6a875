"""The checker: run one stage's notebook and say PASS or FAIL.

    python -m perfaudit.check --stage 1                                  # students: your notebook, visible checks
    python -m perfaudit.check --implementation solution --stage 1        # instructors: source/
    python -m perfaudit.check --implementation starter --stage 3 --evidence-dir runs/performance-audit
    python -m perfaudit.check --implementation solution --stage 1 --in-process  # where no kernel can start
    python -m perfaudit.check --id jdoe                                  # students: state your id once (notebook 5)

Without --implementation it runs the student's working copy (work/performance-audit/, made from the release on
first use) as it is: the visible checks only, since hidden tests exist only where they are graded. The instructor's
`solution` runs the notebook in source/; `starter` runs the release in notebooks/ with the instructor's locked
cells (hidden tests included) put back, as nbgrader autograde does. Exit status 0 on PASS, 1 on FAIL.

The first line counts the checks that ran (test cells and self-check cells) and names those that failed. It never
shows points: a visible check passing here says nothing of the hidden tests that grading adds.
"""

import argparse
import sys
import tempfile
from pathlib import Path

from perfaudit import ASSIGNMENT, notebooks, paths, reuse, variants, workcopy


def stage_notebook(implementation, stage, source):
    """The notebook to run for a stage, with the hidden tests in place, and any graded cells it lacks."""
    if implementation == "solution":
        return source, []
    student = notebooks.read(paths.RELEASE / paths.STAGES[stage])
    return notebooks.restore_locked_cells(student, source)


HIDDEN_TESTS_NOTE = ("  Hidden tests run only when your work is graded: they try your functions on other inputs, "
                     "so passing here does not promise their points.")
STUB = "raise NotImplementedError("  # the start of the release's stub (nbgrader_config.py)
CASCADE = ("NotImplementedError", "NameError")  # errors that follow from a cell not filled in yet
SELF_CHECK = "selfcheck_"  # the grade ids of the ungraded self-check cells between a solution and its tests


def unfilled_cells(nb):
    """Grade ids of solution cells that still hold the release's stub."""
    return [notebooks.nbgrader_meta(c)["grade_id"] for c in nb.cells
            if notebooks.nbgrader_meta(c).get("solution") and STUB in c.source]


def explain(result):
    """What a student should read about one failed cell."""
    if result.error.startswith("NotImplementedError"):
        return "it calls code that is not filled in yet (still `raise NotImplementedError(...)`)."
    if result.error.startswith("NameError"):
        return f"{result.error}: a cell above did not run to the end; fix the first failure above."
    return result.error.replace("\n", "\n      ")


def run_stage(implementation, stage, evidence_dir, in_process=False):
    """Run one stage with the hidden tests (instructors: source/ is needed); return (passed, lines to print)."""
    source = notebooks.read(paths.SOURCE / paths.STAGES[stage])
    nb, missing = stage_notebook(implementation, stage, source)
    folder = paths.SOURCE if implementation == "solution" else paths.RELEASE  # where its neighbours are
    what = f"stage {stage} ({implementation}{', in this process' if in_process else ''})"
    return _verdict(nb, missing, what, "checks (hidden tests included)", stage, evidence_dir, folder, in_process,
                    instructor=True)


def run_visible_checks(stage, evidence_dir, course_dir=paths.ROOT, in_process=False):
    """Run the student's working copy of one stage as it is; return (passed, lines to print)."""
    work, _ = workcopy.ensure(course_dir)
    nb = notebooks.read(work / paths.STAGES[stage])
    where = f"stage {stage} (your notebook {Path(work.parent.name, work.name, paths.STAGES[stage])})"
    passed, lines = _verdict(nb, [], where, "visible checks", stage, evidence_dir, work, in_process)
    return passed, [lines[0], HIDDEN_TESTS_NOTE, *lines[1:]]


def is_check(result):
    """A check the checker counts: a test cell (its visible part, or all of it with the hidden tests) or a
    self-check cell."""
    return result.kind == "test" or result.grade_id.startswith(SELF_CHECK)


def headline(verdict, what, results, missing, kind):
    """The first line: how many checks ran and which failed; never points, which only grading gives."""
    checks = [r for r in results if is_check(r)]
    failed = [r.grade_id for r in checks if not r.passed] + list(missing)
    ran = len(checks) + len(missing)
    line = (f"{verdict} {ASSIGNMENT} {what}: {len(failed)} of {ran} {kind} failed: {', '.join(failed)}" if failed
            else f"{verdict} {ASSIGNMENT} {what}: {ran} of {ran} {kind} passed")
    others = [r.grade_id for r in results if not r.passed and not is_check(r)]
    return line + (f"; other cells failed: {', '.join(others)}" if others else "")


def student_env(folder, instructor):
    """The id notebook 5 hands out a variant for, as the kernel, started in a folder of its own, would not find it:
    {PERFAUDIT_STUDENT: id} found from `folder` (perfaudit/variants.py), else the instructor's for their notebooks."""
    found = variants.student_id(start=folder)
    if found is None and instructor:
        found = (variants.INSTRUCTOR, "")
    return {variants.STUDENT_ENV: found[0]} if found else {}


def _verdict(nb, missing, what, kind, stage, evidence_dir, folder, in_process=False, instructor=False):
    # The kernel runs in a folder of its own; notebook 4 reads notebook 3 from `folder` (perfaudit/reuse.py).
    env = {paths.EVIDENCE_ENV: str(evidence_dir), reuse.FOLDER_ENV: str(Path(folder).resolve()),
           **student_env(folder, instructor)}
    execute = notebooks.execute_in_process if in_process else notebooks.execute
    with tempfile.TemporaryDirectory(prefix="perfaudit-check-") as cwd:
        executed = execute(nb, cwd, env=env)
    results = notebooks.cell_results(executed)
    failed = [r for r in results if not r.passed]
    passed = not failed and not missing
    lines = [headline("PASS" if passed else "FAIL", what, results, missing, kind)]
    unfilled = unfilled_cells(nb)
    if unfilled:
        lines.append(f"  Not filled in yet: {', '.join(unfilled)} "
                     "(replace `raise NotImplementedError(...)` with your code).")
    for grade_id in missing:
        lines.append(f"  - {grade_id}: this graded cell is missing from your notebook (it counts as failed).")
    for r in failed:
        if r.kind == "test":
            lines.append(f"  - {r.grade_id}: {explain(r)}")
        elif r.grade_id.startswith(SELF_CHECK):
            lines.append(f"  - self-check {r.grade_id}: {explain(r)}")
        elif not (unfilled and r.error.startswith(CASCADE)):
            lines.append(f"  - cell {r.grade_id}: {explain(r)}")
    if stage in (3, 4):
        lines.append(f"  evidence: {evidence_dir}")
    if stage == 5 and variants.STUDENT_ENV in env:
        lines.append(f"  {variants.assigned(env[variants.STUDENT_ENV])}")
    return passed, lines


def state_id(student, course_dir=paths.ROOT):
    """Write the student's id where notebook 5 finds it (student-id.txt in the copy); the lines to print."""
    path = variants.write_id(student, course_dir)
    return [f"{path}: {variants.assigned(student.strip())}. Notebook 5 hands you that variant's loop; grading "
            "checks it against the id your course has for you, so write it as your course knows it."]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m perfaudit.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--implementation", choices=["starter", "solution"],
                        help="instructors (needs source/): starter, the release in notebooks/ with the hidden tests; "
                             "solution, the instructor's in source/. Without it: your working copy, visible checks")
    parser.add_argument("--stage", type=int, choices=sorted(paths.STAGES))
    parser.add_argument("--id", metavar="STUDENT_ID",
                        help=f"your student id, as your course knows it: written to {variants.ID_FILE}, and notebook "
                             "5 hands you the variant of its loop drawn from it (said here)")
    parser.add_argument("--evidence-dir", type=Path, default=paths.DEFAULT_EVIDENCE_DIR,
                        help="where stages 3 and 4 write report.json and workload.jaxpr.txt "
                             f"(default: {paths.DEFAULT_EVIDENCE_DIR})")
    parser.add_argument("--in-process", action="store_true",
                        help="run the notebook's cells in this process, not in a kernel: for a machine where no "
                             "kernel can start (no TCP socket); one stage per process")
    args = parser.parse_args(argv)
    if args.id is not None:
        try:
            print("\n".join(state_id(args.id)))
        except ValueError as error:
            parser.error(str(error))
    if args.stage is None:
        if args.id is None:
            parser.error("the following arguments are required: --stage")
        return 0
    if args.implementation and not paths.SOURCE.is_dir():
        parser.error("this copy holds no instructor notebooks (source/): check your notebook with "
                     f"`python -m perfaudit.check --stage {args.stage}`")
    if args.implementation:
        passed, lines = run_stage(args.implementation, args.stage, args.evidence_dir.resolve(), args.in_process)
    else:
        passed, lines = run_visible_checks(args.stage, args.evidence_dir.resolve(), in_process=args.in_process)
    print("\n".join(lines))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
