"""flow.nn.random_mask_like, flow.random.bernoulli, flow.random.shuffle and
flow.random.generate_random_batch_permutation_indices: OneFlow's semantics (int8 mask of zeros at rate, 0/1 draws
at the given probabilities, a row permutation), statistics on large draws, a new draw on every call in every
kernel mode (the tiered mode must not restart a stream), the same draws for the same seed, and errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError

RNG = np.random.default_rng(99)


def _job(fn, shape, dtype=flow.float32):
    flow.clear_default_session()

    @flow.global_function()
    def random_job(x: tp.Numpy.Placeholder(shape, dtype=dtype)) -> tp.Numpy:
        return fn(x)

    return random_job


@pytest.mark.parametrize("mode", ["tiered", "reference", "numba"])
def test_each_call_draws_anew_and_a_seed_repeats(mode, monkeypatch):
    monkeypatch.setenv("FLOWLAB_KERNELS", mode)
    x = np.zeros((200, 50), np.float32)
    job = _job(lambda x: flow.nn.random_mask_like(x, rate=0.3, seed=5, name="m"), (200, 50))
    first, second, third = job(x), job(x), job(x)
    assert first.dtype == np.int8 and set(np.unique(first)) <= {0, 1}
    assert not np.array_equal(first, second) and not np.array_equal(second, third)
    for draw in (first, second, third):
        assert abs(1 - draw.mean() - 0.3) < 0.02  # 10000 draws: sd 0.005
    again = _job(lambda x: flow.nn.random_mask_like(x, rate=0.3, seed=5, name="m"), (200, 50))(x)
    np.testing.assert_array_equal(again, first)  # the same seed gives the same stream


def test_bernoulli_probabilities_and_dtype():
    p = np.tile(np.array([0.0, 0.2, 0.5, 0.9, 1.0], np.float32), (4000, 1))
    out = _job(lambda x: flow.random.bernoulli(x, dtype=flow.int32), p.shape)(p)
    assert out.dtype == np.int32
    np.testing.assert_allclose(out.mean(axis=0), [0.0, 0.2, 0.5, 0.9, 1.0], atol=0.03)
    assert out[:, 0].max() == 0 and out[:, 4].min() == 1


def test_shuffle_permutes_whole_rows_and_the_permutation_is_one():
    x = RNG.standard_normal((50, 3)).astype(np.float32)
    flow.clear_default_session()

    @flow.global_function()
    def shuffle_job(a: tp.Numpy.Placeholder((50, 3))) -> tuple[tp.Numpy, tp.Numpy]:
        return flow.random.shuffle(a, seed=3, name="s"), flow.random.generate_random_batch_permutation_indices(a)

    rows, perm = shuffle_job(x)
    assert sorted(perm.tolist()) == list(range(50)) and perm.dtype == np.int32
    order = [int(np.flatnonzero((x == r).all(axis=1))[0]) for r in rows]  # each output row is an input row
    assert sorted(order) == list(range(50)) and order != list(range(50))


def test_errors():
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\); got 1.5"):
        _job(lambda x: flow.nn.random_mask_like(x, rate=1.5), (3,))(np.zeros(3, np.float32))
    with pytest.raises(NotImplementedError, match="noise_shape"):
        _job(lambda x: flow.nn.random_mask_like(x, rate=0.5, noise_shape=(3,)), (3,))(np.zeros(3, np.float32))
    with pytest.raises(OpInferError, match="bernoulli accepts float16, float32, float64"):
        _job(lambda x: flow.random.bernoulli(x), (3,), flow.int32)(np.zeros(3, np.int32))
