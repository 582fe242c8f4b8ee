r"""Singular value decomposition of each graph's directed adjacency matrix: the SVD positional
encoding (:class:`graphpe.encodings.svd.SVDPE`), one batched SVD per size bucket."""

from __future__ import annotations

import torch
from torch import Tensor

from graphpe.ops.checks import GraphRefusedError, check_choice, check_positive_int
from graphpe.ops.eigen.tensor import canonical_signs, random_signs
from graphpe.ops.graph import (
    bucket_node_index,
    directed_dense_adjacency,
    single_graph_ptr,
    size_buckets,
    validate_graph,
)

SIGNS = ("canonical", "random", "none")
# singular values below this fraction of a graph's largest are rank deficiency, not signal:
# their vectors are an arbitrary basis of a null space, and their columns are written as 0
RANK_TOL = 1e-6
SVD_MAX_NODES = 2048


def svd_encoding(edge_index: Tensor, num_nodes: int, k: int, ptr: Tensor | None = None,
                 edge_weight: Tensor | None = None, sign: str = "canonical",
                 generator: torch.Generator | None = None,
                 max_nodes: int = SVD_MAX_NODES) -> Tensor:
    r"""``[num_nodes, 2k]``: for each graph, with :math:`A_{ij}` the weight of the edge
    :math:`i \to j` (1 without weights; duplicates keep their largest weight; self loops stay
    on the diagonal) and :math:`A = U \Sigma V^\top` its singular value decomposition, the
    rows of :math:`[U_k \Sigma_k^{1/2},\ V_k \Sigma_k^{1/2}]` over the ``k`` largest singular
    values. Columns past the graph's rank (or its size) are 0.

    A singular pair's sign is arbitrary (``u`` and ``v`` flip together): ``canonical`` fixes
    it by ``u`` (:func:`~graphpe.ops.eigen.canonical_signs`), ``random`` flips each graph's
    columns at random on top of that, ``none`` keeps LAPACK's. Vectors of repeated singular
    values are an arbitrary basis of their space. Graphs are solved densely, in float64, one
    batched SVD per size bucket; graphs above ``max_nodes`` are refused.
    """
    validate_graph(edge_index, num_nodes, edge_weight, ptr)
    check_positive_int("k", k)
    check_choice("sign", sign, SIGNS)
    device = edge_index.device
    if ptr is None:
        ptr = single_graph_ptr(num_nodes, device)
    out = torch.zeros(num_nodes, 2 * k, dtype=torch.float32, device=device)
    sizes = ptr.diff()
    if num_nodes and int(sizes.max()) > max_nodes:
        raise GraphRefusedError(f"svd_encoding densifies each graph: a graph of "
                                f"{int(sizes.max())} nodes is above max_nodes={max_nodes}")
    buckets = size_buckets(sizes)
    flips = (random_signs(sizes.numel(), k, generator, torch.float64, device)
             if sign == "random" else None)
    for bucket, adjacency in zip(buckets, directed_dense_adjacency(edge_index, ptr, buckets,
                                                                   edge_weight), strict=True):
        u, s, vh = torch.linalg.svd(adjacency, full_matrices=False)
        m = min(k, bucket.size)
        u, s, v = u[..., :m], s[..., :m], vh.transpose(-1, -2)[..., :m]
        kept = s > RANK_TOL * s[..., :1].clamp(min=torch.finfo(s.dtype).tiny)
        scale = torch.where(kept, s, torch.zeros_like(s)).sqrt().unsqueeze(-2)
        if sign != "none":
            signs = canonical_signs(u, kept)
            if flips is not None:
                signs = signs * flips[bucket.graphs.to(device), :m].unsqueeze(-2)
            u, v = u * signs, v * signs
        node, inside = bucket_node_index(ptr, bucket)
        rows = node[inside]
        out[rows, :m] = (u * scale)[inside].float()
        out[rows, k:k + m] = (v * scale)[inside].float()
    return out
