"""nbgrader settings of every student's server on the hub (the hub puts this folder on JUPYTER_CONFIG_PATH):
the course, and the exchange the hub names. Fetch, Submit and Fetch Feedback work in the student's home."""

import os
import secrets

from jupyter_core.paths import jupyter_runtime_dir

from perfaudit.hub.settings import KERNEL_TRANSPORT

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = os.environ["PERFAUDIT_COURSE_ID"]
c.Exchange.root = os.environ["PERFAUDIT_EXCHANGE"]
# A submission readable by the student and the course's owner only, not by whoever learns its folder's name.
c.ExchangeFactory.submit = "perfaudit.hub.submit.PrivateSubmit"
# Validate's kernels as the server's own: on unix sockets in the student's private runtime folder, never a loopback
# port a classmate can read. Without a connection file named, jupyter_client would make them in the working folder
# as kernel-ipc-1..5, the same names for every kernel: a name of their own, each time this file is read.
c.KernelManager.transport = KERNEL_TRANSPORT
RUNTIME = jupyter_runtime_dir()
os.makedirs(RUNTIME, mode=0o700, exist_ok=True)
c.KernelManager.ip = os.path.join(RUNTIME, f"nbgrader-{secrets.token_hex(8)}-ipc")
