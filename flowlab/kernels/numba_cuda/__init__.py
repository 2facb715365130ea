"""Numba CUDA kernels, registered by (op type, "numba", "gpu"); importing this package imports ``numba.cuda``
(the maintained numba-cuda target when installed) and registers them all. Nothing imports it until a GPU kernel
is asked for (``get_kernel_factory(..., device="gpu")``)."""

import importlib
import pkgutil

from ._cuda import Launch, current_launch, launch_config

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["Launch", "current_launch", "launch_config"]
