"""Discrete Ricci curvatures and per-node profiles of them (LCP): torch kernels in
:mod:`.tensor`, compiled CPU kernels (and the exact Ollivier-Ricci solver) in
:mod:`.compiled`."""

from graphpe.ops.curvature.tensor import (
    CURVATURES,
    DEFAULT_MAX_TRANSPORT_CELLS,
    PROFILE_STATS,
    TransportBudgetError,
    TransportCost,
    bounds_simple,
    check_transport_budget,
    curvature_bounds,
    edge_triangles,
    forman_curvature,
    forman_simple,
    local_curvature_profile,
    node_profile,
    ollivier_ricci,
    orc_csr,
    orc_simple,
    orc_transport_cost,
    per_input_edge,
    profile_simple,
)

__all__ = [
    "CURVATURES",
    "DEFAULT_MAX_TRANSPORT_CELLS",
    "PROFILE_STATS",
    "TransportBudgetError",
    "TransportCost",
    "bounds_simple",
    "check_transport_budget",
    "curvature_bounds",
    "edge_triangles",
    "forman_curvature",
    "forman_simple",
    "local_curvature_profile",
    "node_profile",
    "ollivier_ricci",
    "orc_csr",
    "orc_simple",
    "orc_transport_cost",
    "per_input_edge",
    "profile_simple",
]
