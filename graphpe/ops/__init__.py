"""Pure tensor kernels. No Data objects, no modules, no I/O; device- and dtype-agnostic."""

from graphpe.ops.eigen import (
    Eigenpairs,
    canonical_signs,
    laplacian_eigenpairs,
    random_signs,
)
from graphpe.ops.graph import (
    batch_from_ptr,
    connected_components,
    degree,
    laplacian,
    size_buckets,
    undirected_simple,
    validate_graph,
)
from graphpe.ops.propagate import random_walk_landing_probs

__all__ = [
    "Eigenpairs",
    "batch_from_ptr",
    "canonical_signs",
    "connected_components",
    "degree",
    "laplacian",
    "laplacian_eigenpairs",
    "random_signs",
    "random_walk_landing_probs",
    "size_buckets",
    "undirected_simple",
    "validate_graph",
]
