"""Test cells run here, in the grader, never in the student's kernel: the grader alone decides their points.

A test cell's whole source (visible part and hidden tests) is executed in this process. Its names resolve, in
order, to what the test cells bound themselves, the modules the instructor's locked cells in source/ import
(imported here: `checks` is always the course's own), Python's builtins, and last the names of the notebook's
contract: what the cells of the instructor's notebook define, a locked cell's constants made here by the grader's
own run of its statements, the student's functions and values read from the kernel through the channel: plain data
comes back as values, functions as references whose calls cross to the kernel. Any other name is undefined: a test
never asks the kernel for a name the contract does not hold, so nothing a submission defines, edits or unmarks can
stand in for a module a test uses. A test passes when it raises nothing. Its outputs are made here: what it
printed, and on failure one error with the message and no traceback, so no hidden line is ever shown and nothing the
kernel printed can be read as a score by nbgrader's determine_grade.
"""

import ast
import builtins
import contextlib
import contextvars
import functools
import io
import os
import re
import sys
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from IPython.core.inputtransformer2 import TransformerManager
from nbformat.notebooknode import NotebookNode
from nbgrader import utils

import perfaudit
from perfaudit.autograde.evidence import made_up
from perfaudit.autograde.text import printable
from perfaudit.autograde.wire.channel import KernelChannel, KernelGone, RaisedInKernel, ReadLater, StudentError
from perfaudit.checks import held

NO_MESSAGE = "a check failed (it gave no message)"


