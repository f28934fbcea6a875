"""The package's layout, read from its source: no import circle, no module too long to read."""

import ast
import io
import re
import tokenize
from importlib.util import resolve_name
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "perfaudit"  # this checkout's, whichever is installed
MAX_LINES = 600
# Modules allowed over MAX_LINES, each with why. One goes when it is split (the test below says when).
LONG_MODULES = {}  # {module: why it may be longer}: none today


def _modules():
    """{dotted name: path} of every module in perfaudit/ (a package by its __init__.py)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported(name, path, modules):
    """The perfaudit modules that module `name` imports, at module level or inside a function alike."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_name("." * node.level + (node.module or ""), package) if node.level else node.module
            # `from package import module` imports the module; `from module import name`, the module
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names)
    return {imported for imported in found if imported in modules and imported != name}


def _reach(graph, start):
    """Every module `start` imports, directly or through others."""
    seen, todo = set(), list(graph[start])
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += graph[name]
    return seen


def _circles(graph):
    """The import circles: each a sorted list of the modules that import one another round it."""
    reach = {name: _reach(graph, name) for name in graph}
    circles = {tuple(sorted(other for other in reach[name] if name in reach[other])) for name in graph
               if name in reach[name]}
    return sorted(list(circle) for circle in circles)


def test_no_import_circle_in_the_package():
    modules = _modules()
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    assert _circles(graph) == []


def test_the_circle_finder_sees_a_circle_through_a_function_level_import(tmp_path):
    (tmp_path / "a.py").write_text("from pkg import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from pkg.c import g\n")
    (tmp_path / "c.py").write_text("import pkg.a\n")
    modules = {f"pkg.{n}": tmp_path / f"{n}.py" for n in "abc"}
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    assert _circles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_no_module_is_over_600_lines():
    lengths = {path.relative_to(PACKAGE.parent).as_posix(): len(path.read_text().splitlines())
               for path in _modules().values()}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES and name not in LONG_MODULES} == {}
    # An exception that is no longer needed goes from LONG_MODULES, so the rule holds for that module again.
    assert {name: lengths.get(name, 0) for name in LONG_MODULES if lengths.get(name, 0) <= MAX_LINES} == {}


