"""Propagation kernels: random-walk landing probabilities (RWSE).

The random-walk matrix is ``P = D^{-1} A`` on the undirected simple graph underlying the input
(``ops.graph.undirected_simple``); rows of isolated nodes are zero, so their landing
probabilities are 0 (as in PyG's ``AddRandomWalkPE``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from graphpe.ops.graph import (
    degree,
    dense_adjacency,
    edge_values,
    inv_sqrt_degree,
    node_range_subgraph,
    scatter_bucket_rows,
    single_graph_ptr,
    size_buckets,
    sparse_operator,
    undirected_simple,
    validate_graph,
)


def random_walk_matrix_entries(
    edge_index: Tensor,
    num_nodes: int,
    edge_weight: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
) -> tuple[Tensor, Tensor]:
    """``(edge_index, values)`` of ``P = D^{-1} A`` on the undirected simple graph."""
    graph = undirected_simple(edge_index, num_nodes, edge_weight)
    w = edge_values(graph, dtype)
    deg = degree(graph.edge_index, num_nodes, w, dtype)
    inv = torch.where(deg > 0, 1.0 / deg.clamp(min=torch.finfo(dtype).tiny), 0.0)
    return graph.edge_index, inv[graph.edge_index[0]] * w


def random_walk_landing_probs(
    edge_index: Tensor,
    num_nodes: int,
    walk_length: int,
    *,
    ptr: Tensor | None = None,
    edge_weight: Tensor | None = None,
    dense_max_nodes: int = 512,
    bucket_granularity: int = 1,
    compute_dtype: torch.dtype = torch.float32,
    dtype: torch.dtype = torch.float32,
    max_block_bytes: int = 4 * 2**20,
    sparse_block_bytes: int = 256 * 2**20,
) -> Tensor:
    """Landing probabilities ``diag(P^t)`` for ``t = 1..walk_length``, as ``[N, walk_length]``.

    Graphs up to ``dense_max_nodes`` nodes are grouped into size buckets, each a padded dense
    ``[B, n, n]`` stack. ``P`` is similar to the symmetric ``S = D^-1/2 A D^-1/2``
    (``P^t = D^-1/2 S^t D^1/2``), so ``diag(P^t) = diag(S^t)``: ``T - 1`` batched products of
    ``S``, processed in cache-sized chunks.

    Larger graphs are never densified: ``P`` stays sparse and is applied to blocks of columns
    of the identity, ``T`` sparse products per block, reading the diagonal entries off.

    Args:
        edge_index: ``[2, E]`` edges of all graphs.
        num_nodes: total number of nodes.
        walk_length: number of steps ``T``.
        ptr: ``[G + 1]`` node offsets of the graphs; one graph if None.
        edge_weight: ``[E]`` finite non-negative weights, or None.
        dense_max_nodes: largest graph size for the dense path.
        bucket_granularity: size buckets round node counts up to a multiple of this.
        compute_dtype: dtype of the matrix products.
        dtype: dtype of the result.
        max_block_bytes: memory of one dense chunk of powers (small enough to stay in cache).
        sparse_block_bytes: memory of one block of identity columns on the sparse path.
    """
    if isinstance(walk_length, bool) or not isinstance(walk_length, int) or walk_length < 1:
        raise ValueError(f"walk_length must be a positive int, got {walk_length!r}")
    device = edge_index.device
    if ptr is None:
        ptr = single_graph_ptr(num_nodes, device)
    validate_graph(edge_index, num_nodes, edge_weight, ptr)
    ptr = ptr.to(device=device, dtype=torch.long)
    # Every node is written below: by its bucket, or by the sparse path of its large graph.
    out = torch.empty(num_nodes, walk_length, dtype=compute_dtype, device=device)
    sizes = ptr[1:] - ptr[:-1]
    itemsize = torch.finfo(compute_dtype).bits // 8

    buckets = size_buckets(sizes, bucket_granularity, dense_max_nodes)
    adjacency = dense_adjacency(edge_index, ptr, buckets, edge_weight, compute_dtype)
    for bucket, adj in zip(buckets, adjacency, strict=True):
        dis = inv_sqrt_degree(adj.sum(-1))
        # S = D^-1/2 A D^-1/2 is similar to P (P^t = D^-1/2 S^t D^1/2), so diag(P^t) = diag(S^t).
        sym = adj.mul_(dis.unsqueeze(1)).mul_(dis.unsqueeze(2))
        n = bucket.size
        chunk = max(1, max_block_bytes // (itemsize * n * n * 2))
        landing = torch.empty(walk_length, sym.size(0), n, dtype=compute_dtype, device=device)
        for lo in range(0, sym.size(0), chunk):  # chunks small enough to stay in cache
            _dense_landing(sym[lo : lo + chunk], landing[:, lo : lo + chunk])
        scatter_bucket_rows(out, landing.permute(1, 2, 0), ptr, bucket)

    for g in torch.nonzero(sizes > dense_max_nodes).flatten().tolist():
        # Few per batch: each is a graph too large to densify.
        start, end = int(ptr[g]), int(ptr[g + 1])
        n = end - start
        sub_ei, sub_w = node_range_subgraph(edge_index, edge_weight, start, end)
        ei, values = random_walk_matrix_entries(sub_ei, n, sub_w, compute_dtype)
        op = sparse_operator(ei, values, n)
        width = max(1, sparse_block_bytes // (itemsize * n * 2))
        for lo in range(0, n, width):
            hi = min(lo + width, n)
            out[start + lo : start + hi] = _sparse_landing(op, lo, hi, walk_length, compute_dtype)
    return out.to(dtype)


def _dense_landing(sym: Tensor, out: Tensor) -> None:
    """Write the diagonals of ``S^1..S^T`` for a stack ``[b, n, n]`` into ``out`` ``[T, b, n]``.

    ``T - 1`` batched products. (Row-wise dot products of lower powers need fewer flops, since
    ``(S^{a+b})_ii = <row_i(S^a), row_i(S^b)>`` for symmetric ``S``, but at molecule sizes a
    batched dot of length n costs as much as a whole batched n x n product: the products win.)
    """
    power = sym
    out[0] = sym.diagonal(dim1=-2, dim2=-1)
    for t in range(1, out.size(0)):
        power = torch.bmm(power, sym)
        out[t] = power.diagonal(dim1=-2, dim2=-1)


def _sparse_landing(op: Tensor, lo: int, hi: int, walk_length: int,
                    dtype: torch.dtype) -> Tensor:
    """Diagonal entries ``lo..hi`` of ``P^1..P^T`` from ``T`` sparse products."""
    n = op.size(0)
    width = hi - lo
    cols = torch.arange(width, device=op.device)
    x = torch.zeros(n, width, dtype=dtype, device=op.device)
    x[lo + cols, cols] = 1.0
    out = []
    for _ in range(walk_length):
        x = torch.sparse.mm(op, x)
        out.append(x[lo + cols, cols])
    return torch.stack(out, dim=-1)


__all__ = ["random_walk_landing_probs", "random_walk_matrix_entries"]
