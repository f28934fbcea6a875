"""The handed-out loops (perfaudit/handout.py): each variant computes the NumPy reference, on the data of its kind,
and traces as the answer key says it does."""

import numpy as np
import pytest
from loops import count_traces

from perfaudit import handout
from perfaudit.answer_key import answers


@pytest.mark.parametrize("variant", handout.VARIANTS)
def test_every_variant_computes_the_reference_and_traces_as_the_answer_key_counts(variant):
    rng = np.random.default_rng(1)
    batches, lr0 = handout.data_for(variant, rng, steps=5)
    w0 = np.zeros(handout.FEATURES, dtype=np.float32)
    w, losses = handout.train_of(variant)(w0, batches, lr0)
    expected_w, expected_losses = handout.reference_train(w0, batches, lr0)
    np.testing.assert_allclose(np.asarray(w), expected_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose([float(v) for v in losses], expected_losses, rtol=1e-4)
    assert count_traces(handout.train_of(variant), w0, batches, lr0) == answers.original_traces(variant, batches, lr0)


def test_each_variant_hides_a_retrace_the_loop_without_problems_does_not():
    rng = np.random.default_rng(2)
    w0 = np.zeros(handout.FEATURES, dtype=np.float32)
    for variant in handout.VARIANTS:
        batches, lr0 = handout.data_for(variant, rng)
        assert answers.original_traces(variant, batches, lr0) > 1
        assert any(problem.startswith("retrace") for problem in answers.PLANTED[variant])
        assert answers.PLANTED[variant] <= set(handout.PROBLEMS)
    batches = handout.make_batches(rng, [32] * 4)
    assert count_traces(handout.train_once, w0, batches, 0.1) == 1


def test_data_of_each_kind():
    rng = np.random.default_rng(3)
    one_size, _ = handout.data_for("B", rng)
    ragged, lr0 = handout.data_for("A", rng)
    assert len({len(y) for _, y in one_size}) == 1 and len(one_size) == handout.STEPS
    assert len({len(y) for _, y in ragged}) == handout.DISTINCT_SIZES and 0.05 <= lr0 <= 0.2
    assert all(x.dtype == np.float32 and x.shape == (len(y), handout.FEATURES) for x, y in ragged)


def test_the_printed_code_is_the_variant_s_and_an_unknown_variant_is_named():
    assert "def train_b" in handout.source_of("B") and "def benchmark_b" in handout.source_of("B")
    with pytest.raises(ValueError, match="one of A, B, C"):
        handout.train_of("D")


def test_the_staged_loops_trace_once_per_stage_with_their_options_kept():
    rng = np.random.default_rng(4)
    batches = handout.make_batches(rng, [40] * 7)
    w0 = np.zeros(handout.FEATURES, dtype=np.float32)
    for train in (handout.train_static_argnums, handout.train_static_argnames):
        assert count_traces(train, w0, batches, 0.1) == handout.staged_traces(batches) == 4
        w, losses = train(w0, batches, 0.1)
        np.testing.assert_allclose([float(v) for v in losses], handout.reference_train(w0, batches, 0.1)[1], rtol=1e-4)


def test_the_eager_loss_loop_traces_once_at_one_size_but_compiles_its_jnp_calls_too():
    from perfaudit import jaxlog  # JAX's compile events, which import JAX

    rng = np.random.default_rng(5)
    batches = handout.make_batches(rng, [40] * 5)
    w0 = np.zeros(handout.FEATURES, dtype=np.float32)
    assert count_traces(handout.train_eager_loss, w0, batches, 0.1) == 1
    for _ in range(2):  # every run, however often the shapes ran before: the loop clears JAX's caches first
        with jaxlog.compiled() as names:
            w, losses = handout.train_eager_loss(w0, batches, 0.1)
        assert len(names) > 1 and len([name for name in names if "step" in name]) == 1, names
    np.testing.assert_allclose([float(v) for v in losses], handout.reference_train(w0, batches, 0.1)[1], rtol=1e-4)
