"""Which variant of notebook 5's handed-out loop each student audits, and the seed of their data.

Classmates audit different loops, so a copied audit is the audit of someone else's loop. A student's variant and
seed come from their student id (as the course's gradebook knows it) and this term's value, TERM:

    h = sha256(f"{TERM}:{student id}"); variant = VARIANTS[h[0:8] mod 3]; seed = h[8:16], both read as integers.

The rule is stable (the same id gets the same variant all term, on any machine) and public: knowing it gives
nobody a point, since each variant asks for its own measurements. Change TERM at the start of a term and every
student's variant is drawn again (docs/instructors.md). Where the notebook finds the id, first found wins:

1. PERFAUDIT_STUDENT: the graders set it in the grading kernel to the gradebook's id of the student graded, and
   the grader's tests take the variant from that id alone (perfaudit/autograde/graded.py), never from the notebook;
2. JUPYTERHUB_USER: the login name on the course's JupyterHub;
3. student-id.txt in the notebook's folder or a folder above it: a downloaded student copy, where the student
   states their id once (`make id ID=jdoe` or `python -m perfaudit.check --id jdoe`, which also says the variant).

    python -m perfaudit.check --id jdoe    # a student: states their id, reads their variant
    python -m perfaudit.grade --variants   # an instructor: who has which variant
"""

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfaudit.handout import VARIANTS

TERM = "2026-27"  # this term's value: a new one draws every student's variant again
STUDENT_ENV = "PERFAUDIT_STUDENT"
HUB_USER_ENV = "JUPYTERHUB_USER"
ID_FILE = "student-id.txt"
INSTRUCTOR = "instructor"  # the id the instructor's own runs take (the canary, the checker on source/)
MAX_ID_CHARS = 200  # a student id longer than this is no id (the file is read no further)


class NoStudentId(Exception):
    """The notebook cannot tell whose variant to hand out."""


@dataclass(frozen=True)
class Assigned:
    """A student's variant of the audit and the seed of their data."""

    student: str
    variant: str
    seed: int
    found_in: str = field(default="", compare=False)  # where mine() found the id: a variable's name or a file

    def __str__(self) -> str:
        where = f" (the id from {self.found_in})" if self.found_in else ""
        return f"student {self.student!r}: variant {self.variant}, data seed {self.seed}{where}"


def assigned(student: str, term: str = TERM) -> Assigned:
    """The variant and seed of `student` this term (the rule in this module's docstring)."""
    digest = hashlib.sha256(f"{term}:{student}".encode()).digest()
    variant = VARIANTS[int.from_bytes(digest[:8], "big") % len(VARIANTS)]
    return Assigned(student, variant, int.from_bytes(digest[8:16], "big") % 2**32)


def id_file(start: str | Path | None = None) -> Path | None:
    """The nearest student-id.txt in `start` (the working folder by default) or a folder above it."""
    folder = Path(start or os.getcwd()).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ID_FILE).is_file():
            return candidate / ID_FILE
    return None


def student_id(env: Mapping[str, str] | None = None, start: str | Path | None = None) -> tuple[str, str] | None:
    """(student id, where it was found) by the order in this module's docstring, or None."""
    env = os.environ if env is None else env
    for name in (STUDENT_ENV, HUB_USER_ENV):
        if env.get(name, "").strip():
            return env[name].strip(), name
    path = id_file(start)
    if path is not None:
        with path.open(encoding="utf-8", errors="replace") as file:
            found = file.read(MAX_ID_CHARS + 1).strip()
        if found and len(found) <= MAX_ID_CHARS and "\n" not in found:
            return found, str(path)
    return None


def mine(env: Mapping[str, str] | None = None, start: str | Path | None = None) -> Assigned:
    """The variant of whoever runs the notebook; NoStudentId, saying how to state an id, when none is found."""
    found = student_id(env, start)
    if found is None:
        raise NoStudentId(
            "Notebook 5 hands each student their own variant of the loop, drawn from their student id, and it "
            f"found none: write your id, as your course knows it, in a file {ID_FILE} beside your notebooks (in "
            "your copy: `make id ID=yourid`, which also says your variant), then run this cell again. On the "
            "course's JupyterHub your login name is your id.")
    return replace(assigned(found[0]), found_in=found[1])


def write_id(student: str, folder: str | Path) -> Path:
    """Write student-id.txt in `folder` (a student copy's root); the id must be one line of text."""
    student = student.strip()
    if not student or "\n" in student or len(student) > MAX_ID_CHARS:
        raise ValueError(f"a student id is one line of at most {MAX_ID_CHARS} characters; found {student!r:.40}")
    path = Path(folder) / ID_FILE
    path.write_text(student + "\n", encoding="utf-8")
    return path
