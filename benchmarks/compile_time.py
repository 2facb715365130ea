"""Compile time of the two-job seed program: trace + passes + system jobs + Plan (+ verifier); and the first call of
deep data-parallel MLP train jobs per task of their Plans, from ~1,500 to ~15,000 tasks (issue 28: linear in tasks).

Each deep job's first call runs in a fresh process (as a user's does): trace, compile, verify, build the runtime,
initialize the variables, run the first step (the replay capture and the lanes of 2 devices included); the
Numba kernels come from the warm cache (a first run of the script fills it). ``--layers 10,30,100,300`` and
``--devices 1`` choose the jobs (default 30,100,300 layers on 2 CPU devices: 1,730, 5,510 and 16,310 tasks);
``--stages`` adds the largest job's first call by stage (docs/compile-time.md).

``--segments`` measures instead how long a replayed schedule's fused segments take to compile (issue 28: a Plan's
segments compile in time linear in its kernels): for deep MLP train jobs (``--layers``, on ``--devices``) and, with
``--resnet``, OneFlow-Benchmark's ResNet-50 at its tiny size on 2 devices, each in a fresh process replaying on one
thread, with a segment cache emptied first (Numba's cache would hide the compile): the segments' compile CPU
seconds against their calls, the wall time from the first call to the first step that runs every segment compiled,
and the step after. ``--limits 1000000,120`` compares segment limits (``fused.MAX_SEGMENT_CALLS``; a huge one is the
old single segment per run), alternating, one process each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
from _util import QUICK, cpu_description, median_time, table

import flowlab as flow
from flowlab.compiler import check_plan, compile_jobs
from flowlab.demo import define_two_jobs

# the deep MLP train job (``layers`` dense layers of 64, then 10) that the child scripts below build
DEEP_MLP = '''
@flow.global_function(type="train")
def deep_train(x: tp.Numpy.Placeholder((50, 64)), y: tp.Numpy.Placeholder((50,), dtype=flow.int32)) -> tp.Numpy:
    h = x
    for i in range(layers):
        h = flow.layers.dense(h, 64, activation=flow.nn.relu, name=f"fc{i}")
    logits = flow.layers.dense(h, 10, name="out")
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits, name="loss")
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.01]), momentum=0).minimize(loss)
    return loss
'''

DEEP_JOB = """
import json, sys, time
import numpy as np
import flowlab as flow
import flowlab.typing as tp

layers, devices = int(sys.argv[1]), int(sys.argv[2])
flow.config.cpu_device_num(devices)

""" + DEEP_MLP + """
x, y = np.zeros((50, 64), np.float32), np.zeros(50, np.int32)
stages = timed_stages() if "--stages" in sys.argv else {}
wall, cpu = time.perf_counter(), time.process_time()
deep_train(x, y)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
session = flow.default_session()
print(json.dumps({"tasks": len(session.plan.tasks), "wall": wall, "cpu": cpu, "start": session.compile_seconds,
                  "stages": stages}))
"""

# --stages: the first call's CPU seconds by stage (the calling thread's: the tiers' and fusion's background threads
# are left out), each stage's own time without the stages inside it, and the cyclic GC's. Wrapping a function here
# costs a few microseconds a call, once per stage.
STAGES = """
import gc, time
from collections import defaultdict
import flowlab.session as S, flowlab.compiler.compile as C, flowlab.compiler.plan_builder as PB
import flowlab.compiler.plan_stages as PS, flowlab.replay.layer as L, flowlab.replay.lanes as LN
import flowlab.runtime.runtime as RT

def timed_stages():
    own, stack = defaultdict(float), []
    def wrap(owner, name, label):
        f = getattr(owner, name)
        def timed(*a, **k):
            start = time.thread_time()
            stack.append(0.0)
            try:
                return f(*a, **k)
            finally:
                spent = time.thread_time() - start
                own[label] += spent - stack.pop()
                if stack:
                    stack[-1] += spent
        setattr(owner, name, timed)
    for owner, name, label in [
            (S, "trace", "trace"), (C, "compile_job_set", "job passes, SBP, system jobs"),
            (PB.PlanBuilder, "add_tasks", "Plan: tasks"), (PB.PlanBuilder, "connect", "Plan: registers, boxing"),
            (PS, "assemble", "Plan: memory, assembly"), (C, "build_plan", "Plan: other stages"),
            (S, "check_plan", "verify"), (RT, "wire", "runtime: wiring, kernels"), (S, "Runtime", "runtime: other"),
            (S.Session, "init_variables", "init variables"), (S, "written_variables", "call guard"),
            (LN, "build_lanes", "first step: lanes"), (L.ReplayLayer, "capture", "first step: capture, run"),
            (S.Session, "lazy_run", "other")]:
        wrap(owner, name, label)
    collecting = []
    def gc_time(phase, info):
        if phase == "start":
            collecting.append(time.thread_time())
        else:
            own["cyclic GC (inside the stages above)"] += time.thread_time() - collecting.pop()
    gc.callbacks.append(gc_time)
    return own
