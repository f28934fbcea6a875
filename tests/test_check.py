"""The seed's checker: the instructor's notebooks pass every stage, an untouched release fails clearly."""

import json
import re
import subprocess
import sys

import nbformat
import pytest

from perfaudit import notebooks, paths


def run_check(*args):
    done = subprocess.run([sys.executable, "-m", "perfaudit.check", *args], capture_output=True, text=True,
                          cwd=paths.ROOT)
    return done.returncode, done.stdout


@pytest.mark.parametrize("stage", sorted(paths.STAGES))
def test_solution_passes_every_check(stage, tmp_path):
    code, out = run_check("--implementation", "solution", "--stage", str(stage), "--evidence-dir", str(tmp_path))
    assert out.startswith(f"PASS performance-audit stage {stage}"), out
    assert code == 0
    assert "  - " not in out, "no cell, graded or not, may fail in the instructor's notebook"
    if stage in (3, 4):
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["memory_measured"] is False
        assert (tmp_path / "workload.jaxpr.txt").is_file()


@pytest.mark.parametrize("stage", sorted(paths.STAGES))
def test_untouched_starter_fails_with_a_clear_message(stage, tmp_path):
    code, out = run_check("--implementation", "starter", "--stage", str(stage), "--evidence-dir", str(tmp_path))
    assert out.startswith(f"FAIL performance-audit stage {stage}"), out
    assert code == 1
    failed, ran = re.search(r": (\d+) of (\d+) checks \(hidden tests included\) failed:", out).groups()
    assert 0 < int(failed) <= int(ran), out
    assert "point" not in out.splitlines()[0], "the checker's headline never shows points"
    assert "Not filled in yet:" in out
    assert "Traceback" not in out


@pytest.mark.parametrize("implementation, verdict", [("solution", "PASS"), ("starter", "FAIL")])
def test_in_process_the_checker_gives_the_kernels_verdict(implementation, verdict, tmp_path):
    # Where no kernel can start (the TPU machine of docs/measurements.md): the cells run in the checker's process.
    code, out = run_check("--implementation", implementation, "--stage", "2", "--evidence-dir", str(tmp_path),
                          "--in-process")
    first = out.splitlines()[0]
    assert first.startswith(f"{verdict} performance-audit stage 2 ({implementation}, in this process): "), out
    if verdict == "PASS":
        assert code == 0 and first.endswith(": 7 of 7 checks (hidden tests included) passed"), out
    else:
        assert code == 1 and "Not filled in yet:" in out and "Traceback" not in out, out


def test_starter_reports_a_missing_graded_cell(tmp_path, monkeypatch):
    from perfaudit import notebooks

    source = notebooks.read(paths.SOURCE / paths.STAGES[2])
    student = notebooks.read(paths.RELEASE / paths.STAGES[2])
    student.cells = [c for c in student.cells if notebooks.nbgrader_meta(c).get("grade_id") != "two_traces"]
    restored, missing = notebooks.restore_locked_cells(student, source)
    assert missing == ["two_traces"]
    assert "### BEGIN HIDDEN TESTS" in next(
        c.source for c in restored.cells if notebooks.nbgrader_meta(c).get("grade_id") == "one_trace_per_new_shape"
    )


# Each notebook's central mistake, as a student makes it in the instructor's solution: (stage, solution cell,
# change, words the visible check's message must hold). The checker runs the student's working copy, visible
# checks only, and must fail it by name, in the student's terms, with no points in its headline.
MISTAKES = {
    "unsynchronized clock": (1, "time_call", lambda s: s.replace("fn(x).block_until_ready()", "fn(x)"),
                             "never waited for the result"),
    "calls counted": (2, "counted_workload", lambda s: s.replace("audited = jax.jit(counted_workload)",
                                                                 "audited = counted_workload"),
                      "counts calls, not traces"),
    "counter outside the traced body": (2, "counted_workload", lambda s: s.replace(
        "audited = jax.jit(counted_workload)",
        "_jitted = jax.jit(lambda x: jnp.tanh(x @ x))\n\n\ndef audited(x):\n    global trace_count\n"
        "    trace_count += 1\n    return _jitted(x)").replace("    trace_count += 1  # a Python", "    # a Python"),
        "counts calls, not traces"),
    "warm first call": (3, "gather_evidence", lambda s: s.replace("    first_call_s = time_call(x16)",
                                                                  "    audited(x16).block_until_ready()\n"
                                                                  "    first_call_s = time_call(x16)"),
                        "warm one"),
    "compile timed inside lower": (4, "time_stages", lambda s: s.replace(
        "    lowered = traced.lower()\n    lower_s = time.perf_counter() - start\n",
        "    lowered = traced.lower()\n    compiled = lowered.compile()\n    lower_s = time.perf_counter() - start\n"),
        "timed another stage too"),
}


@pytest.mark.slow
@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_the_visible_checks_name_each_notebooks_central_mistake(mistake, tmp_path):
    from perfaudit import check, workcopy
    from perfaudit.fixtures import samples

    stage, grade_id, change, words = MISTAKES[mistake]
    work = workcopy.assignment_dir(tmp_path)
    work.mkdir(parents=True)
    for written in {stage, 3}:  # notebook 4 reads notebook 3's functions beside it
        nb = samples.submission(samples.SAMPLES["correct"], written)
        if written == stage:
            cell = next(c for c in nb.cells if notebooks.nbgrader_meta(c).get("grade_id") == grade_id)
            changed = change(cell.source)
            assert changed != cell.source, "the mistake must change the solution"
            cell.source = changed
        nbformat.write(nb, work / paths.STAGES[written])
    passed, lines = check.run_visible_checks(stage, tmp_path / "evidence", course_dir=tmp_path)
    out = "\n".join(lines)
    assert not passed
    assert lines[0].startswith(f"FAIL performance-audit stage {stage}"), out
    assert "visible checks failed: selfcheck_" in lines[0], out
    assert "point" not in lines[0], "the checker's headline never shows points"
    assert words in out, out
    assert "Traceback" not in out


def test_the_headline_counts_checks_never_points():
    from perfaudit.check import headline
    from perfaudit.notebooks import CellResult

    results = [CellResult("selfcheck_traces", "other", 0, "traces() went up by 3"), CellResult("two_traces", "test", 2,
               None), CellResult("one_trace_per_new_shape", "test", 1, None), CellResult("show", "other", 0, None)]
    assert headline("FAIL", "stage 2", results, [], "visible checks") == (
        "FAIL performance-audit stage 2: 1 of 3 visible checks failed: selfcheck_traces")
    results[0] = CellResult("selfcheck_traces", "other", 0, None)
    assert headline("PASS", "stage 2", results, [], "visible checks") == (
        "PASS performance-audit stage 2: 3 of 3 visible checks passed")
    results[3] = CellResult("show", "other", 0, "NameError: name 'x' is not defined")
    assert headline("FAIL", "stage 2", results, [], "visible checks").endswith(
        "3 of 3 visible checks passed; other cells failed: show")
