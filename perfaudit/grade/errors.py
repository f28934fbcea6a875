"""The exceptions the batch raises, in one place: each a one-line answer for the instructor."""


class NothingToGrade(RuntimeError):
    """Nothing could be graded (no submission, no such download): one line says what to do."""


class NotPlaced(ValueError):
    """An entry of the download that goes to no student; the message says why, for the instructor."""


class SchedulerUnreachable(RuntimeError):
    """--scheduler names a cluster that cannot be reached: nothing was graded."""
