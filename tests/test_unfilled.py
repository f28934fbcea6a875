"""Validate names the unfilled solution cell first, before any traceback into the course's checks."""

import shutil

import pytest
from nbconvert.filters import strip_ansi
from nbgrader.validator import Validator
from traitlets.config.loader import PyFileConfigLoader

from perfaudit import paths


def test_validate_leads_with_the_cell_to_fill_in(tmp_path):
    shutil.copy(paths.ROOT / "nbgrader_config.py", tmp_path)
    notebook = shutil.copy(paths.RELEASE / paths.STAGES[1], tmp_path)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    failed = Validator(config=config).validate(str(notebook))["failed"]
    # The first failure is the self-check that calls workload through perfaudit/checks.py: its error names
    # workload's cell before the traceback.
    first = strip_ansi(failed[0]["raw_error"]).splitlines()
    assert first[0] == "Fill in the cell that defines `workload` first: it still says YOUR CODE HERE."
    assert first[-1].startswith("NotImplementedError: Fill in this cell"), first
    # An error that is not the stub's shows as it always did.
    assert all(not f["raw_error"].startswith("Fill in") for f in failed if "NameError" in f["raw_error"])


@pytest.mark.slow
@pytest.mark.parametrize("config_file", [paths.ROOT / "nbgrader_config.py",
                                         paths.ROOT / "perfaudit" / "student_files" / "nbgrader_config.py"])
@pytest.mark.parametrize("sample, stage, check, words", [
    ("stage1-unsynchronized-clock", 1, "checks.check_time_call(time_call)",
     "time_call never waited for the result of the call it timed: JAX returns before the work is done."),
    ("stage2-forgot-jit", 2, "checks.check_counts_traces_not_calls(audited, traces)",
     "your counter counts calls, not traces. JAX runs the Python body of a jitted function only while it traces"),
])
def test_validate_shows_a_failed_check_s_whole_message_and_no_frame_of_the_checks(config_file, sample, stage, check,
                                                                                  words, tmp_path):
    """Validate in a terminal cuts each line past its width: every line arrives whole, the check's message wrapped,
    and the traceback stops at the student's call of the check."""
    import io

    import nbformat

    from perfaudit.fixtures import samples

    shutil.copy(config_file, tmp_path)
    nbformat.write(samples.submission(samples.SAMPLES[sample], stage), tmp_path / paths.STAGES[stage])
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    printed = io.StringIO()
    validator = Validator(config=config)
    validator.stream = printed
    validator.validate_and_print(str(tmp_path / paths.STAGES[stage]))
    out = strip_ansi(printed.getvalue())
    assert "perfaudit/checks/" not in out and "IPython" not in out, out
    assert "(the check's own code is left out: its message says what it found)" in out
    assert "...\n" not in out, "no line is cut"
    assert words in " ".join(line.strip() for line in out.splitlines()), out
    assert check in out


def test_jax_s_refusal_of_a_held_result_leads_with_what_to_do():
    """A check's held result passed straight into a JAX function: IPython shows what to do before JAX's traceback,
    every line short enough for Validate's terminal; any other ValueError shows as it always did."""
    from perfaudit import unfilled
    from perfaudit.checks import failure, held

    class Shell:
        class InteractiveTB:
            @staticmethod
            def structured_traceback(etype, value, tb, tb_offset=None):
                return [f"{etype.__name__}: {value}"]

        def _showtraceback(self, etype, value, stb):
            self.shown = stb

    def raised(error):
        try:
            raise error
        except ValueError as caught:
            return caught.__traceback__

    shell, refusal = Shell(), ValueError(f"{held.JAX_REFUSAL} is no longer supported.")
    stb = unfilled._show(shell, ValueError, refusal, raised(refusal))
    assert " ".join(stb[:-1]) == held.PASSED_INTO_JAX and stb[-1] == f"ValueError: {refusal}"
    assert all(len(line) <= failure.LINE_CHARS for line in stb[:-1])
    other = ValueError("another")
    assert unfilled._show(shell, ValueError, other, raised(other)) == ["ValueError: another"]
