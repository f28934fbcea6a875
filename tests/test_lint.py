"""The linters, run as make lint runs them (pyproject.toml configures both), so that CI runs them: ruff over the
repository, mypy over the grading wings; and there, an annotation on every public function's parameters and
return, which mypy's own options ask of every function or of none."""

import ast
import hashlib
import os
import subprocess
import sys
import tempfile

from perfaudit import paths

TYPED = ("autograde", "grade", "serve")  # the folders of perfaudit/ that [tool.mypy] files names


def _run(*command):
    done = subprocess.run([sys.executable, "-m", *command], cwd=paths.ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} (exit status {done.returncode}):\n{done.stdout}{done.stderr}"


def test_ruff_finds_nothing():
    _run("ruff", "check", "--no-cache", ".")


def test_mypy_finds_nothing():
    # Its cache outside the checkout, one per checkout and user: a later run reads only what changed (seconds; the
    # first, which reads JAX, NumPy and Dask's types too, takes half a minute).
    checkout = hashlib.sha256(str(paths.ROOT).encode()).hexdigest()[:12]
    _run("mypy", "--cache-dir", os.path.join(tempfile.gettempdir(), f"perfaudit-mypy-{os.getuid()}-{checkout}"))


def _is_public(name):
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _unannotated(tree):
    """'Class.name' of each public function or method (dunders too) whose return or a parameter other than a
    method's self or cls has no annotation; nested functions are their enclosing function's own business."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_public(child.name):
                args = child.args
                named = [*args.posonlyargs, *args.args]
                if prefix and named and named[0].arg in ("self", "cls"):
                    named = named[1:]
                params = [*named, *args.kwonlyargs, *[a for a in (args.vararg, args.kwarg) if a is not None]]
                if child.returns is None or any(p.annotation is None for p in params):
                    found.append(f"{prefix}{child.name}")

    visit(tree, "")
    return found


def test_every_public_function_of_the_typed_wings_is_annotated():
    missing = [f"{path.relative_to(paths.ROOT)}: {name}" for wing in TYPED
               for path in sorted((paths.ROOT / "perfaudit" / wing).rglob("*.py"))
               for name in _unannotated(ast.parse(path.read_text()))]
    assert missing == []


def test_the_annotation_check_sees_a_missing_annotation():
    tree = ast.parse("def f(x: int) -> int: ...\ndef g(x) -> int: ...\ndef h(x: int): ...\ndef _private(x): ...\n"
                     "class C:\n    def m(self, *args: int) -> None: ...\n    def n(self, **kw): ...\n"
                     "    def __repr__(self): ...\n    def _helper(self, x): ...\n")
    assert _unannotated(tree) == ["g", "h", "C.n", "C.__repr__"]
