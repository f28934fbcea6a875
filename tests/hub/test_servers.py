"""perfaudit/hub/servers.py: a student's server is the process the hub itself started, whatever others are named."""

import subprocess
import sys
import time

import psutil

from perfaudit.hub.servers import Hub


def test_the_hub_s_child_is_a_server_and_a_process_named_like_one_is_not():
    hub = Hub(psutil.Process().pid)  # this test stands for the hub: what it starts is its child
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    # a grandchild named like a server: started by the child, as a student's process is by their server
    named = subprocess.Popen(["bash", "-c", 'exec -a "python -m jupyterhub.singleuser" sleep 30 & wait'])
    try:
        assert hub.started(psutil.Process(child.pid))
        grandchild = None
        command = ""
        for _ in range(200):  # bash forks the named process when it gets to it
            grandchild = next((p for p in psutil.Process(named.pid).children() if p.name() == "sleep"), None)
            # mid-exec the new name shows before the new arguments do: an empty command line means "not yet"
            command = " ".join(grandchild.cmdline()) if grandchild is not None else ""
            if command:
                break
            time.sleep(0.05)
        assert grandchild is not None
        assert "jupyterhub.singleuser" in command
        assert not hub.started(grandchild)
        assert not Hub(child.pid).started(psutil.Process(named.pid))
    finally:
        for process in (child, named):
            process.kill()
            process.wait()
