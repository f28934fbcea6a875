"""nbgrader settings for the course: plain `nbgrader <command>` works from this directory."""

from pathlib import Path

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = "jax-performance-audit"
# The student release lives in notebooks/ so students can open it straight from a clone.
c.CourseDirectory.release_directory = "notebooks"
# Evidence the notebooks write (runs/) is output, never part of a release or a submission.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "runs"]
# The stub says what to do, so a student who runs an unfilled cell reads more than a bare NotImplementedError.
c.ClearSolutions.code_stub = {
    "python": '# YOUR CODE HERE\nraise NotImplementedError("Fill in this cell, then run the notebook again.")'
}
# Validate (button and command) reports every failing cell, the unfilled solution cell's NotImplementedError
# first, not only the graded cells' NameErrors that follow from it.
c.Validator.validate_all = True
# A local exchange beside this file (not committed), so that JupyterLab's Assignments view (make lab) and
# `nbgrader release_assignment / fetch_assignment / submit` work on one machine with no shared server folder.
c.Exchange.root = str(Path(__file__).resolve().parent / "exchange")
