"""The replay layer's edges: settle() has no update the proof cannot see, failed captures are never replayed,
and the runtime and the debugger run without the layer."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import flowlab as flow
import flowlab.replay.layer as layer_module
import flowlab.replay.settle as settle_module
from flowlab.errors import KernelError
from flowlab.replay.layer import CAPTURE_TRIES
from flowlab.replay.state import differences, protocol_state
from flowlab.runtime.executor import Call
from flowlab.session import call_instances
from tests.helpers.replay_models import MODELS
from tests.helpers.replay_proof import CALLS, LONG, assert_replayed_and_fused, assert_same, run
from tests.helpers.replay_sessions import train_session

# the compiled segment (and the generated call) must run by a given call: compiled in the call that fuses
pytestmark = pytest.mark.usefixtures("fuse_in_call")

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = frozenset(range(CALLS))  # snapshots after each of the first calls (train and eval interleaved), then
# a run of LONG train replays that wraps the wait-ids source's registers, settled at the end


def _state_updates(tree: ast.Module) -> list[ast.stmt]:
    """Every statement of settle.py's functions that writes state: an assignment to an attribute or an item, or a
    call made for its effect (a deque rotated, a list cleared, a helper that writes)."""
    found: list[ast.stmt] = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets):
                    found.append(node)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                found.append(node)
    return found


def _mutant(source: str, index: int) -> tuple[types.ModuleType, str]:
    """settle.py with its ``index``-th state update replaced by ``pass``, as a module; and that update's text."""
    tree = ast.parse(source)
    target = _state_updates(tree)[index]
    where = (target.lineno, target.col_offset)

    class Remove(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> Any:
            if isinstance(node, ast.stmt) and (node.lineno, node.col_offset) == where:
                return ast.copy_location(ast.Pass(), node)
            return super().visit(node)

    mutated = ast.fix_missing_locations(Remove().visit(tree))
    module = types.ModuleType(settle_module.__name__)
    module.__package__ = "flowlab.replay"
    exec(compile(mutated, settle_module.__file__, "exec"), module.__dict__)
    return module, f"line {target.lineno}: {ast.unparse(target)}"


@pytest.fixture(scope="module")
def protocol_run() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        return run(MODELS["mlp_sgd_momentum"], False, LONG + CALLS, mp, SCENARIO)


def test_removing_any_state_update_of_settle_fails_the_proof(protocol_run: dict[str, Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    source = Path(settle_module.__file__).read_text()
    count = len(_state_updates(ast.parse(source)))
    assert count >= 10, "settle.py's state updates were not found: the mutation test would test nothing"
    replayed = run(MODELS["mlp_sgd_momentum"], True, LONG + CALLS, monkeypatch, SCENARIO)  # unmutated: passes
    assert_replayed_and_fused(replayed, "train", LONG + CALLS)
    assert_same(protocol_run, replayed)
    survivors = _survivors(source, range(count), protocol_run, monkeypatch, LONG + CALLS)
    if survivors:  # updates only a multi-device Plan needs (a SliceBoxing's two registers rotate): on 2 devices
        monkeypatch.setenv("FLOWLAB_THREADS", "0")  # parallel run mode declines the replay layer
        calls = 2 * (LONG + CALLS)  # each rotation state's schedule reaches its fusion
        two = run(MODELS["mlp_sgd_momentum"], False, calls, monkeypatch, SCENARIO, devices=2)
        assert _survivors(source, [None], two, monkeypatch, calls, 2) == [(None, "none")], "unmutated, 2 devices fail"
        survivors = _survivors(source, [index for index, _ in survivors], two, monkeypatch, calls, 2)
    assert not survivors, f"the proof does not notice these updates missing from settle(): {survivors}"


def _survivors(source: str, indices: Any, protocol: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
               calls: int, devices: int = 1) -> list[tuple[int, str]]:
    """The mutants of settle.py (by update index) whose replayed run still passes the proof."""
    survivors = []
    for index in indices:  # None: settle.py as it is
        module, update = _mutant(source, index) if index is not None else (settle_module, "none")
        monkeypatch.setattr(layer_module, "settle", module.settle)
        try:
            replayed = run(MODELS["mlp_sgd_momentum"], True, calls, monkeypatch, SCENARIO, devices)
            assert_replayed_and_fused(replayed, "train", calls)
            assert_same(protocol, replayed)
        except Exception:
            continue
        finally:
            monkeypatch.setattr(layer_module, "settle", settle_module.settle)
        survivors.append((index, update))
    return survivors


def _eval_runtime(monkeypatch: pytest.MonkeyPatch, replay: bool) -> tuple[Any, Any, Any]:
    monkeypatch.setenv("FLOWLAB_REPLAY", "1" if replay else "0")
    flow.clear_default_session()
    call = MODELS["mlp_sgd_momentum"]([])
    for k in range(3):
        call(k)
    session = flow.default_session()
    (desc,) = [d for d in session.function_descs.values() if d.job_name == "eval_job"]
    return session, session.runtime, desc


def _run_eval(rt: Any, desc: Any, k: int) -> np.ndarray:
    """One eval call's instances run by the session's executor (the replay executor, or the protocol)."""
    pulled: list[np.ndarray] = [None]  # type: ignore[list-item]
    x = np.random.default_rng(k).standard_normal((8, 12)).astype(np.float32)
    session = flow.default_session()
    assert session.runtime is rt
    session.executor.run(Call(call_instances(desc, [x], pulled)))
    return pulled[0]


def test_a_call_that_does_not_end_idle_is_never_replayed_and_stops_being_captured(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that leaves work queued is no state to replay from: it is not kept, and after CAPTURE_TRIES such
    calls its launch list is no longer captured, even once its calls end idle again; the results and the protocol
    state stay the protocol's."""
    _, plain_rt, plain_desc = _eval_runtime(monkeypatch, False)
    expected = [_run_eval(plain_rt, plain_desc, k) for k in range(CALLS)]
    plain_state = protocol_state(plain_rt)  # before the next session closes this one
    _, rt, desc = _eval_runtime(monkeypatch, True)
    layer = rt.layer
    actor = next(a for a in rt.actors.values() if a.name.startswith("argmax"))
    kernel, leftover = actor.kernel, rt.buffer("test-leftover")

    def leaves_work(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
        kernel(ins, outs)
        if layer.failed[desc.launch_names] < CAPTURE_TRIES:  # the first calls leave work queued; later ones do not
            leftover.append("queued")

    actor.kernel = kernel.wrap(leaves_work)
    got, replays = [], layer.replays
    for k in range(CALLS):
        got.append(_run_eval(rt, desc, k))
        key = desc.launch_names  # filled by the first call
        leftover.clear()  # what the test queued, taken away again: the next call starts idle
        assert not [s for (name, _), s in layer.schedules.items() if name == key]
    assert layer.failed[key] == CAPTURE_TRIES
    assert layer.replays == replays  # no eval call was replayed
    assert actor.fn is leaves_work  # the recorders were taken away after each capture
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)
    del rt.buffers["test-leftover"]
    actor.kernel = kernel
    assert protocol_state(rt) == plain_state, differences(protocol_state(rt), plain_state)


def test_a_kernel_raising_during_a_capture_leaves_no_schedule_and_no_recorder(monkeypatch: pytest.MonkeyPatch) -> None:
    _, rt, desc = _eval_runtime(monkeypatch, True)
    layer = rt.layer
    actor = next(a for a in rt.actors.values() if a.name.startswith("argmax"))

    def fails(ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
        raise ValueError("no argmax today")

    actor.kernel = actor.kernel.wrap(fails)
    kernels = {a: a.kernel for a in rt.actors.values()}
    with pytest.raises(KernelError, match=r"op 'argmax_0' \(argmax\).*'eval_job' raised ValueError: no argmax today"):
        _run_eval(rt, desc, 0)
    assert {a: a.kernel for a in rt.actors.values()} == kernels  # every recorder taken away
    assert layer.failed[desc.launch_names] == 1 and layer.known is None
    assert not [s for (name, _), s in layer.schedules.items() if name == desc.launch_names]


def test_the_runtime_and_the_debugger_import_nothing_of_the_layer() -> None:
    for folder in ("runtime", "debug"):
        for path in sorted((ROOT / "flowlab" / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [])
                assert not any("replay" in name for name in names), f"{path.name} imports {names}"


def test_the_debugger_runs_without_the_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a session whose calls are replayed and fused, flow.debug's runtime has no layer, steps through the
    protocol to what the replayed call returns, and leaves the session's layer as it was."""
    monkeypatch.setenv("FLOWLAB_REPLAY", "1")
    train_job, eval_job = train_session([])
    x, y = np.ones((8, 12), np.float32), np.zeros(8, np.int32)
    for _ in range(CALLS):
        train_job(x, y)
        expected = train_job(x, y)
    layer = flow.default_session().runtime.layer
    assert any(s.fused is not None for s in layer.schedules.values())
    replays, protocol_calls = layer.replays, layer.protocol_calls
    dbg = flow.debug(train_job, x, y)
    assert dbg.runtime.layer is None and not dbg.runtime.deferred
    dbg.step_n(5)
    dbg.restart()
    assert dbg.runtime.layer is None
    dbg.continue_()
    assert (layer.replays, layer.protocol_calls) == (replays, protocol_calls)
    # the debugger's call starts from the variables the replayed calls left: it takes the next training step
    np.testing.assert_array_equal(dbg.result, train_job(x, y))
    assert expected.shape == dbg.result.shape


DEBUG_SCRIPT = textwrap.dedent("""
    import importlib.abc, os, sys
    os.environ["FLOWLAB_REPLAY"] = "0"

    class NoLayer(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.startswith("flowlab.replay."):
                raise ImportError(f"{name} was imported")

    sys.meta_path.insert(0, NoLayer())
    import numpy as np
    import flowlab as flow
    import flowlab.typing as tp

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    x = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)
    dbg = flow.debug(pad_Job, x)
    dbg.step(); dbg.restart(); dbg.continue_()
    assert dbg.runtime.layer is None
    np.testing.assert_array_equal(dbg.result, np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    print(sorted(m for m in sys.modules if m.startswith("flowlab.replay")))
""")


def test_the_debugger_never_loads_the_layer() -> None:
    out = subprocess.run([sys.executable, "-c", DEBUG_SCRIPT], capture_output=True, text=True, cwd=ROOT,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"  # nothing of flowlab.replay (call_path imports it only for a replay executor)


def test_fused_constants_reuse_the_kernels_compiled_for_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    """An int constant in a segment's source is typed int64, as the protocol's Python int argument is: a bare
    literal would be Literal[int](value), and Numba would compile the kernel again for every value."""
    from flowlab.kernels.numba_cpu.schedule import _learning_rate_act
    from flowlab.replay.fused import _Codegen

    assert _Codegen([]).constant(20) == "np.int64(20)"
    replayed = run(MODELS["mlp_adam"], True, CALLS, monkeypatch)  # a polynomial schedule: int constants
    assert_replayed_and_fused(replayed, "train")
    assert _learning_rate_act.signatures
    assert not [s for s in _learning_rate_act.signatures if "Literal" in str(s)]
