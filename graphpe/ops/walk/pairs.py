"""Pairwise (relative) encodings as batched torch kernels (any device), with the compiled CPU
kernels of :mod:`graphpe.ops.walk.compiled` for their host paths: one value (or vector) per
ordered node pair ``(i, j)`` of each graph, for attention biases.

- RRWP (Ma et al., "Graph Inductive Biases in Transformers without Message Passing", ICML
  2023): ``[I, M, M^2, ..., M^{K-1}]_{ij}`` with ``M = D^-1 A``; its diagonal is RWSE.
- Shortest-path distance (Graphormer, Ying et al., NeurIPS 2021), capped at ``max_dist``;
  ``max_dist + 1`` means farther or unreachable; and the edges along one shortest path
  (Graphormer's edge encoding reads their features).
- Resistance distance ``R_ij = L+_ii + L+_jj - 2 L+_ij`` with ``L = D - A`` and ``L+`` its
  pseudo-inverse (RD-WL, Zhang et al., ICLR 2023); ``inf`` between components.
- Heat kernel ``exp(-t L)_ij`` for several times ``t`` (GraphGPS's ``HKfullPE`` form).

The last two share the spectral kernels of :mod:`graphpe.ops.spectral` (one eigendecomposition
per graph).

Pairs are all ordered pairs of each graph, ``i`` and ``j`` in the same graph, row-major per
graph, graphs in order: ``pair_index [2, P]`` (global node ids, like ``edge_index`` in a
``Batch``) and ``pair_ptr [G + 1]`` (where each graph's ``n_g^2`` pairs start). Graphs are
computed densely, one batched product per group of equal-sized graphs (no padding), on the
data's device; all pairs of an ``n``-node graph are ``n^2`` values, so this is for graphs of
molecule to peptide size (``max_nodes``, default 1,024).

For larger graphs, RRWP and SPD take ``hops``: only the pairs within ``hops`` hops are
listed (:func:`local_pairs`, sorted by source then target; a pair not listed is farther),
computed on the host by one breadth-first search and, for RRWP, one sparse walk per source,
so memory follows the number of such pairs and never ``n^2``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from graphpe.ops.checks import check_non_negative_int, check_positive_int
from graphpe.ops.graph import (
    connected_components,
    dense_adjacency,
    single_graph_ptr,
    size_buckets,
    validate_graph,
    weights_scaled_per_graph,
)
from graphpe.ops.host import (
    host_array,
    simple_csr,
    use_compiled,
)
from graphpe.ops.plan import DEFAULT_PLAN, ExecPlan
from graphpe.ops.spectral import (
    check_normalization,
    check_times,
    dense_ptr,
    heat_weights,
    laplacian_spectrum,
    pinv_weights,
    spectral_filter,
)
from graphpe.ops.walk.compiled import (
    all_pairs_distances_host,
    batch_path_edges_host,
    local_pairs_host,
    local_walk_probs_host,
    path_edges_host,
    relative_walk_probs,
)

PAIRWISE_MAX_NODES = 1024


class PairEncoding(NamedTuple):
    """``pair_index [2, P]``, ``values [P, ...]``, ``pair_ptr [G + 1]``."""

    pair_index: Tensor
    values: Tensor
    pair_ptr: Tensor


def all_pairs(ptr: Tensor) -> tuple[Tensor, Tensor]:
    """``(pair_index [2, P], pair_ptr [G + 1])`` of every ordered pair within each graph of a
    batch with node offsets ``ptr``, row-major per graph."""
    sizes = ptr[1:] - ptr[:-1]
    counts = sizes * sizes
    pair_ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    total = int(pair_ptr[-1])
    graph = torch.repeat_interleave(torch.arange(sizes.numel(), device=ptr.device), counts,
                                    output_size=total)
    local = torch.arange(total, device=ptr.device) - pair_ptr[graph]
    n = sizes[graph]
    start = ptr[graph]
    return torch.stack([start + local // n.clamp(min=1), start + local % n.clamp(min=1)]), pair_ptr


def pair_row_edges(edge_index: Tensor, ptr: Tensor, pair_ptr: Tensor, batch: Tensor) -> Tensor:
    """The edges of a batch copied onto its pair rows (:func:`all_pairs`' order): for every
    edge ``u -> v`` of a graph with ``n`` nodes and every column ``j < n``, the edge ``(u, j)
    -> (v, j)`` between the rows of those pairs, ``[2, sum over edges of n]`` int64, edge by
    edge and column by column within it. A graph's column ``j`` is then a copy of the graph,
    so a message-passing network over these edges runs on every column at once (SPE's
    ``rho``). ``batch [N]`` is each node's graph; edges must stay within their graph."""
    src, dst = edge_index[0], edge_index[1]
    graph = batch[src]
    sizes = (ptr[1:] - ptr[:-1])[graph]  # n of each edge's graph
    total = int(sizes.sum()) if sizes.numel() else 0
    edge = torch.repeat_interleave(torch.arange(src.numel(), device=src.device), sizes,
                                   output_size=total)
    column = torch.arange(total, device=src.device) - (torch.cumsum(sizes, 0) - sizes)[edge]
    n, start, base = sizes[edge], ptr[graph][edge], pair_ptr[graph][edge]
    return torch.stack([base + (src[edge] - start) * n + column,
                        base + (dst[edge] - start) * n + column])


def pair_ids_of_edges(pair_index: Tensor, edge_index: Tensor, num_nodes: int) -> Tensor:
    """For every edge ``(i, j)`` of ``edge_index [2, E]``, the column of ``pair_index [2, P]``
    holding the same ordered pair: ``[E]`` int64. Pairs are matched by the key ``i * N + j``
    (one sort of the pairs, a binary search per edge). Raises a ValueError when an edge is not
    among the pairs (a pair list cut to fewer hops than the edges span) or a pair is listed
    twice."""
    if edge_index.numel() == 0:
        return edge_index.new_zeros(0)
    pair_key = pair_index[0] * num_nodes + pair_index[1]
    sorted_key, order = torch.sort(pair_key)
    if sorted_key.numel() > 1 and bool((sorted_key[1:] == sorted_key[:-1]).any()):
        raise ValueError("pair_index lists a pair more than once")
    edge_key = edge_index[0] * num_nodes + edge_index[1]
    pos = torch.searchsorted(sorted_key, edge_key).clamp(max=max(sorted_key.numel() - 1, 0))
    if sorted_key.numel() == 0 or bool((sorted_key[pos] != edge_key).any()):
        raise ValueError("an edge of edge_index is not among the pairs of pair_index: list "
                         "all pairs, or the pairs within at least one hop")
    return order[pos]


def local_pairs(edge_index: Tensor, num_nodes: int, hops: int, *,
                ptr: Tensor | None = None) -> PairEncoding:
    """Every ordered pair ``(i, j)`` with hop distance ``d(i, j) <= hops`` (``(i, i)``
    included): ``values [P]`` (int64) is ``d(i, j)``; pairs sorted by ``i`` then ``j``
    (graph by graph, as the nodes), ``pair_ptr [G + 1]`` where each graph's pairs start.
    Breadth-first searches on the host, ``O(P)`` memory; the result is on the edges' device."""
    hops = check_non_negative_int("hops", hops)
    validate_graph(edge_index, num_nodes, None, ptr)
    return _local_pairs(simple_csr(edge_index, num_nodes), num_nodes, hops, ptr,
                        edge_index.device)


def _local_pairs(csr, num_nodes: int, hops: int, ptr: Tensor | None,
                 device: torch.device) -> PairEncoding:
    """:func:`local_pairs` on a validated graph's host CSR (shared with RRWP's walk)."""
    pair_index, dist = local_pairs_host(csr, hops)
    ptr = single_graph_ptr(num_nodes) if ptr is None else ptr.cpu()
    pair_ptr = np.searchsorted(pair_index[0], ptr.numpy())  # a graph's first pair
    return PairEncoding(torch.from_numpy(pair_index).to(device),
                        torch.from_numpy(dist).to(device),
                        torch.from_numpy(pair_ptr.astype(np.int64)).to(device))


def _check_hops(hops: int | None) -> None:
    if hops is not None and (isinstance(hops, bool) or not isinstance(hops, int) or hops < 0):
        raise ValueError(f"hops must be None or a non-negative int, got {hops!r}")


def _prepare(edge_index: Tensor, num_nodes: int, ptr: Tensor | None,
             edge_weight: Tensor | None, max_nodes: int) -> Tensor:
    return dense_ptr(edge_index, num_nodes, ptr, edge_weight, max_nodes,
                     "all-pairs encodings allocate n^2 values per graph")


def _per_bucket(edge_index: Tensor, ptr: Tensor, edge_weight: Tensor | None, dtype: torch.dtype,
                self_loops: bool, fn, width: int, out_dtype: torch.dtype) -> PairEncoding:
    """``fn(adj [B, n, n]) -> [B, n, n, width]`` over groups of equal-sized graphs, written
    into ``values [P, width]`` in pair order.

    The pair index is built per bucket beside the values (one broadcast add of the graphs'
    node offsets to the ``n x n`` local pattern), not by :func:`all_pairs`'s per-pair integer
    division; every row is written once, so the outputs start uninitialized."""
    device = ptr.device
    sizes = ptr[1:] - ptr[:-1]
    counts = sizes * sizes
    pair_ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    total = int(pair_ptr[-1])
    pair_index = torch.empty(2, total, dtype=torch.long, device=device)
    out = torch.empty(total, width, dtype=out_dtype, device=device)
    buckets = size_buckets(sizes)  # exact sizes: no padding; 0-node graphs have no pairs
    if not buckets:
        return PairEncoding(pair_index, out, pair_ptr)
    blocks = dense_adjacency(edge_index, ptr, buckets, edge_weight, dtype, self_loops)
    for bucket, adj in zip(buckets, blocks, strict=True):
        n = bucket.size
        g = bucket.graphs.to(device)
        rows = (pair_ptr[g].unsqueeze(1) + torch.arange(n * n, device=device)).flatten()
        local = torch.arange(n, device=device)
        start = ptr[g].view(-1, 1, 1)
        pair_index[0].index_copy_(0, rows, (start + local.view(1, n, 1)).expand(-1, n, n)
                                  .flatten())
        pair_index[1].index_copy_(0, rows, (start + local.view(1, 1, n)).expand(-1, n, n)
                                  .flatten())
        out.index_copy_(0, rows, fn(adj).reshape(-1, width).to(out_dtype))
    return PairEncoding(pair_index, out, pair_ptr)


def relative_random_walk_probs(
    edge_index: Tensor,
    num_nodes: int,
    num_steps: int,
    *,
    ptr: Tensor | None = None,
    edge_weight: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    max_nodes: int = PAIRWISE_MAX_NODES,
    hops: int | None = None,
    plan: ExecPlan = DEFAULT_PLAN,
) -> PairEncoding:
    """RRWP: ``values[p, k] = (M^k)_{ij}`` for the pair ``p = (i, j)``, ``k = 0..num_steps-1``,
    ``M = D^-1 A`` on the undirected graph with its self loops (a walk may stay on one, as in
    RWSE); a node without edges has a zero row. ``plan``: ``kernel`` ``compiled`` (CPU: one
    compiled loop over the graphs, sparse products, float64), ``tensor`` (batched dense
    products per size bucket, in ``compute_dtype``: float64 on the CPU, exact to rounding,
    and float32 elsewhere by default; CUDA) or ``auto`` (compiled for CPU tensors unless
    ``compute_dtype`` asks for another precision).

    ``hops``: only the pairs within ``hops`` hops (:func:`local_pairs`; any graph size), with
    the same values, exact (float64 on the host: one sparse walk of ``num_steps - 1`` steps
    per source, over the ``num_steps - 1``-hop ball it reaches); other pairs are not listed
    (with ``hops >= num_steps - 1`` those are exactly the pairs whose values are all 0)."""
    num_steps = check_positive_int("num_steps", num_steps)
    _check_hops(hops)
    if hops is not None:
        validate_graph(edge_index, num_nodes, edge_weight, ptr)
        # one host CSR for the searches and the walks (an edge of weight 0 carries no walk,
        # so pairs joined only through such edges, all-zero, are not listed)
        csr = simple_csr(edge_index, num_nodes, edge_weight)
        pairs = _local_pairs(csr, num_nodes, hops, ptr, edge_index.device)
        values = np.empty((pairs.pair_index.size(1), num_steps))
        local_walk_probs_host(csr, pairs.pair_index.cpu().numpy(), num_steps, values)
        return pairs._replace(values=torch.from_numpy(values).to(edge_index.device, dtype))
    ptr = _prepare(edge_index, num_nodes, ptr, edge_weight, max_nodes)
    compute_dtype = plan.compute_dtype
    compiled = use_compiled(plan.kernel, ptr.device) and compute_dtype in (None, torch.float64)
    if compiled and dtype in (torch.float32, torch.float64):
        sizes = ptr[1:] - ptr[:-1]
        pair_ptr = torch.cat([sizes.new_zeros(1), (sizes * sizes).cumsum(0)])
        total = int(pair_ptr[-1])
        pair_index = torch.empty(2, total, dtype=torch.long)
        values = torch.empty(total, num_steps, dtype=dtype)
        relative_walk_probs(simple_csr(edge_index, num_nodes, edge_weight), ptr.numpy(),
                            pair_ptr.numpy(), num_steps, pair_index.numpy(), values.numpy())
        return PairEncoding(pair_index, values, pair_ptr)
    if compute_dtype is None:
        compute_dtype = torch.float64 if ptr.device.type == "cpu" else torch.float32
    if edge_weight is not None and edge_weight.is_floating_point():
        edge_weight = weights_scaled_per_graph(edge_weight, edge_index, ptr)

    def powers(adj: Tensor) -> Tensor:
        deg = adj.sum(-1, keepdim=True)
        walk = torch.where(deg > 0, adj / deg.clamp(min=torch.finfo(adj.dtype).tiny), 0.0)
        # each power goes straight into its column of the output (in the output dtype): no
        # stack of K float64 matrices and no second conversion pass
        out = adj.new_empty(*adj.shape, num_steps, dtype=dtype)
        power = torch.eye(adj.size(-1), dtype=adj.dtype, device=adj.device).expand_as(adj)
        out[..., 0] = power
        for k in range(1, num_steps):
            power = power @ walk
            out[..., k] = power
        return out

    return _per_bucket(edge_index, ptr, edge_weight, compute_dtype, True, powers, num_steps,
                       dtype)


def shortest_path_distances(
    edge_index: Tensor,
    num_nodes: int,
    max_dist: int,
    *,
    ptr: Tensor | None = None,
    max_nodes: int = PAIRWISE_MAX_NODES,
    local: bool = False,
    plan: ExecPlan = DEFAULT_PLAN,
) -> PairEncoding:
    """Hop distances of all pairs (``values [P]``, int64), capped: pairs farther than
    ``max_dist`` hops or in different components get ``max_dist + 1``. Unweighted; an edge of
    any weight connects. ``local=True``: only the pairs within ``max_dist`` hops
    (:func:`local_pairs`, any graph size; a pair not listed is farther). ``plan.kernel``:
    ``compiled`` (CPU: one breadth-first search per source, cut at ``max_dist``), ``tensor``
    (boolean products per group of equal-sized graphs, on any device), ``auto`` the first for
    CPU tensors."""
    return shortest_paths(edge_index, num_nodes, max_dist, 0, ptr=ptr, max_nodes=max_nodes,
                          local=local, plan=plan)[0]


def shortest_paths(
    edge_index: Tensor,
    num_nodes: int,
    max_dist: int,
    path_hops: int,
    *,
    ptr: Tensor | None = None,
    max_nodes: int = PAIRWISE_MAX_NODES,
    local: bool = False,
    plan: ExecPlan = DEFAULT_PLAN,
) -> tuple[PairEncoding, Tensor | None]:
    """:func:`shortest_path_distances` and, for ``path_hops > 0``, :func:`shortest_path_edges`
    of its pairs (None otherwise), from one validation and one host graph: Graphormer's
    spatial and edge-encoding inputs (``SPD(path_hops=...)``)."""
    max_dist = check_positive_int("max_dist", max_dist)
    path_hops = check_non_negative_int("path_hops", path_hops)
    if local:
        validate_graph(edge_index, num_nodes, None, ptr)
        csr = simple_csr(edge_index.cpu(), num_nodes)
        encoding = _local_pairs(csr, num_nodes, max_dist, ptr, edge_index.device)
    else:
        ptr = _prepare(edge_index, num_nodes, ptr, None, max_nodes)
        compiled = use_compiled(plan.kernel, ptr.device)
        csr = simple_csr(edge_index.cpu(), num_nodes) if compiled or path_hops else None
        encoding = (_host_distances(csr, ptr, max_dist) if compiled
                    else _tensor_distances(edge_index, ptr, max_dist))
    path = (_path_edges(csr, edge_index, num_nodes, encoding.pair_index, path_hops, ptr)
            if path_hops else None)
    return encoding, path


def _host_distances(csr, ptr: Tensor, max_dist: int) -> PairEncoding:
    pair_index, dist, pair_ptr = all_pairs_distances_host(csr, host_array(ptr, np.int64),
                                                          max_dist)
    return PairEncoding(torch.from_numpy(pair_index), torch.from_numpy(dist),
                        torch.from_numpy(pair_ptr))


def _tensor_distances(edge_index: Tensor, ptr: Tensor, max_dist: int) -> PairEncoding:
    """Capped hop distances of all pairs by boolean products per group of equal-sized graphs
    (any device)."""

    def levels(adj: Tensor) -> Tensor:
        link = (adj > 0).to(torch.float32)
        n = adj.size(-1)
        dist = torch.full(adj.shape, max_dist + 1, dtype=torch.long, device=adj.device)
        reach = torch.eye(n, dtype=torch.float32, device=adj.device).expand_as(link).clone()
        dist[reach > 0] = 0
        for d in range(1, max_dist + 1):  # BFS levels as boolean products
            reach = (reach @ link + reach).clamp_(max=1.0)
            dist[(reach > 0) & (dist > d)] = d
        return dist.unsqueeze(-1)

    enc = _per_bucket(edge_index, ptr, None, torch.float32, False, levels, 1, torch.long)
    return enc._replace(values=enc.values.squeeze(-1))


def shortest_path_edges(
    edge_index: Tensor,
    num_nodes: int,
    pair_index: Tensor,
    max_hops: int,
    *,
    ptr: Tensor | None = None,
) -> Tensor:
    """The edges along one shortest path of every pair: Graphormer's edge-encoding input
    (Ying et al., "Do Transformers Really Perform Bad for Graph Representation?", NeurIPS
    2021, eq. 7), ``[P, max_hops]`` int64.

    Entry ``[p, t]`` is the edge of hop ``t`` on the path from ``i`` to ``j`` (pair ``p`` of
    ``pair_index [2, P]``, pairs within one graph), as the edge's position among its graph's
    edges in ``edge_index`` (graph-local, so that a collated ``Batch`` keeps it valid); -1
    past the path's end: the first ``min(d(i, j), max_hops)`` entries are edges, none for
    ``i == j`` or ``j`` in another component. Graphs are undirected: a hop ``u -> v`` takes an
    input edge ``u -> v`` if there is one, else ``v -> u``, the first of duplicates; any
    edge connects (weights are not read) and self loops are on no shortest path.

    A pair has one path, fixed by node ids alone as Graphormer's is by its Floyd-Warshall
    order: each node's predecessor on it is its smallest-id neighbour one hop closer to
    ``i``. One breadth-first search per source on the host (compiled), cut once the source's
    targets are reached, so a list of local pairs (:func:`local_pairs`) costs what those
    pairs cost. In a batch, ``ptr`` gives the graphs (``edge_index`` grouped by graph in
    graph order, as PyG collates it); the result is on ``pair_index``'s device.
    """
    max_hops = check_positive_int("max_hops", max_hops)
    validate_graph(edge_index, num_nodes, None, ptr)
    if (not isinstance(pair_index, Tensor) or pair_index.dim() != 2
            or pair_index.size(0) != 2 or pair_index.dtype not in (torch.int64, torch.int32)):
        raise ValueError("pair_index must be an integer tensor of shape [2, num_pairs], got "
                         f"{getattr(pair_index, 'dtype', type(pair_index).__name__)} "
                         f"{list(getattr(pair_index, 'shape', []))}")
    pairs = host_array(pair_index.cpu(), np.int64)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= num_nodes):
        raise ValueError(f"pair_index holds node ids outside [0, {num_nodes})")
    return _path_edges(simple_csr(edge_index.cpu(), num_nodes), edge_index, num_nodes,
                       pair_index, max_hops, ptr)


