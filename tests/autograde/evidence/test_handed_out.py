"""The course's loops as the grader hands them in (perfaudit/autograde/evidence/handed_out.py), in one process: made
from the grader's handout.py, whatever the process did to its `handout` module."""

import time

import jax
import numpy as np
import pytest
from loops import fixed_train

from perfaudit import handout
from perfaudit.autograde import hidden
from perfaudit.autograde.evidence.handed_out import HandedOut


def test_the_loop_is_made_anew_from_the_file_and_computes_the_handed_out_loop_s_values(monkeypatch):
    monkeypatch.setitem(handout._TRAIN, "C", None)
    made = HandedOut.loop_of("C").made()
    assert made is not handout.train_c and made.__name__ == "train_c"
    batches, lr0 = handout.data_for("C", np.random.default_rng(4))
    w0 = np.zeros(handout.FEATURES, np.float32)
    np.testing.assert_allclose(np.asarray(made(w0, batches, lr0)[0]), handout.reference_train(w0, batches, lr0)[0],
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="no function 'train_z'"):
        HandedOut("train_z")


def test_a_handed_out_loop_slowed_in_the_process_does_not_make_a_slow_fix_fast(monkeypatch):
    """The handed-out loop made to sleep in the process, and a fix that, when the grader calls it (with a jit of the
    grader's, its timed calls too), runs the handed-out loop itself (with jax.jit, uncounted) before its own steps:
    timing the process's loop, the fix would look fast; the grader times its own loop, which the fix cannot beat
    whatever the machine's load."""
    handed_out = handout.train_b

    def slowed(w, batches, lr0, jit=None):
        time.sleep(4.0)
        return handed_out(w, batches, lr0) if jit is None else handed_out(w, batches, lr0, jit)

    def slower_than_the_handed_out_loop_when_timed(w, batches, lr0, jit=None):
        if jit is not None:  # the grader's
            handed_out(w, batches, lr0)
        return fixed_train(w, batches, lr0, jit or jax.jit)

    monkeypatch.setitem(handout._TRAIN, "B", slowed)
    monkeypatch.setattr(handout, "train_b", slowed)
    with pytest.raises(AssertionError, match="timed by the grader on new batches"):
        hidden.check_speedup_measured(slower_than_the_handed_out_loop_when_timed, 5.0, [5.0] * 3, [1.0] * 3,
                                      variant="B")
