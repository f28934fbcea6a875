"""Benchmark: the class report, the regrade diff and the records of a graded class; the report's build time.

    python benchmarks/class_report.py [--students 40] [--sizes 200,1000] [--keep DIR]

1. Grades --students fixture submissions (cycling through the samples of perfaudit/fixtures/samples.py and the
   valid variants of the catalog, perfaudit/fixtures/catalog/valid.py) with python -m perfaudit.grade in a
   temporary course (2 workers, canary skipped, no feedback).
2. Checks the page against the gradebook: each test's pass count in reports/class-report.html equals the count
   read here from the gradebook; every graded notebook has a record, and --export records writes them all.
3. Changes one hidden test (synchronized_time_call in notebook 1 no longer checks that the clock waited for
   the result), regrades everyone, and checks that the regrade CSV names exactly the students whose score moved
   in the gradebook (those with the unsynchronized clock).
4. Times the report's build at the graded size, then for classes of --sizes students made by copying the graded
   ones (their gradebook rows, autograded notebooks and records: all the report reads), and extrapolates linearly
   from the two smallest sizes to 1,000 students, printed beside any size measured.

Exits 1 when a check fails. Timings depend on the machine and on what else runs on it (the load is printed).
"""

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
from courses import make_course  # noqa: E402

import nbformat  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402
from sqlalchemy.exc import SAWarning  # noqa: E402

from perfaudit import ASSIGNMENT, notebooks, paths
from perfaudit.bookkeeping import statefolder  # noqa: E402
from perfaudit.fixtures import catalog, samples  # noqa: E402
from perfaudit.grade import classreport, gradebook, records, regrade  # noqa: E402
from perfaudit.grade.__main__ import main as grade_main  # noqa: E402
from perfaudit.grade.run import Options, run  # noqa: E402
from perfaudit.instructor import course  # noqa: E402

COURSE_ID = "jax-performance-audit"
NB1 = paths.STAGES[1].removesuffix(".ipynb")
DROPPED = "checks.check_time_call(time_call)"  # the hidden line step 3 removes


def _fill(root, students):
    mix = [("sample", name) for name in sorted(samples.SAMPLES)] + [("valid", name) for name in sorted(catalog.VALID)]
    names = []
    for i in range(students):
        kind, name = mix[i % len(mix)]
        if kind == "sample":
            samples.write_submission(name, root / "submitted")
        else:
            catalog.write_case(name, root / "submitted")
        names.append(f"s{i + 1:04d}-{name}")
        (root / "submitted" / name).rename(root / "submitted" / names[-1])
    return names


def _grade(root, **options):
    out = io.StringIO()
    started = time.perf_counter()
    run(Options(course_dir=root, workers=2, canary=False, feedback=False, progress=False, **options), out=out)
    return out.getvalue(), time.perf_counter() - started


def _gradebook_counts(root):
    """{(notebook, test): (passed, graded)} and {student: {(notebook, test): score}} read with nbgrader's API."""
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gb:
        assignment = gb.find_assignment(ASSIGNMENT)
        students = [sub.student.id for sub in assignment.submissions]
        counts, scores = {}, {s: {} for s in students}
        for nb in assignment.notebooks:
            for cell in nb.grade_cells:
                if cell.cell_type != "code":
                    continue
                for s in students:
                    scores[s][nb.name, cell.name] = gb.find_grade(cell.name, nb.name, ASSIGNMENT, s).score
                passed = sum(1 for s in students if scores[s][nb.name, cell.name] >= cell.max_score)
                counts[nb.name, cell.name] = (passed, len(students))
    return counts, scores


def _page_counts(root):
    """{(notebook, test): (passed, graded)} as the page's tests table shows them."""
    from html.parser import HTMLParser

    rows, state = [], {"in": False, "row": None, "cell": None}

    class Reader(HTMLParser):
        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "table":
                state["in"] = attrs.get("id") == "tests-table"
            elif tag == "tr" and state["in"]:
                state["row"] = []
                rows.append(state["row"])
            elif tag == "td" and state["in"]:
                state["cell"] = ""

        def handle_endtag(self, tag):
            if tag == "td" and state["cell"] is not None:
                state["row"].append(state["cell"])
                state["cell"] = None
            elif tag == "table":
                state["in"] = False

        def handle_data(self, data):
            if state["cell"] is not None:
                state["cell"] += data

    Reader().feed((root / classreport.REPORTS_DIR / classreport.PAGE).read_text(encoding="utf-8"))
    return {(r[0], r[1]): (float(r[3]), float(r[4])) for r in rows if r}


def _change_hidden_test(root):
    path = root / "source" / ASSIGNMENT / paths.STAGES[1]
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == "synchronized_time_call")
    assert DROPPED in cell.source
    cell.source = cell.source.replace(DROPPED, "pass  # no longer checked")
    nbformat.write(nb, path)
    course.nbgrader("generate_assignment", ASSIGNMENT, "--force", course_dir=root)


