"""The seed's checker: the instructor's notebooks pass every stage, an untouched release fails clearly."""

import json
import subprocess
import sys

import pytest

from perfaudit import paths


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
    assert ": 0/" in out.splitlines()[0], "an untouched notebook earns no points"
    assert "Not filled in yet:" in out
    assert "Traceback" not in out


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
