"""GuardedExecute on small notebooks in a real kernel: the whole-notebook time limit, and a dead kernel."""

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from perfaudit.grade.execute import NOT_RUN, GuardedExecute


def _run(cells, workdir, **settings):
    """Run in workdir, as autograde runs in autograded/<student>/<assignment>/ (the sandbox owns it meanwhile)."""
    nb = new_notebook(cells=[new_code_cell(source) for source in cells])
    nb, _ = GuardedExecute(**settings).preprocess(nb, {"metadata": {"path": str(workdir)}})
    return nb


def _errors(cell):
    return [(o.ename, o.evalue) for o in cell.outputs if o.output_type == "error"]


def test_notebook_time_limit_interrupts_the_running_cell_and_skips_the_rest(tmp_path):
    nb = _run(["x = 1", "import time\ntime.sleep(60)", "x += 1", "print(x)"], tmp_path, timeout=30, notebook_timeout=3)
    assert _errors(nb.cells[0]) == []
    assert _errors(nb.cells[1])[0][0] == "KeyboardInterrupt"  # interrupted at the notebook's limit, not at 30 s
    for cell in nb.cells[2:]:
        assert _errors(cell) == [(NOT_RUN, "not run: the notebook's time limit (3 s) ran out before this cell")]


def test_a_dead_kernel_keeps_earlier_outputs_and_marks_every_later_cell(tmp_path):
    nb = _run(["print('before')", "import os\nos._exit(3)", "print('after')"], tmp_path, timeout=30)
    assert nb.cells[0].outputs[0].text == "before\n"
    assert _errors(nb.cells[1])[0][0] == NOT_RUN and "kernel died" in _errors(nb.cells[1])[0][1]
    assert _errors(nb.cells[2]) == [(NOT_RUN, "not run: the kernel died in an earlier cell")]
    assert nbformat.validate(nb) is None
