"""Feedback shows the student's own paths, never the sandbox's, and keeps the hidden tests hidden."""

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from perfaudit.autograde.plugins.hide_hidden_tests import HideHiddenTests


def test_feedback_shows_paths_relative_to_the_student_s_notebook_never_the_sandbox_s():
    setup = new_code_cell("print(EVIDENCE_DIR)", outputs=[
        new_output("stream", name="stdout", text="evidence directory: /home/student/work/runs/performance-audit\n"),
        new_output("execute_result", data={"text/plain": "PosixPath('/home/student/work/runs/performance-audit')"},
                   execution_count=1)])
    failed = new_code_cell("checks.check_evidence_dir(EVIDENCE_DIR)", outputs=[new_output(
        "error", ename="FileNotFoundError", evalue="no /home/student/work/runs/performance-audit/report.json",
        traceback=['File "/home/student/submission/03-evidence.ipynb"'])])
    failed.metadata["nbgrader"] = {"grade": False, "locked": True, "solution": False, "grade_id": "selfcheck_evidence"}
    nb = new_notebook(cells=[setup, failed])
    shown, _ = HideHiddenTests().preprocess(nb, {})
    text = nbformat.writes(shown)
    assert "/home/student" not in text
    assert shown.cells[0].outputs[0].text == "evidence directory: runs/performance-audit\n"
    assert shown.cells[0].outputs[1].data["text/plain"] == "PosixPath('runs/performance-audit')"
    assert shown.cells[1].outputs[0].evalue == "no runs/performance-audit/report.json"
