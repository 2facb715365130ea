"""One blob read as two arguments of one op (issue 25's report; the brief "binding"): ``matmul(x, x,
transpose_b=True)`` on an S(0) ``x`` reads ``a`` as the local S(0) piece and ``b`` as the whole B blob boxed from
the pieces. The runtime bound kernel inputs by blob name, so both arguments read one register: wrong values on
2 devices, garbage on 3. The plan now records the register each input argument reads (TaskProto.input_regst_ids)
and every executor path binds by it: the protocol, the replay layer, its fused segments and generated call, and
per-thread lanes. Each result is checked against NumPy float64, and the replayed paths bit for bit against the
protocol."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

X = (np.arange(18, dtype=np.float32).reshape(6, 3) - 7.0) / 10

CASES: dict[str, tuple[Callable, Callable]] = {
    "matmul_x_xT": (lambda x: flow.matmul(x, x, transpose_b=True), lambda x: x @ x.T),
    "matmul_xT_x": (lambda x: flow.matmul(x, x, transpose_a=True), lambda x: x.T @ x),
    "mul_x_x": (lambda x: x * x, lambda x: x * x),
    "add_x_x": (lambda x: flow.math.add(x, x), lambda x: x + x),
}


def make_job(case: str, devices: int) -> Callable[[np.ndarray], np.ndarray]:
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    build = CASES[case][0]

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            return build(x)

    return job


def two_registers_for_one_blob() -> list[str]:
    """The compute tasks reading one blob from two different registers (the case binding by name got wrong)."""
    plan = flow.default_session().plan
    found = []
    for t in plan.tasks:
        lbns = t.exec_sequence[0].input_lbns if t.exec_sequence else ()
        if len(t.input_regst_ids) == len(lbns):
            regs: dict[str, set[int]] = {}
            for rid, lbn in zip(t.input_regst_ids, lbns):
                regs.setdefault(lbn, set()).add(rid)
            found += [t.name for regs_of in regs.values() if len(regs_of) > 1]
    return found


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("case", list(CASES))
def test_one_blob_as_two_arguments_matches_numpy(case: str, devices: int) -> None:
    job = make_job(case, devices)
    want = CASES[case][1](X.astype(np.float64))
    np.testing.assert_allclose(job(X), want, rtol=1e-5, atol=1e-6)
    if case == "matmul_x_xT":  # a: the S(0) piece, b: boxed to B: two registers of one blob
        assert two_registers_for_one_blob(), "the test no longer reaches the two-register case"


def calls(case: str, devices: int, n: int, monkeypatch: pytest.MonkeyPatch, replay: bool,
          threads: bool) -> tuple[list[np.ndarray], object, dict]:
    monkeypatch.setenv("FLOWLAB_REPLAY", "1" if replay else "0")
    monkeypatch.setenv("FLOWLAB_FUSE", "1")
    monkeypatch.setenv("FLOWLAB_THREADS", "1" if threads else "0")
    job = make_job(case, devices)
    outs = [job(X + np.float32(k)) for k in range(n)]
    session = flow.default_session()
    return outs, session.runtime.layer, {name: c.runs for name, c in session.generated_calls.items()}


@pytest.mark.usefixtures("fuse_in_call")  # the generated call must run by a given call
@pytest.mark.parametrize("threads", [False, True], ids=["one_thread", "lanes"])
@pytest.mark.parametrize("devices", [2, 3])
def test_replayed_fused_and_lanes_paths_bind_each_argument(devices: int, threads: bool,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("flowlab.replay.layer.FUSE_AFTER", 3)
    n = 16
    protocol, _, _ = calls("matmul_x_xT", devices, n, monkeypatch, replay=False, threads=False)
    replayed, layer, generated = calls("matmul_x_xT", devices, n, monkeypatch, replay=True, threads=threads)
    for k, (a, b) in enumerate(zip(protocol, replayed)):
        x = (X + np.float32(k)).astype(np.float64)
        np.testing.assert_allclose(a, x @ x.T, rtol=1e-5, err_msg=f"call {k}")
        assert a.tobytes() == b.tobytes(), f"call {k}: the replayed path differs from the protocol"
    assert layer.replays >= n - 4, layer  # type: ignore[attr-defined]
    assert any(s.fused is not None or s.lanes is not None for s in layer.schedules.values()), layer  # type: ignore
    if threads:
        assert any(s.lanes is not None for s in layer.schedules.values()), layer  # type: ignore[attr-defined]
    else:
        assert any(runs > 0 for runs in generated.values()), generated
