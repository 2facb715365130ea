"""The op registry and every op's user-facing function.

Op modules register themselves when imported; the registry imports all of ``OP_MODULES`` on its first lookup
(not here: op modules import the job builder, which imports the registry).
"""

OP_MODULES = (
    "system", "variable", "optimizer_ops", "pad", "math_ops", "array_ops", "nn_ops", "reduce_ops", "watch",
    "gather_slice_ops", "cnn_ops", "norm_ops", "model_parallel", "distribute_ops",
    "index_ops", "nary_ops", "pad_nd",
    "compare_ops", "unary_ops", "binary_ops", "creation_ops", "sort_ops",
    "segment_ops", "nd_index_ops", "random_ops", "slice_update_ops", "encode_ops",
    "activation_ops", "loss_ops", "conv_nd_ops", "upsample_ops", "pool3d_ops", "prelu_ops", "l2_normalize_ops",
    "random_mask_ops",
    "dynamic_ops",
    "two_stage_ops", "unique_ops",
)