def _unexplained_imports(text):
    """Lines of the imports inside a function that no comment explains: one on the import's line, or on its block of
    consecutive import statements (the lines it spans, or the line above it)."""
    commented = {token.start[0] for token in tokenize.generate_tokens(io.StringIO(text).readline)
                 if token.type == tokenize.COMMENT}
    found = set()
    for function in ast.walk(ast.parse(text)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            for body in (value for value in vars(node).values() if isinstance(value, list)):
                block = []
                for statement in [*body, None]:
                    if isinstance(statement, (ast.Import, ast.ImportFrom)):
                        block.append(statement)
                        continue
                    if block and not commented & set(range(block[0].lineno - 1, block[-1].end_lineno + 1)):
                        found.update(imported.lineno for imported in block)
                    block = []
    return sorted(found)


def test_every_import_inside_a_function_says_why():
    """Imports sit at the top of a module unless a comment says why one waits for its function (JAX only when a
    measurement runs, the kernel's side kept light, an import circle through a package's __init__, ...)."""
    unexplained = {path.relative_to(PACKAGE.parent).as_posix(): lines for path in _modules().values()
                   if (lines := _unexplained_imports(path.read_text()))}
    assert unexplained == {}


def test_an_import_inside_a_function_without_a_comment_is_found():
    assert _unexplained_imports("import os\n\n\ndef f():\n    import json\n    return json\n") == [5]
    assert _unexplained_imports("def f():\n    if True:\n        import json\n\n        import re\n") == [3, 5]
    assert _unexplained_imports("def f():\n    import json  # why\n") == []
    assert _unexplained_imports("def f():\n    # why, for both\n    import json\n    import re\n") == []
    assert _unexplained_imports("class A:\n    def f(self):  # not about it\n        x = 1\n"
                                "        import json\n") == [4]


def _test_file(name):
    """The test file of module `name`: tests/<wing>/test_<module>.py for perfaudit.<wing>.<module>, and
    tests/test_<module>.py for a module at the package's top (a package's own: its __init__.py)."""
    parts = name.split(".")[1:] or ["perfaudit"]
    return PACKAGE.parent / "tests" / Path(*parts[:-1]) / f"test_{parts[-1]}.py"


# Modules with no behaviour of their own, so no test file of their own: {module: why}.
NO_BEHAVIOUR = {
    **dict.fromkeys(["perfaudit", "perfaudit.answer_key", "perfaudit.autograde", "perfaudit.autograde.evidence",
                     "perfaudit.autograde.isolation", "perfaudit.autograde.plugins", "perfaudit.autograde.wire",
                     "perfaudit.bookkeeping", "perfaudit.checks", "perfaudit.fixtures", "perfaudit.grade",
                     "perfaudit.hub", "perfaudit.instructor", "perfaudit.serve", "perfaudit.fixtures.catalog.cheats"],
                    "a package's docstring, its constants and the names it re-exports"),
    **dict.fromkeys(["perfaudit.student_files.nbgrader_config", "perfaudit.hub.students.nbgrader_config",
                     "perfaudit.hub.jupyterhub_config"],
                    "a configuration file that nbgrader or JupyterHub reads; tests/hub/test_hub.py runs the hub's"),
    "perfaudit.serve.settings": "traitlets with their defaults and help, no code",
    "perfaudit.autograde.evidence.asks": "the words the instruments ask on the kernel's stdin, constants only",
    **dict.fromkeys(["perfaudit.autograde.errors", "perfaudit.grade.errors", "perfaudit.serve.errors"],
                    "exception classes, no code: the tests of the modules that raise them catch them"),
    "perfaudit.serve.__main__": "a thin entry point: arguments to Service (tests/serve/test_serve.py runs it)",
    **dict.fromkeys([f"perfaudit.fixtures.catalog.cheats.{m}" for m in (
        "answering", "invented", "inventions", "leaks", "left_behind", "limits", "prints", "snippets",
        "written_by_cheats")], "catalog cases as data: each is graded by tests/fixtures/test_catalog.py"),
}
# Modules with behaviour of their own whose tests live in other files today: {module: where}. A module leaves this
# list when it gets its own test file (the test below says when); a new module never joins it.
TESTED_ELSEWHERE = {
    "perfaudit.fixtures.catalog.build": "fixtures/test_catalog.py",
    "perfaudit.fixtures.catalog.case": "fixtures/test_catalog.py",
    "perfaudit.fixtures.catalog.student_html": ("autograde/plugins/test_sanitize_outputs.py, "
                                                "test_browser_student_html.py"),
    "perfaudit.fixtures.catalog.valid": "fixtures/test_catalog.py",
    "perfaudit.fixtures.catalog.variants": "fixtures/test_catalog.py",
    "perfaudit.fixtures.samples": "autograde/, grade/test_run.py",
    "perfaudit.serve.exchange": "serve/test_serve_exchange.py (hub/test_exchange.py has the basename pytest needs "
                                "unique)",
    "perfaudit.grade.page": "grade/test_classreport.py, grade/test_similarity.py (text from a submission stays text)",
    "perfaudit.grade.similaritypage": "grade/test_similarity.py (the page from planted copies)",
    "perfaudit.grade.solutions": "grade/test_similarity.py (broken submissions skipped with their reason)",
}


def test_every_module_with_behaviour_has_a_test_file_of_its_own():
    """tests/ mirrors the package: a module with behaviour of its own is tested in the file named after it."""
    without = sorted(name for name in _modules() if not _test_file(name).is_file())
    assert [name for name in without if name not in NO_BEHAVIOUR and name not in TESTED_ELSEWHERE] == []
    # A module that has its own test file now, or is gone, leaves the lists: they only shrink.
    assert [name for name in {**NO_BEHAVIOUR, **TESTED_ELSEWHERE} if name not in without] == []


def test_a_module_s_test_file_mirrors_its_place_in_the_package():
    assert _test_file("perfaudit.checks.traces") == PACKAGE.parent / "tests" / "checks" / "test_traces.py"
    assert _test_file("perfaudit.paths") == PACKAGE.parent / "tests" / "test_paths.py"
    assert _test_file("perfaudit.grade") == PACKAGE.parent / "tests" / "test_grade.py"


def _student_facing():
    """The modules a student's copy holds (perfaudit/instructor/student_copy.py follows the release's imports)."""
    from perfaudit.instructor import student_copy

    return {f"perfaudit.{name}" for name in student_copy.public_modules()}, student_copy.INSTRUCTOR_ONLY


def test_student_facing_code_imports_nothing_of_the_grader_or_the_answer_key():
    """One-way walls: the grader may import the checks, never the reverse; a module the student copy holds imports
    no instructor-only module, at its top or inside a function alike (so no hidden import waits to fail, or to
    leak, in a student's copy)."""
    modules = _modules()
    facing, instructor_only = _student_facing()
    packages = {name for name in facing if modules[name].name == "__init__.py"}
    files = {name for name in modules if name in facing or name.rpartition(".")[0] in packages}
    crossing = sorted(f"{name} -> {imported}" for name in files for imported in _imported(name, modules[name], modules)
                      if imported.partition(".")[2].split(".")[0] in instructor_only)
    assert crossing == []
    assert "perfaudit.checks" in facing and "autograde" in instructor_only  # what the wall is between


def test_the_student_copy_s_rule_is_a_folder_rule():
    """Every module outside the instructor-only folders is one the student copy holds (a wing of them whole): what
    only the instructor or the grader needs (the answer key, the reference JAXPR, the commands) lives in one of those
    folders, perfaudit/instructor/ for the instructor's, and nowhere beside the public modules."""
    facing, instructor_only = _student_facing()
    # a top module or package; student_files/ holds the copy's own files (its nbgrader_config.py), no module
    wings = {".".join(name.split(".")[:2]) for name, path in _modules().items()
             if name.count(".") and (path.parent == PACKAGE or (PACKAGE / name.split(".")[1] / "__init__.py").exists())}
    assert sorted(wing for wing in wings if wing.split(".")[1] not in instructor_only and wing not in facing) == []
    assert "perfaudit.answer_key.reference" in _modules() and "perfaudit.checks" in facing


def _commands():
    """The modules `python -m` runs: a package's __main__.py, or a module with `if __name__ == "__main__":`."""
    found = set()
    for name, path in _modules().items():
        if path.name == "__main__.py":
            found.add(name.rpartition(".")[0])
        elif any(isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'"
                 for node in ast.parse(path.read_text()).body):
            found.add(name)
    return found


def test_the_package_docstring_names_every_command_make_target_and_wing():
    said = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text()))
    targets = re.findall(r"^([a-z][\w-]*):", (PACKAGE.parent / "Makefile").read_text(), re.M)
    wings = [path.name for path in PACKAGE.iterdir() if path.is_dir() and path.name != "__pycache__"]
    assert {"perfaudit.check", "perfaudit.grade", "perfaudit.serve", "perfaudit.hub.accounts"} <= _commands()
    assert sorted(name for name in _commands() if f"python -m {name} " not in said) == []
    assert sorted(set(targets) - set(re.findall(r"\bmake ([a-z][\w-]*)", said))) == []
    assert {"checks", "autograde", "grade", "serve", "hub", "fixtures"} <= set(wings)
    assert sorted(wing for wing in wings if f"  {wing}/ " not in said) == []


