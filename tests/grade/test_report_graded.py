"""The class report, the regrade diff and the records of a graded class, as an instructor meets them.

Six fixture submissions of notebook 1 (the others missing: they start no kernel) are graded three times by
python -m perfaudit.grade: once; again for two students whose files did not change (their records must be the
same apart from time and duration, and no score moves); and everyone again after the instructor added a hidden
test that only one student's summarize fails (the diff must name exactly that student). Scores are read from
the gradebook. The item analysis in the page is compared with counts made here from the gradebook, and the page
is opened in headless Chromium: plots drawn, a table sorted by a click, no request leaving the file, and a
student's exception message carrying markup shown as text.
"""

import hashlib
import io
import json

import nbformat
import numpy as np
import pytest
from courses import NB1, make_course
from html_tables import Tables
from nbgrader.api import Gradebook

from perfaudit import ASSIGNMENT, notebooks, paths
from perfaudit.bookkeeping.statefolder import State
from perfaudit.fixtures import samples
from perfaudit.grade import records, regrade
from perfaudit.grade.__main__ import main
from perfaudit.grade.classreport import PAGE, REPORTS_DIR
from perfaudit.grade.run import Options, run
from perfaudit.instructor import course

pytestmark = pytest.mark.slow  # minutes: three grading runs

OTHERS = [name.removesuffix(".ipynb") for stage, name in paths.STAGES.items() if stage != 1]
# A student's exception message that would load an image, run a script and retitle the page if shown as markup.
HOSTILE = ('<img src="http://127.0.0.1:9/leak.png" onerror="document.title=\'pwned\'">'
           '<script>document.title="pwned"</script>')
EXPECTED = {  # notebook 1's score of each submission; every other notebook is missing and scores 0
    "correct": 5,
    "untouched": 0,
    "stage1-unsynchronized-clock": 3,  # synchronized_time_call and first_call_slower fail
    "stage1-hardcoded-identity": 4,  # correct_random_output fails
    "odd-counts-only": 5,  # its median is wrong for an even number of timings: no test asks for one yet
    "markup-in-message": 4,  # its summarize raises: correct_summary fails
}
NEW_LINE = 'assert summarize([1.0, 2.0])["median_s"] == 1.5, "the median of two timings is their mean"'
AFTER_CHANGE = {**EXPECTED, "odd-counts-only": 4}
SAME_FILES = ["correct", "stage1-hardcoded-identity"]  # graded again with nothing changed


def _notebook_1(name):
    if name == "odd-counts-only":
        nb = samples.submission(samples.SAMPLES["correct"], 1)
        cell = next(c for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == "summarize")
        cell.source = cell.source.replace(
            '"median_s": float(np.median(samples)),',
            '"median_s": float(np.median(samples) if len(samples) % 2 else samples.max()),')
        assert "samples.max()" in cell.source
        return nb
    if name == "markup-in-message":
        code = f"def summarize(samples):\n    raise ValueError({HOSTILE!r})"
        return samples.submission(samples.Sample(replaced={(1, "summarize"): code}), 1)
    return samples.submission(samples.SAMPLES[name], 1)


def _scores(root):
    return {s: {nb: score for nb, (score, _) in nbs.items()} for s, nbs in course.scores(root).items()}


def _grade(root, **options):
    out = io.StringIO()
    run(Options(course_dir=root, workers=2, canary=False, feedback=False, progress=False, **options), out=out)
    return out.getvalue()


def _add_hidden_test(root):
    path = root / "source" / ASSIGNMENT / f"{NB1}.ipynb"
    nb = nbformat.read(path, as_version=4)
    test = next(c for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == "correct_summary")
    test.source = test.source.replace("### END HIDDEN TESTS", f"{NEW_LINE}\n### END HIDDEN TESTS")
    nbformat.write(nb, path)
    course.nbgrader("generate_assignment", ASSIGNMENT, "--force", course_dir=root)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("report"))
    for name in EXPECTED:
        folder = root / "submitted" / name / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(_notebook_1(name), folder / f"{NB1}.ipynb")
    log = records.path_for(root / "autograded")
    found = {"root": root, "source_before": (root / "source" / ASSIGNMENT / f"{NB1}.ipynb").read_bytes()}
    found["first"] = _grade(root)
    found["scores_first"], found["records_first"] = _scores(root), records.read(log)
    for student in SAME_FILES:  # their records gone: the next run grades them, and only them
        (State(root / "autograded").dir / f"{student}.json").unlink()
    found["same"] = _grade(root)
    found["records_same"] = records.read(log)
    found["csv_after_same"] = sorted((root / REPORTS_DIR).glob("regrade-*.csv"))
    _add_hidden_test(root)
    found["changed"] = _grade(root, regrade=True)
    found["scores_changed"], found["records_changed"] = _scores(root), records.read(log)
    return found


