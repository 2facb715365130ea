"""flowlab: OneFlow's lazy mode in Python, with a debugger. ``import flowlab as flow``."""

from . import advanced as advanced  # flow.advanced: OneFlow's distribute ops
from . import checkpoint, config, data, distribute, env, layers, math, nn, optimizer, regularizers, scope, train, typing
from . import core as core  # flowlab.core.common.data_type_pb2 etc.: OneFlow's oneflow.core enums
from . import experimental as experimental  # flow.experimental: logical_slice, square_sum, interface blob values
from . import flags as flags  # flow.flags: every switch (docs/flags.md); `with flow.flags(replay=False):`
from . import losses as losses  # flow.losses.add_loss
from . import random as random  # flow.random: bernoulli, shuffle, ...
from ._ipython import load_ipython_extension  # noqa: F401 (for %load_ext flowlab)
from ._ops_api import *  # noqa: F403
from ._ops_api import __all__ as _ops_all
from ._version import __version__ as __version__
from .checkpoint import load_variables
from .compiler.sbp_explain import explain_job_sbp as _explain_job_sbp
from .compiler.sbp_explain import explain_sbp as _explain_sbp
from .debug import debug
from .eager import eager_execution_enabled, enable_eager_execution
from .errors import KernelError, WatchHandlerError
from .frontend import scope as _frontend_scope
from .frontend.blob import INVALID_BATCH_AXIS, INVALID_SPLIT_AXIS
from .frontend.current import current_global_function_desc, current_scope
from .frontend.function import global_function
from .frontend.function_config import FunctionConfig, function_config
from .ir.dtype import char, convert_oneflow_dtype_to_numpy_dtype, float16, float32, float64, int8, int32, int64, uint8
from .kernels import cuda_available as _cuda_available
from .kernels import cuda_device_count as _cuda_device_count
from .ops.logical_view import parallel_cast
from .ops.registry import SHAPE_FROM_DATA as _SHAPE_FROM_DATA
from .ops.registry import infer_op as _infer_op
from .ops.variable import get_variable
from .ops.watch import watch, watch_diff
from .runtime.dynamic import OpShapeRules as _OpShapeRules
from .runtime.dynamic import use_op_shape_rules as _use_op_shape_rules
from .session import (
               clear_default_session,
               default_session,
               get_all_variables,
               sync_default_session,
)
from .viz.payload_details import use_sbp_explainer as _use_sbp_explainer

float = float32
double = float64
debug.explain_sbp = _explain_sbp  # type: ignore[attr-defined]  # flow.debug is the debugger's entry function
# the layers above hand the layers below what they may not import (ARCHITECTURE's table):
_use_sbp_explainer(_explain_job_sbp)  # the views' "sbp" sections: viz may not import compiler/
_use_op_shape_rules(_OpShapeRules(_infer_op, _SHAPE_FROM_DATA))  # dynamic blobs' kernels: runtime may not import ops/
_frontend_scope.CUDA = _frontend_scope.CudaCapability(_cuda_available, _cuda_device_count)  # the kernels answer

__all__ = [
    "FunctionConfig", "char", "clear_default_session", "config", "debug", "default_session", "double", "float",
    "float16", "float32", "float64", "function_config", "get_all_variables", "get_variable", "global_function",
    "int32", "int64", "int8", "optimizer", "scope", "sync_default_session", "typing", "uint8", *_ops_all,
    "checkpoint", "data", "layers", "load_variables", "math", "nn", "regularizers", "train", "watch", "watch_diff",
    "KernelError", "WatchHandlerError", "advanced", "distribute", "env", "flags",
    # OneFlow v0.3.4's API beside the ops (docs/oneflow-api.md)
    "INVALID_BATCH_AXIS", "INVALID_SPLIT_AXIS", "convert_oneflow_dtype_to_numpy_dtype", "core",
    "current_global_function_desc", "current_scope", "eager_execution_enabled", "enable_eager_execution",
    "parallel_cast",
    "losses", "random",
]