def test_each_wing_s_docstring_maps_every_module_and_folder_in_it():
    """A wing's __init__.py is its map, and so is each of its folders': every module (`name.py`) and folder (`name/`)
    in it is named there, so a reader opening the wing sees all of it. Fixtures map their catalog in
    perfaudit/fixtures/catalog/__init__.py."""
    unmapped = {}
    for wing in sorted(path.parent for path in PACKAGE.rglob("*/__init__.py")
                       if "fixtures" not in path.relative_to(PACKAGE).parts):
        said = ast.get_docstring(ast.parse((wing / "__init__.py").read_text())) or ""
        parts = [f"{path.name}/" if path.is_dir() else path.name for path in sorted(wing.iterdir())
                 if path.name not in ("__init__.py", "__pycache__") and (path.is_dir() or path.suffix == ".py")]
        missing = [part for part in parts if not re.search(rf"(^|\s){re.escape(part)}(\s|$)", said, re.M)]
        if missing:
            unmapped[wing.relative_to(PACKAGE).as_posix()] = missing
    assert unmapped == {}
    assert {"autograde/plugins", "autograde/wire"} <= {path.parent.relative_to(PACKAGE).as_posix()
                                                      for path in PACKAGE.rglob("*/__init__.py")}  # subfolders read


# The wings from the bottom up: a wing imports only wings at its level or below, so none reaches back up into a wing
# that drives it. Student-facing code (the modules at the package's top, checks/) is the floor; the answer key and
# the grading wings' bookkeeping sit on it; the grader's plug-ins above them, then the batch, the service, the hub
# and, over everything, the instructor's apps. Fixtures (sample submissions, the catalog) use the plug-ins' names.
WING_LEVELS = {"": 0, "checks": 0, "student_files": 0, "student_lab": 0, "answer_key": 1, "bookkeeping": 2,
               "autograde": 3, "grade": 4, "fixtures": 4, "serve": 5, "hub": 6, "instructor": 7}


