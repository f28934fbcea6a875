"""python -m perfaudit.instructor.student_copy: what students download, dist/performance-audit-student.zip.

The release notebooks, the public part of the course package (the modules the notebooks, the checker and
`make lab` import), requirements, and a Makefile, README and nbgrader_config.py written for students
(perfaudit/student_files/). Never source/, the reference answers, the grading code or the fixtures: a test
searches every file of the zip for every solution and hidden-test line of source/.
"""

import ast
import json
import re
import sys
import zipfile
from pathlib import Path

from perfaudit import ASSIGNMENT, paths

PACKAGE = Path(__file__).parents[1]  # perfaudit/
STUDENT_FILES = PACKAGE / "student_files"
TOP = f"{ASSIGNMENT}-student"  # the folder the zip unpacks into
DEFAULT_ZIP = paths.ROOT / "dist" / f"{TOP}.zip"
# The students' commands, and what the copy's nbgrader_config.py imports; the notebooks' own imports are read from
# the release.
ENTRY_MODULES = ("check", "lab", "workcopy", "longcells")
# Never shipped: the answer key, the instructor's commands, the grading wings and their bookkeeping, the fixtures.
INSTRUCTOR_ONLY = {"answer_key", "instructor", "autograde", "bookkeeping", "grade", "serve", "hub", "fixtures"}
FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # the same bytes for the same content: the zip diffs cleanly

NOTEBOOK_IMPORT = re.compile(r"^\s*(?:from perfaudit import (.+)|from perfaudit\.(\w+) import|import perfaudit\.(\w+))",
                             re.M)


def _names(found):
    return [name.split(" as ")[0].strip() for group in found for part in group if part for name in part.split(",")]


def _imports(module_path):
    """Names of perfaudit modules a module imports, at any depth of its code."""
    names = []
    for node in ast.walk(ast.parse(module_path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "perfaudit":
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("perfaudit."):
            names.append(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            names += [a.name.split(".")[1] for a in node.names if a.name.startswith("perfaudit.")]
    return names


def public_modules(release=paths.RELEASE):
    """The course package's modules a student's notebooks and commands need, instructor-only ones left out."""
    wanted = list(ENTRY_MODULES)
    for notebook in sorted(Path(release).glob("*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            wanted += _names(NOTEBOOK_IMPORT.findall("".join(cell["source"])))
    modules = set()
    while wanted:
        name = wanted.pop()
        if name in modules or name in INSTRUCTOR_ONLY or not module_files(name):  # a constant, or secret
            continue
        modules.add(name)
        for path in module_files(name):
            wanted += _imports(path)
    return sorted(modules)


def module_files(name):
    """The files of perfaudit.<name>: a module's file, or every module of a package (shipped whole)."""
    path = PACKAGE / f"{name}.py"
    if path.is_file():
        return [path]
    return sorted((PACKAGE / name).glob("*.py")) if (PACKAGE / name / "__init__.py").is_file() else []


def files(release=paths.RELEASE):
    """{path in the student copy: path here}."""
    chosen = {name: STUDENT_FILES / name for name in ("README.md", "Makefile", "nbgrader_config.py", "pyproject.toml")}
    chosen["requirements-cpu.txt"] = paths.ROOT / "requirements-cpu.txt"
    chosen["docs/students.md"] = paths.ROOT / "docs" / "students.md"  # the student's guide, which README links
    for notebook in sorted(Path(release).glob("*.ipynb")):
        chosen[f"notebooks/{ASSIGNMENT}/{notebook.name}"] = notebook
    chosen["perfaudit/__init__.py"] = PACKAGE / "__init__.py"
    for name in public_modules(release):
        for path in module_files(name):
            chosen[path.relative_to(PACKAGE.parent).as_posix()] = path
    chosen["perfaudit/report.schema.json"] = paths.SCHEMA
    for config in sorted((PACKAGE / "student_lab").rglob("*.json")):
        chosen[config.relative_to(PACKAGE.parent).as_posix()] = config
    return chosen


def write(zip_path=DEFAULT_ZIP, release=paths.RELEASE):
    zip_path = Path(zip_path)
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, source in sorted(files(release).items()):
            info = zipfile.ZipInfo(f"{TOP}/{name}", date_time=FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, source.read_bytes())
    return zip_path


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    zip_path = write(Path(args[0]) if args else DEFAULT_ZIP)
    print(f"Wrote {zip_path}: the release notebooks, perfaudit's public modules ({', '.join(public_modules())}), "
          "requirements and a student README; no solutions, no hidden tests.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
