"""JAX performance audit: the course module's shared code.

Commands, one module each, run from the course directory (in brackets: the make target that runs it):
  python -m perfaudit.check          one stage's notebook and its checks: PASS or FAIL [make check]
  python -m perfaudit.lab            JupyterLab on the student's working copy, nbgrader's Validate working [make lab]
  python -m perfaudit.instructor.demo the instructor's main job on sample students: release, autograde [make demo]
  python -m perfaudit.instructor.student_copy the zip students download, no solution or hidden test [make student-copy]
  python -m perfaudit.grade          grade submitted/ or an LMS download on Dask: grades, feedback [make grade]
  python -m perfaudit.serve          grade each submission in the exchange as it arrives, a fair limit [make serve]
  python -m perfaudit.hub.accounts   the class's local accounts from a roster [make hub-users]
  python -m perfaudit.hub.exchange   the hub's shared exchange, and the course folders students must not read [make hub]
  python -m perfaudit.hub.people     the class's names in the gradebook, for Formgrader's list [make hub]
  python -m perfaudit.hub.watchdog   each student's memory in total under their share, a hub service [make hub]
  python -m perfaudit.hub.private_pipe the kernel the hub's users run: no port of its own (its kernelspec) [make hub]
  python -m perfaudit.coldstart      the first call of a cold process, with and without a persistent cache (JSON)
  python -m perfaudit.sweep          steady calls across input sizes: where computation overtakes dispatch (JSON)
  python -m perfaudit.decompose      where the first call's time goes, measured two independent ways (JSON)

The other make targets (make help says what each does):
  make help            the targets, each with what it does
  make test            the whole test suite, as CI runs it
  make test-fast       the fast tier: every test not marked slow
  make test-catalog    every catalog case graded by both graders
  make lint            ruff over the repository, mypy over the grading wings (make test runs both)
  make release         notebooks/ generated again from source/
  make id              a student states their id once: notebook 5's variant is drawn from it (python -m perfaudit.check)
  make variants        who audits which variant of notebook 5 (python -m perfaudit.grade)
  make feedback        feedback and each LMS export written again from the gradebook (python -m perfaudit.grade)
  make bench-grading   benchmark: batch grading on local workers and a Dask cluster against plain nbgrader
  make bench-load      benchmark: every sample graded by both graders on a busy machine
  make hub-proxy       JupyterHub's pinned proxy installed into .hub/node
  make hub-venv        the course's venv, made by the course's owner when root runs it (make hub, make hub-users)
  make clean           remove what can be made again; student work and grades are kept
  make reset-course    a new term: DELETES submissions, the gradebook, autograded/, feedback/ and the exchange

Wings, the folders of perfaudit/:
  checks/          the checks the notebooks' self-checks, their visible tests and the checker share (student-facing)
  answer_key/      the answer key and the reference workload: hidden tests use them in the grader (never shipped)
  bookkeeping/     the course directory, grading's state folder, the versions graded with (below both grading wings)
  autograde/       nbgrader's plug-ins for untrusted code: a sandboxed kernel, tests run in the grader, feedback
  grade/           batch grading: intake, diagnosis, tasks on Dask, the one gradebook writer, reports, exports
  serve/           the grading service: the exchange watched, a fair limit per student, feedback released
  instructor/      the instructor's apps: the demo, the student copy's maker, a course's gradebook read (never shipped)
  hub/             the course on JupyterHub: settings, accounts, the exchange, the hub's config, its pinned proxy
  fixtures/        sample submissions and the catalog of cheats and valid variants (instructors and tests only)
  student_files/   the student copy's own Makefile, README, nbgrader_config.py and pyproject.toml
  student_lab/     the Jupyter settings make lab gives students (nbgrader's instructor tools off)
"""

ASSIGNMENT = "performance-audit"
