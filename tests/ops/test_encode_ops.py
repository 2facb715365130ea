"""flow.layers.categorical_ordinal_encoder / CategoricalOrdinalEncode: ordinals by first appearance kept across
runs, against hand values of OneFlow's kernel (linear probing from key mod capacity, key 0 the empty marker, a
negative key wrapping as the size_t cast), every kernel (the GPU one through the host), and errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError

from .helpers import run_op
from .op_samples import sample


@pytest.mark.parametrize("device", ["reference", "numba", "gpu"])
def test_kernel_hand_values(device):
    inputs, attrs = sample("CategoricalOrdinalEncode", np.int32)
    if device == "gpu":
        from tests.cuda.helpers import run

        out, table, size = run("CategoricalOrdinalEncode", inputs, attrs, "gpu")
    else:
        out, table, size = run_op("CategoricalOrdinalEncode", inputs, attrs, device)
    # keys 5, 13, -3, 5, 0, 21, 13 into 8 slots, 13 already in slot 5 with ordinal 1:
    # 5 -> slot 5 taken by 13, slot 6: ordinal 2; 13 -> 1; -3 -> (2**64 - 3) % 8 = 5, 6 taken, slot 7: 3;
    # 5 -> 2; 0 -> slot 0 empty, key 0 "matches" it: 0, nothing stored; 21 -> slot 5, 6, 7, then 0: 4; 13 -> 1
    np.testing.assert_array_equal(out, [2, 1, 3, 2, 0, 4, 1])
    np.testing.assert_array_equal(size, [4])
    np.testing.assert_array_equal(table.reshape(8, 2), [[21, 4], [0, 0], [0, 0], [0, 0], [0, 0], [13, 1], [5, 2],
                                                        [-3, 3]])


@pytest.mark.parametrize("impl", ["reference", "numba"])
def test_a_full_table_is_an_error(impl):
    keys, table, size = np.array([1, 2, 3], np.int64), np.zeros(4, np.int64), np.zeros(1, np.int64)
    with pytest.raises(RuntimeError, match="the table of 2 slots is full"):
        run_op("CategoricalOrdinalEncode", {"in": [keys], "table": [table], "size": [size]},
               {"hash_precomputed": True}, impl)


def test_the_encoder_keeps_its_state_across_runs():
    for _ in range(2):  # the tiered mode's two tiers
        flow.clear_default_session()

        @flow.global_function()
        def enc(x: tp.Numpy.Placeholder((4,), dtype=flow.int64)) -> tp.Numpy:
            return flow.layers.categorical_ordinal_encoder(x, capacity=16)

        np.testing.assert_array_equal(enc(np.array([7, 9, 7, 40], np.int64)), [1, 2, 1, 3])
        np.testing.assert_array_equal(enc(np.array([40, 11, 9, 12], np.int64)), [3, 4, 2, 5])
        np.testing.assert_array_equal(enc(np.array([12, 7, 13, 11], np.int64)), [5, 1, 6, 4])
        variables = flow.get_all_variables()
        np.testing.assert_array_equal(variables["CategoricalOrdinalEncoder-Size"], [6])


def test_errors():
    @flow.global_function()
    def floats(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return flow.layers.categorical_ordinal_encoder(x, capacity=16)

    with pytest.raises(OpInferError, match="accepts"):
        floats(np.zeros(4, np.float32))

    flow.clear_default_session()

    @flow.global_function()
    def unhashed(x: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
        return flow.layers.categorical_ordinal_encoder(x, capacity=16, hash_precomputed=False)

    with pytest.raises(OpInferError, match="supports only hash_precomputed=True"):
        unhashed(np.zeros(4, np.int32))
