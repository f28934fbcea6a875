"""The Makefile: `make help` lists every target with its comment; `make clean` keeps student work and grades."""

import os
import pwd
import re
import shutil
import subprocess

import pytest

from perfaudit import paths


def make(*args, cwd):
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def test_help_lists_every_target_with_its_comment():
    targets = re.findall(r"^([a-z][a-z-]*):.*## (.*)$", (paths.ROOT / "Makefile").read_text(), re.M)
    out = make("help", cwd=paths.ROOT)
    assert {"demo", "test", "lab", "grade", "clean", "reset-course"} <= {t for t, _ in targets}
    for target, comment in targets:
        assert re.search(rf"^  {re.escape(target)} +{re.escape(comment)}$", out, re.M), (target, out)


def test_clean_keeps_submissions_and_the_gradebook_and_reset_course_removes_them(tmp_path):
    shutil.copy(paths.ROOT / "Makefile", tmp_path)
    kept = [tmp_path / "submitted" / "doejane_12345" / "performance-audit" / "01.ipynb", tmp_path / "gradebook.db",
            tmp_path / "autograded" / "doejane_12345" / "performance-audit" / "01.ipynb",
            tmp_path / "submitted" / ".lms-intake.json",  # last term's names and ids
            tmp_path / "submitted" / "doejane_12345" / ".history" / "2025-03-07T120000.000000Z" / "01.ipynb"]
    made_again = [tmp_path / "runs" / "performance-audit" / "report.json", tmp_path / "dist" / "student.zip",
                  tmp_path / "exports" / "canvas-grades.csv"]
    for path in kept + made_again:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    make("clean", cwd=tmp_path)
    assert all(p.exists() for p in kept)
    assert not any(p.exists() for p in made_again)
    make("reset-course", cwd=tmp_path)
    assert not any(p.exists() for p in kept)


def _fake_pythons(folder, versions):
    """A PATH folder whose python3.X commands say they are that version (and python3 the oldest)."""
    folder.mkdir()
    for name, version in versions.items():
        script = folder / name
        script.write_text(f"#!/bin/sh\necho Python {version}\n")
        script.chmod(0o755)
    return folder


@pytest.mark.parametrize("makefile", [paths.ROOT / "Makefile", paths.ROOT / "perfaudit" / "student_files" / "Makefile"])
@pytest.mark.parametrize("found, chosen", [
    ({"python3": "3.10.12", "python3.11": "3.11.9", "python3.12": "3.12.3"}, "python3.11"),
    ({"python3": "3.10.12", "python3.12": "3.12.3", "python3.13": "3.13.1"}, "python3.13"),
    ({"python3": "3.12.3"}, "python3"),
])
def test_the_venv_is_made_with_python_3_11_or_the_newest_later_one_and_says_which(makefile, found, chosen, tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(makefile, course / "Makefile")
    for name in ("requirements-cpu.txt", "pyproject.toml"):
        (course / name).write_text("")
    bin_dir = _fake_pythons(tmp_path / "bin", found)
    done = subprocess.run([shutil.which("make"), "--no-print-directory", "-n", ".venv/installed"], cwd=course,
                          capture_output=True, text=True, check=True, env={"PATH": str(bin_dir)})
    assert f"Making .venv with {chosen} ($({chosen} --version 2>&1))" in done.stdout
    assert f"\n{chosen} -m venv .venv\n" in done.stdout


def test_what_grading_writes_beside_the_gradebook_is_ignored_by_git():
    recipe = re.search(r"^reset-course:.*\n(?:\t.*\n)*", (paths.ROOT / "Makefile").read_text(), re.M)[0]
    beside = sorted(set(re.findall(r"\bgradebook\.db[\w.]*", recipe)))
    assert "gradebook.db.serve.json" in beside
    done = subprocess.run(["git", "check-ignore", "--no-index", *beside], cwd=paths.ROOT, capture_output=True,
                          text=True)
    assert sorted(done.stdout.split()) == beside


def test_as_root_in_a_course_another_account_owns_the_venv_is_made_by_that_account(tmp_path):
    """sudo make hub-users (and make hub) made .venv and perfaudit.egg-info root's in the course; make hub then closed
    the egg-info and the grading service, the course's owner, died on it. Root's make runs the venv's recipe as the
    course's owner, under umask 022 (every account runs the venv). Shown with make -n: the sub-make runs as the
    owner and prints the recipe it would run."""
    if os.geteuid() != 0:
        pytest.skip("what root's make does")
    course = tmp_path / "course"
    course.mkdir()
    for name in ("Makefile", "requirements-cpu.txt", "pyproject.toml"):
        shutil.copy(paths.ROOT / name, course)
    tmp_path.chmod(0o755)
    os.chown(course, pwd.getpwnam("nobody").pw_uid, -1)
    env = {"PATH": os.environ["PATH"]}
    for target in ("hub-users", "hub"):
        said = subprocess.run(["make", "--no-print-directory", "-n", target, "PYTHON=/usr/bin/python3.11"], cwd=course,
                              capture_output=True, text=True, env=env)
        assert said.stdout.startswith("runuser -u nobody -- sh -c 'umask 022 && exec make --no-print-directory "
                                      ".venv/installed'\n"), said.stdout + said.stderr
        assert "/usr/bin/python3.11 -m venv .venv" in said.stdout, said.stdout + said.stderr
    os.chown(course, 0, -1)  # a course root owns: make hub refuses it later, and the venv is root's as before
    said = make("-n", "hub-venv", "PYTHON=/usr/bin/python3.11", cwd=course)
    assert said.startswith("sh -c 'umask 022"), said
