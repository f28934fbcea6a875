"""Reuse of another notebook's functions (perfaudit/reuse.py): its setup and filled-in cells run, nothing else."""

import nbformat
import pytest

from perfaudit import paths, reuse
from perfaudit.fixtures import samples


def _notebook_3(folder, sample="correct", extra=None):
    nb = samples.submission(samples.SAMPLES[sample], 3)
    for grade_id, code in (extra or {}).items():
        next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id).source = code
    nbformat.write(nb, folder / paths.STAGES[3])


def test_reuse_runs_the_setup_and_the_filled_in_cells_only(tmp_path):
    _notebook_3(tmp_path)
    module = reuse.notebook(paths.STAGES[3], tmp_path)
    assert callable(module.gather_evidence) and callable(module.write_evidence)
    assert "evidence" not in vars(module) and "written" not in vars(module)  # the measuring cell did not run


def test_reuse_translates_magics(tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.instance()  # a shell, as in a kernel: the translated magic runs in it
    solution = samples.instructor_solution(next(
        c for c in notebooks_cells(paths.SOURCE / paths.STAGES[3]) if c.metadata["nbgrader"].get("grade_id") ==
        "write_evidence"))
    _notebook_3(tmp_path, extra={"write_evidence": "%time _ = 1\n" + solution})
    assert callable(reuse.notebook(paths.STAGES[3], tmp_path).write_evidence)


def notebooks_cells(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.get("metadata", {}).get("nbgrader")]


def test_reuse_says_when_notebook_3_is_missing(tmp_path):
    with pytest.raises(reuse.NotebookNotFound, match="03-evidence.ipynb, which should be in the same folder"):
        reuse.notebook(paths.STAGES[3], tmp_path)


def test_reuse_names_the_cell_still_to_fill_in(tmp_path):
    _notebook_3(tmp_path, sample="untouched")
    module = reuse.notebook(paths.STAGES[3], tmp_path)
    with pytest.raises(AttributeError, match="gather_evidence, write_evidence still hold `raise NotImplementedError"):
        module.gather_evidence  # noqa: B018


def test_reuse_reads_the_folder_the_checker_names(tmp_path, monkeypatch):
    _notebook_3(tmp_path)
    monkeypatch.setenv(reuse.FOLDER_ENV, str(tmp_path))
    assert reuse.folder() == tmp_path
    assert callable(reuse.notebook(paths.STAGES[3]).gather_evidence)


def test_a_hand_made_notebook_runs_quietly_and_names_its_one_unfilled_cell(tmp_path, monkeypatch, capsys):
    def cell(source, **nbgrader):
        return nbformat.v4.new_code_cell(source, metadata={"nbgrader": nbgrader} if nbgrader else {})
    nb = nbformat.v4.new_notebook(cells=[
        cell("print('hello from setup')\nimport math", grade_id="setup"),
        cell("def double(x):\n    return 2 * x", grade_id="double", solution=True),
        cell("def half(x):\n    raise NotImplementedError('Fill in this cell')", grade_id="half", solution=True),
        cell("measured = double(21)"), cell("mine = 1"), nbformat.v4.new_markdown_cell("double = None")])
    nbformat.write(nb, tmp_path / "01-x.ipynb")
    monkeypatch.delenv(reuse.FOLDER_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    module = reuse.notebook("01-x.ipynb")
    assert module.double(21) == 42 and module.math.pi > 3 and module.__name__ == "01_x"
    assert "measured" not in vars(module) and "mine" not in vars(module)
    assert capsys.readouterr().out == ""
    with pytest.raises(AttributeError, match=r"01-x.ipynb defines no 'half' in its setup cell or in the cells you "
                                             r"fill in. The cell half still holds `raise NotImplementedError\(...\)`: "
                                             r"fill it in and save that notebook."):
        module.half  # noqa: B018
    with pytest.raises(AttributeError, match="^__wrapped__$"):  # what Python's own lookups ask: no hint
        module.__wrapped__  # noqa: B018
