"""The debugger on several devices: a split variable's every piece starts from the session's value (device 1's
piece was left as the fresh runtime made it), ``dbg.value`` of a variable is its logical value, and
``parallel_id=k`` views one device's piece."""

from __future__ import annotations

import numpy as np

import flowlab as flow
from tests.helpers.multi_device_variables import batches, train


def test_debugger_holds_every_piece_of_a_split_variable_and_shows_the_logical_value():
    _, variables, job = train("0:0-1", 2)  # 4 training steps: the values are far from their initializers
    weight = variables["dense2-weight"]
    assert weight.shape == (4, 8)
    x, y = batches(1)[0]
    dbg = flow.debug(job, x, y)
    np.testing.assert_array_equal(dbg.value("dense2-weight"), weight)  # logical, assembled from both pieces
    np.testing.assert_array_equal(np.asarray(dbg.blob("dense2-weight", parallel_id=0)), weight[:2])
    np.testing.assert_array_equal(np.asarray(dbg.blob("dense2-weight", parallel_id=1)), weight[2:])
    np.testing.assert_array_equal(dbg.value("dense2-weight", parallel_id=1), weight[2:])
    np.testing.assert_array_equal(dbg.value("dense1-weight", parallel_id=1), variables["dense1-weight"])  # B
    dbg.continue_()
    job(x, y)  # the same step in the session: the debugged one started from the same values on both devices
    np.testing.assert_array_equal(dbg.value("dense2-weight"), flow.get_all_variables()["dense2-weight"])
