"""The Makefile: `make help` lists every target with its comment; `make clean` keeps student work and grades."""

import re
import shutil
import subprocess

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
