"""What a grading task runs (perfaudit/grade/worker.py), with nbgrader's converters stood in for."""

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfaudit.autograde.errors import GradingEnvironmentError
from perfaudit.bookkeeping.coursedir import course_config, remove_tree, venv_first_on_path
from perfaudit.grade import worker


def test_the_venv_s_commands_come_first_on_path(monkeypatch):
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", "/usr/bin")
    venv_first_on_path()
    assert os.environ["PATH"] == f"{bin_dir}{os.pathsep}/usr/bin"
    venv_first_on_path()
    assert os.environ["PATH"] == f"{bin_dir}{os.pathsep}/usr/bin"  # once


def test_a_process_s_own_output_goes_to_the_log(tmp_path):
    code = ("import os, sys\nfrom perfaudit.grade import worker\nworker.output_to_log(sys.argv[1])\n"
            "print('out', flush=True)\nos.write(2, b'err\\n')\n")
    (tmp_path / "log").write_text("before\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "log")], capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert (tmp_path / "log").read_text() == "before\nout\nerr\n"


def test_a_read_only_graded_folder_is_removed_and_a_link_in_it_is_not_followed(tmp_path):
    (tmp_path / "outside").write_text("not ours")
    (tmp_path / "outside").chmod(0o400)
    folder = tmp_path / "autograded" / "ann"
    folder.mkdir(parents=True)
    (folder / "01.ipynb").write_text("{}")
    (folder / "01.ipynb").chmod(0o444)
    (folder / "link").symlink_to(tmp_path / "outside")
    folder.chmod(0o555)
    remove_tree(folder)
    remove_tree(folder)  # gone already: nothing to do
    assert not folder.exists() and oct((tmp_path / "outside").stat().st_mode & 0o777) == "0o400"


def test_the_course_s_config_with_the_run_s_settings_on_top(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.Execute.timeout = 30\n"
                                                 "c.CourseDirectory.course_id = 'course'\n")
    config = course_config(tmp_path, {"Execute.timeout": 5, "CourseDirectory.student_id": "ann"})
    assert (config.Execute.timeout, config.CourseDirectory.student_id) == (5, "ann")
    assert (config.CourseDirectory.course_id, config.CourseDirectory.root) == ("course", str(tmp_path))


def test_nbgrader_s_failure_is_its_last_error_line():
    assert worker._failure({"error": "Traceback\n  File x\nValueError: bad\nsee the above traceback\n"}) == (
        "ValueError: bad")
    assert worker._failure({"log": "one\n  last line  \n\n"}) == "last line"
    assert worker._failure({}) == "nbgrader failed without a message"


@pytest.fixture
def converted(monkeypatch, tmp_path):
    """{notebook: what its conversion says} for worker.autograde, with the conversions recorded."""
    said, asked = {}, []

    def convert(converter_class, config):
        notebook = config.CourseDirectory.notebook_id
        asked.append((converter_class.__name__, notebook, config.CourseDirectory.db_url))
        return said.get(notebook, {"success": True})
    monkeypatch.setattr(worker, "_convert", convert)
    monkeypatch.setattr(worker.gradebook, "copy_template", lambda template, scratch: None)
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    return said, asked


def test_each_notebook_is_its_own_conversion_and_each_failure_says_whose_fault(converted, tmp_path):
    said, asked = converted
    full = OSError(errno.ENOSPC, "No space left on device")
    said.update({"02": {"success": False, "error": "x\nGradingEnvironmentError: no JAX\n",
                        "raised": [RuntimeError("in a preprocessor")]},
                 "03": {"success": False, "log": "OSError: [Errno 28] No space left on device\n", "raised": [full]},
                 "04": {"success": False, "error": "nbformat.ValidationError: bad notebook\n"}})
    said["02"]["raised"][0].__cause__ = GradingEnvironmentError("no JAX\nsee the check's notebook")
    found = worker.autograde(tmp_path, "hw", "ann", ["01", "02", "03", "04"], "t.db", tmp_path / "scratch", {})
    assert [a[:2] for a in asked] == [("_Autograde", nb) for nb in ("01", "02", "03", "04")]  # keeps what it raised
    assert {a[2] for a in asked} == {f"sqlite:///{tmp_path / 'scratch' / 'ann.db'}"}
    assert found["failures"] == {"04": "nbgrader could not grade it: nbformat.ValidationError: bad notebook"}
    assert found["environment"] == {
        "02": "no JAX", "03": "not graded: environment: the disk is full (OSError: [Errno 28] No space left on device)"}
    assert sorted(found["notebook_seconds"]) == ["01", "02", "03", "04"] and found["student"] == "ann"


def test_words_of_the_environment_s_in_a_student_s_cell_are_the_student_s_failure(converted, tmp_path):
    """nbgrader's log quotes a submission (a cell it cannot validate, with its source): a cell saying
    GradingEnvironmentError, or a full disk, fails its notebook as the student's, graded; only an exception the
    grader raised, or a disk that is full, is the environment's."""
    said, _ = converted
    cell = "# GradingEnvironmentError: the grading sandbox lost /usr\n# OSError: [Errno 28] No space left on device"
    refusal = f"nbgrader cell does not have a grade_id: {cell}"
    said.update({nb: {"success": False, "error": f"ValidationError: {refusal}\n", "raised": [ValueError(refusal)]}
                 for nb in ("01", "02")})
    found = worker.autograde(tmp_path, "hw", "eve", ["01", "02"], "t.db", tmp_path / "scratch", {})
    assert found["environment"] == {}
    assert sorted(found["failures"]) == ["01", "02"]


def test_a_failed_conversion_is_not_converted_again_here(monkeypatch, tmp_path):
    """Running a notebook once more is TrustedExecute's rule (tests/autograde/isolation/test_kernel_fate.py), for plain
    nbgrader too: the worker converts each notebook once, whatever nbgrader's log says."""
    results = [{"success": False, "log": "Kernel died before replying to kernel_info"}, {"success": True}]
    made = []

    class Converter:
        def __init__(self, coursedir, config):
            made.append(self)

    monkeypatch.setattr(worker, "capture_log", lambda converter: results.pop(0))
    config = course_config(_course(tmp_path))
    assert worker._convert(Converter, config)["success"] is False
    assert len(made) == 1 and made[0].force is True


def _course(root):
    (root / "nbgrader_config.py").write_text("c = get_config()\n")
    return root
