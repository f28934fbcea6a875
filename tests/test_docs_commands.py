"""Every command the docs show in a ```bash block names what exists: a make target, a perfaudit module and its
options, an nbgrader subcommand. Commands are read from the docs themselves, so a renamed target or option fails
here before an instructor types it."""

import importlib.util
import re
import shlex

import pytest
from nbgrader.apps import NbGraderApp

from perfaudit import paths
from perfaudit.grade.__main__ import command_line

DOCS = [paths.ROOT / "README.md", *sorted((paths.ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```bash\n(.*?)```", re.S)


def commands():
    """(doc, command) for each command line of each bash block, continuation lines joined, comments dropped."""
    found = []
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text()):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"(^|\s)#.*$", "", line).strip()
                if line:
                    found.append((doc.name, line))
    return found


COMMANDS = commands()
TARGETS = set(re.findall(r"^([a-zA-Z][\w.-]*):", (paths.ROOT / "Makefile").read_text(), re.M))


def test_the_docs_show_commands():
    assert len(COMMANDS) > 30


@pytest.mark.parametrize("doc, line", [c for c in COMMANDS if c[1].startswith("make ")])
def test_each_make_target_exists(doc, line):
    words = [w for w in shlex.split(line)[1:] if "=" not in w]
    assert words and set(words) <= TARGETS, (doc, line)


def _perfaudit_modules(line):
    return re.findall(r"python3? -m (perfaudit(?:\.\w+)*)", line)


@pytest.mark.parametrize("doc, line", [c for c in COMMANDS if _perfaudit_modules(c[1])])
def test_each_perfaudit_module_exists(doc, line):
    for module in _perfaudit_modules(line):
        assert importlib.util.find_spec(module) is not None, (doc, line)



def _grade_options():
    return set(command_line()._option_string_actions)


@pytest.mark.parametrize("doc, line", [c for c in COMMANDS if "perfaudit.grade" in c[1]])
def test_each_option_of_the_grade_command_exists(doc, line):
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line.split("perfaudit.grade", 1)[1]))
    assert options <= _grade_options(), (doc, line)


@pytest.mark.parametrize("doc, line", [c for c in COMMANDS if re.match(r"^(\S+/)?nbgrader ", c[1])])
def test_each_nbgrader_subcommand_exists(doc, line):
    assert shlex.split(line)[1] in NbGraderApp.subcommands, (doc, line)
