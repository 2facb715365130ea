"""OneFlow v0.3.4 oneflow/python/test/ops/test_oneflow_export.py, ported unchanged but for the imports and the
unittest class as a pytest function."""

import flowlab as flow

from .of_util import TestCase


def AddLossUnderNormalMode():
    flow.losses.add_loss(None)


def test_ApiNotImplementedError():
    test_case = TestCase()
    test_case.assertRaises(NotImplementedError, AddLossUnderNormalMode)
