"""Cells the instructor tags long-running in source/ (notebook 5's timings of loops that retrace at every step), and
how long Validate waits for one: nbgrader's Execute gives every cell 30 s, which a busy machine can take for them.

Grading gives such a cell TrustedExecute.long_cell_timeout, and only where it is the instructor's unchanged cell
(perfaudit/autograde/plugins/execute.py). Validate is the student's own check of their own copy: there a tag on any
cell lengthens only their own wait.
"""

LONG_RUNNING = "long-running"
CELL_TIMEOUT_S = 30  # nbgrader's Execute.timeout, every other cell's
LONG_CELL_TIMEOUT_S = 120


def validate_timeout(cell):
    """nbclient's timeout_func for Validate (c.Validator.Execute.timeout_func): seconds for this cell."""
    tags = cell.get("metadata", {}).get("tags", [])
    return LONG_CELL_TIMEOUT_S if LONG_RUNNING in tags else CELL_TIMEOUT_S
