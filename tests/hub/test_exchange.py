"""The exchange's modes as nbgrader's JupyterHub setup gives them, and the course folders students must not read."""

import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import switch_user

from perfaudit import paths
from perfaudit.hub import exchange


def mode(path):
    return oct(stat.S_IMODE(path.stat().st_mode))


def test_prepare_gives_nbgrader_modes_and_loosened_names_a_changed_one(tmp_path):
    course = exchange.prepare(tmp_path / "exchange", "course101")
    assert {name: mode(course / name) for name in ("", "outbound", "inbound", "feedback")} == {
        "": "0o755", "outbound": "0o755", "inbound": "0o3733", "feedback": "0o711"}
    assert mode(tmp_path / "exchange") == "0o1777"
    assert exchange.loosened(tmp_path / "exchange", "course101") == []
    (course / "inbound").chmod(0o2777)
    assert exchange.loosened(tmp_path / "exchange", "course101") == [(str(course / "inbound"), "0o2777", "0o3733")]
    exchange.prepare(tmp_path / "exchange", "course101")  # each start mends it
    assert exchange.loosened(tmp_path / "exchange", "course101") == []


def test_protect_takes_other_accounts_off_instructor_only_paths(tmp_path):
    for folder in ("source", "submitted", "notebooks", "perfaudit/fixtures", "perfaudit/answer_key",
                   "perfaudit/instructor", "perfaudit/checks",
                   "perfaudit/autograde", ".git", "tests", ".venv/bin", ".hub/accounts-python"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder).chmod(0o755)
    for name in ("gradebook.db", "perfaudit/answer_key/answers.py", "perfaudit/report.py", "README.md"):
        (tmp_path / name).write_text("")
        (tmp_path / name).chmod(0o644)
    tmp_path.chmod(0o755)
    exchange.protect(tmp_path)
    assert mode(tmp_path) == "0o751"  # others search it for the venv and the package, never list it
    assert {p: mode(tmp_path / p) for p in ("source", "submitted", "gradebook.db", "perfaudit/answer_key",
                                            "perfaudit/instructor", "perfaudit/fixtures", ".git")} == {
        "source": "0o750", "submitted": "0o750", "gradebook.db": "0o640", "perfaudit/answer_key": "0o750",
        "perfaudit/instructor": "0o750", "perfaudit/fixtures": "0o750", ".git": "0o750"}
    # anything else of the course too (the tests hold solutions as code): only what students' servers need is open
    assert {p: mode(tmp_path / p) for p in ("notebooks", "tests", "README.md", ".venv", ".hub")} == {
        "notebooks": "0o750", "tests": "0o750", "README.md": "0o640", ".venv": "0o755", ".hub": "0o755"}
    # what students' JupyterLab imports, and the grader's agent (imported in the sandboxed kernel)
    assert {p: mode(tmp_path / p) for p in ("perfaudit/checks", "perfaudit/report.py", "perfaudit/autograde")} == {
        "perfaudit/checks": "0o755", "perfaudit/report.py": "0o644", "perfaudit/autograde": "0o755"}


def test_prepare_gives_the_courses_folders_and_release_to_the_courses_owner(tmp_path):
    nobody = pwd.getpwnam("nobody").pw_uid  # any account other than root's
    course = exchange.prepare(tmp_path / "exchange", "course101")
    (course / "outbound" / "performance-audit").mkdir()  # a release made by root
    exchange.prepare(tmp_path / "exchange", "course101", owner_uid=nobody)
    folders = [course, *(course / name for name in ("outbound", "inbound", "feedback")),
               course / "outbound" / "performance-audit"]
    assert {p.stat().st_uid for p in folders} == {nobody}
    assert exchange.loosened(tmp_path / "exchange", "course101") == []  # the setgid bit set again after chown


def _planted(tmp_path):
    """A folder of root's that a student would like to own: what a link planted in the exchange points at."""
    victim = tmp_path / "root-only"
    victim.mkdir(mode=0o700)
    (victim / "secret").write_text("root's")
    return victim


def _untouched(victim):
    assert (victim.stat().st_uid, mode(victim)) == (0, "0o700"), "the set-up changed the folder a link points at"


@pytest.mark.parametrize("where", ["course101/inbound", "course101/feedback", "course101", ""])
def test_a_link_planted_in_the_exchange_is_refused_in_one_line_and_not_followed(tmp_path, where):
    """A student's link where the set-up (root) makes or mends a folder: at a course's first set-up, a second
    course, a new term. Before, root gave the folder it points at to the course's owner, mode 2733."""
    nobody = pwd.getpwnam("nobody").pw_uid
    victim = _planted(tmp_path)
    if where != "course101":
        exchange.prepare(tmp_path / "exchange", "course101")  # an earlier term's exchange: the link comes later
    planted = tmp_path / "exchange" / where if where else tmp_path / "exchange"
    if where == "":
        shutil.rmtree(planted)
    elif planted.is_dir():
        planted.rmdir()
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.symlink_to(victim)
    with pytest.raises(exchange.Refused) as refused:
        exchange.prepare(tmp_path / "exchange", "course101", owner_uid=nobody)
    said = str(refused.value)
    assert "\n" not in said and said.startswith(f"refused: {planted} is a link (to {victim}"), said
    _untouched(victim)
    assert planted.is_symlink()


