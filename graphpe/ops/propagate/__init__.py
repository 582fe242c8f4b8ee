"""Random feature propagation: batched torch kernels in :mod:`.tensor`, compiled CPU
kernels in :mod:`.compiled`."""

from graphpe.ops.propagate.tensor import (
    OPERATORS,
    PROPAGATION_NORMS,
    normalize_per_graph,
    orthonormalize,
    propagate,
    propagation_operator,
    random_feature_propagation,
    rank_tolerance,
)

__all__ = [
    "OPERATORS",
    "PROPAGATION_NORMS",
    "normalize_per_graph",
    "orthonormalize",
    "propagate",
    "propagation_operator",
    "random_feature_propagation",
    "rank_tolerance",
]