"""


SEGMENT_JOB = """
import json, os, sys, time
import numpy as np
import flowlab as flow
import flowlab.typing as tp
from flowlab.replay import fused
from flowlab.replay.layer import compiled

model, size, devices, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
fused.MAX_SEGMENT_CALLS = limit
compiles = []
compile_segment = fused.Segment.compile

def timed_compile(self):  # on the calling thread: FLOWLAB_FUSE_BACKGROUND=0
    start = time.process_time()
    compile_segment(self)
    compiles.append((self.calls, time.process_time() - start, self.source_path.name))

fused.Segment.compile = timed_compile
flow.config.cpu_device_num(devices)
if model == "resnet50":
    from examples import resnet50
    cfg = resnet50.Config(device_num=devices)
    images, labels = resnet50.synthetic_batch(cfg)
    train = resnet50.build(cfg)
    step = lambda: train(images, labels)
else:
    layers = size
""" + textwrap.indent(DEEP_MLP, "    ") + """
    x, y = np.random.default_rng(0).random((50, 64), np.float32), np.zeros(50, np.int32)
    step = lambda: deep_train(x, y)

start = time.perf_counter()
for calls in range(1, 61):  # until a call ran its launch list's schedules fused, every segment compiled
    step()
    layer = flow.default_session().runtime.layer
    mine = [s for s in layer.schedules.values() if layer.last is not None and s.key == layer.last.key]
    if mine and all(s.fused is not None and compiled(s) for s in mine):  # (each rotation's schedule is captured
        break  # long before the first is fused: they alternate)
first = time.perf_counter() - start
times = []
for _ in range(int(os.environ.get("SEGMENT_STEPS", "20"))):
    t = time.perf_counter()
    step()
    times.append(time.perf_counter() - t)
