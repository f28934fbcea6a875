"""The kernelspecs Formgrader's JupyterLab offers: the hub's python3 (perfaudit/hub/private_pipe.py) first.

Each person's server finds it through JUPYTER_PATH (perfaudit/hub/jupyterhub_config.py), which every Jupyter process
it starts reads too. Formgrader's process also autogrades, and its sandboxed kernels
(perfaudit/autograde/isolation/) are to start as under the grading service, with ipykernel's own launcher (their
loopback is their own: no port of theirs is seen outside): so only its server's kernelspecs name the hub's.
"""

from jupyter_client.kernelspec import KernelSpecManager

from perfaudit.hub import settings


class HubKernelSpecs(KernelSpecManager):
    """KernelSpecManager whose python3 is the hub's: its folder searched first."""

    def _kernel_dirs_default(self) -> list[str]:
        return [str(settings.JUPYTER_DATA / "kernels"), *super()._kernel_dirs_default()]
