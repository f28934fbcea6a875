"""python -m perfaudit.hub.people: the class's names in the gradebook, so that Formgrader lists people, not
"None, None" (nbgrader's autograde records a student by login alone).

make hub runs it as the course's owner (perfaudit/hub/exchange.py) for the members of the students' group: each
account's full name (the roster's, which make hub-users puts in the account's comment field), else the login, as
last name. Names already in the gradebook (Formgrader's Manage Students edits them) are kept.
"""

import argparse
import json
import pwd
import sys
from pathlib import Path


from perfaudit.bookkeeping.coursedir import course_directory, venv_first_on_path
from perfaudit.grade import gradebook


def name_of(login):
    """(first name, last name) of the account `login`: its comment field's full name, else ("", login)."""
    try:
        full = pwd.getpwnam(login).pw_gecos.split(",", 1)[0].strip()
    except KeyError:
        full = ""
    first, _, last = full.rpartition(" ")
    return (first, last) if last else ("", login)


def record(course_dir, people):
    """Each {login: (first, last)} into the course's gradebook, a name already there kept. Returns the logins
    whose names were written."""
    coursedir = course_directory(course_dir)
    venv_first_on_path()  # nbgrader's Gradebook runs `alembic` for a new gradebook
    written = []
    with gradebook.opened(coursedir.db_url, coursedir.course_id) as course_gb:
        for login, (first, last) in sorted(people.items()):
            student = course_gb.update_or_create_student(login)
            if student.first_name is None and student.last_name is None:
                course_gb.update_or_create_student(login, first_name=first, last_name=last)
                written.append(login)
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m perfaudit.hub.people", description=__doc__.splitlines()[0])
    parser.add_argument("--course-dir", type=Path, default=Path.cwd())
    parser.add_argument("people", help='JSON: {"login": ["first", "last"]}')
    args = parser.parse_args(argv)
    written = record(args.course_dir, {login: tuple(name) for login, name in json.loads(args.people).items()})
    print(f"names in the gradebook: {len(written)} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
