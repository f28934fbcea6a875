"""The class report and the regrade snapshot on a PostgreSQL gradebook (a real server, started by
tests/grade/conftest.py). Submissions that start no kernel keep it short: the report's one query,
the regrade's snapshot and --report all read PostgreSQL, and nothing falls back to a sqlite file."""

import io

import pytest
from courses import make_course

from perfaudit.fixtures import samples
from perfaudit.grade.__main__ import main
from perfaudit.grade.classreport import PAGE, REPORTS_DIR
from perfaudit.grade.run import Options, run

pytestmark = pytest.mark.slow  # a PostgreSQL server and nbgrader: most of a minute


def test_the_class_report_reads_a_postgresql_gradebook(postgres_url, tmp_path, capsys):  # noqa: F811
    root = make_course(tmp_path / "course", db_url=postgres_url)
    for name in ("misnamed-02", "empty-submission"):
        samples.write_broken(name, root / "submitted")
    options = dict(course_dir=root, db_url=postgres_url, canary=False, feedback=False, progress=False)
    first, again = io.StringIO(), io.StringIO()
    run(Options(**options), out=first)
    run(Options(**options, regrade=True), out=again)
    assert "Class report: " in first.getvalue() and "WARNING: the class report" not in first.getvalue()
    assert "Regrade: no score changed." in again.getvalue()
    page = (root / REPORTS_DIR / PAGE).read_text(encoding="utf-8")
    assert "2 student(s) in the gradebook, 24 tests, 26 points" in page
    assert "misnamed: submitted as &#x27;02-retracing (1).ipynb&#x27;" in page and "empty submission" in page
    assert f"the gradebook {postgres_url} and" in page  # no password in this URL to hide
    assert main(["--course-dir", str(root), "--db", postgres_url, "--report"]) == 0
    assert "Class report: " in capsys.readouterr().out
    assert not (root / "gradebook.db").exists(), "nothing may fall back to the sqlite default"
