"""Fresh processes: `import flowlab` + the first call, with a warm and an empty Numba cache (issue 13).

Rows, each the median over fresh processes (a temporary FLOWLAB_CACHE_DIR each for "empty", so a temporary
NUMBA_CACHE_DIR under it; one filled beforehand for "warm"), in the default tiered mode (the first call runs the
NumPy reference kernels while a background thread loads or compiles the Numba kernels, which the second call
waits for: kernels/tiered.py, docs/kernels.md) and, for
comparison, Numba-only (FLOWLAB_KERNELS=numba: every kernel compiled before its first act):
- pad_Job: import + first call (targets: warm <= 1.5 s, empty <= 6 s);
- the MLP train job of benchmarks/mlp_vs_torch.py (784-512-10, batch 100, SGD): process start to the end of its
  first call (targets: empty <= 4 s, warm <= 1.0 s), the first call alone, process start until every kernel is on
  Numba (tiered), and the 9th call, which fuses the replayed schedule (FUSE_AFTER; Numba-only, as the fusion needs
  Numba's kernels): its pause with the segment not yet in the cache, compiled in the call
  (FLOWLAB_FUSE_BACKGROUND=0) and in the background (the default).

``--baseline DIR`` runs every row with PYTHONPATH=DIR too (a checkout of the code before a change), alternating
whole rounds with the current code, and prints both and their ratio. ``--quick`` runs one process per row and
takes the machine's own cache as the warm one, and leaves out the rows that compile (tens of seconds)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _util import QUICK, table

ROOT = str(Path(__file__).resolve().parent.parent)

PAD = """
import numpy as np, flowlab as flow, flowlab.typing as tp
@flow.global_function()
def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
    return flow.reflection_pad2d(x, padding=1)
pad_Job(np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32))
"""

MLP = """
import json, os, time
start = time.perf_counter()
import numpy as np, flowlab as flow, flowlab.typing as tp
imported = time.perf_counter()
compiling = [0.0, 0, 0.0]  # seconds in Numba compiles (outermost only), depth, when the outermost began
tiered = os.environ.get("FLOWLAB_KERNELS", "tiered") == "tiered"
if os.environ.get("FLOWLAB_KERNELS") == "numba":  # (the tiered mode must not import Numba on this thread)
    import numba.core.event as ev

    class Compiles(ev.Listener):
        def on_start(self, event):
            compiling[1] += 1
            if compiling[1] == 1:
                compiling[2] = time.perf_counter()

        def on_end(self, event):
            compiling[1] -= 1
            if compiling[1] == 0:
                compiling[0] += time.perf_counter() - compiling[2]

    ev.register("numba:compile", Compiles())

@flow.global_function(type="train")
def train_job(x: tp.Numpy.Placeholder((100, 784)), y: tp.Numpy.Placeholder((100,), dtype=flow.int32)) -> tp.Numpy:
    h = flow.layers.dense(x, 512, activation=flow.nn.relu, kernel_initializer=flow.truncated_normal(0.1),
                          name="hidden")
    logits = flow.layers.dense(h, 10, kernel_initializer=flow.truncated_normal(0.1), name="output")
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
    return loss

rng = np.random.default_rng(0)
x, y = rng.random((100, 784), dtype=np.float32), rng.integers(0, 10, 100).astype(np.int32)
calls = []
for _ in range(10):
    t = time.perf_counter()
    train_job(x, y)
    calls.append(time.perf_counter() - t)
    if len(calls) == 1:
        to_first = time.time() - float(os.environ.get("FLOWLAB_BENCH_SPAWNED", "nan"))
        compiled_in_first = compiling[0]
        kernels = [t for a in flow.default_session().runtime.actors.values()  # a Kernel's, or an older baseline's
                   if (t := getattr(a.kernel, "tiered", None)) is not None]  # attribute (none before tiering)
        tiered = tiered and bool(kernels)
        on_numba = sum(k.ran == "numba" for k in kernels)
settled = float("nan")
if tiered:
    from flowlab.kernels.tiered import wait_tiers

    wait_tiers()
    settled = time.time() - float(os.environ.get("FLOWLAB_BENCH_SPAWNED", "nan"))
print(json.dumps({"import": imported - start, "calls": calls, "to_first": to_first, "compile": compiled_in_first,
                  "settled": settled, "on_numba": on_numba, "tiered": len(kernels)}))
