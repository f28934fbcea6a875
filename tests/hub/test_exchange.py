"""The exchange's modes as nbgrader's JupyterHub setup gives them, and the course folders students must not read."""

import pwd
import stat

from perfaudit.hub import exchange


def mode(path):
    return oct(stat.S_IMODE(path.stat().st_mode))


def test_prepare_gives_nbgrader_modes_and_loosened_names_a_changed_one(tmp_path):
    course = exchange.prepare(tmp_path / "exchange", "course101")
    assert {name: mode(course / name) for name in ("", "outbound", "inbound", "feedback")} == {
        "": "0o755", "outbound": "0o755", "inbound": "0o2733", "feedback": "0o711"}
    assert mode(tmp_path / "exchange") == "0o1777"
    assert exchange.loosened(tmp_path / "exchange", "course101") == []
    (course / "inbound").chmod(0o2777)
    assert exchange.loosened(tmp_path / "exchange", "course101") == [(str(course / "inbound"), "0o2777", "0o2733")]
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
