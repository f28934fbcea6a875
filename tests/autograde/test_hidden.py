"""What hidden tests import (perfaudit/autograde/hidden.py): the answer key's summary check, the grader's tools."""

import numpy as np
import pytest

from perfaudit.autograde import hidden


def _summarize(samples):
    q1, q3 = np.percentile(samples, [25, 75])
    return {"median_s": np.median(samples), "min_s": min(samples), "max_s": max(samples), "iqr_s": q3 - q1}


def test_a_summary_is_checked_against_the_answer_key_on_the_test_s_own_samples():
    hidden.check_summarize(_summarize, (3, 1, 4, 1, 5, 9, 2, 6))
    hidden.check_summarize(_summarize, (s / 10 for s in range(1, 12)))  # read once, whatever iterable it is
    with pytest.raises(AssertionError, match=r"\['iqr_s'\] should be 3\.5"):
        hidden.check_summarize(lambda s: {**_summarize(s), "iqr_s": np.std(s)}, [3, 1, 4, 1, 5, 9, 2, 6])
    with pytest.raises(AssertionError, match="should be 2"):  # the samples are the test's, not the self-check's
        hidden.check_summarize(lambda s: _summarize([1.0, 2.0, 3.0]), [2.0, 2.0, 2.0])


def test_every_name_a_hidden_test_imports_is_there():
    assert all(callable(getattr(hidden, name)) for name in hidden.__all__)
    assert hidden.made_up_evidence.__module__ == "perfaudit.autograde.evidence.made_up"