def is_test(cell: NotebookNode) -> bool:
    """An autograded test cell: graded code that is not a solution."""
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def cell_key(cell: NotebookNode, index: int) -> str | tuple[str, int]:
    """How the grader knows a cell of the instructor's notebook: its grade id, or (a cell nbgrader does not mark,
    only outside autograde, where the notebook run is the instructor's own) its place."""
    return (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id") or ("cell", index)


class Contract:
    """What a notebook's tests may use, read from the instructor's notebook (source/), never from a submission: the
    import statements of its locked cells, run here, and the names its other cells define that a test reads
    (`names`; `bound_by`: {grade id: those that cell binds}), taken right after each such cell ran. A locked cell's
    value made from the instructor's imports and constants alone (`made_here`: {grade id: its statements}) is made
    here, by the grader's own run of those statements; the kernel's is never read. Any other name comes from the
    kernel: what the student's code made, or what a locked cell made by calling it (the student's claim, which a
    test reads only beside a check that calls the student's function itself)."""

    imports: list[ast.Import | ast.ImportFrom]
    bound_by: dict[str | tuple[str, int], set[str]]
    made_here: dict[str | tuple[str, int], list[ast.stmt]]

    def __init__(self, cells: list[NotebookNode]) -> None:
        self.imports, self.bound_by, self.made_here, used = [], {}, {}, set()
        for cell in cells:
            if cell.get("cell_type") == "code" and is_test(cell):  # only what some test reads is ever taken
                used |= {n.id for n in ast.walk(_parse(cell.get("source", ""))) if isinstance(n, ast.Name)}
        # cell_key -> its place among the instructor's code cells: cells run in this order
        self.order: dict[str | tuple[str, int], int] = {}
        for index, cell in enumerate(cells):
            if cell.get("cell_type") != "code":
                continue
            self.order.setdefault(cell_key(cell, index), len(self.order))
            if is_test(cell):
                continue
            tree = _parse(cell.get("source", ""))
            if utils.is_locked(cell) and not utils.is_solution(cell):
                self.imports += [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
            self.bound_by.setdefault(cell_key(cell, index), set()).update(_bound_names(tree))
        imported = {alias.asname or alias.name.split(".")[0] for node in self.imports for alias in node.names}
        self.bound_by = {grade_id: (names - imported) & used for grade_id, names in self.bound_by.items()
                         if (names - imported) & used}
        self.names = set().union(*self.bound_by.values())
        known = set(imported)
        for index, cell in enumerate(cells):
            key = cell_key(cell, index)
            if cell.get("cell_type") == "code" and utils.is_locked(cell) and not utils.is_solution(cell) and \
                    not is_test(cell):
                made = _made_from(_parse(cell.get("source", "")), known)
                if made and _bound_names(ast.Module(body=made, type_ignores=[])) & self.bound_by.get(key, set()):
                    self.made_here[key] = made

    def import_into(self, namespace: dict[str, Any]) -> None:
        """Run the instructor's imports here, in the grader's namespace."""
        # a list of imports is a list of statements (list is invariant)
        exec(compile(ast.Module(body=self.imports, type_ignores=[]),  # type: ignore[arg-type]
                     "<instructor's imports>", "exec"), namespace)

    def make_here(self, key: str | tuple[str, int], known: dict[str, Any]) -> dict[str, Any]:
        """{name: value} of what the grader makes itself of cell `key`, by running its statements here with `known`
        (the instructor's imports and what earlier cells' statements made). A path is left to the kernel: the folder
        it names is the one the kernel wrote to."""
        made: dict[str, Any] = {}
        exec(compile(ast.Module(body=self.made_here.get(key, []), type_ignores=[]), f"<the instructor's cell {key}>",
                     "exec"), dict(known), made)
        return {name: value for name, value in made.items() if not isinstance(value, os.PathLike)}


def _made_from(tree: ast.Module, known: set[str]) -> list[ast.stmt]:
    """The assignments of a locked cell whose values use only `known` names (the instructor's imports, builtins and
    earlier such values), in order; `known` grows by what they bind."""
    made: list[ast.stmt] = []
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [target.id for target in targets if isinstance(target, ast.Name)]
        if len(names) != len(targets):
            continue
        used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        if all(name in known or hasattr(builtins, name) for name in used):
            made.append(node)
            known |= set(names)
    return made



def _parse(source):
    """A cell's code as Python: IPython syntax (a magic) turned into the calls IPython would make."""
    try:
        return ast.parse(source)
    except SyntaxError:
        try:
            return ast.parse(TransformerManager().transform_cell(source))
        except SyntaxError:
            return ast.Module(body=[], type_ignores=[])


def _bound_names(tree):
    """The names a module's top level binds: definitions, assignments, loop and with targets."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
        for target in targets:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


class StudentNamespace(dict):
    """The globals test cells run in. A name of the contract is what the kernel held right after the latest cell of
    the instructor's notebook that binds it ran (take_snapshot): plain data as it was then, a function or an object
    as a reference to the one bound then, a path read when a test uses it. What a later cell (the student's own, or
    a hook) rebinds or mutates never reaches a test; a name of the contract not taken yet is not defined, and any
    other name is not defined, whatever the kernel holds."""

    snapshot: dict[str, Any]

    def __init__(self, channel: KernelChannel, contract: Contract) -> None:
        super().__init__(__name__="__main__")
        self.channel, self.contract, self.snapshot = channel, contract, {}
        contract.import_into(self)
        self.known = dict(self)  # the instructor's imports, and what the grader made of the locked cells so far

    def take_snapshot(self, key: str | tuple[str, int], ran_after: str | tuple[str, int] | None = None) -> None:
        """Take the names the instructor's cell `key` (cell_key) binds, as the kernel holds them now. KernelGone
        propagates; an answer the grader refuses is kept as that error, raised when a test uses the name.
        ran_after: a cell of the instructor's that comes after `key` in the notebook but ran before it (the cell was
        moved): its names are then not taken at all, so a cell cannot read what the notebook measures after it."""
        if ran_after is not None:
            for name in self.contract.bound_by.get(key, ()):
                self.snapshot[name] = NameError(
                    f"name '{name}' is not defined: the cell '{key}' that defines it ran after the cell '{ran_after}', "
                    "which comes after it in the notebook. Keep the notebook's cells in their order.")
            return
        made = self.contract.make_here(key, self.known) if key in self.contract.made_here else {}
        self.known.update(made)
        taken = set(self.contract.bound_by.get(key, ()))
        self.snapshot.update({name: value for name, value in made.items() if name in taken})
        for name in sorted(taken - set(made)):
            try:
                self.snapshot[name] = self.channel.request({"op": "lookup", "name": name})
            except StudentError as error:
                if error.kind == "NameError":
                    self.snapshot.pop(name, None)  # the cell failed before binding it
                else:
                    self.snapshot[name] = error

    def __missing__(self, name: str) -> Any:
        if hasattr(builtins, name):
            return getattr(builtins, name)
        if name not in self.contract.names:
            raise NameError(f"name '{name}' is not defined")
        if name not in self.snapshot:
            raise NameError(f"name '{name}' is not defined: did the cell that defines it run without an error?")
        value = self.snapshot[name]
        if isinstance(value, (StudentError, NameError)):
            raise value
        return value.read() if isinstance(value, ReadLater) else value


# While a test runs, what it may open: folders made for tests, folders read back from the kernel, and the files
# Python, its packages and the system are made of. Never the course directory (the grader's working folder), a
# classmate's submission or anything else a path from the student's process could name.
_open_roots: contextvars.ContextVar[Callable[[], tuple[str, ...]] | None] = contextvars.ContextVar(
    "perfaudit_open_roots", default=None)


@functools.lru_cache(maxsize=1)
def _library_roots():
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(perfaudit.__file__).parent),
             *sysconfig.get_paths().values()}
    found |= {"/usr", "/lib", "/lib64", "/etc", "/proc", "/sys", "/dev"}
    return tuple(sorted({os.path.realpath(p) for p in found}))


def _within(path, roots):
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _guard_opens(event, args):
    roots = _open_roots.get()
    if roots is None or event not in ("open", "os.listdir", "os.scandir") or not args:
        return
    if not isinstance(args[0], (str, bytes, os.PathLike)):
        return  # a file descriptor already open
    path = os.path.realpath(os.fsdecode(args[0]))
    if not _within(path, (*roots(), *_library_roots())):
        raise PermissionError(f"a test may open only folders made for it (hidden.new_folder()) or read back from "
                              f"the student's kernel; not {os.path.basename(path) or path!r}")


sys.addaudithook(_guard_opens)  # a no-op outside run_test


_GRADER_FOLDERS = re.compile(r"/\S*?perfaudit-(?:verdicts|check)-[^/\s]+(?:/read-back-[^/\s]+)?")


# A student's function that raised while a test ran: what the kernel wrote could carry what the test handed it (a
# made-up evidence token) or timed of it (the grader's holds), so a verdict shows none of it: the type only, when it
# is one of Python's common ones, and how to see the message.
SHOWN_TYPES = frozenset({
    "ArithmeticError", "AssertionError", "AttributeError", "FileExistsError", "FileNotFoundError", "ImportError",
    "IndexError", "KeyError", "MemoryError", "ModuleNotFoundError", "NameError", "NotADirectoryError",
    "NotImplementedError", "OSError", "OverflowError", "PermissionError", "RecursionError", "RuntimeError",
    "TypeError", "UnboundLocalError", "ValueError", "ZeroDivisionError", "XlaRuntimeError", "JaxRuntimeError",
})
RAISED = ("in your code: your code raised this error while the test ran it. Its message is not shown in a graded "
          "notebook, since it was written while the test's inputs were there: run the notebook's self-check, or call "
          "your function yourself, to read it.")


def error_output(ename: object, evalue: object) -> NotebookNode:
    """An error output for students: no traceback, no path of the grader's (a folder a test made is "<folder>")."""
    evalue = _GRADER_FOLDERS.sub("<folder>", str(evalue))
    ename, evalue = printable(ename, 100) or "Error", printable(evalue) or NO_MESSAGE
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def run_test(source: str, namespace: StudentNamespace, unfilled: Sequence[str] = ()) -> list[NotebookNode]:
    """The outputs of one test cell run here. KernelGone propagates: the notebook stops there. `unfilled`: grade ids
    of solution cells not filled in yet, named first in a failure's message (the likely reason)."""
    printed = io.StringIO()
    failure = None
    scratch = os.path.realpath(namespace.channel.scratch)
    token = _open_roots.set(lambda: (scratch, *map(str, made_up.test_folders())))
    try:
        tree = ast.parse(source)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        with contextlib.redirect_stdout(printed):
            exec(compile(tree, "<test cell>", "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<test cell>", "eval"),  # type: ignore[attr-defined]
                             namespace)  # last: an ast.Expr, as checked above
                if value is not None:
                    print(repr(value))  # shown as text: a value is never read as a score
    except KernelGone:
        raise
    except RaisedInKernel as error:
        # JAX's own refusal of a held result: a fixed text, which says what to do (a forged one gets the same text)
        said = f"{RAISED} {held.PASSED_INTO_JAX}" if held.refused_by_jax(error) else RAISED
        failure = error_output(error.kind if error.kind in SHOWN_TYPES else "Exception", said)
    except StudentError as error:
        failure = error_output(error.kind, f"in your code: {error}")
    except AssertionError as error:
        failure = error_output("AssertionError", str(error))
    except Exception as error:  # noqa: BLE001 (any other failure of the test: 0 points, with its message)
        failure = error_output(type(error).__name__, str(error))
    finally:
        _open_roots.reset(token)
    if failure is not None and unfilled:
        cells = ", ".join(f"'{name}'" for name in unfilled)
        failure.evalue = printable(f"fill in the cell{'s' if len(unfilled) > 1 else ''} {cells} first (not filled in "
                                   f"yet: NotImplementedError). {failure.evalue}")
        failure.traceback = [f"{failure.ename}: {failure.evalue}"]
    outputs: list[NotebookNode] = []
    if printed.getvalue():
        outputs.append(NotebookNode(output_type="stream", name="stdout", text=printable(printed.getvalue())))
    return outputs + ([failure] if failure is not None else [])
