"""Reuse the functions you wrote in another notebook of this course, without typing them again.

    evidence_nb = reuse.notebook("03-evidence.ipynb")
    evidence = evidence_nb.gather_evidence(50, jax.jit)

The notebook is read from the folder this notebook runs in (JupyterLab, the checker and the grader all run the
four notebooks side by side in one folder). Only two kinds of its cells run, in a fresh namespace, in order: its
setup cell (the imports) and the cells you fill in (those that said `YOUR CODE HERE`). Nothing else runs: no
measurement, no check, no cell you added yourself, so put your helper functions inside the cells you fill in.
A cell you have not filled in yet is skipped; using a name it should define says so.
"""

import contextlib
import io
import os
import types
from pathlib import Path

FOLDER_ENV = "PERFAUDIT_NOTEBOOK_DIR"  # set by the checker, which runs a notebook outside its folder
SETUP = "setup"
STUB = "raise NotImplementedError("  # the start of the release's stub (nbgrader_config.py)


class NotebookNotFound(FileNotFoundError):
    pass


class _Notebook(types.ModuleType):
    """The names the notebook's cells defined; a missing name says which cell to fill in."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        unfilled = self.__dict__.get("_unfilled", [])
        hint = (f" The cell{'s' if len(unfilled) > 1 else ''} {', '.join(unfilled)} still "
                f"hold{'' if len(unfilled) > 1 else 's'} `raise NotImplementedError(...)`: fill "
                f"{'them' if len(unfilled) > 1 else 'it'} in and save that notebook.") if unfilled else ""
        raise AttributeError(f"{self.__dict__['_filename']} defines no {name!r} in its setup cell or in the cells you "
                             f"fill in.{hint}")


def folder():
    """The folder the notebooks are in: $PERFAUDIT_NOTEBOOK_DIR when the checker sets it, else the working folder."""
    return Path(os.environ.get(FOLDER_ENV) or Path.cwd())


def _cells(path):
    import nbformat  # a second to import, only when a notebook is read: notebook 4's setup cell imports reuse

    return nbformat.read(path, as_version=4).cells


def _python(source):
    """Cell source as Python: IPython's magics (%timeit, !ls) become the calls IPython itself would make."""
    try:  # IPython where there is one (a kernel); the checker imports this module without it
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # plain Python: no magics to translate
        return source
    return TransformerManager().transform_cell(source)


def notebook(filename, where=None):
    """A module holding what the setup cell and the filled-in cells of `filename` define."""
    path = Path(where or folder()) / filename
    if not path.is_file():
        raise NotebookNotFound(
            f"This notebook reuses your {filename}, which should be in the same folder, {path.parent}; it is not "
            f"there. Keep the four notebooks of the course together in one folder, under their own names."
        )
    module = _Notebook(Path(filename).stem.replace("-", "_"))
    module._filename, module._unfilled = filename, []
    try:  # what a translated magic calls, as in the notebook itself
        from IPython import get_ipython

        module.get_ipython = get_ipython
    except ImportError:
        pass
    for cell in _cells(path):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or not (meta.get("grade_id") == SETUP or meta.get("solution")):
            continue
        if STUB in cell.source:
            module._unfilled.append(meta.get("grade_id", "?"))
            continue
        code = compile(_python(cell.source), f"{filename} (cell {meta.get('grade_id', '?')})", "exec")
        with contextlib.redirect_stdout(io.StringIO()):  # the setup cell's greeting is noise here
            exec(code, module.__dict__)  # noqa: S102 (the student's own code, in the student's own kernel)
    return module