def test_a_file_where_a_folder_goes_and_a_course_folder_a_student_made_first_are_refused(tmp_path):
    nobody = pwd.getpwnam("nobody").pw_uid
    course = exchange.prepare(tmp_path / "exchange", "course101")
    (course / "inbound").rmdir()
    (course / "inbound").write_text("")
    with pytest.raises(exchange.Refused, match=r"^refused: .*/course101/inbound is not a folder \(made by root\)"):
        exchange.prepare(tmp_path / "exchange", "course101", owner_uid=nobody)
    # A new course's folder, made by a student (the exchange is 1777) before the course's first set-up: they could
    # swap what is in it afterwards; refused, not given to the course's owner.
    early = tmp_path / "exchange" / "course202"
    early.mkdir()
    os.chown(early, pwd.getpwnam("bin").pw_uid, -1)
    with pytest.raises(exchange.Refused, match="course202 belongs to bin, not to root or the course's owner"):
        exchange.prepare(tmp_path / "exchange", "course202", owner_uid=nobody)
    assert early.stat().st_uid == pwd.getpwnam("bin").pw_uid and not list(early.iterdir())


def test_a_link_in_the_release_is_not_followed_when_it_is_given_to_the_owner(tmp_path):
    nobody = pwd.getpwnam("nobody").pw_uid
    victim = _planted(tmp_path)
    course = exchange.prepare(tmp_path / "exchange", "course101")
    (course / "outbound" / "performance-audit").mkdir()
    (course / "outbound" / "performance-audit" / "data").symlink_to(victim)
    exchange.prepare(tmp_path / "exchange", "course101", owner_uid=nobody)
    _untouched(victim)
    assert (course / "outbound" / "performance-audit" / "data").lstat().st_uid == nobody


def test_a_classmate_cannot_rename_or_remove_another_s_submission(tmp_path):
    """inbound/ is sticky: only a submission's student and the course's owner rename or remove it. Shown to be the
    sticky bit: with nbgrader's 2733 the same classmate renames it."""
    shared = Path(tempfile.mkdtemp(prefix="perfaudit-sticky-"))
    try:
        shared.chmod(0o755)
        course = exchange.prepare(shared / "exchange", "course101", owner_uid=pwd.getpwnam("daemon").pw_uid,
                                  owner_gid=pwd.getpwnam("daemon").pw_gid)
        theirs = course / "inbound" / "nobody+performance-audit+2026-01-01 10:00:00.000000 UTC+r1"
        theirs.mkdir()
        os.chown(theirs, pwd.getpwnam("nobody").pw_uid, -1)
        with pytest.raises(AssertionError, match="PermissionError"):
            switch_user.run_as("bin", os.rename, str(theirs), str(theirs) + "x")
        assert theirs.is_dir()
        (course / "inbound").chmod(0o2733)
        switch_user.run_as("bin", os.rename, str(theirs), str(theirs) + "x")
        assert not theirs.exists()
    finally:
        shutil.rmtree(shared)


def test_protect_and_keep_private_follow_no_link(tmp_path):
    """The course's owner writes its course directory: a link there, named like what root closes (source/, the
    package's answers, through a linked package too) or like the hub's database, changes nothing it points at."""
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    (victim / "answer_key").mkdir(mode=0o755)
    course = tmp_path / "course"
    course.mkdir(mode=0o755)
    (course / "source").symlink_to(victim)
    (course / "perfaudit").symlink_to(victim)
    exchange.protect(course)
    assert (mode(victim), mode(victim / "answer_key")) == ("0o755", "0o755")
    assert mode(course) == "0o751"
    database = victim / "database"
    database.write_text("root's")
    database.chmod(0o644)
    (course / "jupyterhub.sqlite").symlink_to(database)
    with pytest.raises(exchange.Refused, match="cannot be opened without following a link"):
        exchange.keep_private(course / "jupyterhub.sqlite")
    assert mode(database) == "0o644"
    exchange.keep_private(course / "made.sqlite")
    assert mode(course / "made.sqlite") == "0o600"


def test_protect_opens_what_students_import_of_a_clone_made_under_umask_077(tmp_path):
    """docs/hub.md's clone under umask 077 left perfaudit/*.py 0600: students' kernels could not import it (and
    nbgrader blamed an unwritable exchange). make hub opens the package's public part, and nothing else."""
    course = tmp_path / "course"
    previous = os.umask(0o077)
    try:
        for folder in ("perfaudit/checks", "perfaudit/answer_key", "source"):
            (course / folder).mkdir(parents=True)
        for name in ("perfaudit/__init__.py", "perfaudit/checks/traces.py", "perfaudit/answer_key/answers.py",
                     "source/solution.ipynb"):
            (course / name).write_text("")
    finally:
        os.umask(previous)
    exchange.protect(course)
    assert {p: mode(course / p) for p in ("", "perfaudit", "perfaudit/checks", "perfaudit/__init__.py",
                                          "perfaudit/checks/traces.py")} == {
        "": "0o701", "perfaudit": "0o755", "perfaudit/checks": "0o755", "perfaudit/__init__.py": "0o644",
        "perfaudit/checks/traces.py": "0o644"}
    assert {p: mode(course / p) for p in ("perfaudit/answer_key", "perfaudit/answer_key/answers.py", "source")} == {
        "perfaudit/answer_key": "0o700", "perfaudit/answer_key/answers.py": "0o600", "source": "0o700"}


