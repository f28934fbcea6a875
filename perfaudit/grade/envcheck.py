"""The environment check (the canary) once per environment, not once per run.

Grading the instructor's solutions and the untouched release through the pipeline takes minutes on a busy machine;
its verdict depends only on what grades: the course package, source/ and the release, nbgrader_config.py and the
run's settings, requirements-cpu.txt and the installed versions, the Python, JAX_* and XLA_FLAGS, and the sandbox.
Their digest is the environment's fingerprint. A passed check is kept beside the gradebook
(gradebook.db.environment.json; with
PostgreSQL autograded/.batch-grading/environment.json) and a run whose fingerprint matches says "passed earlier for
this environment (fingerprint ...)"; any change runs it again before anyone is graded. A Dask cluster's workers
(--scheduler) are other machines the fingerprint cannot see: they still check for themselves. The fingerprint and
the record are perfaudit/autograde/plugins/envrecord.py's, which plain `nbgrader autograde` reads too.
"""

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nbgrader.coursedir import CourseDirectory

from perfaudit.autograde.plugins import canary
from perfaudit.autograde.plugins.envrecord import fingerprint, passed_earlier, save
from perfaudit.autograde.plugins.execute import TrustedExecute
from perfaudit.bookkeeping.coursedir import course_config


def check(course_dir: str | Path, notebooks: Iterable[str], settings: dict[str, Any]) -> float:
    """Run the canary on every notebook in this process; GradingEnvironmentError when one fails. Seconds taken."""
    started = time.monotonic()
    config = course_config(course_dir, settings)
    for name in sorted(notebooks):
        canary.check_notebook(name, config, TrustedExecute)
    return time.monotonic() - started


def once(course_dir: str | Path, coursedir: CourseDirectory, assignment: str, notebooks: Iterable[str],
         settings: dict[str, Any], record: str | Path) -> str:
    """Check the environment unless this fingerprint passed before; the sentence for the summary."""
    print_ = fingerprint(course_dir, coursedir, assignment, settings)
    earlier = passed_earlier(record, print_)
    if earlier:
        return (f"passed earlier for this environment (fingerprint {print_[:12]}, checked {earlier['checked_at']} in "
                f"{earlier['seconds']:g} s); it runs again when the course package, source/, the release, "
                "nbgrader_config.py, the requirements or the sandbox change")
    seconds = check(course_dir, notebooks, settings)
    save(record, print_, seconds)
    return (f"passed for this environment (fingerprint {print_[:12]}) in {seconds:.1f} s: the instructor's solutions "
            f"score full marks and the release none, through this pipeline; kept in {Path(record).name}")