def _path_edges(csr, edge_index: Tensor, num_nodes: int, pair_index: Tensor, max_hops: int,
                ptr: Tensor | None) -> Tensor:
    """:func:`shortest_path_edges` on a validated graph and its host CSR."""
    pairs = np.ascontiguousarray(host_array(pair_index.cpu(), np.int64))
    edges = np.ascontiguousarray(host_array(edge_index.cpu(), np.int64))
    if ptr is not None and ptr.numel() > 2:
        hops = batch_path_edges_host(csr, edges, pairs, max_hops, host_array(ptr.cpu(),
                                                                             np.int64))
    else:
        hops = path_edges_host(csr, edges, pairs, max_hops)
    return torch.from_numpy(hops).to(pair_index.device)


def _apart(edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None,
           pair_index: Tensor) -> Tensor:
    """Whether the two nodes of each pair lie in different connected components (an edge of
    weight 0 connects nothing, as in the Laplacian)."""
    linked = edge_index if edge_weight is None else edge_index[:, edge_weight > 0]
    labels = connected_components(linked, num_nodes)
    return labels[pair_index[0]] != labels[pair_index[1]]


def resistance_distances(
    edge_index: Tensor,
    num_nodes: int,
    *,
    ptr: Tensor | None = None,
    edge_weight: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    max_nodes: int = PAIRWISE_MAX_NODES,
) -> PairEncoding:
    """Effective resistance of all pairs (``values [P]``): ``R_ij = L+_ii + L+_jj - 2 L+_ij``
    with ``L = D - A`` (weights are conductances) and ``L+`` its pseudo-inverse, which is the
    pseudo-inverse of each connected component's Laplacian; ``inf`` between components, 0 on
    the diagonal. Computed in float64 from one symmetric eigendecomposition per graph."""
    ptr = _prepare(edge_index, num_nodes, ptr, edge_weight, max_nodes)

    def resistance(adj: Tensor) -> Tensor:
        vals, vecs, nontrivial = laplacian_spectrum(adj)
        pinv = spectral_filter(vecs, pinv_weights(vals, nontrivial)).squeeze(-1)
        diag = pinv.diagonal(dim1=-2, dim2=-1)
        r = (diag.unsqueeze(-1) + diag.unsqueeze(-2) - 2.0 * pinv).clamp_(min=0.0)
        r.diagonal(dim1=-2, dim2=-1).zero_()
        return r.unsqueeze(-1)

    enc = _per_bucket(edge_index, ptr, edge_weight, torch.float64, False, resistance, 1, dtype)
    apart = _apart(edge_index, num_nodes, edge_weight, enc.pair_index)
    values = enc.values.squeeze(-1).masked_fill(apart, float("inf"))
    return enc._replace(values=values)


