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

# --- grading: partial credit, sandboxed kernels, confirmed verdicts, feedback without hidden tests ---
# Used by plain nbgrader and by `python -m perfaudit.grade` alike (see perfaudit/grade/).
from nbgrader.converters import Autograde, GenerateFeedback  # noqa: E402
from nbgrader.preprocessors import DeduplicateIds, Execute, SaveAutoGrades  # noqa: E402

from perfaudit.confirm import ConfirmVerdicts  # noqa: E402
from perfaudit.grade.cells import DropDuplicateIds  # noqa: E402
from perfaudit.grade.execute import GuardedExecute  # noqa: E402
from perfaudit.grade.feedback import HideHiddenTests  # noqa: E402

# A duplicated or split graded cell is graded once instead of failing the whole submission.
c.Autograde.sanitize_preprocessors = [
    DropDuplicateIds if p is DeduplicateIds else p
    for p in c.Autograde.get("sanitize_preprocessors", Autograde.sanitize_preprocessors.default())
]
# A kernel that dies or hangs costs only the cells it had not finished, not the notebook.
_autograde = [
    GuardedExecute if p is Execute else p
    for p in c.Autograde.get("autograde_preprocessors", Autograde.autograde_preprocessors.default())
]
# A test's points stand only when a process that never runs student code confirms them (perfaudit/confirm.py).
# Just before SaveAutoGrades, after IgnorePattern: it sees each test's outputs exactly as they will be scored.
_save = _autograde.index(SaveAutoGrades)
c.Autograde.autograde_preprocessors = _autograde[:_save] + [ConfirmVerdicts] + _autograde[_save:]
c.GuardedExecute.notebook_timeout = 600  # seconds for a whole notebook; Execute.timeout (30 s) is per cell
# Feedback shows each test's visible part, score and message: no hidden-test code, no tracebacks.
_feedback = list(c.GenerateFeedback.get("preprocessors", GenerateFeedback.preprocessors.default()))
c.GenerateFeedback.preprocessors = _feedback[:1] + [HideHiddenTests] + _feedback[1:]  # after GetGrades
