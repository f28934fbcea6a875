"""An unfilled solution cell is named first: its NotImplementedError leads with "Fill in the cell that defines ...".

The release's stub raises only when its function is called, most often from a self-check inside
perfaudit/checks.py, so a plain traceback walks through the course's code and names the student's cell last.
Imported with the checks (the setup cell), this makes IPython (JupyterLab, Validate, the checker's kernels) print
one line before that traceback, naming the function whose cell still holds the stub. A check's failure
(an AssertionError raised in perfaudit/checks/) shows as the student's lines and the check's whole message, wrapped
to fit Validate's terminal lines, without the check's own frames. JAX's refusal of a result a check held back,
passed into a JAX function, leads with what to do instead (perfaudit/checks/held.py). Other errors are untouched.
"""

import textwrap

STUB_MESSAGE = "Fill in this cell"  # the start of the stub's message (nbgrader_config.py, ClearSolutions.code_stub)


def unfilled_function(tb):
    """The function whose body raised (the innermost frame), or None when the cell's own top level raised."""
    while tb.tb_next is not None:
        tb = tb.tb_next
    name = tb.tb_frame.f_code.co_name
    return None if name.startswith("<") else name


def lead_line(tb):
    name = unfilled_function(tb)
    where = f"the cell that defines `{name}`" if name else "this cell"
    return f"Fill in {where} first: it still says YOUR CODE HERE."  # short: Validate's terminal lines are cut at 90


def _show(shell, etype, value, tb, tb_offset=None):
    # not at the top: perfaudit.checks imports this module and calls install() while it loads (a circle through
    # the package's __init__)
    from perfaudit.checks import failure, held

    if issubclass(etype, AssertionError) and failure.raised_by_a_check(tb):  # a check's message, not its code
        stb = failure.student_traceback(value, tb)
        shell._showtraceback(etype, value, stb)
        return stb
    stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    if str(value).startswith(STUB_MESSAGE):
        stb = [lead_line(tb), *stb]
    elif issubclass(etype, ValueError) and held.refused_by_jax(value):  # a check's held result passed into JAX
        stb = [*textwrap.wrap(held.PASSED_INTO_JAX, failure.LINE_CHARS), *stb]
    shell._showtraceback(etype, value, stb)  # the hook IPython's frontends (ipykernel) publish errors through
    return stb


def install():
    """In IPython, show the stub's NotImplementedError with its lead line, and a failed check as its message with
    the student's own lines only (perfaudit/checks/failure.py); elsewhere do nothing."""
    from IPython import get_ipython  # IPython only here: the checker imports the checks without it

    shell = get_ipython()
    if shell is not None and not shell.custom_exceptions:  # never replace a handler someone else set
        shell.set_custom_exc((NotImplementedError, AssertionError, ValueError), _show)
