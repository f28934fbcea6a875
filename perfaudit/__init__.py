"""JAX performance audit: the course module's shared code.

Verbs, one module each:
  python -m perfaudit.check   run one stage's notebook and its hidden tests (the seed's checker)
  python -m perfaudit.demo    the instructor's main job: release, autograde samples, grade table
  python -m perfaudit.lab     JupyterLab on the student notebooks (make lab), nbgrader's Validate working
"""

ASSIGNMENT = "performance-audit"
