"""Run a notebook in a fresh kernel (or, where none can start, in this process) and read what each graded cell did.

Used by the checker (python -m perfaudit.check) and the tests. nbgrader's autograde does the same
for grading; this module exists so a student or instructor can run one stage and read plain messages.
"""

import contextlib
import copy
import io
import os
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

CELL_TIMEOUT_S = 120


def nbgrader_meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def restore_locked_cells(student_nb, source_nb):
    """Put back the instructor's version of every locked cell, hidden tests included, as autograde does.

    Returns the restored notebook and the grade ids of graded cells the student's notebook lacks.
    """
    instructor = {nbgrader_meta(c).get("grade_id"): c for c in source_nb.cells if nbgrader_meta(c).get("locked")}
    restored = copy.deepcopy(student_nb)
    seen = set()
    for cell in restored.cells:
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id in instructor:
            cell.source = instructor[grade_id].source
            cell.metadata["nbgrader"] = copy.deepcopy(instructor[grade_id].metadata["nbgrader"])
            seen.add(grade_id)
    missing = [g for g, c in instructor.items() if nbgrader_meta(c).get("grade") and g not in seen]
    return restored, missing


def execute(nb, cwd, env=None, timeout=CELL_TIMEOUT_S):
    """Execute every cell, carrying on after errors, in a kernel started in cwd with extra env vars."""
    executed = copy.deepcopy(nb)
    client = NotebookClient(
        executed,
        timeout=timeout,
        allow_errors=True,
        kernel_name="python3",
        # Keep the kernel's own log (e.g. its TCP-without-encryption notice on loopback) out of students' view.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute(env={**os.environ, **(env or {})})  # passed on to the kernel's start
    return executed


def execute_in_process(nb, cwd, env=None):
    """Execute every cell in this process's IPython shell, carrying on after errors, in cwd with extra env vars:
    for a machine where no kernel can start (one that allows no TCP socket, as the TPU machine of
    docs/measurements.md). Each cell's printed text and error become its outputs, as a kernel's would. What a cell
    sets (imports, JAX's settings, the backend it started) stays in this process: one stage per process."""
    from IPython.core.interactiveshell import InteractiveShell  # only here: a kernel run never needs it

    executed = copy.deepcopy(nb)
    os.environ.update(env or {})
    shell = InteractiveShell.instance()
    back = os.getcwd()
    os.chdir(cwd)
    try:
        for cell in executed.cells:
            if cell.cell_type != "code":
                continue
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                result = shell.run_cell(cell.source, store_history=False)
            error = result.error_before_exec or result.error_in_exec
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed.getvalue())]
            if error is not None:
                cell.outputs.append(nbformat.v4.new_output("error", ename=type(error).__name__, evalue=str(error),
                                                           traceback=[]))
    finally:
        os.chdir(back)
    return executed


@dataclass
class CellResult:
    grade_id: str
    kind: str  # "test" (graded), "solution" or "other"
    points: float
    error: str | None  # None when the cell ran without error

    @property
    def passed(self):
        return self.error is None


def _error_text(cell):
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            if output["ename"] == "AssertionError" and output["evalue"]:
                return output["evalue"]
            return f"{output['ename']}: {output['evalue']}"
    return None


def cell_results(executed_nb):
    """One CellResult per code cell with a grade id, in notebook order."""
    results = []
    for cell in executed_nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type != "code" or "grade_id" not in meta:
            continue
        kind = "test" if meta.get("grade") else "solution" if meta.get("solution") else "other"
        results.append(CellResult(meta["grade_id"], kind, float(meta.get("points", 0)), _error_text(cell)))
    return results


def read(path):
    return nbformat.read(Path(path), as_version=4)
