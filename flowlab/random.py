"""``flow.random``: OneFlow v0.3.4's random ops (ops/random_ops.py)."""

from .ops.random_ops import bernoulli, generate_random_batch_permutation_indices, shuffle

__all__ = ["bernoulli", "generate_random_batch_permutation_indices", "shuffle"]
