"""Batch grading for instructors: python -m perfaudit.grade (see run.py for the pipeline).

intake.py    LMS downloads -> submitted/
diagnose.py  a specific reason for each problem in a submission
worker.py    nbgrader autograde / generate_feedback in worker processes, under a memory limit
gradebook.py scratch gradebooks for workers; the parent, the one writer, merges into the course's
cells.py     nbgrader's DeduplicateIds, without failing a notebook that has a duplicated cell
execute.py   nbgrader's Execute, keeping the points of cells that passed before a kernel died or hung
feedback.py  generate_feedback without hidden-test source
summary.py   the terminal summary
"""
