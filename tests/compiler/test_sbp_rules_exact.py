"""Every candidate signature of every op is exact: cut the logical inputs into the physical pieces a candidate
names (split by OneFlow's balanced splitter, broadcast copies, partial-sum addends), run the op's reference
kernel on each device's pieces, and the pieces of the outputs (and of the inputs it updates in place) put back
together by the candidate's output SBP equal the kernel run on the logical blobs (NumPy reference kernels)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from flowlab.ir import BlobDesc, OpConf
from flowlab.ir.dtype import from_numpy
from flowlab.ir.sbp import SbpParallel, balanced_split, input_bns, output_bns
from flowlab.kernels.registry import make_kernel
from flowlab.ops.model_parallel import Decomposed
from flowlab.ops.registry import InferCtx, get_op_def, registered_op_types
from flowlab.ops.sbp_rules import PerDeviceSignature, SbpCtx
from tests.ops.op_samples import SAMPLES, sample

RANDOM = {"dropout", "random_mask_like"}  # draw a mask: a slice's mask is not the slice of the whole blob's
# Ops whose training candidate is per device on purpose (OneFlow's batch statistics over each device's rows);
# tests/devices/test_multi_device_batchnorm.py checks them against a NumPy reference of those semantics.
PER_DEVICE = {"normalization", "normalization_grad"}
# Ops whose split candidate is exact only as a pass decomposes them (SplitSparseSoftmaxCrossEntropyOpPass);
# tests/devices/test_model_parallel_loss.py checks the decomposition on 2 and 3 devices against NumPy and one device.
DECOMPOSED = {"sparse_softmax_cross_entropy_ms"}
RNG = np.random.default_rng(11)


def _op(op_type: str, inputs: dict[str, list[np.ndarray]], attrs: dict[str, Any]
        ) -> tuple[OpConf, dict[str, BlobDesc], dict[str, list[BlobDesc]]]:
    op_def = get_op_def(op_type)
    full = {**op_def.attrs, **attrs}
    in_descs = {arg: tuple(BlobDesc(a.shape, from_numpy(a.dtype)) for a in arrays) for arg, arrays in inputs.items()}
    out_descs = op_def.infer(InferCtx("t", op_type, in_descs, full))
    inputs = {arg: inputs[arg] for arg in op_def.inputs if arg in inputs}  # kernel order, as the builder does
    out_descs = {arg: out_descs[arg] for arg in op_def.outputs if arg in out_descs}
    op = OpConf("t", op_type, {arg: tuple(f"x{arg}/out_{i}" for i in range(len(v))) for arg, v in inputs.items()},
                {arg: tuple(f"t/{arg}_{i}" for i in range(len(d))) for arg, d in out_descs.items()}, full)
    descs = {}
    for (bn, _), desc in zip(input_bns(op.inputs, False), [d for arg in op.inputs for d in in_descs[arg]]):
        descs[bn] = desc
    for (bn, _), desc in zip(output_bns(op.outputs), [d for arg in op.outputs for d in out_descs[arg]]):
        descs[bn] = desc
    return op, descs, out_descs


def _pieces(x: np.ndarray, sbp: SbpParallel, n: int) -> list[np.ndarray]:
    if sbp.is_broadcast:
        return [x.copy() for _ in range(n)]
    if sbp.is_partial_sum:
        if x.dtype.kind == "f":
            parts = [RNG.uniform(-1, 1, x.shape).astype(x.dtype) for _ in range(n - 1)]
        else:
            parts = [RNG.integers(-3, 4, x.shape).astype(x.dtype) for _ in range(n - 1)]
        return [*parts, (x - sum(parts)).astype(x.dtype)]
    bounds = np.cumsum((0, *balanced_split(x.shape[sbp.axis], n)))
    return [np.ascontiguousarray(np.take(x, range(lo, hi), axis=sbp.axis)) for lo, hi in zip(bounds, bounds[1:])]


def _whole(pieces: list[np.ndarray], sbp: SbpParallel, what: str) -> np.ndarray:
    if sbp.is_split:
        return np.concatenate(pieces, axis=sbp.axis)
    if sbp.is_partial_sum:
        return sum(pieces[1:], pieces[0].copy())
    for p in pieces[1:]:
        np.testing.assert_allclose(p, pieces[0], rtol=1e-9, atol=1e-12, err_msg=f"{what}: B pieces differ")
    return pieces[0]


def _run(op: OpConf, descs: dict[str, BlobDesc], arrays: dict[str, np.ndarray], parallel: tuple[int, int] = (0, 1)
         ) -> dict[str, np.ndarray]:
    """Run the reference kernel as device ``parallel`` = (parallel_id, parallel_num) would; return every bn's
    array afterwards (outputs, and inputs as updated)."""
    ins, outs = input_bns(op.inputs, False), output_bns(op.outputs)
    in_arrays = [np.ascontiguousarray(arrays[bn]) for bn, _ in ins]
    out_arrays = [np.full(descs[bn].shape, 7, descs[bn].dtype.np) for bn, _ in outs]
    kernel = make_kernel(op, [BlobDesc(a.shape, descs[bn].dtype) for a, (bn, _) in zip(in_arrays, ins)],
                         [BlobDesc(a.shape, descs[bn].dtype) for a, (bn, _) in zip(out_arrays, outs)], "reference",
                         parallel=parallel)
    kernel(in_arrays, out_arrays)
    return {bn: a for (bn, _), a in zip((*ins, *outs), (*in_arrays, *out_arrays))}


def _physical_desc(desc: BlobDesc, sbp: SbpParallel, n: int, i: int) -> BlobDesc:
    if not sbp.is_split:
        return desc
    shape = list(desc.shape)
    shape[sbp.axis] = balanced_split(shape[sbp.axis], n)[i]
    return BlobDesc(tuple(shape), desc.dtype)


def user_op_types() -> list[str]:
    return [t for t in registered_op_types() if not get_op_def(t).system and t not in RANDOM]


def test_the_samples_cover_every_user_op():
    assert set(user_op_types()) <= set(SAMPLES)


@pytest.mark.parametrize("op_type", user_op_types())
def test_every_candidate_is_exact(op_type):
    inputs, attrs = sample(op_type, np.float64)
    _check_candidates(op_type, inputs, attrs)


def test_inference_normalization_candidates_are_exact():
    """The sample is a training normalization (per device); with the moving statistics every split is exact."""
    inputs, attrs = sample("normalization", np.float64)
    assert _check_candidates("normalization", inputs, {**attrs, "training": False}) >= 2


def _check_candidates(op_type: str, inputs: dict, attrs: dict) -> int:
    op, descs, _ = _op(op_type, inputs, attrs)
    arg_bns = {arg: tuple(bn for bn, lbn in (*input_bns(op.inputs, False), *output_bns(op.outputs))
                          if lbn in (op.inputs.get(arg) or op.outputs.get(arg) or ()))
               for arg in (*op.inputs, *op.outputs)}
    logical_in = {bn: a for (bn, _), a in zip(input_bns(op.inputs, False),
                                              [a for arg in op.inputs for a in inputs[arg]])}
    expected = _run(op, descs, {bn: a.copy() for bn, a in logical_in.items()})
    checked = per_device = declared = 0
    for n in (2, 3):  # a rule may depend on the device count (the loss's device stage has one column per device)
        for cand in get_op_def(op_type).sbp(SbpCtx(op, arg_bns, descs, parallel_num=n)):
            assert set(cand) == set(descs), f"{op_type}: candidate {cand} does not name every blob {sorted(descs)}"
            if isinstance(cand, PerDeviceSignature):
                assert op_type in PER_DEVICE, f"{op_type}: a per-device candidate {cand} where exact ones are due"
                per_device += 1
                continue
            if isinstance(cand, Decomposed):
                assert op_type in DECOMPOSED, f"{op_type}: a decomposed candidate {cand} where exact ones are due"
                continue
            declared += 1
            if any(s.is_split and descs[bn].shape[s.axis] < n for bn, s in cand.items()):
                continue
            pieces = {bn: _pieces(a, cand[bn], n) for bn, a in logical_in.items()}
            results = []
            for i in range(n):
                dev_descs = {bn: _physical_desc(d, cand[bn], n, i) for bn, d in descs.items()}
                results.append(_run(op, dev_descs, {bn: p[i] for bn, p in pieces.items()}, (i, n)))
            for bn, want in expected.items():
                got = _whole([r[bn] for r in results], cand[bn], f"{op_type} {bn}")
                np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9,
                                           err_msg=f"{op_type} candidate {cand} on {n} devices: {bn} differs")
            checked += 1
    if op_type in PER_DEVICE and attrs.get("training", True):
        assert per_device, f"{op_type}: listed in PER_DEVICE but declares no per-device candidate"
    elif declared:
        assert checked, f"{op_type}: no candidate could be checked on the sample's shapes"
    return checked


def _axis_ops() -> list[str]:
    return [t for t in user_op_types() if isinstance(sample(t, np.float64)[1].get("axis"), int)]


@pytest.mark.parametrize("op_type", _axis_ops())
def test_a_negative_axis_gives_the_candidates_of_its_positive_twin(op_type):
    """Ops take axis=-1 as NumPy does; every rule must read it as the axis it names (the fuzzer found gather's
    rule building split(-1))."""
    inputs, attrs = sample(op_type, np.float64)
    first = inputs[get_op_def(op_type).inputs[0]][0]
    positive = attrs["axis"] % first.ndim
    candidates = []
    for axis in (positive, positive - first.ndim):
        op, descs, _ = _op(op_type, inputs, {**attrs, "axis": axis})
        arg_bns = {arg: tuple(bn for bn, lbn in (*input_bns(op.inputs, False), *output_bns(op.outputs))
                              if lbn in (op.inputs.get(arg) or op.outputs.get(arg) or ()))
                   for arg in (*op.inputs, *op.outputs)}
        candidates.append([dict(c) for c in get_op_def(op_type).sbp(SbpCtx(op, arg_bns, descs))])
    assert candidates[0] == candidates[1]
