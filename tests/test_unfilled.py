"""Validate names the unfilled solution cell first, before any traceback into the course's checks."""

import shutil

from nbconvert.filters import strip_ansi
from nbgrader.validator import Validator
from traitlets.config.loader import PyFileConfigLoader

from perfaudit import paths


def test_validate_leads_with_the_cell_to_fill_in(tmp_path):
    shutil.copy(paths.ROOT / "nbgrader_config.py", tmp_path)
    notebook = shutil.copy(paths.RELEASE / paths.STAGES[1], tmp_path)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    failed = Validator(config=config).validate(str(notebook))["failed"]
    # The first failure is the self-check that calls workload through perfaudit/checks.py: its error names
    # workload's cell before the traceback.
    first = strip_ansi(failed[0]["raw_error"]).splitlines()
    assert first[0] == "Fill in the cell that defines `workload` first: it still says YOUR CODE HERE."
    assert first[-1].startswith("NotImplementedError: Fill in this cell"), first
    # An error that is not the stub's shows as it always did.
    assert all(not f["raw_error"].startswith("Fill in") for f in failed if "NameError" in f["raw_error"])
