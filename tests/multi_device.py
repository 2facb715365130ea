"""Test helpers for multi-device jobs until the front end places ops on several devices itself.

``place(monkeypatch, spec)`` makes the session compile its traced jobs with the placements and SBP signatures
of ``spec`` (op name -> (device names, {bn_in_op: "S(0)" | "B" | "P"})), as the SBP inference pass will write
them; ops not in ``spec`` keep their one-device placement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import flowlab.session as session_module
from flowlab.ir import Job, ParallelConf, SbpSignature, parse_sbp

Spec = Mapping[str, tuple[str | tuple[str, ...], Mapping[str, str]]]


def placed(job: Job, spec: Spec) -> Job:
    ops, sigs = [], dict(job.sbp_signatures)
    for op in job.ops:
        if op.name in spec:
            devices, sbps = spec[op.name]
            names = (devices,) if isinstance(devices, str) else tuple(devices)
            op = op.replace(parallel_conf=ParallelConf(op.parallel_conf.device_tag, names))
            sigs[op.name] = SbpSignature({bn: parse_sbp(s) for bn, s in sbps.items()})
        ops.append(op)
    return job.replace(ops=tuple(ops), sbp_signatures=sigs)


def place(monkeypatch, spec: Spec | Callable[[Job], Job]) -> None:
    rewrite = spec if callable(spec) else (lambda job: placed(job, spec))
    compile_jobs = session_module.compile_jobs

    def compile_placed(jobs, cpu_device_num=1):
        return compile_jobs([rewrite(job) for job in jobs], cpu_device_num)

    monkeypatch.setattr(session_module, "compile_jobs", compile_placed)