def _wing(name, modules):
    """The wing a module is in: its folder under perfaudit/, or "" for a module at the package's top."""
    parts = modules[name].relative_to(modules["perfaudit"].parent).parts
    return parts[0] if len(parts) > 1 else ""


def _arrows_up(modules):
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    return sorted(f"{name} -> {imported}" for name, imports in graph.items() for imported in imports
                  if WING_LEVELS[_wing(imported, modules)] > WING_LEVELS[_wing(name, modules)])


def test_imports_between_wings_run_one_way_down():
    modules = _modules()
    assert sorted({_wing(name, modules) for name in modules} - set(WING_LEVELS)) == []  # a new wing gets its level
    assert _arrows_up(modules) == []


def test_an_import_back_up_into_a_driving_wing_is_found(tmp_path):
    for name in ("perfaudit/__init__.py", "perfaudit/grade/__init__.py", "perfaudit/grade/run.py",
                 "perfaudit/autograde/__init__.py", "perfaudit/autograde/isolation/kernel.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("from perfaudit.grade import run\n" if name.endswith("kernel.py") else "")
    modules = {".".join(Path(n).with_suffix("").parts[:-1] if n.endswith("__init__.py") else
                        Path(n).with_suffix("").parts): tmp_path / n
               for n in ("perfaudit/__init__.py", "perfaudit/grade/__init__.py", "perfaudit/grade/run.py",
                         "perfaudit/autograde/__init__.py", "perfaudit/autograde/isolation/kernel.py")}
    assert _arrows_up(modules) == ["perfaudit.autograde.isolation.kernel -> perfaudit.grade.run"]


# Inside the grader's wing, imports run one way too: the plug-ins drive isolation/, wire/ and evidence/; isolation/
# bounds the kernel's sockets by the wire's limits and imports no plug-in; wire/ carries the instruments of evidence/,
# never the other way.
AUTOGRADE_ORDER = {"evidence": 0, "wire": 1, "isolation": 2, "plugins": 3}


def _autograde_arrows_back(modules):
    def folder(name):
        parts = name.split(".")
        return parts[2] if len(parts) > 3 and parts[1] == "autograde" and parts[2] in AUTOGRADE_ORDER else None

    back = []
    for name, path in modules.items():
        for imported in _imported(name, path, modules):
            here, there = folder(name), folder(imported)
            if here and there and AUTOGRADE_ORDER[there] > AUTOGRADE_ORDER[here]:
                back.append(f"{name} -> {imported}")
    return sorted(back)


def test_inside_autograde_imports_run_one_way():
    assert _autograde_arrows_back(_modules()) == []


def test_an_import_back_inside_autograde_is_found(tmp_path):
    names = ("perfaudit/__init__.py", "perfaudit/autograde/__init__.py", "perfaudit/autograde/evidence/__init__.py",
             "perfaudit/autograde/evidence/instruments.py", "perfaudit/autograde/wire/__init__.py",
             "perfaudit/autograde/wire/protocol.py")
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("from perfaudit.autograde.wire import protocol\n"
                                     if name.endswith("instruments.py") else "")
    modules = {".".join(Path(n).with_suffix("").parts[:-1] if n.endswith("__init__.py") else
                        Path(n).with_suffix("").parts): tmp_path / n for n in names}
    assert _autograde_arrows_back(modules) == [
        "perfaudit.autograde.evidence.instruments -> perfaudit.autograde.wire.protocol"]


def test_tests_hold_test_files_and_conftest_only_helpers_live_in_their_folder():
    """A module in tests/ that is no test file and no conftest.py is a helper: it lives in tests/helpers/, where
    pyproject.toml puts it on the path, so a reader finds every helper in one place."""
    tests = PACKAGE.parent / "tests"
    loose = sorted(path.relative_to(tests).as_posix() for path in tests.rglob("*.py")
                   if not path.name.startswith("test_") and path.name != "conftest.py"
                   and "helpers" not in path.relative_to(tests).parts)
    assert loose == []
