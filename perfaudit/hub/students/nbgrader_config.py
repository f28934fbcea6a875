"""nbgrader settings of every student's server on the hub (the hub puts this folder on JUPYTER_CONFIG_PATH):
the course, and the exchange the hub names. Fetch, Submit and Fetch Feedback work in the student's home."""

import os

from perfaudit.hub.settings import KERNEL_TRANSPORT

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = os.environ["PERFAUDIT_COURSE_ID"]
c.Exchange.root = os.environ["PERFAUDIT_EXCHANGE"]
# A submission readable by the student and the course's owner only, not by whoever learns its folder's name.
c.ExchangeFactory.submit = "perfaudit.hub.submit.PrivateSubmit"
# Validate's kernels as the server's own: on unix sockets in the student's private runtime folder, never a loopback
# port a classmate can read.
c.KernelManager.transport = KERNEL_TRANSPORT
