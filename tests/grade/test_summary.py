"""The instructor's terminal summary (perfaudit/grade/summary.py), from a gradebook's numbers given by hand."""

import contextlib
import io
import types

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from perfaudit.autograde.plugins.execute import NOT_RUN
from perfaudit.bookkeeping.statefolder import State
from perfaudit.grade import refused, summary

A = "performance-audit"
NB1, NB2 = "01-first-call-vs-steady", "02-retracing"


def _autograded(folder, student, notebook, *errors):
    """An autograded notebook of graded cells, one per (grade id, ename, evalue)."""
    cells = [new_code_cell("", metadata={"nbgrader": {"grade": True, "grade_id": grade_id, "points": 1}},
                           outputs=[new_output("error", ename=ename, evalue=evalue, traceback=[])])
             for grade_id, ename, evalue in errors]
    (folder / student / A).mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=cells), folder / student / A / f"{notebook}.ipynb")


def test_a_zero_s_reasons_are_the_recorded_ones_the_grader_s_stops_or_the_first_failed_test(tmp_path):
    state = State(tmp_path)
    state.save("ann", {"reasons": {NB1: ["missing: no 01-first-call-vs-steady.ipynb"]}})
    _autograded(tmp_path, "bob", NB1, ("test_a", "AssertionError", "expected 3\nmore"),
                ("test_b", NOT_RUN, "stopped: over the time limit"), ("test_c", NOT_RUN, "not run: an earlier cell"),
                ("test_d", "MemoryError", ""))
    assert summary.reasons_for("ann", NB1, 0, state, tmp_path, A) == ["missing: no 01-first-call-vs-steady.ipynb"]
    assert summary.reasons_for("bob", NB1, 0, state, tmp_path, A) == [
        "stopped: over the time limit (cell 'test_b')", "ran out of memory in cell 'test_d' (MemoryError)"]
    _autograded(tmp_path, "cyd", NB1, ("test_a", "AssertionError", "expected 3\nmore"), ("test_b", "KeyError", ""))
    assert summary.reasons_for("cyd", NB1, 0, state, tmp_path, A) == ["no test passed; first: 'test_a' failed: "
                                                                      "expected 3"]
    assert summary.reasons_for("cyd", NB1, 1, state, tmp_path, A) == []
    assert summary.reasons_for("dan", NB1, 0, state, tmp_path, A) == ["no test passed"]


def _batch(**given):
    return types.SimpleNamespace(**{
        "versions": None, "drift": None, "sandbox": "", "canary": "", "environment": {}, "refused": {}, "engine": "",
        "stale": {}, "again": {}, "graded": ["ann", "bob"], "skipped": ["cyd"], "needs_you": {}, "said": set(),
        **given})


def _summary(monkeypatch, tmp_path, batch, scores, withheld=None, penalties=None, state=None):
    gradebook = summary.gradebook
    monkeypatch.setattr(gradebook, "opened", lambda url, course_id: contextlib.nullcontext())
    monkeypatch.setattr(gradebook, "scores", lambda gb, a: scores)
    monkeypatch.setattr(gradebook, "pass_counts", lambda gb, a: [(NB1, "test_a", 2, 1, 3)])
    monkeypatch.setattr(gradebook, "penalties", lambda gb, a: penalties or {})
    monkeypatch.setattr(gradebook, "maxima", lambda gb, a: {NB1: 2.0, NB2: 3.0})
    monkeypatch.setattr(gradebook, "withheld", lambda gb, a: withheld or {})
    out = io.StringIO()
    summary.print_summary("sqlite://", "course", A, state or State(tmp_path), tmp_path, batch, out)
    return out.getvalue()


def test_the_scores_table_zeros_and_pass_counts(monkeypatch, tmp_path):
    state = State(tmp_path)
    state.save("bob\x1b[2J", {"reasons": {"notes.txt": ["not a notebook of this assignment"]}})
    scores = {"ann": {NB1: (2.0, 2.0), NB2: (3.0, 3.0)}, "bob\x1b[2J": {NB1: (0.0, 2.0), NB2: (3.0, 3.0)},
              "cyd": {NB1: (1.0, 2.0)}}
    said = _summary(monkeypatch, tmp_path, _batch(), scores, withheld={"cyd": [NB2]},
                    penalties={"ann": {NB2: (1.0, 4.0)}}, state=state)
    assert said.splitlines()[:6] == [
        "", "Scores (2 graded now, 1 unchanged since graded):",
        "student     01 /2  02 /3       total /5  ",
        "ann         2      3           5         ",
        "bob\\x1b[2J  0      3           3         ",
        "cyd         1      not graded  not graded"]
    assert f"  cyd {NB2}: {refused.AGAIN}" in said
    assert f"  ann {NB2} (3/3): late: nbgrader's late penalty took 1 of 4 points" in said
    assert f"  bob\\x1b[2J {NB1} (0/2): no test passed" in said
    assert "  none\n" not in said
    assert "  bob\\x1b[2J not a notebook of this assignment" in said
    assert said.endswith("Tests passed (students with full points / students graded):\n"
                         f"     1/3    {NB1} test_a (2 pt)\n")


def test_the_run_s_setting_is_said_once_and_a_warning_every_time(monkeypatch, tmp_path):
    batch = _batch(sandbox="bubblewrap", canary="passed", engine="2 local workers",
                   environment={"ann": ["the check failed"]}, refused={"Ann Smith": "not a student id"})
    summary.say(batch, "Environment check: passed", io.StringIO())
    said = _summary(monkeypatch, tmp_path, batch, {})
    assert said.splitlines() == [
        "Student code: bubblewrap",
        "NOT GRADED (the grading environment's fault, not the student's): ann the check failed",
        "NOT GRADED (the folder's name): submitted/Ann Smith: not a student id; rename the folder to the student's "
        "id and run again",
        "Graded on: 2 local workers",
        "No submissions in the gradebook."]
    unsandboxed = _batch(sandbox="UNSANDBOXED: no bubblewrap", said={"Student code: UNSANDBOXED: no bubblewrap"})
    assert _summary(monkeypatch, tmp_path, unsandboxed, {}).startswith("Student code: UNSANDBOXED: no bubblewrap\n")


def test_students_graded_again_are_said_so_with_their_totals_before_and_after(monkeypatch, tmp_path):
    batch = _batch(stale={"bob": [NB1]}, again={"ann": (5.0, 4.0, True), "bob": (None, 3.0, False),
                                                 "cyd": (1.0, 1.0, False)})
    said = _summary(monkeypatch, tmp_path, batch, {"ann": {NB1: (2.0, 2.0), NB2: (2.0, 3.0)}})
    assert said.splitlines()[:4] == [
        "Graded again, their source notebook changed since they were graded (tests, hidden tests or points): 1 "
        "student", "ann: resubmitted: graded again (5 -> 4)",
        f"bob: graded again: the source of {NB1} changed (not graded -> 3)", "cyd: graded again (1 -> 1)"]
    assert "\nZeros and problems:\n  none\n" in said
