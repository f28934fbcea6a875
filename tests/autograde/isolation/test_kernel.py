"""perfaudit/autograde/isolation/kernel.py's count of kernel starts: each start adds a line on the grader's side
(.ci/run prints the total), and the kernel never sees where."""

import json
import os
import subprocess
import sys

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from perfaudit.autograde.isolation import kernel, sandbox
from perfaudit.autograde.plugins import execute
from perfaudit.autograde.plugins.execute import TrustedExecute
from perfaudit.autograde.wire import protocol


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


_PEAK = """
import json, resource, sys
from nbformat.v4 import new_code_cell, new_notebook
from perfaudit.autograde.plugins.execute import TrustedExecute
size = int(sys.argv[2])
cells = ["print('before')", f"from IPython.display import display\\ndisplay({{'text/plain': 'x' * {size}}}, raw=True)",
         "print('after')"]
nb, _ = TrustedExecute(timeout=120).preprocess(new_notebook(cells=[new_code_cell(c) for c in cells]),
                                               {"metadata": {"path": sys.argv[1]}})
printed = [o.get("text", o.get("ename", "")) + o.get("evalue", "") for c in nb.cells for o in c.outputs
           if o.output_type != "display_data"]
print(json.dumps({"peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "printed": printed}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not sandbox.available()[0], reason=f"no sandbox here: {sandbox.available()[1]}")
def test_one_huge_message_from_the_kernel_is_dropped_before_the_grader_reads_it(tmp_path):
    """A display message far over protocol.MAX_MESSAGE_BYTES costs the grading process no memory of its size (it
    used to read one of 700 MB whole: 2.39 GB at its peak), and the notebook runs on. Side by side with a small one."""
    huge = protocol.MAX_MESSAGE_BYTES + 200 * 2**20

    def run(size):
        done = subprocess.run([sys.executable, "-c", _PEAK, str(tmp_path), str(size)], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])

    small, large = run(1000), run(huge)
    assert small["printed"] == ["before\n", "after\n"]
    assert large["printed"] == ["before\n", execute.OUTPUT_LOST, "after\n"]
    assert (large["peak_kib"] - small["peak_kib"]) * 1024 < huge / 4, (small["peak_kib"], large["peak_kib"])


@pytest.mark.skipif(not sandbox.available()[0], reason=f"no sandbox here: {sandbox.available()[1]}")
def test_a_restarted_kernel_gets_a_sandbox_and_a_sealed_socket_folder_of_its_own(tmp_path):
    """jupyter_client's restart launches again without start_kernel: the new sandbox's folder is sealed and used."""
    import asyncio

    async def run():
        km = kernel.SandboxedKernelManager(kernel_name="python3")
        km.submission = tmp_path
        await km.start_kernel()
        try:
            first = km.ip
            await km.restart_kernel(now=True)
            kc = km.client()
            kc.start_channels()
            await kc.wait_for_ready(timeout=60)
            reply = await kc.execute_interactive(
                "import os; print(oct(os.stat('/run/kernel').st_mode & 0o777))", timeout=60,
                output_hook=lambda msg: printed.append(msg["content"].get("text", "")))
            kc.stop_channels()
            return first, km.ip, reply["content"]["status"]
        finally:
            await km.shutdown_kernel(now=True)

    printed: list[str] = []
    first, second, status = asyncio.run(run())
    assert first != second and status == "ok"
    assert "".join(printed).strip() == "0o755"  # sealed
