"""nbgrader's Submit on the hub (perfaudit/hub/submit.py): what is made in the setgid inbound/ takes the course
owner's group, timestamp and secret included, so the owner reads it through the group and nobody else does."""

import grp
import os
import shutil
import stat

from traitlets.config.loader import PyFileConfigLoader

from perfaudit import paths
from perfaudit.hub import settings, submit


def test_a_copy_in_a_setgid_folder_keeps_its_group_for_the_files_written_after_it(tmp_path):
    group = grp.getgrnam("nogroup").gr_gid  # a group that is not this account's own
    inbound = tmp_path / "inbound"
    inbound.mkdir()
    os.chown(inbound, -1, group)
    inbound.chmod(0o2733)
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "notebook.ipynb").write_text("{}")
    work.chmod(0o755)
    with submit.folders_keep_their_mode():
        shutil.copytree(work, inbound / "kept")
        (inbound / "kept" / "submission_secret.txt").write_text("secret")
    assert {p.name: p.stat().st_gid for p in [inbound / "kept", *(inbound / "kept").iterdir()]} == {
        "kept": group, "sub": group, "notebook.ipynb": group, "submission_secret.txt": group}
    assert not (inbound / "kept" / "submission_secret.txt").stat().st_mode & stat.S_IRWXO  # made 0640
    shutil.copytree(work, inbound / "plain")  # copytree alone: the folder takes the source's mode, the bit gone
    assert not (inbound / "plain").stat().st_mode & stat.S_ISGID
    assert shutil.copystat.__name__ == "copystat"


def test_the_course_releases_feedback_and_students_submit_with_these_steps(monkeypatch):
    monkeypatch.setenv("PERFAUDIT_COURSE_ID", "course101")  # what the hub gives every student's server
    monkeypatch.setenv("PERFAUDIT_EXCHANGE", "/srv/nbgrader/exchange")
    course = PyFileConfigLoader("nbgrader_config.py", path=str(paths.ROOT)).load_config()
    students = PyFileConfigLoader("nbgrader_config.py", path=str(settings.STUDENTS_CONFIG)).load_config()
    assert course.ExchangeFactory.release_feedback == "perfaudit.hub.release_feedback.ReadableReleaseFeedback"
    assert students.ExchangeFactory.submit == "perfaudit.hub.submit.PrivateSubmit"
