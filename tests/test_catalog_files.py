"""The catalog's own files, read without grading anything (tests/test_catalog.py grades every case)."""

import importlib
from pathlib import Path

from conftest import hidden_test_lines

from perfaudit import paths
from perfaudit.fixtures import catalog

CATALOG = Path(catalog.__file__).parent


def test_no_line_of_the_catalog_is_a_hidden_test_line():
    """A cheat prints every line that looks like a test from every file it can read, these included."""
    secret = {" ".join(line.split()) for line in hidden_test_lines()}
    for path in sorted(CATALOG.rglob("*.py")):
        lines = {" ".join(line.split()) for line in path.read_text().splitlines()}
        assert sorted(lines & secret) == [], path


def test_each_class_of_attack_is_one_module_of_cheats_and_every_module_is_in_the_catalog():
    modules = [importlib.import_module(f"{catalog.__name__}.cheats.{path.stem}")
               for path in sorted((CATALOG / "cheats").glob("*.py")) if path.stem != "__init__"]
    kinds = {module.__name__: {case.kind for case in module.CHEATS.values()}
             for module in modules if hasattr(module, "CHEATS")}
    assert {name: kind for name, kind in kinds.items() if len(kind) != 1} == {}
    assert sorted(kind for (kind,) in kinds.values()) == sorted(catalog.KINDS)
    assert sorted(name for module in modules for name in getattr(module, "CHEATS", {})) == sorted(catalog.CHEATS)


def test_the_threat_model_lists_every_case_with_its_expected_score():
    """docs/grading-security.md's catalog table is the catalog: a case added, renamed or rescored shows there."""
    document = (paths.ROOT / "docs" / "grading-security.md").read_text()
    rows = [line for line in document.splitlines() if line.startswith(("| `cheat-", "| `valid-"))]
    assert rows == catalog.table(), "regenerate the table in docs/grading-security.md from catalog.table()"
