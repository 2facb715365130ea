"""The model zoo's examples at their tiny configs (examples/alexnet.py, resnet50.py, bert_pretrain.py): the first
call (trace, compile, runtime start, first step) and the median train step through flowlab's runtime, beside the
same step in torch eager (float32, the same layers and initial values; SGD with momentum, BERT's AdamW as OneFlow
updates: the timing only; tests/models checks the values). One BLAS thread, one torch thread. `--quick`: fewer rounds.

Then ResNet-50 data parallel at the same global batch: 1 CPU device against 2, the 2-device Plan run on one thread
(FLOWLAB_THREADS=0), on lanes (=1) and as the execution policy chooses (runtime/policy.py: lanes only where its
trial finds them faster), in interleaved rounds, wall and process CPU (all threads) per step, past fusion."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # examples/ beside benchmarks/

from _util import QUICK, cpu_description, median_time, table

import flowlab as flow


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def torch_step(model_name: str, cfg, images, labels):
    """A float32 torch eager step of the same model (its parameters from flowlab's initial values)."""
    import torch
    import torch.nn.functional as F

    from tests.models._torch_ref import conv2d_same

    torch.set_num_threads(1)
    params = {k: torch.tensor(v, requires_grad=not k.endswith(("moving_mean", "moving_variance")))
              for k, v in flow.get_all_variables().items() if "momentum" not in k and "System" not in k}
    x, y = torch.from_numpy(images), torch.from_numpy(labels).long()
    if model_name == "resnet50":
        from tests.models.test_resnet50 import TorchResnet

        ref = TorchResnet.__new__(TorchResnet)
        ref.p, ref.cfg, ref.state = params, cfg, {}
        forward = lambda: ref.forward(x, 1)
    else:
        def forward():
            h = x
            for name, _k, s, pad, pool in (("conv1", 11, 4, "VALID", 1), ("conv2", 5, 1, "SAME", 1),
                                          ("conv3", 3, 1, "SAME", 0), ("conv4", 3, 1, "SAME", 0),
                                          ("conv5", 3, 1, "SAME", 1)):
                h = F.relu(conv2d_same(h, params[f"{name}-weight"], s, pad) + params[f"{name}-bias"].reshape(1, -1,
                                                                                                             1, 1))
                h = F.avg_pool2d(h, 3, 2) if pool else h
            h = h.reshape(h.shape[0], -1)
            h = F.relu(h @ params["fc1-weight"].T + params["fc1-bias"])
            h = F.relu(h @ params["fc2-weight"].T + params["fc2-bias"])
            return h @ params["fc3-weight"].T
    trainable = [p for p in params.values() if p.requires_grad]
    opt = torch.optim.SGD(trainable, lr=0.01, momentum=0.875)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(forward(), y, label_smoothing=cfg.label_smoothing)
        loss.backward()
        opt.step()
        return loss

    return step


def bert_steps() -> tuple[Callable[[], object], Callable[[], object]]:
    """examples/bert_pretrain.py's train step and the same step in torch eager, float32, from flowlab's initial
    values: tests/models/test_bert_pretrain.py's torch BERT and its AdamW as OneFlow updates (clipping included)."""
    import torch

    from examples import bert_pretrain as model
    from tests.models.test_bert_pretrain import adamw_step, torch_losses

    torch.set_num_threads(1)
    cfg = model.Config()
    batch = model.synthetic_batch(cfg)
    train = model.build(cfg)
    flow_step = lambda: train(**batch)
    flow_step()  # the first call is timed by the caller's measure of the whole; here: past it
    params = {k: torch.tensor(v, requires_grad=True) for k, v in flow.get_all_variables().items()
              if k.startswith(("bert-", "cls-")) and not k.endswith(("-m", "-v"))}
    state: dict = {}

    def torch_step() -> object:
        total = torch_losses(params, batch, cfg)[0]
        total.backward()
        adamw_step(params, state, cfg.learning_rate, cfg)
        return total

    return flow_step, torch_step


def measure_bert() -> list[tuple[str, str]]:
    start = time.perf_counter()
    try:
        flow_step, torch_step = bert_steps()
    except ImportError:
        return [("bert_pretrain", "torch not installed")]
    first = time.perf_counter() - start
    step = median_time(flow_step, 3 if QUICK else 7)
    torch_step()
    torch_time = median_time(torch_step, 3 if QUICK else 7)
    flow.clear_default_session()
    return [("bert_pretrain: first call (trace + compile + start + step)", f"{first:.2f} s"),
            ("bert_pretrain: flowlab step, median", f"{step * 1e3:.1f} ms"),
            ("bert_pretrain: torch eager step (float32, AdamW as OneFlow), median", f"{torch_time * 1e3:.1f} ms"),
            ("bert_pretrain: flowlab / torch", f"{step / torch_time:.2f}")]


def measure(model_name: str) -> list[tuple[str, str]]:
    module = __import__(f"examples.{model_name}", fromlist=["build"])
    cfg = module.Config()
    images, labels = module.synthetic_batch(cfg)
    start = time.perf_counter()
    train = module.build(cfg)
    train(images, labels)
    first = time.perf_counter() - start
    step = median_time(lambda: train(images, labels), 3 if QUICK else 7)
    rows = [(f"{model_name}: first call (trace + compile + start + step)", f"{first:.2f} s"),
            (f"{model_name}: flowlab step, median", f"{step * 1e3:.1f} ms")]
    try:
        t_step = torch_step(model_name, cfg, images, labels)
    except ImportError:
        return rows + [(f"{model_name}: torch eager step", "torch not installed")]
    t_step()
    torch_time = median_time(t_step, 3 if QUICK else 7)
    rows += [(f"{model_name}: torch eager step, median", f"{torch_time * 1e3:.1f} ms"),
             (f"{model_name}: flowlab / torch", f"{step / torch_time:.2f}")]
    flow.clear_default_session()
    return rows


POLICY = "2 devices, the policy's choice"
# (label, devices, FLOWLAB_THREADS): "" is the execution policy's choice
DATA_PARALLEL = (("1 device", 1, ""), ("2 devices, one thread", 2, "0"), ("2 devices, lanes", 2, "1"),
                 ("2 devices, the policy's choice", 2, ""))


def data_parallel_rows() -> list[tuple[str, str]]:
    """ResNet-50 (tiny) train steps on 1 and 2 CPU devices, the same global batch: interleaved rounds, a fresh
    session each, 4 x FUSE_AFTER calls untimed (each schedule past its trial and its fusion), then the steps."""
    from examples import resnet50
    from flowlab.replay.fused import FUSE_AFTER

    # segments compiled in the call that fuses: a 2-device serial segment takes long to compile, and in the
    # background the timed steps would still replay act by act
    os.environ.setdefault("FLOWLAB_FUSE_BACKGROUND", "0")
    wall: dict[str, list[float]] = {label: [] for label, *_ in DATA_PARALLEL}
    cpu: dict[str, list[float]] = {label: [] for label, *_ in DATA_PARALLEL}
    first: dict[str, list[float]] = {label: [] for label, *_ in DATA_PARALLEL}
    chosen: list[str] = []
    steps = 5 if QUICK else 10
    for _ in range(1 if QUICK else 2):
        for label, devices, threads in DATA_PARALLEL:
            os.environ["FLOWLAB_THREADS"] = threads
            cfg = resnet50.Config(device_num=devices)
            images, labels = resnet50.synthetic_batch(cfg)
            start = time.perf_counter()
            train = resnet50.build(cfg)
            train(images, labels)
            first[label].append(time.perf_counter() - start)
            for _ in range(4 * FUSE_AFTER):
                train(images, labels)
            for _ in range(steps):
                w, c = time.perf_counter(), time.process_time()
                train(images, labels)
                wall[label].append(time.perf_counter() - w)
                cpu[label].append(time.process_time() - c)
            if devices == 2 and not threads:
                session = flow.default_session()
                generated = next(iter(session.generated_calls.values()), None)
                chosen.append(f"{session.execution.why('lanes').rpartition('; ')[2]}; then "
                              f"{session.execution.executor}"
                              + (f" ({generated.runs} generated calls)" if generated is not None else ""))
            flow.clear_default_session()
            recent = statistics.median(wall[label][-steps:]), statistics.median(cpu[label][-steps:])
            print(f"  {label}: first call {first[label][-1]:.1f} s, step {recent[0] * 1e3:.1f} ms wall, "
                  f"{recent[1] * 1e3:.1f} ms CPU (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    os.environ.pop("FLOWLAB_THREADS", None)
    med = {label: statistics.median(w) for label, w in wall.items()}
    rows = [(f"resnet50 data parallel, {label}: first call / step wall / step CPU (all threads), medians",
             f"{statistics.median(first[label]):.2f} s / {med[label] * 1e3:.1f} ms / "
             f"{statistics.median(cpu[label]) * 1e3:.1f} ms") for label, *_ in DATA_PARALLEL]
    rows += [(f"resnet50: {label} / 2 devices, one thread (wall; never below 1.0x wanted)",
              f"{med['2 devices, one thread'] / med[label]:.2f}x") for label in ("2 devices, lanes",
                                                                         "2 devices, the policy's choice")]
    rows.append(("resnet50: 2 devices, the policy's choice / 1 device (wall)",
                 f"{med['1 device'] / med[POLICY]:.2f}x"))
    rows.append(("resnet50: the policy's choice for 2 devices", f"{chosen[-1] if chosen else 'none'} "
                 f"({sum('lose' not in c for c in chosen)} of {len(chosen)} rounds kept lanes)"))
    return rows


def main() -> None:
    warnings.filterwarnings("ignore", message="flowlab accepts FunctionConfig")
    rows = [("CPU", cpu_description()), ("load average (1 min) at start", f"{os.getloadavg()[0]:.2f}")]
    if "--data-parallel" not in sys.argv:
        for name in ("alexnet", "resnet50"):
            rows += measure(name)
        rows += measure_bert()
    rows += data_parallel_rows()
    rows.append(("load average (1 min) at the end", f"{os.getloadavg()[0]:.2f}"))
    table("Model zoo (tiny configs): first call and train step, 1 thread; ResNet-50 on 1 and 2 devices", rows)


if __name__ == "__main__":
    main()
