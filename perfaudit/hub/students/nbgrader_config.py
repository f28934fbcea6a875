"""nbgrader settings of every student's server on the hub (the hub puts this folder on JUPYTER_CONFIG_PATH):
the course, and the exchange the hub names. Fetch, Submit and Fetch Feedback work in the student's home."""

import os

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = os.environ["PERFAUDIT_COURSE_ID"]
c.Exchange.root = os.environ["PERFAUDIT_EXCHANGE"]
