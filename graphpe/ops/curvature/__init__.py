"""Discrete Ricci curvatures and per-node profiles of them (LCP): torch kernels in
:mod:`.tensor`, compiled CPU kernels (and the exact Ollivier-Ricci solver) in
:mod:`.compiled`."""

from graphpe.ops.curvature.tensor import (
    CURVATURES,
    PROFILE_STATS,
    bounds_simple,
    curvature_bounds,
    edge_triangles,
    forman_curvature,
    forman_simple,
    local_curvature_profile,
    node_profile,
    ollivier_ricci,
    orc_csr,
    orc_simple,
    per_input_edge,
    profile_simple,
)

__all__ = [
    "CURVATURES",
    "PROFILE_STATS",
    "bounds_simple",
    "curvature_bounds",
    "edge_triangles",
    "forman_curvature",
    "forman_simple",
    "local_curvature_profile",
    "node_profile",
    "ollivier_ricci",
    "orc_csr",
    "orc_simple",
    "per_input_edge",
    "profile_simple",
]