"""


def child_env(code_root: str, cache: str | None, mode: str = "tiered", **extra: str) -> dict[str, str]:
    """None: the cache this machine already has (--quick). ``mode``: FLOWLAB_KERNELS."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=code_root, FLOWLAB_KERNELS=mode, **extra)
    if mode == "tiered":  # the default: unset, so a baseline from before the tiered mode runs its own default
        del env["FLOWLAB_KERNELS"]
    if cache is not None:
        env["FLOWLAB_CACHE_DIR"] = cache
        env.pop("NUMBA_CACHE_DIR", None)
    return env


def wall(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def mlp(env: dict[str, str]) -> dict[str, float]:
    """One fresh process: the seconds from spawning it to the end of its first call (interpreter start-up
    included), `import flowlab`, the first call, and the 9th call (fusion)."""
    env = dict(env, FLOWLAB_BENCH_SPAWNED=repr(time.time()))  # the child's own clock starts after the interpreter
    out = subprocess.run([sys.executable, "-c", MLP], check=True, env=env, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return {"to_first": result["to_first"], "import": result["import"], "first": result["calls"][0],
            "ninth": result["calls"][8], "compile": result["compile"], "settled": result["settled"],
            "on_numba": result["on_numba"], "tiered": result["tiered"]}


class Versions:
    """The code under test ("now") and, with --baseline, the code before ("before"): each cache kind per version."""

    def __init__(self, baseline: str | None) -> None:
        self.roots = {"now": ROOT} | ({"before": baseline} if baseline else {})
        self.tmp = tempfile.mkdtemp(prefix="flowlab-startup-")
        self.warm: dict[str, str | None] = {name: None if QUICK else self.fresh_dir(f"warm-{name}")
                                            for name in self.roots}

    def fresh_dir(self, label: str) -> str:
        return tempfile.mkdtemp(prefix=f"{label}-", dir=self.tmp)

    def kernels_only(self, name: str) -> str:
        """A copy of the warm cache without the fused segments: kernels compiled, segments not."""
        target = self.fresh_dir(f"nofused-{name}")
        shutil.copytree(self.warm[name] or "", target, dirs_exist_ok=True)
        for fused in Path(target).glob("*/fused"):
            shutil.rmtree(fused)
        return target


def rounds(versions: Versions, n: int, measure) -> dict[str, list]:
    """``measure(name, root)`` for each version, alternating whole rounds."""
    out: dict[str, list] = {name: [] for name in versions.roots}
    for _ in range(n):
        for name, root in versions.roots.items():
            time.sleep(0.3)
            out[name].append(measure(name, root))
    return out


def cell(values: dict[str, float], target: float | None = None) -> str:
    now = values["now"]
    text = f"{now:7.2f} s"
    if "before" in values:
        text += f"   before {values['before']:6.2f} s   ratio {now / values['before']:.2f}x"
    if target is not None:
        text += f"   (target <= {target:g} s: {now / target:.2f}x)"
    return text


def ratio(a: dict[str, list], b: dict[str, list], key: str) -> str:
    """The median of the per-round ratios a/b of the current code (each round ran both back to back)."""
    return f"{statistics.median(x[key] / y[key] for x, y in zip(a['now'], b['now'])):.2f}x"


def median_of(results: dict[str, list], key: str | None = None) -> dict[str, float]:
    return {name: statistics.median(r[key] if key else r for r in rs) for name, rs in results.items()}


def main() -> None:
    baseline = sys.argv[sys.argv.index("--baseline") + 1] if "--baseline" in sys.argv else None
    versions = Versions(baseline)
    n = 1 if QUICK else 3
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores)")
    for name, root in versions.roots.items():  # fill the warm caches: kernels and fused segments
        if QUICK:  # the machine's own cache, as the test suite left it
            break
        for program in (PAD, MLP):  # Numba-only: every kernel compiled, and the MLP's segments fused in its calls
            subprocess.run([sys.executable, "-c", program], check=True, env=child_env(root, versions.warm[name],
                                                                                     "numba"),
                           stdout=subprocess.DEVNULL)
        from_cache = child_env(root, versions.warm[name], "numba", FLOWLAB_FUSE_BACKGROUND="0")
        subprocess.run([sys.executable, "-c", MLP], check=True, env=from_cache, stdout=subprocess.DEVNULL)

    def mlp_rounds(cache, mode: str = "tiered", **extra: str) -> dict[str, list]:
        """``cache(name)``: the cache directory of each version's processes."""
        return rounds(versions, n, lambda name, root: mlp(child_env(root, cache(name), mode, **extra)))

    def mode_pairs(cache) -> tuple[dict[str, list], dict[str, list]]:
        """The tiered and the Numba-only process alternated within each round, so a load change hits both."""
        both = rounds(versions, n, lambda name, root: [mlp(child_env(root, cache(name), mode))
                                                       for mode in ("tiered", "numba")])
        return ({name: [r[0] for r in rs] for name, rs in both.items()},
                {name: [r[1] for r in rs] for name, rs in both.items()})

    warm = versions.warm.__getitem__

    def pad_pairs(cache) -> tuple[dict[str, list], dict[str, list]]:
        both = rounds(versions, n, lambda name, root: [wall(PAD, child_env(root, cache(name), mode))
                                                       for mode in ("tiered", "numba")])
        return ({name: [r[0] for r in rs] for name, rs in both.items()},
                {name: [r[1] for r in rs] for name, rs in both.items()})

    pad_warm, pad_warm_numba = pad_pairs(warm)
    pad_cold, pad_cold_numba = pad_pairs(lambda name: versions.fresh_dir("pad"))
    mlp_warm, mlp_warm_numba = mode_pairs(warm)
    mlp_reference = mlp_rounds(warm, "reference")
    rows = [
        ("pad_Job: import + first call, warm cache", cell(median_of(pad_warm), 1.5)),
        ("pad_Job: import + first call, empty cache", cell(median_of(pad_cold), 6)),
        ("pad_Job: the same, Numba-only, warm / empty cache",
         f"{median_of(pad_warm_numba)['now']:.2f} s / {median_of(pad_cold_numba)['now']:.2f} s"),
        ("MLP 784-512-10 train: start to end of first call, warm", cell(median_of(mlp_warm, "to_first"), 1.0)),
        ("MLP ... its first call alone, warm", cell(median_of(mlp_warm, "first"))),
        ("MLP ... of its tiered kernels, how many ran on Numba in the first call, warm",
         f"{median_of(mlp_warm, 'on_numba')['now']:.0f} of {median_of(mlp_warm, 'tiered')['now']:.0f}"),
        ("MLP ... start until every kernel is on Numba, warm (tiered)", cell(median_of(mlp_warm, "settled"))),
        ("MLP ... start to end of first call, warm, Numba-only (FLOWLAB_KERNELS=numba)",
         cell(median_of(mlp_warm_numba, "to_first"), 1.0)),
        ("MLP ... tiered / Numba-only, start to end of first call, warm (same rounds)",
         ratio(mlp_warm, mlp_warm_numba, "to_first")),
        ("MLP ... import flowlab, warm", cell(median_of(mlp_warm, "import"))),
        ("MLP ... 9th call (fusion), segment cached, Numba-only", cell(median_of(mlp_warm_numba, "ninth"))),
        ("MLP ... start to end of first call, NumPy reference kernels only (no Numba)",
         cell(median_of(mlp_reference, "to_first"))),
    ]
    for mode, flag in () if QUICK else (("compiled in the call", "0"), ("compiled in the background", "1")):
        fusing = mlp_rounds(versions.kernels_only, "numba", FLOWLAB_FUSE_BACKGROUND=flag)
        rows.append((f"MLP ... 9th call (fusion), segment not cached, {mode}, Numba-only",
                     cell(median_of(fusing, "ninth"))))
    if not QUICK:
        mlp_cold, mlp_cold_numba = mode_pairs(lambda name: versions.fresh_dir("mlp"))
        rows.append(("MLP ... start to end of first call, empty cache", cell(median_of(mlp_cold, "to_first"), 4.0)))
        rows.append(("MLP ... its first call alone, empty cache", cell(median_of(mlp_cold, "first"))))
        rows.append(("MLP ... start until every kernel is on Numba, empty cache (tiered)",
                     cell(median_of(mlp_cold, "settled"))))
        rows.append(("MLP ... start to end of first call, empty cache, Numba-only",
                     cell(median_of(mlp_cold_numba, "to_first"), 4.0)))
        rows.append(("MLP ... tiered / Numba-only, start to end of first call, empty cache (same rounds)",
                     ratio(mlp_cold, mlp_cold_numba, "to_first")))
        rows.append(("MLP ... Numba compiling in that Numba-only first call",
                     cell(median_of(mlp_cold_numba, "compile"))))
    table("fresh-process start (medians of fresh processes)", rows)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    shutil.rmtree(versions.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