kernels = max(len(s.kernels) for s in mine)
segments = [sum(isinstance(f, fused.Segment) for f in s.fused) for s in mine]
print(json.dumps({"kernels": kernels, "schedules": len(mine), "segments": segments, "calls": calls,
                  "compiles": compiles, "first": first, "step": sorted(times)[len(times) // 2]}))
"""


def segment_run(model: str, size: int, devices: int, limit: int, cache: str) -> dict:
    """One fresh process replaying ``model`` on one thread with segments of at most ``limit`` calls, its segment
    cache (under ``cache``) emptied first; SEGMENT_JOB's figures."""
    import glob

    for path in glob.glob(os.path.join(cache, "**", "*segment_*"), recursive=True):
        os.remove(path)  # the segments' sources and Numba's cache of them: this run compiles every one
    root = os.path.dirname(os.path.dirname(flow.__file__))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "FLOWLAB_CACHE_DIR": cache, "FLOWLAB_THREADS": "0",
           "FLOWLAB_FUSE_BACKGROUND": "0", "SEGMENT_STEPS": "5" if model == "resnet50" else "50",
           "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-c", SEGMENT_JOB, model, str(size), str(devices), str(limit)],
                         capture_output=True, text=True, env=env, check=True, cwd=root).stdout
    return json.loads(out.strip().splitlines()[-1])


def segment_rows() -> list[tuple[str, str]]:
    import tempfile

    layers = [int(n) for n in _argument("--layers", "2,8" if QUICK else "5,10,20,40,80").split(",") if n]
    devices = int(_argument("--devices", "1"))
    limits = [int(n) for n in _argument("--limits", "1000000,300").split(",")]
    cache = os.environ.get("FLOWLAB_CACHE_DIR") or tempfile.mkdtemp(prefix="flowlab-segments-")
    jobs = [("mlp", n, devices) for n in layers] + ([("resnet50", 0, 2)] if "--resnet" in sys.argv else [])
    segment_run("mlp", 2, devices, limits[0], cache)  # the kernels into this cache: every row compiles segments only
    rows = []
    for model, size, n in jobs:
        for limit in limits:
            run = segment_run(model, size, n, limit, cache)
            compiles = run["compiles"]
            cpu = sum(seconds for _, seconds, _ in compiles)
            calls = sum(c for c, _, _ in compiles)
            biggest = max(compiles)
            label = f"{size}-layer MLP" if model == "mlp" else "ResNet-50 tiny"
            what = "one segment per run" if limit >= 10**6 else f"segments of <= {limit} calls"
            rows.append((f"{label}, {n} device(s), {run['kernels']:,} kernels, {what}",
                         f"{len(compiles)} compiled ({len({f for *_, f in compiles})} files, {calls:,} calls): "
                         f"{cpu:6.1f} s CPU, {cpu / calls * 1e3:4.0f} ms/call, the biggest {biggest[0]} calls "
                         f"{biggest[1]:5.1f} s; first call to a compiled step {run['first']:6.1f} s wall "
                         f"({run['calls']} calls); then {run['step'] * 1e3:7.2f} ms a step"))
            print(f"  {rows[-1][0]}: {rows[-1][1]}", file=sys.stderr, flush=True)
    return rows


def _argument(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def first_call(layers: int, devices: int) -> dict[str, float]:
    """The first call of a ``layers``-deep MLP train job in a fresh process: tasks, wall and CPU seconds, and the
    part before the variables' initialization (trace, compile, verify, runtime: ``Session.compile_seconds``)."""
    root = os.path.dirname(os.path.dirname(flow.__file__))  # the flowlab this process runs, not another install
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    stages = "--stages" in sys.argv
    out = subprocess.run([sys.executable, "-c", (STAGES if stages else "") + DEEP_JOB, str(layers), str(devices),
                          *(["--stages"] if stages else [])], capture_output=True,
                         text=True, env=env, check=True, cwd=root).stdout  # -c puts the working directory first
    return json.loads(out.strip().splitlines()[-1])


def first_call_rows() -> list[tuple[str, str]]:
    layers = [int(n) for n in _argument("--layers", "2,8" if QUICK else "30,100,300").split(",")]
    devices = int(_argument("--devices", "2"))
    if not QUICK:
        first_call(layers[0], devices)  # fills the Numba cache, so every row loads the same kernels from it
    rows, walls, cpus = [], [], []
    for n in layers:
        run = first_call(n, devices)
        walls.append(run["wall"] / run["tasks"])
        cpus.append(run["cpu"] / run["tasks"])
        rows.append((f"{n} layers, {devices} devices: {run['tasks']:,} tasks, first call",
                     f"{run['wall']:6.2f} s wall, {walls[-1] * 1e6:5.0f} us/task ({run['cpu']:6.2f} s CPU, "
                     f"{cpus[-1] * 1e6:5.0f} us/task; {run['start']:5.2f} s wall to a started runtime)"))
    # Each job's first call also pays a fixed part (kernels from the cache, the system jobs): a ratio under 1 is
    # that part spread over more tasks; over 1, a part growing faster than the Plan.
    rows.append(("first call per task, largest job / smallest (1 = linear): wall, CPU",
                 f"{walls[-1] / walls[0]:.2f}, {cpus[-1] / cpus[0]:.2f}"))
    if run["stages"]:
        rows += [(f"  {n} layers: {stage}", f"{seconds:6.3f} s CPU, {seconds / run['tasks'] * 1e6:4.0f} us/task")
                 for stage, seconds in run["stages"].items()]
    return rows


def main() -> None:
    print(f"CPU: {cpu_description()}")
    if "--segments" in sys.argv:
        start = time.perf_counter()
        rows = segment_rows()
        table(f"fused segments' compile, each job in a fresh process ({time.perf_counter() - start:.0f} s)", rows)
        return
    flow.clear_default_session()

    zero_pad_Job, _ = define_two_jobs()
    zero_pad_Job(np.zeros((2, 1, 3, 3), np.float32))
    session = flow.default_session()
    jobs = list(session.traced_jobs.values())
    repeat = 5 if QUICK else 21
    compile_only = median_time(lambda: compile_jobs(jobs), repeat)
    verify = median_time(lambda: check_plan(session.plan), repeat)
    plan = session.plan
    table("compile time, two-job seed program", [
        ("first call: trace, compile, verify, build runtime+kernels", f"{session.compile_seconds * 1e3:.1f} ms"),
        ("compile_jobs (passes, system jobs, Plan), median", f"{compile_only * 1e3:.2f} ms"),
        ("check_plan (verifier), median", f"{verify * 1e3:.2f} ms"),
        ("jobs / tasks / regsts / mem blocks",
         f"{len(session.job_set)} / {len(plan.tasks)} / {len(plan.regst_descs)} / {len(plan.mem_blocks)}"),
    ])
    flow.clear_default_session()
    start = time.perf_counter()
    rows = first_call_rows()
    table(f"first call of deep MLP train jobs, each in a fresh process ({time.perf_counter() - start:.0f} s)", rows)


if __name__ == "__main__":
    main()
