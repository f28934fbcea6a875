"""How long Validate waits for a cell (perfaudit/longcells.py): a cell tagged long-running gets the longer limit,
every other cell nbgrader's 30 s; the course's and the student copy's configurations both give Validate it."""

from nbformat.v4 import new_code_cell
from nbgrader.preprocessors import Execute
from nbgrader.validator import Validator
from traitlets.config import PyFileConfigLoader

from perfaudit import longcells, paths


def test_a_tagged_cell_gets_the_long_limit_and_every_other_cell_the_usual_one():
    assert longcells.validate_timeout(new_code_cell("x", metadata={"tags": [longcells.LONG_RUNNING]})) == 120
    assert longcells.validate_timeout(new_code_cell("x", metadata={"tags": ["other"]})) == 30
    assert longcells.validate_timeout(new_code_cell("x")) == 30


def test_validate_reads_it_from_the_course_s_and_the_student_copy_s_configuration():
    for folder in (paths.ROOT, paths.ROOT / "perfaudit" / "student_files"):
        config = PyFileConfigLoader("nbgrader_config.py", str(folder)).load_config()
        assert Execute(parent=Validator(config=config)).timeout_func is longcells.validate_timeout, folder
        assert Execute(config=config).timeout_func is None, folder  # grading's Execute keeps its own limits
