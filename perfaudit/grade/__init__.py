"""Batch grading for instructors: python -m perfaudit.grade (see run.py for the pipeline).

__main__.py  the command line: options, one-line errors, the exit status
run.py       the pipeline: intake, diagnose, grade on Dask, write as the one gradebook writer, export, summary
session.py   what the batch and the service share to grade: course, definition, cluster, sandbox line, recorder
outcome.py   what a finished grading task means (graded, zero, not graded, stop), one rule for batch and service
definition.py  the assignment as the gradebook holds it, against source/
engine.py    where grading tasks run: Dask distributed, a cluster started here or one that already runs
envcheck.py  the environment check (the canary) once per environment, not once per run
intake.py    LMS downloads -> submitted/
refused.py   a notebook refused at intake is never a score: "not graded" until the instructor resolves it
diagnose.py  a specific reason for each problem in a submission
worker.py    nbgrader autograde / generate_feedback in worker processes (plug-ins: perfaudit/autograde/)
gradebook.py scratch gradebooks for workers; the parent, the one writer, merges into the course's
errors.py    every exception the batch raises, in one place
grades_csv.py  grades.csv, nbgrader's export plug-in (c.ExportApp.plugin_class): `nbgrader export` writes the same
summary.py   the terminal summary
names.py     which file and folder names from a download or submitted/ are taken
escape.py    text from a submission as one printable line, for the terminal and reports; the log filter
classdata.py every student's score and message per test, read from the gradebook and autograded/
items.py     item analysis: pass counts, discrimination, failures grouped by cause
classreport.py  reports/class-report.html, one self-contained page (python -m perfaudit.grade --report)
variant_list.py  who audits which variant of notebook 5 (python -m perfaudit.grade --variants, make variants)
solutions.py what each student wrote in the solution cells, read from submitted/, the release's code apart
similarity.py  pairs of students whose solution code is unusually alike (copydetect)
similaritypage.py  reports/similarity.html beside the class report: those pairs side by side; changes no grade
page.py      what the reports' HTML pages share: a policy that allows no request, the style, escaping
regrade.py   the scores kept before a run grades anyone again, and reports/regrade-<time>.csv
task.py      one student's grading on a worker, returned as a GradingResult of plain data
writer.py    the one writer of a GradingResult (batch and service): gradebook, folders, record, state
records.py   the record behind every graded notebook (--export records)
export.py    grades and feedback back to the LMS (--export canvas|moodle)
feedback.py  feedback and LMS exports again from the gradebook after manual grading (make feedback)
"""
