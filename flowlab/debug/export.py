"""A self-contained HTML record of a debugged run: the Plan, every act in order, and the blobs at the end.
Static (no script), every name escaped, so it is safe to open and to share."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..ir import TaskProto
    from .debugger import Debugger

_STYLE = ("body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;font-size:12px}"
          "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}pre{font-size:12px}")


def run_html(dbg: Debugger) -> str:
    from ..viz import render_svg, to_dot

    esc = html.escape
    rows = []
    for entry in dbg.timeline():
        e = entry.event
        rows.append(f"<tr><td>{e.seq}</td><td>{esc(dbg.plan.job_names[e.job_id])}</td><td>{esc(e.actor_name)}</td>"
                    f"<td>{esc(e.task_type)}</td><td>{e.act_id}</td>"
                    f"<td>{' '.join(f'r{r}' for r, _ in e.read)}</td>"
                    f"<td>{' '.join(f'r{r}' for r, _ in e.written)}</td>"
                    f"<td>{entry.duration_s * 1e6:.1f}</td></tr>")
    blobs = []
    user_jobs = {i for i, kind in enumerate(dbg.plan.job_kinds) if kind == "user"}
    for actor in dbg.runtime.actors.values():
        if actor.task.job_id not in user_jobs:
            continue
        for lbn in actor.task.exec_sequence[0].output_lbns:
            blobs.append(f"<h3>{esc(dbg.plan.job_names[actor.task.job_id])}/{esc(lbn)}</h3>"
                         f"<pre>{esc(str(dbg.blob(lbn)))}</pre>")
    state = "finished" if dbg.finished else f"stopped; next: {dbg.next_actor()}"
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>flowlab run: {esc(dbg.desc.job_name)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>flowlab run of {esc(dbg.desc.job_name)}</h1>"
            f"<p>{dbg.acts} acts, {esc(state)}</p><h2>Plan</h2>{render_svg(to_dot(dbg.plan))}"
            "<h2>Acts</h2><table><tr><th>#</th><th>job</th><th>actor</th><th>type</th><th>act</th><th>read</th>"
            f"<th>wrote</th><th>µs</th></tr>{''.join(rows)}</table><h2>Blobs of the user jobs</h2>{''.join(blobs)}"
            "</body></html>")


def export_html(dbg: Debugger, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(run_html(dbg), encoding="utf-8")
    return path


def _lane_name(task: TaskProto) -> str:
    """A GPU thread is one CUDA stream: its lane says which GPU and stream (compute, H2D or D2H copies)."""
    if task.gpu_device is None:
        return f"machine {task.machine_id} thread {task.thrd_id}"
    stream = "compute" if task.task_type != "CopyHd" else task.exec_sequence[0].attrs["type"]
    return f"machine {task.machine_id} GPU {task.gpu_device} {stream} stream (thread {task.thrd_id})"


def trace_events(dbg: Debugger) -> dict[str, Any]:
    """The recorded acts as Chrome/Perfetto trace JSON (one row per machine:thread)."""
    events = []
    for entry in dbg.timeline_entries:
        e = entry.event
        actor = dbg.runtime.actors.get(e.actor_id) or dbg.runtime.remote_actors[e.actor_id]
        task = actor.task  # an actor on another (Ray) machine is one of the runtime's remote_actors
        events.append({
            "name": e.actor_name, "cat": e.task_type, "ph": "X", "pid": task.machine_id, "tid": task.thrd_id,
            "ts": entry.start_s * 1e6, "dur": max(entry.duration_s * 1e6, 0.001),
            "args": {"job": dbg.plan.job_names[e.job_id], "act_id": e.act_id, "seq": e.seq,
                     "read": [f"r{r}" for r, _ in e.read], "written": [f"r{r}" for r, _ in e.written]},
        })
    lanes = {(t.machine_id, t.thrd_id): _lane_name(t) for t in dbg.plan.tasks}
    meta = [{"name": "process_name", "ph": "M", "pid": m, "args": {"name": f"machine {m}"}}
            for m in sorted({m for m, _ in lanes})]  # one process per machine
    meta += [{"name": "thread_name", "ph": "M", "pid": m, "tid": t, "args": {"name": lanes[(m, t)]}}
             for m, t in sorted(lanes)]
    return {"traceEvents": meta + events, "displayTimeUnit": "ms"}
