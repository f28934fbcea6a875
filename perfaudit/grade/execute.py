"""nbgrader's Execute preprocessor, changed so a kernel that dies or hangs costs only what it had not finished.

Plain nbgrader gives a whole notebook 0 when its kernel dies: the DeadKernelError aborts the conversion.
GuardedExecute catches it in the cell where it happened, marks that cell and every later one with an error
saying why (so their tests score 0), and lets nbgrader save the grades of the cells that had already passed.
It also keeps a whole-notebook time limit: each cell's timeout is cut to the time the notebook has left, and a
limit on the size of the output it keeps (a print loop must not fill the grader's memory).
Every kernel it starts runs in the sandbox (perfaudit/grade/kernel.py, perfaudit/sandbox.py).
Configured in nbgrader_config.py, so plain `nbgrader autograde` and `python -m perfaudit.grade` both use it.
"""

import time

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Integer

from perfaudit.grade.kernel import SandboxedKernelManager

NOT_RUN = "NotRun"  # ename of the error put on cells the grader could not run
OUTPUT_DROPPED = "[the grader dropped the rest of this output: the notebook printed more than its output limit]\n"


def not_run_error(reason):
    return NotebookNode(output_type="error", ename=NOT_RUN, evalue=reason, traceback=[f"{NOT_RUN}: {reason}"])


class GuardedExecute(Execute):
    notebook_timeout = Integer(
        600, help="Seconds a whole notebook may run; the cell running when it expires is interrupted."
    ).tag(config=True)

    max_output_bytes = Integer(
        10 * 2**20,
        help="Bytes of text and display output a notebook may keep; later ones are dropped, with a note. Errors "
        "are always kept: they decide the grades.",
    ).tag(config=True)

    def __init__(self, *args, **kwargs):
        # A keyword, not configuration: nbgrader's Execute.__init__ sets its own kernel_manager_class default.
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb, resources=None, km=None):
        self._deadline = time.monotonic() + self.notebook_timeout
        self._stopped = None  # why the rest of the notebook is not run, once something stopped it
        self._output_bytes = 0
        return super().preprocess(nb, resources, km)

    def _get_timeout(self, cell):
        per_cell = super()._get_timeout(cell)
        left = max(1, int(self._deadline - time.monotonic() + 0.999))
        return left if per_cell is None else min(per_cell, left)

    def output(self, outs, msg, display_id, cell_index):
        if msg["msg_type"] in ("stream", "display_data", "execute_result"):
            self._output_bytes += len(str(msg["content"]))
            if self._output_bytes > self.max_output_bytes:
                if not outs or outs[-1].get("name") != "stderr" or OUTPUT_DROPPED not in outs[-1].get("text", ""):
                    outs.append(NotebookNode(output_type="stream", name="stderr", text=OUTPUT_DROPPED))
                return None
        return super().output(outs, msg, display_id, cell_index)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        if self._stopped is None and time.monotonic() >= self._deadline:
            self._stopped = f"not run: the notebook's time limit ({self.notebook_timeout} s) ran out before this cell"
        if self._stopped is not None:
            cell.outputs = [not_run_error(self._stopped)]
            return cell, resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._stopped = "not run: the kernel died in an earlier cell"
            cell.outputs.append(not_run_error(
                "the kernel died while running this cell (it crashed, exited, or ran out of memory)"
            ))
        except CellTimeoutError:
            self._stopped = "not run: the kernel stopped responding in an earlier cell"
            cell.outputs.append(not_run_error("the kernel stopped responding to this cell and to interrupts"))
        self.log.warning("%s: cell %d stopped the notebook", resources.get("nbgrader", {}).get("student"), index)
        return cell, resources
