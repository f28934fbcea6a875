"""nbgrader settings of every student's server on the hub (the hub puts this folder on JUPYTER_CONFIG_PATH):
the course, and the exchange the hub names. Fetch, Submit and Fetch Feedback work in the student's home."""

import os

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = os.environ["PERFAUDIT_COURSE_ID"]
c.Exchange.root = os.environ["PERFAUDIT_EXCHANGE"]
# A submission readable by the student and the course's owner only, not by whoever learns its folder's name.
c.ExchangeFactory.submit = "perfaudit.hub.submit.PrivateSubmit"
