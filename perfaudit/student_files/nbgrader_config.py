"""nbgrader settings for the student copy: the Validate button (make lab) reads them."""

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = "jax-performance-audit"
# Validate reports every failing cell, the unfilled solution cell's NotImplementedError included.
c.Validator.validate_all = True
