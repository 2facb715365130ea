"""A Plan view's lanes say what runs on each (machine, thread): the device and stream of a GPU thread, what a host
thread is for, never "machine 0 / thread 3" alone (issue 24). Checked against OneFlow's thread layout as the
compiler builds it (tests/devices/test_multi_device_plan.py: C CPU device threads, CommNet, TickTock, then one thread
per
independent task type; GPU threads stream * gpu_device_num + device)."""

from __future__ import annotations

from types import SimpleNamespace

from flowlab.ir import OpConf, ParallelConf
from flowlab.viz.payload import plan_payload
from flowlab.viz.payload_devices import lane_names
from tests.helpers.dp_train import _dp_train


def _task(task_type: str, thrd: int, tag: str = "cpu", device: int = 0, machine: int = 0, **attrs: object):
    op = OpConf(f"op_{task_type}_{thrd}", "x", attrs=attrs, parallel_conf=ParallelConf(tag, (f"{machine}:{device}",)))
    return SimpleNamespace(task_type=task_type, machine_id=machine, thrd_id=thrd, exec_sequence=(op,), parallel_id=0)


def test_a_two_device_plans_lanes_name_the_cpu_threads_and_what_the_others_run():
    session = _dp_train()
    plan = session.plan
    names = lane_names(plan.tasks)
    assert names[(0, 0)] == "cpu compute 0" and names[(0, 1)] == "cpu compute 1"
    tick = {t.thrd_id for t in plan.tasks if t.task_type in ("Tick", "Case", "Esac", "ReentrantLock")}
    assert [names[(0, t)] for t in tick] == ["cpu tick"]
    for task_type in ("WaitAndSendIds", "CallbackNotify", "ForeignInput"):
        (thrd,) = {t.thrd_id for t in plan.tasks if t.task_type == task_type}
        assert names[(0, thrd)] == f"cpu {task_type}"
    payload = plan_payload(plan, session.job_set)
    assert payload["graph"]["lanes"] == [names[k] for k in sorted(names)]
    assert not any("thread" in lane for lane in payload["graph"]["lanes"])
    task = next(n for n in payload["graph"]["nodes"] if n["kind"] == "task")
    assert task["lane"] in payload["graph"]["lanes"]


def test_gpu_threads_name_their_device_and_stream_and_machines_are_named_where_there_are_several():
    # one GPU: compute 0, h2d 1, d2h 2 (stream * 1 + device), CPU device thread 6, tick 8, as gpu_plan.py lays out
    tasks = [_task("NormalForward", 0, "gpu"), _task("CopyHd", 1, "gpu", type="H2D"),
             _task("CopyHd", 2, "gpu", type="D2H"), _task("NormalForward", 6), _task("SliceBoxing", 6),
             _task("Tick", 8), _task("Case", 8),
             _task("CopyHd", 4, "gpu", device=1, type="H2D")]
    assert lane_names(tasks) == {(0, 0): "gpu:0 compute", (0, 1): "gpu:0 h2d", (0, 2): "gpu:0 d2h",
                                 (0, 4): "gpu:1 h2d", (0, 6): "cpu compute 0", (0, 8): "cpu tick"}
    two = [_task("NormalForward", 0), _task("NormalForward", 0, machine=1), _task("CopyCommNet", 2, machine=1),
           _task("Tick", 3), _task("Tick", 5)]  # two tick threads would share a name: the thread tells them apart
    assert lane_names(two) == {(0, 0): "machine 0 / cpu compute 0", (0, 3): "machine 0 / cpu tick (thread 3)",
                               (0, 5): "machine 0 / cpu tick (thread 5)", (1, 0): "machine 1 / cpu compute 0",
                               (1, 2): "machine 1 / cpu comm net"}
