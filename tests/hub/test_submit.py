"""nbgrader's Submit on the hub (perfaudit/hub/submit.py): what is made in the setgid inbound/ takes the course
owner's group, timestamp and secret included, so the owner reads it through the group and nobody else does."""

import grp
import os
import shutil
import stat
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
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


def test_validate_s_kernels_speak_over_ipc_in_the_student_s_runtime_folder(tmp_path, monkeypatch):
    """nbgrader's Validate in a student's server runs the notebook in a kernel of its own, configured by the
    students' nbgrader_config.py: unix sockets in the student's private runtime folder, named for that kernel,
    none in the working folder and no loopback port."""
    monkeypatch.setenv("PERFAUDIT_COURSE_ID", "course101")
    monkeypatch.setenv("PERFAUDIT_EXCHANGE", str(tmp_path / "exchange"))
    # a short path, as a home's runtime folder is: a unix socket's path holds at most 107 bytes, and pytest's
    # folders under xdist pass that
    runtime = Path(tempfile.mkdtemp(dir="/tmp", prefix="rt-")) / "runtime"
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(settings.STUDENTS_CONFIG)).load_config()
    code = ("import json, os, sys\nfrom ipykernel.kernelapp import IPKernelApp\n"
            "info = json.load(open(IPKernelApp.instance().connection_file))\nprint(info['transport'], info['ip'])")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    NotebookClient(notebook, config=config, kernel_name="python3").execute()
    transport, ip = notebook.cells[0].outputs[0]["text"].split()
    try:
        assert transport == "ipc" and Path(ip).parent == runtime and Path(ip).name.startswith("nbgrader-")
        assert os.listdir(work) == []  # no kernel-ipc-N in the student's working folder
        assert stat.S_IMODE(runtime.stat().st_mode) == 0o700
    finally:
        shutil.rmtree(runtime.parent, ignore_errors=True)