def heat_kernels(
    edge_index: Tensor,
    num_nodes: int,
    times,
    *,
    ptr: Tensor | None = None,
    edge_weight: Tensor | None = None,
    normalization: str = "none",
    keep_trivial: bool = False,
    dtype: torch.dtype = torch.float32,
    max_nodes: int = PAIRWISE_MAX_NODES,
) -> PairEncoding:
    """Heat kernels of all pairs, ``values [P, len(times)]``: ``values[p, s] = sum_k
    exp(-t_s lambda_k) v_k(i) v_k(j)`` for the pair ``p = (i, j)`` over the eigenpairs of the
    graph's Laplacian (``L = D - A`` by default, ``sym`` for ``I - D^-1/2 A D^-1/2``); 0
    between components. As GraphGPS's ``get_heat_kernels``, the eigenvalue-0 pairs are left
    out by default (with ``D - A``: ``exp(-t L)_ij - 1/n_c`` within a component of ``n_c``
    nodes);
    ``keep_trivial=True`` gives ``exp(-t L)`` itself. Its diagonal is
    :func:`graphpe.ops.spectral.heat_kernel_diagonals` (the same kernel). Float64 inside."""
    times = check_times(times)
    normalization = check_normalization(normalization)
    ptr = _prepare(edge_index, num_nodes, ptr, edge_weight, max_nodes)

    def heat(adj: Tensor) -> Tensor:
        vals, vecs, nontrivial = laplacian_spectrum(adj, normalization)
        return spectral_filter(vecs, heat_weights(vals, nontrivial, times, keep_trivial))

    enc = _per_bucket(edge_index, ptr, edge_weight, torch.float64, False, heat, len(times),
                      dtype)
    # exactly 0 between components (an eigenbasis may mix components of equal eigenvalues,
    # which leaves rounding noise there)
    apart = _apart(edge_index, num_nodes, edge_weight, enc.pair_index)
    return enc._replace(values=enc.values.masked_fill(apart.unsqueeze(-1), 0.0))
