"""What only the instructor's copy holds; a student's copy leaves this folder out.

answers.py       the answer key
reference.py     the course's workload as the grader makes it itself (its JAXPR, its output)
course.py        the course directory helpers
demo.py          the demonstration: python -m perfaudit.instructor.demo (make demo)
student_copy.py  the student copy's maker: python -m perfaudit.instructor.student_copy (make student-copy)
"""
