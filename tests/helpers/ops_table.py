"""Running one op of the ops table in a job."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp


def run_job(build, *arrays):
    """Trace ``build(*blobs)`` in a predict job with one placeholder per array; run it once on ``arrays``."""
    params = [f"x{i}" for i in range(len(arrays))]
    # A job function's parameters are its placeholders: give it a real signature and annotation objects.
    ns: dict = {}
    exec(f"def job({', '.join(params)}):\n    return build({', '.join(params)})", {"build": build}, ns)
    job = ns["job"]
    job.__annotations__ = {p: tp.Numpy.Placeholder(a.shape, dtype=flow.int32 if a.dtype == np.int32 else flow.float)
                           for p, a in zip(params, arrays)} | {"return": tp.Numpy}
    return flow.global_function()(job)(*arrays)
