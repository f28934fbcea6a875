"""The exceptions the grading service raises, in one place."""


class CannotStart(RuntimeError):
    """The service cannot grade here: one line saying what is wrong."""
