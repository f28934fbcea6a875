"""nbgrader plug-ins for grading student code that the grader does not trust (named in nbgrader_config.py).

Plain `nbgrader autograde` and `python -m perfaudit.grade` use these same modules, in four folders by kind, each
with its own map:

plugins/    what nbgrader_config.py names (TrustedExecute, the refusal, the feedback filters) and what they decide
            with: verdicts, the environment check
isolation/  where student code runs: the trust boundary, the sandboxed kernel, its limits, its memory, its fate,
            the submission's files it starts from
wire/       the channel between the grader and the kernel: plain data both ways, every limit
evidence/   the grader's instruments for hidden tests: its jit and clock, made-up evidence, measured checks
hidden.py   what hidden tests use that a student's copy never holds (`from perfaudit.autograde import hidden`)
graded.py   whose notebook is graded: the gradebook's id, so the variant of notebook 5 its tests check against
errors.py   every exception the wing raises, in one place
text.py     text from anywhere made safe to show a person

Below this wing: perfaudit/bookkeeping/ (the course directory, the state folder, the versions) and
perfaudit/answer_key/; above it: perfaudit/grade/ and perfaudit/serve/, which drive it.
"""
