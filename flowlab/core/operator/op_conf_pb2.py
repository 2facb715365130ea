"""OneFlow's ``oneflow/core/operator/op_conf.proto`` (v0.3.4) as model scripts read it: the enum
``ActivationType`` (BERT's ``bert.py`` passes ``op_conf_util.kNone`` as "no activation"). The OperatorConf
messages themselves are flowlab's ``flowlab.ir.OpConf``, not protobuf."""

from .._enum import ProtoEnum

kNone = 0
kTanH = 1
kSigmoid = 2
kRelu = 3

ActivationType = ProtoEnum("ActivationType", {"kNone": kNone, "kTanH": kTanH, "kSigmoid": kSigmoid, "kRelu": kRelu})

__all__ = ["ActivationType", "kNone", "kRelu", "kSigmoid", "kTanH"]
