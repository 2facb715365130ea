"""Every user op type has both kernels, a NumPy reference and a Numba one, and they are different code: a
function registered as both would make every comparison of the two modes pass by construction."""

from __future__ import annotations

from flowlab.kernels import get_kernel_factory
from flowlab.ops.registry import get_op_def, registered_op_types

USER_OPS = [t for t in registered_op_types() if not get_op_def(t).system]


def test_every_op_type_has_two_distinct_kernels():
    shared = []
    for op_type in USER_OPS:
        reference, numba = get_kernel_factory(op_type, "reference"), get_kernel_factory(op_type, "numba")
        if reference is numba or reference.__code__ is numba.__code__:
            shared.append(op_type)
        assert reference.__module__.startswith("flowlab.kernels.reference"), op_type
        assert numba.__module__.startswith("flowlab.kernels.numba_cpu"), op_type
    assert shared == []
