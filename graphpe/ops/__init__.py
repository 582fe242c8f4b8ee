"""Pure tensor kernels. No Data objects, no modules, no I/O; device- and dtype-agnostic."""

from graphpe.ops.curvature import (
    curvature_bounds,
    forman_curvature,
    local_curvature_profile,
    node_profile,
    ollivier_ricci,
)
from graphpe.ops.eigen import (
    ComponentBasis,
    Eigenpairs,
    SparseEigenpairs,
    batched_eigh,
    canonical_signs,
    chebyshev_eigenpairs,
    component_basis,
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
from graphpe.ops.labeling import enclosing_subgraphs
from graphpe.ops.link import pair_distances, pair_neighbourhood_scores, pair_ppr, without_pairs
from graphpe.ops.plan import DEFAULT_PLAN, ExecPlan
from graphpe.ops.propagate import (
    normalize_per_graph,
    orthonormalize,
    propagate,
    propagation_operator,
    random_feature_propagation,
)
from graphpe.ops.resistance import pair_resistance
from graphpe.ops.walk import random_walk_landing_probs

__all__ = [
    "DEFAULT_PLAN",
    "ExecPlan",
    "ComponentBasis",
    "Eigenpairs",
    "SparseEigenpairs",
    "batched_eigh",
    "chebyshev_eigenpairs",
    "component_basis",
    "batch_from_ptr",
    "canonical_signs",
    "connected_components",
    "curvature_bounds",
    "enclosing_subgraphs",
    "forman_curvature",
    "node_profile",
    "normalize_per_graph",
    "ollivier_ricci",
    "orthonormalize",
    "pair_distances",
    "pair_neighbourhood_scores",
    "pair_ppr",
    "pair_resistance",
    "propagate",
    "propagation_operator",
    "degree",
    "laplacian",
    "laplacian_eigenpairs",
    "local_curvature_profile",
    "random_signs",
    "random_feature_propagation",
    "random_walk_landing_probs",
    "size_buckets",
    "undirected_simple",
    "validate_graph",
    "without_pairs",
]
