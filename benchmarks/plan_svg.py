"""How long does a 1,000-task Plan take to draw? (to_dot + render_svg; the notebook's target is <= 2 s.)

Builds a synthetic Plan directly from TaskProto/RegstDesc: ``--jobs`` jobs, tasks spread round-robin over
``--threads`` threads per job, each task's data regst consumed by the next one or two tasks of its job, and a
ctrl regst every few tasks. Prints the median of ``--runs`` runs for each stage.

    .venv/bin/python benchmarks/plan_svg.py [--tasks 1000] [--jobs 4] [--threads 8] [--runs 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

from flowlab.ir import BlobDesc, OpConf, Plan, RegstDesc, TaskProto, encode_task_id
from flowlab.ir.dtype import float32
from flowlab.viz import plan_to_dot, render_svg, renderers


def synthetic_plan(n_tasks: int = 1000, n_jobs: int = 4, n_threads: int = 8) -> Plan:
    per_job = [n_tasks // n_jobs + (1 if j < n_tasks % n_jobs else 0) for j in range(n_jobs)]
    ids: list[list[int]] = []
    index_on_thread: dict[int, int] = {}
    for job_id, count in enumerate(per_job):
        job_ids = []
        for k in range(count):
            thrd = job_id * n_threads + k % n_threads
            index = index_on_thread.get(thrd, 0)
            index_on_thread[thrd] = index + 1
            job_ids.append(encode_task_id(0, thrd, index))
        ids.append(job_ids)
    consumed: dict[int, dict[str, list[int]]] = {t: {} for job_ids in ids for t in job_ids}
    tasks = []
    regst_id = order = 0
    for job_id, job_ids in enumerate(ids):
        for k, task_id in enumerate(job_ids):
            name = f"job{job_id}-op{k}"
            lbn = f"{name}/out"
            produced = {}
            consumers = job_ids[k + 1 : k + 3]
            if consumers:
                produced["out"] = RegstDesc(
                    regst_id, task_id, consumers, 1, "data", {lbn: BlobDesc((8, 64), float32)}, mem_block_id=0
                )
                for c in consumers:
                    consumed[c].setdefault("in", []).append(regst_id)
                regst_id += 1
            if k % 5 == 0 and k + 4 < len(job_ids):
                produced["out_ctrl"] = RegstDesc(regst_id, task_id, (job_ids[k + 4],), 1, "ctrl")
                consumed[job_ids[k + 4]].setdefault("in_ctrl", []).append(regst_id)
                regst_id += 1
            op = OpConf(name, "relu", {"x": (f"job{job_id}-op{max(k - 1, 0)}/out",)}, {"y": (lbn,)})
            tasks.append(
                TaskProto("NormalForward", 0, job_id * n_threads + k % n_threads, task_id, job_id, job_id, order,
                          (op,), produced, {})
            )
            order += 1
    tasks = [
        dataclasses.replace(t, consumed_regst_desc_id={n: tuple(v) for n, v in consumed[t.task_id].items()})
        for t in tasks
    ]
    return Plan(tuple(tasks), (), tuple(f"job{j}" for j in range(n_jobs)), ("user",) * n_jobs, (), {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-thread-clusters", action="store_true")
    parser.add_argument("--no-edge-labels", action="store_true")
    args = parser.parse_args()

    plan = synthetic_plan(args.tasks, args.jobs, args.threads)
    n_edges = sum(len(r.consumer_task_ids) for t in plan.tasks for r in t.produced_regst_desc.values())
    renderer = next((r for r in renderers() if r.path), None)
    print(f"plan: {len(plan.tasks)} tasks, {n_edges} regst edges, {args.jobs} jobs x {args.threads} threads")
    print(f"renderer: {renderer.source + ' ' + renderer.path if renderer else 'none found'}")
    dot_times, svg_times, totals = [], [], []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        dot = plan_to_dot(plan, thread_clusters=not args.no_thread_clusters, edge_labels=not args.no_edge_labels)
        t1 = time.perf_counter()
        svg = render_svg(dot)
        t2 = time.perf_counter()
        dot_times.append(t1 - t0)
        svg_times.append(t2 - t1)
        totals.append(t2 - t0)
    print(f"dot text: {len(dot) / 1e3:.0f} kB, svg: {len(svg) / 1e3:.0f} kB")
    print(f"median of {args.runs}: to_dot {statistics.median(dot_times):.3f} s, "
          f"render_svg {statistics.median(svg_times):.3f} s, total {statistics.median(totals):.3f} s "
          f"(target <= 2 s)")


if __name__ == "__main__":
    main()
