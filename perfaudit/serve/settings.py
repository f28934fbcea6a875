"""The grading service's settings: one Configurable, set in nbgrader_config.py as c.GradingService.<trait>."""

from traitlets import Bool, Float, Int
from traitlets.config import Configurable


class GradingService(Configurable):
    """How often a student's submissions are graded before the deadline, and how the exchange is watched."""

    graded_per_window = Int(3, help="Graded submissions per student in each window before the deadline; a "
                            "submission over the limit is collected and its feedback says when to come back.").tag(
                                config=True)
    window_hours = Float(24.0, help="The length of the sliding window, in hours.").tag(config=True)
    graded_after_deadline = Int(1, help="Graded submissions per student after the gradebook's due date.").tag(
        config=True)
    poll_seconds = Float(2.0, help="How often the exchange's inbound is read for new submissions.").tag(config=True)
    check_owner = Bool(True, help="Refuse a submission whose folder in the exchange is not owned by the account "
                       "its name claims (nbgrader's own owner check), so nobody submits under another's name.").tag(
                           config=True)
    unreadable_after_s = Float(30.0, help="Seconds a folder in the exchange's inbound that the service may not open "
                               "stays unchanged before it is skipped as its student's (a submission being copied "
                               "under a strict umask is closed for a moment).").tag(config=True)
    task_timeout_s = Int(3600, help="Seconds one submission's grading may take on its worker (the canary "
                         "included) before the worker is restarted and the student told it hung.").tag(config=True)
