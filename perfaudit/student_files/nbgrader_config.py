"""nbgrader settings for the student copy: the Validate button and the Assignments view (make lab) read them."""

from pathlib import Path

from perfaudit.longcells import validate_timeout

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = "jax-performance-audit"
# Validate reports every failing cell, the unfilled solution cell's NotImplementedError included.
c.Validator.validate_all = True
# Validate in a terminal cuts each line at width - 3 characters (90 by default): the notebooks' lines are up to
# 120, like the course's code.
c.Validator.width = 123
# Fetch, Submit and Fetch Feedback (on a course server) work in work/, JupyterLab's root in `make lab`: nbgrader's
# default "." means the server's working directory (this one), outside what JupyterLab shows.
c.Exchange.assignment_dir = str(Path(__file__).resolve().parent / "work")
# Validate waits longer for a cell tagged long-running (notebook 5's timings of loops that retrace at every step):
# 30 s is too little for them on a busy machine (perfaudit/longcells.py).
c.Validator.Execute.timeout_func = validate_timeout
