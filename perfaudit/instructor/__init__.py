"""What only the instructor's copy holds: the answer key (answers.py), the course directory helpers (course.py),
the demonstration (demo.py: python -m perfaudit.instructor.demo) and the student copy's maker (student_copy.py:
python -m perfaudit.instructor.student_copy). A student's copy leaves this folder out."""
