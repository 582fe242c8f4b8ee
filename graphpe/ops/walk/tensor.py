"""RWSE's random-walk landing probabilities as batched torch kernels (any device); the
compiled CPU kernels they match are in :mod:`graphpe.ops.walk.compiled`, the pairwise
encodings in :mod:`graphpe.ops.walk.pairs`.

- RWSE: random-walk landing probabilities ``diag(P^t)``, ``t = 1..T``, with ``P = D^{-1} A`` on
  the undirected simple graph underlying the input (``ops.graph.undirected_simple``); rows of
  isolated nodes are zero, so their landing probabilities are 0 (as in PyG's
  ``AddRandomWalkPE``).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from graphpe.ops.checks import check_positive_int
from graphpe.ops.graph import (
    SizeBucket,
    bucket_groups,
    bucket_growth_for,
    bucket_node_index,
    degree,
    dense_adjacency,
    edge_values,
    inv_sqrt_degree,
    node_range_subgraph,
    single_graph_ptr,
    size_buckets,
    sparse_operator,
    undirected_simple,
    validate_graph,
    weights_scaled_per_graph,
)
from graphpe.ops.host import (
    host_array,
    memory_budget,
    node_range_csr,
    numpy_dtype,
    simple_csr,
    use_compiled,
)
from graphpe.ops.plan import DEFAULT_PLAN, ExecPlan
from graphpe.ops.walk.compiled import (
    graph_landing_probs,
    landing_probs,
)
from graphpe.ops.walk.large import large_landing_probs, over_budget_message

# RWSE's dense path up to this size (above: sparse products, never densified)
RWSE_DENSE_MAX_NODES = 512


def random_walk_matrix_entries(
    edge_index: Tensor,
    num_nodes: int,
    edge_weight: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    self_loops: bool = False,
) -> tuple[Tensor, Tensor]:
    """``(edge_index, values)`` of ``P = D^{-1} A`` on the undirected simple graph (plus its
    self loops, one entry per looped node with the largest weight, with ``self_loops``)."""
    graph = undirected_simple(edge_index, num_nodes, edge_weight)
    w = edge_values(graph, dtype)
    if self_loops:
        loop = edge_index[0] == edge_index[1]
        loop_w = (torch.ones(int(loop.sum()), dtype=dtype, device=edge_index.device)
                  if edge_weight is None else edge_weight[loop].to(dtype))
        nodes = edge_index[0, loop]
        per_node = torch.zeros(num_nodes, dtype=dtype, device=edge_index.device).scatter_reduce(
            0, nodes, loop_w, reduce="amax", include_self=True)
        looped = torch.nonzero(per_node > 0).flatten()
        graph = graph._replace(edge_index=torch.cat([graph.edge_index, looped.repeat(2, 1)], 1))
        w = torch.cat([w, per_node[looped]])
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
    dtype: torch.dtype = torch.float32,
    self_loops: bool = True,
    plan: ExecPlan = DEFAULT_PLAN,
) -> Tensor:
    """Landing probabilities ``diag(P^t)`` for ``t = 1..walk_length``, as ``[N, walk_length]``.

    Graphs up to ``dense_max_nodes`` nodes are grouped into size buckets, each a padded dense
    ``[B, n, n]`` stack. ``P`` is similar to the symmetric ``S = D^-1/2 A D^-1/2``
    (``P^t = D^-1/2 S^t D^1/2``), so ``diag(P^t) = diag(S^t)``: ``T - 1`` batched products of
    ``S``, processed in cache-sized chunks.

    Larger graphs are never densified. On the compiled (CPU) kernel each is computed by
    :func:`graphpe.ops.walk.large.large_landing_probs`: component by component, each by the
    fastest predicted of three exact paths whose memory bound fits
    ``plan.max_memory_bytes`` (local walks from every node over its own ``ceil(T/2)``-hop
    ball or sparse matrix powers, in float64; or blocks of identity columns times ``S``, in
    the precision of ``dtype``), chosen from
    the balls of a sample of nodes and logged at DEBUG; a ValueError naming the graph's size,
    the smallest estimate and the budget where none fits. On the ``tensor`` kernel ``P``
    stays sparse and is applied to blocks of columns of the identity (``T`` sparse products
    per block, in ``compute_dtype``), blocks of at most ``sparse_block_bytes`` and within
    ``max_memory_bytes``.

    Args:
        edge_index: ``[2, E]`` edges of all graphs.
        num_nodes: total number of nodes.
        walk_length: number of steps ``T``.
        ptr: ``[G + 1]`` node offsets of the graphs; one graph if None.
        edge_weight: ``[E]`` finite non-negative weights, or None.
        dtype: dtype of the result.
        self_loops: the walk may take the graph's self loops (``A_ii`` = the loop's weight,
            counted once in the degree), as PyG's ``AddRandomWalkPE``; False drops them.
        plan: how to compute (:class:`~graphpe.ops.plan.ExecPlan`). Graphs up to
            ``plan.dense_max_nodes`` (default :data:`RWSE_DENSE_MAX_NODES`) take the dense
            path: ``kernel`` ``compiled`` (CPU tensors only: one compiled loop over the
            graphs, float64, ``diag(S^t)`` by sparse products of exactly each graph's size, see
            :mod:`graphpe.ops.walk.compiled`), ``tensor`` (padded size buckets, batched
            products in ``compute_dtype``, default float32, chunks of ``max_block_bytes``,
            groups of buckets of ``max_dense_bytes``; any device) or ``auto`` (``compiled`` on
            the CPU); larger graphs the sparse paths above. ``max_memory_bytes`` (None: a
            quarter of the available memory, :func:`graphpe.ops.host.memory_budget`) bounds
            the working memory of the large graphs' paths.
    """
    walk_length = check_positive_int("walk_length", walk_length)
    dense_max_nodes = (RWSE_DENSE_MAX_NODES if plan.dense_max_nodes is None
                       else plan.dense_max_nodes)
    compute_dtype = plan.compute_dtype or torch.float32
    device = edge_index.device
    if (ptr is None and edge_weight is None and type(num_nodes) is int
            and 0 < num_nodes <= dense_max_nodes and edge_index.dtype == torch.int64
            and edge_index.dim() == 2 and edge_index.size(0) == 2
            and use_compiled(plan.kernel, device)):
        # one small graph, as a transform called per graph sees it: one compiled call
        out_np = np.empty((num_nodes, walk_length), dtype=numpy_dtype(dtype))
        if graph_landing_probs(edge_index.detach().numpy(), num_nodes, walk_length, out_np,
                               self_loops):
            return torch.from_numpy(out_np).to(dtype)
    validate_graph(edge_index, num_nodes, edge_weight, ptr)
    # Every node is written below: by its bucket, or by the sparse path of its large graph.
    itemsize = torch.finfo(compute_dtype).bits // 8
    if use_compiled(plan.kernel, device):
        ptr_np = np.array([0, num_nodes]) if ptr is None else host_array(ptr, np.int64)
        # float64 inside the kernel, written straight into the output dtype
        out = torch.from_numpy(np.empty((num_nodes, walk_length), dtype=numpy_dtype(dtype)))
        csr = simple_csr(edge_index, num_nodes, edge_weight)
        landing_probs(csr, ptr_np, walk_length, dense_max_nodes, out.numpy(), self_loops)
        for g in np.flatnonzero((ptr_np[1:] - ptr_np[:-1]) > dense_max_nodes).tolist():
            start, end = int(ptr_np[g]), int(ptr_np[g + 1])
            # (the budget is read per large graph: reading free memory costs ~0.1 ms)
            large_landing_probs(node_range_csr(csr, start, end), walk_length,
                                out.numpy()[start:end],
                                budget=memory_budget(plan.max_memory_bytes),
                                self_loops=self_loops)
        return out.to(dtype)
    ptr = single_graph_ptr(num_nodes, device) if ptr is None else ptr.to(device, torch.long)
    if edge_weight is not None and edge_weight.is_floating_point():
        # P = D^-1 A does not change when a graph's weights are scaled together
        edge_weight = weights_scaled_per_graph(edge_weight, edge_index, ptr)
    out = torch.empty(num_nodes, walk_length, dtype=compute_dtype, device=device)
    sizes = ptr[1:] - ptr[:-1]
    granularity = plan.bucket_granularity
    buckets = size_buckets(sizes, granularity or 1, dense_max_nodes,
                           growth=bucket_growth_for(sizes) if granularity is None else None)
    for group in bucket_groups(buckets, itemsize, plan.max_dense_bytes):
        _dense_landing_group(group, edge_index, edge_weight, ptr, walk_length,
                             compute_dtype, plan.max_block_bytes, out, self_loops)

    for g in torch.nonzero(sizes > dense_max_nodes).flatten().tolist():
        # Few per batch: each is a graph too large to densify.
        start, end = int(ptr[g]), int(ptr[g + 1])
        n = end - start
        sub_ei, sub_w = node_range_subgraph(edge_index, edge_weight, start, end)
        if sub_w is not None and sub_w.is_floating_point():
            sub_w = weights_scaled_per_graph(sub_w, sub_ei, single_graph_ptr(n, sub_ei.device))
        ei, values = random_walk_matrix_entries(sub_ei, n, sub_w, compute_dtype, self_loops)
        op = sparse_operator(ei, values, n)
        # two [n, width] blocks per product, plus the operator and the read-off diagonals
        fixed = (values.numel() * (itemsize + 16) + n * walk_length * itemsize)
        budget = memory_budget(plan.max_memory_bytes)
        width = min(plan.sparse_block_bytes, budget - fixed) // (itemsize * n * 2)
        if width < 1:
            edges = int((ei[0] != ei[1]).sum()) // 2
            raise ValueError(over_budget_message(n, edges, fixed + 2 * itemsize * n,
                                                 "blocked", budget))
        for lo in range(0, n, width):
            hi = min(lo + width, n)
            out[start + lo : start + hi] = _sparse_landing(op, lo, hi, walk_length, compute_dtype)
    return out.to(dtype)


def _dense_landing_group(
    group: list[SizeBucket],
    edge_index: Tensor,
    edge_weight: Tensor | None,
    ptr: Tensor,
    walk_length: int,
    compute_dtype: torch.dtype,
    max_block_bytes: int,
    out: Tensor,
    self_loops: bool = True,
) -> None:
    """Landing probabilities of one group of size buckets, written into ``out``: every bucket
    writes its ``[T, B, n]`` results into one buffer, scattered once at the end."""
    device = edge_index.device
    itemsize = torch.finfo(compute_dtype).bits // 8
    adjacency = dense_adjacency(edge_index, ptr, group, edge_weight, compute_dtype, self_loops)
    slots = [bucket.graphs.numel() * bucket.size for bucket in group]
    landing = torch.empty(walk_length, sum(slots), dtype=compute_dtype, device=device)
    nodes, keep, offset = [], [], 0
    for bucket, adj, width in zip(group, adjacency, slots, strict=True):
        dis = inv_sqrt_degree(adj.sum(-1))
        # S = D^-1/2 A D^-1/2 is similar to P (P^t = D^-1/2 S^t D^1/2), so diag(P^t) = diag(S^t).
        sym = adj.mul_(dis.unsqueeze(1)).mul_(dis.unsqueeze(2))
        n = bucket.size
        view = landing[:, offset : offset + width].view(walk_length, -1, n)
        chunk = max(1, max_block_bytes // (itemsize * n * n * 2))
        for lo in range(0, sym.size(0), chunk):  # chunks small enough to stay in cache
            _dense_landing(sym[lo : lo + chunk], view[:, lo : lo + chunk])
        node, inside = bucket_node_index(ptr, bucket)
        nodes.append(node.flatten())
        keep.append(inside.flatten())
        offset += width
    order, keep_all = torch.cat(nodes), torch.cat(keep)
    rows = landing.T.contiguous()
    if bool(keep_all.all()):  # exact-size buckets: no padded slots
        out.index_copy_(0, order, rows)
    else:
        out.index_copy_(0, order[keep_all], rows[keep_all])


def _dense_landing(sym: Tensor, out: Tensor) -> None:
    """Write the diagonals of ``S^1..S^T`` for a stack ``[b, n, n]`` into ``out`` ``[T, b, n]``.

    ``T - 1`` batched products.
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


