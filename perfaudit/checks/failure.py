"""How every check fails: an AssertionError whose message is written for the student."""




def fail(message):
    """Fail the check with `message`: what was expected, what was found, and where to look."""
    raise AssertionError(message)
