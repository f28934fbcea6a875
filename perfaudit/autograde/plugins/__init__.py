"""nbgrader's plug-ins as nbgrader_config.py names them, and what they decide with.

refuse_unsafe_submission.py  the first autograde step: a submission holding anything else is not graded
execute.py     TrustedExecute: student cells run once in a sandboxed kernel, test cells run in the grader
verdicts.py    a test cell run in the grader, its outputs made by the grader, its names from source/
canary.py      the environment check: a broken grading environment stops grading, never scores students 0
envrecord.py   the environment check's record, kept for a fingerprint of everything its verdict depends on
drop_duplicate_ids.py  nbgrader's DeduplicateIds, without failing a notebook that has a duplicated cell
hide_hidden_tests.py   generate_feedback without hidden-test source or tracebacks
hide_outputs_after_tests.py  feedback without the outputs of cells that ran after the first test
sanitize_outputs.py  student outputs and markdown as inert text or sanitized HTML (autograded/, feedback)
"""
