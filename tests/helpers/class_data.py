"""A small class of five students over three graded cells of one notebook, as ClassData holds it: the fixture the
class report's tests (items, regrade, classreport) share."""

from perfaudit.grade.classdata import ClassData, GradedCell

NB = "01-first-call-vs-steady"
TESTS = [GradedCell(NB, "a", 1.0), GradedCell(NB, "b", 1.0), GradedCell(NB, "c", 2.0)]
CLASS = {"s1": (1, 1, 2), "s2": (1, 0, 2), "s3": (0, 0, 0), "s4": (1, 1, 0), "s5": (0, 1, 2)}


def make_class(scores, messages=None):
    """ClassData of {student: a score per test in TESTS}, with each student's {test key: message}."""
    data = ClassData(tests=list(TESTS))
    for student, values in scores.items():
        data.scores[student] = {t.key: v for t, v in zip(TESTS, values)}
        data.messages[student] = (messages or {}).get(student, {})
    return data