def _copies(graded_root, target, size):
    """A course at target holding `size` students: the graded ones, then copies of them under new ids."""
    shutil.copy(graded_root / "gradebook.db", target / "gradebook.db")
    shutil.copytree(graded_root / "autograded", target / "autograded")
    url = gradebook.sqlite_url(target / "gradebook.db")
    log = records.path_for(target / "autograded")
    newest = records.latest(records.read(log))
    with Gradebook(url, COURSE_ID) as gb:
        originals = sorted(sub.student.id for sub in gb.find_assignment(ASSIGNMENT).submissions)
    added, kept = [], []
    for k in range(size - len(originals)):
        original = originals[k % len(originals)]
        student = f"{original}-copy{k:05d}"
        added.append((student, gradebook.read_submission(url, COURSE_ID, ASSIGNMENT, original)))
        if (target / "autograded" / original).is_dir():
            shutil.copytree(target / "autograded" / original, target / "autograded" / student)
        state = statefolder.folder(target / "autograded")
        shutil.copy(state / f"{original}.json", state / f"{student}.json")
        kept += [{**r, "student": student} for (s, _), r in newest.items() if s == original]
    with Gradebook(url, COURSE_ID) as gb:
        for student, results in added:
            gradebook.apply_submission(gb, ASSIGNMENT, student, results)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))
    return url


def _build(root, url):
    _, seconds = classreport.build(root, url, COURSE_ID, root / "autograded")
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40, help="submissions graded (default 40)")
    parser.add_argument("--sizes", default="200,1000", help="class sizes made by copying, for the build time")
    parser.add_argument("--keep", type=Path, help="keep the graded course here (default: a temporary folder)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(",") if s)
    warnings.filterwarnings("ignore", category=SAWarning, module="nbgrader")  # its own session bookkeeping
    failed = []
    with tempfile.TemporaryDirectory(prefix="class-report-bench-") as tmp:
        root = make_course((args.keep or Path(tmp)) / "course")
        names = _fill(root, args.students)
        print(f"class report benchmark: {len(names)} submissions, {os.cpu_count()} cores, load average "
              f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
        said, seconds = _grade(root)
        print(f"graded in {seconds:.0f} s; {[line for line in said.splitlines() if line.startswith('Class report')]}")
        page, book = _page_counts(root), _gradebook_counts(root)[0]
        print(f"pass counts: page {'==' if page == book else '!='} gradebook for {len(book)} tests")
        if page != book:
            failed.append("pass counts")
        grade_main(["--course-dir", str(root), "--export", "records"])
        exported = records.read(root / "exports" / records.EXPORTED)
        graded_notebooks = sorted(p for p in (root / "autograded").glob(f"*/{ASSIGNMENT}/*.ipynb"))
        print(f"records exported: {len(exported)}, graded notebooks: {len(graded_notebooks)}")
        if len(exported) != len(graded_notebooks):
            failed.append("records")

        _, before = _gradebook_counts(root)
        _change_hidden_test(root)
        said, seconds = _grade(root, regrade=True)
        _, after = _gradebook_counts(root)
        moved = sorted(s for s in after if after[s] != before.get(s))
        found = regrade.newest(root / classreport.REPORTS_DIR)
        listed = sorted({r["student"] for r in found[1]}) if found else []
        line = next((x for x in said.splitlines() if x.startswith("Regrade:")), "no Regrade line")
        print(f"regraded in {seconds:.0f} s after changing synchronized_time_call; {line}")
        print(f"students whose score moved in the gradebook: {len(moved)}; listed in the regrade CSV: {len(listed)}; "
              f"{'the same' if moved == listed else 'DIFFERENT'}: {', '.join(moved)}")
        if moved != listed:
            failed.append("regrade diff")

        timings = {len(names): min(_build(root, gradebook.sqlite_url(root / "gradebook.db")) for _ in range(3))}
        for size in sizes:
            target = Path(tmp) / f"copy-{size}"
            target.mkdir()
            url = _copies(root, target, size)
            timings[size] = min(_build(target, url) for _ in range(2))
        for size, seconds in sorted(timings.items()):
            print(f"report build, {size:>5} students: {seconds:6.2f} s ({seconds / size * 1000:.1f} ms per student)")
        (n1, t1), (n2, t2) = sorted(timings.items())[:2]
        predicted = t1 + (t2 - t1) * (1000 - n1) / (n2 - n1)
        print(f"extrapolated from {n1} and {n2} students to 1000: {predicted:.2f} s"
              + (f"; measured at 1000: {timings[1000]:.2f} s" if 1000 in timings else ""))
        if args.keep:
            print(f"the graded course: {root}")
    print("FAILED: " + ", ".join(failed) if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
