"""The instructor's apps, above every other wing; a student's copy leaves this folder out.

course.py        a course directory read by the instructor's tools and tests: its gradebook's scores and totals
demo.py          the demonstration: python -m perfaudit.instructor.demo (make demo)
student_copy.py  the student copy's maker: python -m perfaudit.instructor.student_copy (make student-copy)
"""
