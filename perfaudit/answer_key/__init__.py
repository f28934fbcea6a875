"""The answer key: what only the instructor's copy holds, used by hidden tests in the grader alone.

A student's copy leaves this folder out (perfaudit/instructor/student_copy.py), a sandboxed kernel sees it empty and
students' accounts on a hub cannot read it (paths.ANSWER_FOLDERS). It imports only student-facing code, so every
grading wing may import it.

answers.py     the answer key
reference.py   the course's workload as the grader makes it itself (its JAXPR, its output)
"""