def test_the_hub_s_state_folder_is_root_s_alone_or_refused(tmp_path):
    """The hub keeps its database, cookie secret and first passwords in .hub/ of the course directory, which the
    course's owner writes: a .hub/ they made or may write (or a link there) is refused in one line."""
    state = tmp_path / "state"
    assert exchange.state_problem(state) is None  # root makes it
    state.mkdir(mode=0o755)
    assert exchange.state_problem(state) is None
    state.chmod(0o775)
    assert "only root may write in it" in exchange.state_problem(state)
    state.chmod(0o755)
    os.chown(state, pwd.getpwnam("nobody").pw_uid, -1)
    said = exchange.state_problem(state)
    assert said.startswith(f"refused: the hub's state folder {state} belongs to nobody") and "\n" not in said
    state.rmdir()
    state.symlink_to(tmp_path)
    assert "is not a folder (a link?)" in exchange.state_problem(state)


def test_a_clone_made_as_docs_hub_md_says_is_closed_until_make_hub_opens_what_students_import(tmp_path):
    """docs/hub.md's step 1, run as written (install -d, then the owner's clone under umask 077; runuser for sudo):
    nothing of the clone is another account's to read; make hub's protect() then opens the package's public part,
    and only it. Before, the doc's chmod 755 of the folders left perfaudit/*.py 0600 and students' imports failed."""
    owner = f"paclone{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--create-home", owner], check=True)
    shared = Path(tempfile.mkdtemp(prefix="perfaudit-clone-"))
    try:
        shared.chmod(0o755)
        course, remote = shared / "course", shared / "remote.git"  # the remote: this repository, a bare copy
        subprocess.run(["git", "clone", "-q", "--bare", str(paths.ROOT), str(remote)], check=True)
        subprocess.run(["chown", "-R", owner, str(remote)], check=True)  # git clones only what its reader owns here
        subprocess.run(["install", "-d", "-o", owner, "-g", owner, "-m", "0700", str(course)], check=True)
        cloned = subprocess.run(["runuser", "-u", owner, "--", "sh", "-c", f"umask 077 && git clone -q "
                                 f"file://{remote} {course}"], capture_output=True, text=True)
        assert cloned.returncode == 0, cloned.stderr
        public, answers = course / "perfaudit" / "__init__.py", course / "perfaudit" / "answer_key" / "answers.py"

        def reads(path):
            return subprocess.run(["runuser", "-u", "nobody", "--", "head", "-c", "1", str(path)],
                                  capture_output=True).returncode == 0

        assert not reads(public) and not reads(answers)  # the window the doc's umask keeps shut
        exchange.protect(course)  # what make hub does at each start
        assert reads(public) and reads(course / "perfaudit" / "checks" / "__init__.py")
        assert not reads(answers) and not reads(course / "README.md")
        assert mode(course) == "0o701" and {p.owner() for p in course.rglob("*")} == {owner}
    finally:
        shutil.rmtree(shared)
        subprocess.run(["userdel", "--remove", owner], capture_output=True)


def test_make_hub_stops_at_a_planted_link_with_its_one_line(tmp_path):
    """python -m perfaudit.hub.exchange (make hub's first step, as root): a link at the course's inbound/ stops it
    before anything is changed, with the refusal as its only line."""
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(paths.ROOT / "nbgrader_config.py", course)
    os.chown(course, pwd.getpwnam("nobody").pw_uid, -1)  # not root's: make hub's first refusal is not this one
    victim = _planted(tmp_path)
    (tmp_path / "exchange" / "jax-performance-audit").mkdir(parents=True)
    (tmp_path / "exchange" / "jax-performance-audit" / "inbound").symlink_to(victim)
    env = {**os.environ, "PERFAUDIT_HUB_COURSE": str(course), "PERFAUDIT_EXCHANGE": str(tmp_path / "exchange"),
           "PERFAUDIT_HUB_STATE": str(tmp_path / "state"), "PERFAUDIT_HUB_DOMAIN": "https://hub.example.edu"}
    done = subprocess.run([sys.executable, "-m", "perfaudit.hub.exchange"], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == "", done.stdout + done.stderr
    assert done.stderr.startswith(f"refused: {tmp_path / 'exchange' / 'jax-performance-audit' / 'inbound'} is a "
                                  f"link (to {victim}") and done.stderr.count("\n") == 1, done.stderr
    _untouched(victim)
    assert mode(course) == "0o755"  # stopped before protect(): nothing of the course changed either
