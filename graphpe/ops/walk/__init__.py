"""Random-walk and pairwise encodings: RWSE, RRWP, shortest-path distances and edges (all pairs
or local pairs), resistance distances and heat kernels. Batched torch kernels in
:mod:`.tensor` (RWSE) and :mod:`.pairs` (the pairwise encodings), compiled CPU kernels in
:mod:`.compiled`; the walk that keeps the edges'
direction (directed RWSE) in :mod:`.directed`."""

from graphpe.ops.walk.pairs import (
    PAIRWISE_MAX_NODES,
    PairEncoding,
    all_pairs,
    heat_kernels,
    local_pairs,
    pair_ids_of_edges,
    pair_row_edges,
    relative_random_walk_probs,
    resistance_distances,
    shortest_path_distances,
    shortest_path_edges,
    shortest_paths,
)
from graphpe.ops.walk.tensor import (
    RWSE_DENSE_MAX_NODES,
    random_walk_landing_probs,
    random_walk_matrix_entries,
)

__all__ = [
    "PAIRWISE_MAX_NODES",
    "RWSE_DENSE_MAX_NODES",
    "PairEncoding",
    "all_pairs",
    "heat_kernels",
    "local_pairs",
    "pair_ids_of_edges",
    "pair_row_edges",
    "random_walk_landing_probs",
    "random_walk_matrix_entries",
    "relative_random_walk_probs",
    "resistance_distances",
    "shortest_path_distances",
    "shortest_path_edges",
    "shortest_paths",
]
