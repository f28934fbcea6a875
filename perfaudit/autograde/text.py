"""Text from anywhere (a kernel's raw output, a student's message), made safe to show a person. Kept free of
imports, like errors.py: every folder of the wing uses it."""

MAX_TEXT = 20_000


def printable(text: object, limit: int = MAX_TEXT) -> str:
    """Text from anywhere, safe to show a person: control characters escaped, length capped."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit] + f" ... [{len(text) - limit} more characters cut by the grader]"
    return "".join(c if c.isprintable() or c in "\n\t" else repr(c)[1:-1] for c in text)
