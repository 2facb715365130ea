"""The model zoo's examples (examples/resnet50.py, examples/alexnet.py at their tiny configs): the first call
(trace, compile, runtime start, first step) and the median train step through flowlab's runtime, beside the same
step in torch eager (float32, the same layers, torch.optim.SGD with momentum: the timing only; tests/models checks
the values). One BLAS thread, one torch thread. `--quick`: fewer rounds."""

from __future__ import annotations

import os
import platform
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # examples/ beside benchmarks/

from _util import QUICK, median_time, table

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


def main() -> None:
    warnings.filterwarnings("ignore", message="flowlab accepts FunctionConfig")
    rows = [("CPU", cpu_name())]
    for name in ("alexnet", "resnet50"):
        rows += measure(name)
    table("Model zoo (tiny configs): first call and train step, 1 thread", rows)


if __name__ == "__main__":
    main()
