"""requirements-cpu.txt installs on Debian 12's python3.11, 3.11.2: no pinned version asks for a later Python.

Read offline from the venv the file was installed into (make's .venv, made afresh in CI): each pinned
distribution's Requires-Python. soupsieve 4.1.3 once asked for 3.11.5, and `make demo PYTHON=/usr/bin/python3.11`
stopped on Debian 12 before installing anything.

To check pins a venv does not hold yet, install them into a scratch venv and run this file with its Python:
`python3.11 -m venv /tmp/v && /tmp/v/bin/pip install -r requirements-cpu.txt && /tmp/v/bin/python -m pytest
tests/test_requirements.py`.
"""

import tomllib
from importlib import metadata

from packaging.specifiers import SpecifierSet

from perfaudit import paths
from perfaudit.bookkeeping import versions

OLDEST_PYTHON = "3.11.2"  # Debian 12's python3.11, what docs/hub.md makes the venv with


def _pins():
    """{name: version} for every package requirements-cpu.txt pins (Python itself, named in a comment, left out)."""
    return {name: version for name, version in versions.pinned(paths.ROOT / "requirements-cpu.txt").items()
            if name != "python"}


def test_the_venv_holds_every_pinned_version():
    """What the next test reads is the pinned versions' metadata only where the venv holds those versions."""
    differing = []
    for name, pin in sorted(_pins().items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "nothing"
        if installed != pin:
            differing.append(f"{name}: {installed} installed, {pin} pinned")
    assert differing == [], "make the venv afresh from requirements-cpu.txt (make): " + "; ".join(differing)


def test_every_pin_installs_on_debian_12s_python():
    refusing = []
    for name, pin in sorted(_pins().items()):
        found = metadata.metadata(name)
        requires = found.get("Requires-Python")
        if requires and not SpecifierSet(requires).contains(OLDEST_PYTHON):
            stale = "" if found["Version"] == pin else f", pinned {pin}: the venv is not the file's"
            refusing.append(f"{name} {found['Version']} (Requires-Python {requires}{stale})")
    assert refusing == [], f"pins that Python {OLDEST_PYTHON} cannot install: " + "; ".join(refusing)


def test_the_course_package_installs_on_debian_12s_python():
    requires = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert SpecifierSet(requires).contains(OLDEST_PYTHON), f"pyproject.toml: requires-python {requires}"
