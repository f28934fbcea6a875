"""perfaudit/autograde/kernel.py's count of kernel starts: each start adds a line on the grader's side (.ci/run
prints the total), and the kernel never sees where."""

import os

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from perfaudit.autograde import kernel, sandbox
from perfaudit.autograde.execute import TrustedExecute


@pytest.mark.skipif(not sandbox.available()[0], reason=f"no sandbox here: {sandbox.available()[1]}")
def test_each_kernel_start_adds_a_line_to_the_start_log_which_the_kernel_never_sees(tmp_path, monkeypatch):
    log = tmp_path / "kernels.log"
    log.write_text("sandboxed 1\n")  # an earlier start, perhaps in another process: kept, not overwritten
    monkeypatch.setenv(kernel.START_LOG, str(log))
    submission = tmp_path / "submission"
    submission.mkdir()
    seen = f"[k for k, v in os.environ.items() if 'KERNEL_LOG' in k or {str(log)!r} in v]"
    cell = new_code_cell(f"import os\nprint({seen})")
    nb, _ = TrustedExecute(timeout=60).preprocess(new_notebook(cells=[cell]), {"metadata": {"path": str(submission)}})
    assert "".join(o.get("text", "") for o in nb.cells[0].outputs) == "[]\n"
    assert log.read_text().splitlines() == ["sandboxed 1", f"sandboxed {os.getpid()}"]