def test_exact_scores_from_the_gradebook(graded):
    for scores, expected in ((graded["scores_first"], EXPECTED), (graded["scores_changed"], AFTER_CHANGE)):
        assert scores == {s: {NB1: expected[s], **dict.fromkeys(OTHERS, 0)} for s in expected}


def _page(graded):
    return (graded["root"] / REPORTS_DIR / PAGE).read_text(encoding="utf-8")


def test_item_analysis_matches_counts_made_from_the_gradebook(graded):
    root = graded["root"]
    tables = Tables(_page(graded)).tables
    shown = {(row[0][0], row[1][0]): row for row in tables["tests-table"]}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "jax-performance-audit") as gb:
        assignment = gb.find_assignment(ASSIGNMENT)
        students = sorted(sub.student.id for sub in assignment.submissions)
        cells = [(nb.name, c.name, c.max_score) for nb in assignment.notebooks for c in nb.grade_cells
                 if c.cell_type == "code"]
        score = {(s, nb, name): gb.find_grade(name, nb, ASSIGNMENT, s).score
                 for s in students for nb, name, _ in cells}
    assert len(shown) == len(cells)
    totals = {s: sum(score[s, nb, name] for nb, name, _ in cells) for s in students}
    for nb, name, points in cells:
        passed = [1.0 if score[s, nb, name] >= points else 0.0 for s in students]
        row = shown[nb, name]
        assert (float(row[3][1]), float(row[4][1])) == (sum(passed), len(students)), (nb, name)
        rest = [totals[s] - score[s, nb, name] for s in students]
        if 0 < sum(passed) < len(students) and np.std(rest) > 0:
            assert float(row[6][1]) == pytest.approx(np.corrcoef(passed, rest)[0, 1]), (nb, name)
        else:
            assert row[6][1] == "", (nb, name)
        failures = tables.get(f"failures-{nb}-{name}", [])
        assert sum(float(r[0][1]) for r in failures) == len(students) - sum(passed), (nb, name)
    # The one student who fails synchronized_time_call does so for the unsynchronized clock.
    [(count, _), (clock, _), _] = tables[f"failures-{NB1}-synchronized_time_call"][0]
    assert "never waited for the result" in clock and count == "1"


def test_regrade_lists_exactly_the_students_a_changed_test_moved(graded):
    root = graded["root"]
    assert "Regrade: no score changed." in graded["same"] and graded["csv_after_same"] == []
    moved = {s for s in EXPECTED if graded["scores_first"][s] != graded["scores_changed"][s]}
    assert moved == {"odd-counts-only"}
    path, rows = regrade.newest(root / REPORTS_DIR)
    assert {r["student"] for r in rows} == moved
    assert [(r["notebook"], r["test"], r["old_score"], r["new_score"], r["direction"]) for r in rows] == [
        (NB1, "correct_summary", "1", "0", "down")]
    assert rows[0]["old_message"] == "" and "the median of two timings is their mean" in rows[0]["new_message"]
    assert f"Regrade: 1 student(s)' scores changed: 0 up, 1 down ({path})" in graded["changed"]
    shown = Tables(_page(graded)).tables["regrade-table"]
    assert [(r[0][0], r[4][0], r[5][0], r[6][0]) for r in shown] == [("odd-counts-only", "correct_summary", "1", "0")]
    # Nothing is lost: the scores before each regrade are kept.
    kept = sorted((root / "autograded" / ".batch-grading" / regrade.HISTORY).glob("before-*.json"))
    assert len(kept) == 2
    before = json.loads(kept[-1].read_text())["scores"]
    assert {s: sum(v for k, v in t.items() if k.startswith(NB1)) for s, t in before.items()} == EXPECTED


def _without_volatile(record):
    return {k: v for k, v in record.items() if k not in records.VOLATILE}


