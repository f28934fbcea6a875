"""What both grading wings keep: the course directory, grading's own files in it, the versions graded with.

Below perfaudit/autograde/ and perfaudit/grade/ (and the service above them), importing neither.

coursedir.py   the course directory: its configuration, whether it is one, plain nbgrader run in it, its folders
statefolder.py where grading keeps its own files: autograded/.batch-grading/, records beside the gradebook
versions.py    the versions a grading run graded with, against the pins
"""
