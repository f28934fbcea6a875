"""Where things live: the course directory follows nbgrader's pipeline."""

import os
from pathlib import Path

from perfaudit import ASSIGNMENT

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "source" / ASSIGNMENT  # instructor notebooks: solutions and hidden tests
RELEASE = ROOT / "notebooks" / ASSIGNMENT  # student notebooks made by nbgrader generate_assignment
SCHEMA = Path(__file__).with_name("report.schema.json")

STAGES = {
    1: "01-first-call-vs-steady.ipynb",
    2: "02-retracing.ipynb",
    3: "03-evidence.ipynb",
    4: "04-integrated-audit.ipynb",
    5: "05-audit.ipynb",
}

# The course package's folders that hold answers: the answer key, the fixtures (their samples and catalog hold
# solutions as text) and instructor/, where the answer key lived until it had a folder of its own: a checkout
# upgraded in place keeps its compiled bytecode there (__pycache__/answers.*.pyc), readable as data without the
# source. A sandboxed kernel sees them as empty folders (perfaudit/autograde/isolation/sandbox.py); on a hub,
# students' accounts cannot read them (perfaudit/hub/exchange.py).
ANSWER_FOLDERS = ("answer_key", "instructor", "fixtures")

# Stages 3 and 4 write report.json and workload.jaxpr.txt here (relative to the notebook's folder).
EVIDENCE_ENV = "PERFAUDIT_EVIDENCE_DIR"
DEFAULT_EVIDENCE_DIR = Path("runs") / ASSIGNMENT


def evidence_dir():
    """The evidence directory a notebook writes to: $PERFAUDIT_EVIDENCE_DIR, else runs/performance-audit."""
    return Path(os.environ.get(EVIDENCE_ENV, DEFAULT_EVIDENCE_DIR))
