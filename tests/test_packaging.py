"""pyproject.toml, the repository's and the student copy's: a wheel built from each and installed in a fresh venv
holds every file of its perfaudit/ and imports every package of it. An editable install (make's .venv) cannot show
a package left out: it imports from the source tree."""

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from perfaudit import ASSIGNMENT, paths
from perfaudit.instructor import student_copy

pytestmark = pytest.mark.slow  # a wheel built, a venv made, every package imported: half a minute or more each


def _skipped(path):
    return "__pycache__" in path.parts or path.suffix == ".pyc"


def _files(root):
    """Every file of root's perfaudit/, as a wheel names it."""
    return sorted(p.relative_to(root).as_posix() for p in (root / "perfaudit").rglob("*")
                  if p.is_file() and not _skipped(p))


def _packages(root):
    """Every package of root's perfaudit/: each folder with an __init__.py."""
    return sorted(".".join(p.parent.relative_to(root).parts) for p in (root / "perfaudit").rglob("__init__.py")
                  if not _skipped(p))


def _run(*command, cwd):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(map(str, command))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _wheel(root, tmp_path):
    """The wheel pip builds, offline, from a copy of root's pyproject.toml, README and perfaudit/ (a build writes
    beside its source)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        if (root / name).exists():
            shutil.copy(root / name, source)
    shutil.copytree(root / "perfaudit", source / "perfaudit", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir",
         tmp_path / "dist", source, cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("perfaudit-*.whl")
    return wheel


def _imported_from_a_fresh_venv(wheel, packages, tmp_path):
    """{package: the file it was imported from}, in a new venv that holds the wheel and nothing else of perfaudit;
    and that venv's site-packages folder."""
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel, cwd=tmp_path)
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path).strip())
    # The dependencies (nbgrader, JAX, Dask) from this venv, after the wheel: a path in a .pth file, so this venv's
    # own .pth files (the editable install's finder) are not read there.
    (site / "zz-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # The catalog reads the course's source/ notebooks at import, from the folder above the package, as in a clone.
    shutil.copytree(paths.SOURCE, site / "source" / ASSIGNMENT)
    script = ("import importlib, json, sys\n"
              "print(json.dumps({name: importlib.import_module(name).__file__ for name in sys.argv[1:]}))")
    return json.loads(_run(python, "-c", script, *packages, cwd=tmp_path)), site


def _check(root, tmp_path):
    """The wheel of root holds every file of its perfaudit/, and every package imports from where it installed."""
    wheel = _wheel(root, tmp_path)
    shipped = {name for name in zipfile.ZipFile(wheel).namelist() if name.startswith("perfaudit/")}
    assert sorted(set(_files(root)) - shipped) == [], "files of perfaudit/ the wheel leaves out"
    assert sorted(shipped - set(_files(root))) == [], "files in the wheel that perfaudit/ does not hold"
    imported, site = _imported_from_a_fresh_venv(wheel, _packages(root), tmp_path)
    assert sorted(imported) == _packages(root)
    elsewhere = {name: file for name, file in imported.items() if not Path(file).is_relative_to(site / "perfaudit")}
    assert elsewhere == {}, "imported from outside the installed wheel"
    return imported


def test_the_repository_s_wheel_holds_every_file_and_imports_every_package(tmp_path):
    imported = _check(paths.ROOT, tmp_path)
    assert {"perfaudit.checks", "perfaudit.serve", "perfaudit.grade", "perfaudit.autograde"} <= set(imported)
    assert {"perfaudit/report.schema.json", "perfaudit/student_files/Makefile", "perfaudit/student_files/README.md",
            "perfaudit/student_files/pyproject.toml"} <= set(_files(paths.ROOT))


def test_the_student_copy_s_wheel_holds_every_file_and_imports_every_package(tmp_path):
    with zipfile.ZipFile(student_copy.write(tmp_path / "student.zip")) as archive:
        archive.extractall(tmp_path / "unzipped")
    (tmp_path / "build").mkdir()
    imported = _check(tmp_path / "unzipped" / student_copy.TOP, tmp_path / "build")
    assert "perfaudit.checks" in imported
