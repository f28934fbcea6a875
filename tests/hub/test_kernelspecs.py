"""Formgrader's kernelspecs (perfaudit/hub/kernelspecs.py): its python3 is the hub's, whatever else this machine's
Jupyter paths hold, and the others are still found. (tests/hub/test_private_pipe.py starts a kernel through it.)"""

import json

from jupyter_client.kernelspec import KernelSpecManager

from perfaudit.hub import settings
from perfaudit.hub.kernelspecs import HubKernelSpecs

HUB_PYTHON3 = settings.JUPYTER_DATA / "kernels" / "python3"


def other_kernels(data, monkeypatch):
    """A Jupyter data folder on JUPYTER_PATH holding a python3 of its own (ipykernel_launcher) and another kernel."""
    for name in ("python3", "other"):
        (data / "kernels" / name).mkdir(parents=True)
        (data / "kernels" / name / "kernel.json").write_text(json.dumps(
            {"argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": name,
             "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(data))


def test_formgrader_s_python3_is_the_hub_s_before_any_on_the_jupyter_path(tmp_path, monkeypatch):
    other_kernels(tmp_path, monkeypatch)
    assert KernelSpecManager().get_kernel_spec("python3").resource_dir == str(tmp_path / "kernels" / "python3")
    spec = HubKernelSpecs().get_kernel_spec("python3")
    assert spec.resource_dir == str(HUB_PYTHON3)
    assert spec.argv[:4] == ["python", "-P", "-m", "perfaudit.hub.private_pipe"]


def test_the_other_kernelspecs_are_still_found(tmp_path, monkeypatch):
    other_kernels(tmp_path, monkeypatch)
    found = HubKernelSpecs().find_kernel_specs()
    assert found["other"] == str(tmp_path / "kernels" / "other") and found["python3"] == str(HUB_PYTHON3)
