"""nbgrader settings for the course: plain `nbgrader <command>` works from this directory."""

import os
from pathlib import Path

from perfaudit.longcells import validate_timeout

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = "jax-performance-audit"
# The student release lives in notebooks/ so students can open it straight from a clone.
c.CourseDirectory.release_directory = "notebooks"
# Evidence the notebooks write (runs/) is output, never part of a release or a submission; nor is a student's own
# git repository (.git). nbgrader never copies these names, the grading kernel never gets them, and the limits on
# what a submission may hold (perfaudit/autograde/plugins/submission.py) neither count nor refuse them.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "runs", ".git"]
# The stub says what to do, so a student who runs an unfilled cell reads more than a bare NotImplementedError.
c.ClearSolutions.code_stub = {
    "python": '# YOUR CODE HERE\nraise NotImplementedError("Fill in this cell, then run the notebook again.")'
}
# Answer keys to the notebooks' read-and-explain questions sit in plain markdown cells, between ### BEGIN SOLUTION and
# ### END SOLUTION: the release shows "YOUR ANSWER HERE" instead. nbgrader takes an ungraded solution cell only as
# code (a markdown one must carry points), so such regions are allowed outside solution cells.
c.ClearSolutions.enforce_metadata = False
# Validate (button and command) reports every failing cell, the unfilled solution cell's NotImplementedError
# first, not only the graded cells' NameErrors that follow from it.
c.Validator.validate_all = True
# Validate in a terminal cuts each line at width - 3 characters (90 by default): the notebooks' lines are up to
# 120, like the course's code.
c.Validator.width = 123
# A local exchange beside this file (not committed), so that JupyterLab's Assignments view (make lab) and
# `nbgrader release_assignment / fetch_assignment / submit` work on one machine with no shared server folder.
# On the course's JupyterHub (make hub, docs/hub.md) the hub names the exchange every account shares.
c.Exchange.root = os.environ.get("PERFAUDIT_EXCHANGE") or str(Path(__file__).resolve().parent / "exchange")
# Fetch, Submit and Fetch Feedback work in work/, JupyterLab's root in `make lab` and the working copy's home.
# nbgrader's default "." means the server's working directory (this one), outside what JupyterLab shows.
c.Exchange.assignment_dir = str(Path(__file__).resolve().parent / "work")
# Released feedback pages readable by the students who fetch them, whatever mode the course's processes made them with
# (on the hub, without other accounts' permissions: perfaudit/hub/release_feedback.py).
c.ExchangeFactory.release_feedback = "perfaudit.hub.release_feedback.ReadableReleaseFeedback"

# What nbgrader and the plug-ins log quotes what students wrote (a cell's grade_id, a notebook's file name, the message
# of an error their code raised): the handler that prints the log escapes every control character in it, so no escape
# code of a student's reaches the instructor's terminal (perfaudit/grade/escape.py).
c.Application.logging_config = {
    "filters": {"control_free": {"()": "perfaudit.grade.escape.EscapeControlCharacters"}},
    "handlers": {"console": {"filters": ["control_free"]}},
}

# --- grading: sandboxed kernels, tests decided in the grader, feedback without hidden tests ---
# Every plug-in lives in perfaudit/autograde/: plain nbgrader and `python -m perfaudit.grade` use the same ones.
from nbgrader.converters import Autograde, GenerateFeedback  # noqa: E402
from nbgrader.preprocessors import DeduplicateIds, Execute  # noqa: E402

from perfaudit.autograde.plugins.drop_duplicate_ids import DropDuplicateIds  # noqa: E402
from perfaudit.autograde.plugins.execute import TrustedExecute  # noqa: E402
from perfaudit.autograde.plugins.hide_hidden_tests import HideHiddenTests  # noqa: E402
from perfaudit.autograde.plugins.hide_outputs_after_tests import HideOutputsAfterTests  # noqa: E402
from perfaudit.autograde.plugins.refuse_unsafe_submission import RefuseUnsafeSubmission  # noqa: E402
from perfaudit.autograde.plugins.sanitize_outputs import SanitizeOutputs  # noqa: E402

# A submission holding anything but regular files is refused, with the reason, before anything reads it.
# A duplicated or split graded cell is graded once instead of failing the whole submission.
c.Autograde.sanitize_preprocessors = [RefuseUnsafeSubmission] + [
    DropDuplicateIds if p is DeduplicateIds else p
    for p in c.Autograde.get("sanitize_preprocessors", Autograde.sanitize_preprocessors.default())
]
# Student cells run once, in a sandboxed kernel; test cells run in the grader, which alone decides their points.
# A kernel that dies or hangs costs only the cells it had not finished, not the notebook.
# Last, the student's outputs and markdown become inert text or sanitized HTML: autograded/ is what Formgrader shows
# the instructor and what feedback is made from.
c.Autograde.autograde_preprocessors = [
    TrustedExecute if p is Execute else p
    for p in c.Autograde.get("autograde_preprocessors", Autograde.autograde_preprocessors.default())
] + [SanitizeOutputs]
c.TrustedExecute.notebook_timeout = 600  # seconds for a whole notebook; Execute.timeout (30 s) is per cell
# ... and for all of a submission's notebooks together: one whose every notebook sleeps holds a grader (on the hub, a
# worker its classmates wait for) this long at most, not 600 s per notebook.
c.TrustedExecute.submission_timeout = 1200
# Cells tagged long-running in source/ (notebook 5's timings of loops that retrace at every step) get
# TrustedExecute.long_cell_timeout instead: perfaudit/longcells.py's, which Validate gives them too (end of file).
# The limits on one submission's student code, for plain nbgrader and the batch command alike.
c.SandboxLimits.memory_mb = 4096  # all of a submission's processes together
c.SandboxLimits.scratch_mb = 512  # its working folder and, separately, its /tmp: in memory, gone afterwards
# Feedback shows each test's visible part, score and message: no hidden-test code, no tracebacks; no output of a
# cell that ran after the first test (the kernel then holds what tests handed it, which the grader keeps to itself);
# the student's outputs sanitized again (a notebook autograded before SanitizeOutputs was configured).
_feedback = list(c.GenerateFeedback.get("preprocessors", GenerateFeedback.preprocessors.default()))
c.GenerateFeedback.preprocessors = (_feedback[:1] + [HideHiddenTests, HideOutputsAfterTests, SanitizeOutputs]
                                    + _feedback[1:])  # after GetGrades

# --- the grading service (python -m perfaudit.serve, make serve): feedback before the deadline, with a limit ---
c.GradingService.graded_per_window = 3  # graded submissions per student in any window before the deadline
c.GradingService.window_hours = 24  # after the gradebook's due date, one graded submission (graded_after_deadline)

# --- grades.csv: `nbgrader export` and the batch command write the same file (perfaudit/grade/grades_csv.py) ---
# nbgrader's columns written as CSV (a "Doe, Jane" name stays in its column, a formula is never run), and not_graded.
from perfaudit.grade.grades_csv import GradesCsv  # noqa: E402

c.ExportApp.plugin_class = GradesCsv
# Validate waits longer for a cell tagged long-running (notebook 5's timings of loops that retrace at every step):
# 30 s is too little for them on a busy machine (perfaudit/longcells.py).
c.Validator.Execute.timeout_func = validate_timeout
