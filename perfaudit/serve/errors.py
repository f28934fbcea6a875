"""The exceptions the grading service raises, in one place."""


class CannotStart(RuntimeError):
    """The service cannot grade here: one line saying what is wrong."""


class UnreadableSubmission(Exception):
    """A submission in the exchange the service may not read whole: its student's problem, told to them; the
    message says what, for the student."""
