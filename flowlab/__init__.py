"""flowlab: OneFlow's lazy mode in Python, with a debugger. ``import flowlab as flow``."""

__version__ = "0.1.0"

from . import checkpoint, config, data, layers, math, nn, optimizer, regularizers, scope, train, typing  # noqa: E402
from ._ipython import load_ipython_extension  # noqa: E402,F401 (for %load_ext flowlab)
from ._ops_api import *  # noqa: E402,F403
from ._ops_api import __all__ as _ops_all  # noqa: E402
from .checkpoint import load_variables  # noqa: E402
from .debug import debug  # noqa: E402
from .errors import KernelError, WatchHandlerError  # noqa: E402
from .frontend.function import global_function  # noqa: E402
from .frontend.function_config import FunctionConfig, function_config  # noqa: E402
from .ir.dtype import char, float16, float32, float64, int8, int32, int64, uint8  # noqa: E402
from .ops.variable import get_variable  # noqa: E402
from .ops.watch import watch, watch_diff  # noqa: E402
from .session import (  # noqa: E402
    clear_default_session,
    default_session,
    get_all_variables,
    sync_default_session,
)

float = float32  # noqa: A001
double = float64

__all__ = [
    "FunctionConfig", "char", "clear_default_session", "config", "debug", "default_session", "double", "float",
    "float16", "float32", "float64", "function_config", "get_all_variables", "get_variable", "global_function",
    "int32", "int64", "int8", "optimizer", "scope", "sync_default_session", "typing", "uint8", *_ops_all,
    "checkpoint", "data", "layers", "load_variables", "math", "nn", "regularizers", "train", "watch", "watch_diff",
    "KernelError", "WatchHandlerError",
]