def test_a_record_behind_every_grade_and_the_same_record_for_the_same_files(graded):
    root = graded["root"]
    first = graded["records_first"]
    assert sorted((r["student"], r["notebook"]) for r in first) == sorted((s, NB1) for s in EXPECTED)
    source = hashlib.sha256(graded["source_before"]).hexdigest()
    for record in first:
        submitted = root / "submitted" / record["student"] / ASSIGNMENT / f"{NB1}.ipynb"
        assert record["submitted_sha256"] == hashlib.sha256(submitted.read_bytes()).hexdigest()
        assert record["source_sha256"] == source and record["score"] == EXPECTED[record["student"]]
        assert set(record["versions"]) == {"python", "jax", "jaxlib", "numpy", "nbgrader", "nbclient", "jupyter-client",
                                             "perfaudit"}
        assert record["limits"]["memory_mb"] > 0 and record["machine"]["cpus"] > 0 and record["seconds"] > 0
    again = graded["records_same"][len(first):]
    assert sorted(r["student"] for r in again) == SAME_FILES
    earlier = records.latest(first)
    for record in again:
        assert _without_volatile(record) == _without_volatile(earlier[record["student"], NB1])
    # After the hidden test changed, every record names the new source and tests, and nothing else moved but the
    # one student's score.
    changed = records.latest(graded["records_changed"])
    new_source = hashlib.sha256((root / "source" / ASSIGNMENT / f"{NB1}.ipynb").read_bytes()).hexdigest()
    for (student, _), record in changed.items():
        old = earlier[student, NB1]
        assert record["source_sha256"] == new_source != old["source_sha256"]
        assert record["tests_sha256"] != old["tests_sha256"]
        differs = {k for k in record if record[k] != old[k]} - set(records.VOLATILE)
        expected = {"source_sha256", "tests_sha256"} | ({"score", "auto_scores"} if student == "odd-counts-only"
                                                         else set())
        assert differs == expected, student


def test_export_records_writes_the_record_behind_each_grade(graded, capsys):
    root = graded["root"]
    assert main(["--course-dir", str(root), "--export", "records"]) == 0
    assert f"records: {len(EXPECTED)} of {len(EXPECTED)} graded notebooks" in capsys.readouterr().out
    exported = records.read(root / "exports" / records.EXPORTED)
    assert exported == sorted(records.latest(graded["records_changed"]).values(), key=lambda r: r["student"])


def test_report_is_written_by_every_run_and_by_report(graded, capsys):
    for phase in ("first", "same", "changed"):
        assert f"Class report: {graded['root'] / REPORTS_DIR / PAGE} (built in " in graded[phase]
    assert main(["--course-dir", str(graded["root"]), "--report"]) == 0
    assert "Class report: " in capsys.readouterr().out


def test_the_page_in_chromium(graded, browser, artifacts):  # noqa: F811 (fixtures)
    url = (graded["root"] / REPORTS_DIR / PAGE).as_uri()
    page = browser.new_page()
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(url)
    page.wait_for_load_state("load")
    assert requested == [url], "the page asked for something beyond its own file"
    # Plots: every histogram decoded and laid out at its size.
    images = page.locator("img").evaluate_all(
        "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.getBoundingClientRect().height])")
    assert len(images) == len(OTHERS) + 2 and all(done and width > 0 and height > 100
                                                   for done, width, height in images)
    # Sort the tests by pass rate with a click, and back.
    table = page.locator("#tests-table")
    header = table.locator("th", has_text="pass rate")

    def column():
        return [float(v) for v in table.locator("tbody tr td:nth-child(6)").evaluate_all(
            "cells => cells.map(c => c.dataset.value)")]

    header.click()
    assert column() == sorted(column()) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert column() == sorted(column(), reverse=True) and header.get_attribute("aria-sort") == "descending"
    # The student's markup is text: shown as written, never run, never loaded.
    assert page.title().startswith("Class report")
    # What the student's code raised during a test never reaches a verdict (autograde/plugins/verdicts.py): the report
    # shows the grader's words in its place, and nothing of the markup (test_classreport.py renders markup as text).
    failures = page.locator(f"#failures-{NB1}-correct_summary").inner_text()
    assert "call your function yourself, to read it." in failures and "pwned" not in failures
    assert page.locator("script").count() == 1
    page.screenshot(path=str(artifacts / "class-report.png"), full_page=True)
    assert requested == [url]
    page.close()
