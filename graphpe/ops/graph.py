"""Graph structure kernels: validation, symmetrization, degrees, normalized operators,
connected components and size buckets.

Every function here takes plain tensors (``edge_index``, ``num_nodes``, optional ``ptr`` and
``edge_weight``) and works on any device. A batch of graphs is one graph with ``ptr`` marking
where each graph's nodes start (PyG's ``Batch.ptr``); kernels never loop over graphs in Python.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from graphpe.ops import aot

NORMALIZATIONS = ("sym", "rw", "none")


class UndirectedGraph(NamedTuple):
    """A simple undirected graph: both directions stored, sorted by (row, col), no self loops,
    no duplicates. ``edge_weight`` is ``None`` for an unweighted graph."""

    edge_index: Tensor
    edge_weight: Tensor | None
    num_nodes: int


INDEX_DTYPES = (torch.int64, torch.int32)


@aot.njit(cache=True, nogil=True)
def _index_range(ei):  # pragma: no cover - compiled
    lo, hi = ei[0, 0], ei[0, 0]
    for r in range(ei.shape[0]):
        for e in range(ei.shape[1]):
            lo = min(lo, ei[r, e])
            hi = max(hi, ei[r, e])
    return lo, hi


@aot.njit(cache=True, nogil=True)
def _crosses_graphs(ei, ptr):  # pragma: no cover - compiled
    """Whether an edge joins nodes of two different graphs (indices already in range)."""
    graph = np.empty(ptr[-1], dtype=np.int64)
    for g in range(ptr.shape[0] - 1):
        graph[ptr[g] : ptr[g + 1]] = g
    for e in range(ei.shape[1]):
        if graph[ei[0, e]] != graph[ei[1, e]]:
            return True
    return False


def index_range(ei: np.ndarray) -> tuple[int, int]:
    """Smallest and largest entry of a non-empty ``[2, E]`` index array, in one compiled
    pass."""
    lo, hi = _index_range(ei)
    return int(lo), int(hi)


def kernel_cache_location() -> str:
    """The folder numba caches ``graphpe.ops``' kernels in (as numba resolves it: under
    ``NUMBA_CACHE_DIR`` if set, else the package's ``__pycache__``, else a per-user folder
    where that is read-only), read off this module's first kernel."""
    return str(_index_range.dispatcher._cache._cache_path)


def check_num_nodes(num_nodes: int) -> None:
    """Raise ``ValueError`` unless ``num_nodes`` is a non-negative int (the check of
    :func:`validate_graph`, for callers that allocate per-node tensors before it runs)."""
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)):
        raise ValueError(f"num_nodes must be an int, got {type(num_nodes).__name__}")
    if num_nodes < 0:
        raise ValueError(f"num_nodes must be non-negative, got {num_nodes}")


def validate_graph(
    edge_index: Tensor,
    num_nodes: int,
    edge_weight: Tensor | None = None,
    ptr: Tensor | None = None,
) -> None:
    """Raise ``ValueError`` naming the problem if the inputs do not describe a valid graph.

    Checks: ``edge_index`` is an ``int64`` or ``int32`` tensor of shape ``[2, E]`` with every
    index in ``[0, num_nodes)`` (narrower integer types are refused: PyG would read ``uint8``
    as a mask and the others overflow past 127/32767 nodes); ``edge_weight`` (if given) is a
    floating tensor of shape ``[E]`` whose entries are finite and non-negative; ``ptr`` (if
    given) is a non-decreasing integer vector from 0 to ``num_nodes`` and no edge crosses from
    one graph into another.

    On CPU tensors the checks run on numpy views (a transform called per graph would
    otherwise spend more time dispatching these few reductions than computing its encoding).
    """
    if not isinstance(edge_index, Tensor):
        raise ValueError(f"edge_index must be a torch.Tensor, got {type(edge_index).__name__}")
    if edge_index.dtype not in INDEX_DTYPES:
        raise ValueError(f"edge_index must have an integer dtype (torch.int64 or torch.int32), "
                         f"got {edge_index.dtype}")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, num_edges], got {list(edge_index.shape)}")
    check_num_nodes(num_nodes)
    host = edge_index.device.type == "cpu"
    num_edges = edge_index.size(1)
    if num_edges > 0:
        if host:
            ei = edge_index.detach().numpy()
            lo, hi = index_range(ei)
        else:
            lo_t, hi_t = torch.aminmax(edge_index)
            lo, hi = int(lo_t), int(hi_t)
        if lo < 0 or hi >= num_nodes:
            bad = lo if lo < 0 else hi
            raise ValueError(
                f"edge_index contains node index {bad}, out of range for num_nodes={num_nodes}"
            )
    if edge_weight is not None:
        if not isinstance(edge_weight, Tensor):
            raise ValueError(
                f"edge_weight must be a torch.Tensor, got {type(edge_weight).__name__}"
            )
        if edge_weight.dim() != 1 or edge_weight.numel() != num_edges:
            raise ValueError(
                f"edge_weight must have shape [{num_edges}] (one weight per edge), "
                f"got {list(edge_weight.shape)}"
            )
        if not edge_weight.dtype.is_floating_point:
            raise ValueError(f"edge_weight must have a floating dtype, got {edge_weight.dtype}")
        if num_edges > 0:
            if edge_weight.device.type == "cpu" and edge_weight.dtype != torch.bfloat16:
                w = edge_weight.detach().numpy()
                finite, negative = bool(np.isfinite(w).all()), bool((w < 0).any())
            else:
                finite = bool(torch.isfinite(edge_weight).all())
                negative = bool((edge_weight < 0).any())
            if not finite:
                raise ValueError("edge_weight contains NaN or infinite values")
            if negative:
                raise ValueError("edge_weight contains negative values")
    if ptr is not None:
        if not isinstance(ptr, Tensor) or ptr.dim() != 1 or ptr.numel() < 1:
            raise ValueError("ptr must be a 1-D tensor [num_graphs + 1] of node offsets")
        if ptr.dtype.is_floating_point or ptr.dtype == torch.bool:
            raise ValueError(f"ptr must have an integer dtype, got {ptr.dtype}")
        p = ptr.detach().cpu().numpy()
        if int(p[0]) != 0 or int(p[-1]) != num_nodes:
            raise ValueError(
                f"ptr must start at 0 and end at num_nodes={num_nodes}, "
                f"got {int(p[0])}..{int(p[-1])}"
            )
        if p.size > 2 and bool((p[1:] < p[:-1]).any()):
            raise ValueError("ptr must be non-decreasing")
        if num_edges > 0 and p.size > 2:
            if host:
                crossing = _crosses_graphs(ei, p.astype(np.int64, copy=False))
            else:
                graph = batch_from_ptr(ptr.to(edge_index.device), num_nodes)
                crossing = bool((graph[edge_index[0]] != graph[edge_index[1]]).any())
            if crossing:
                raise ValueError("edge_index contains edges between different graphs of the batch")


def undirected_simple(
    edge_index: Tensor,
    num_nodes: int,
    edge_weight: Tensor | None = None,
) -> UndirectedGraph:
    """Symmetrize, drop self loops and merge duplicate edges.

    The undirected weight of ``{i, j}`` is the largest weight of any input edge between ``i``
    and ``j``, in either direction (1 for unweighted graphs). So an undirected graph given with
    both directions is unchanged, a directed graph becomes its underlying undirected graph, and
    a multigraph becomes a simple graph. The result stores both directions, sorted by
    ``(row, col)``.
    """
    row, col = edge_index[0].long(), edge_index[1].long()
    keep = row != col
    row, col = row[keep], col[keep]
    row, col = torch.cat([row, col]), torch.cat([col, row])
    key = row * max(num_nodes, 1) + col
    if edge_weight is None and key.device.type == "cpu":
        # numpy's unique (one sort) is several times faster than torch.unique on a CPU
        # thread, and large graphs spend a tenth of their Laplacian build here
        key = torch.from_numpy(np.unique(key.numpy()))
        weight = None
    elif edge_weight is None:
        key = torch.unique(key)
        weight = None
    else:
        w = edge_weight[keep]
        w = torch.cat([w, w])
        key, inverse = torch.unique(key, return_inverse=True)
        weight = torch.zeros(key.numel(), dtype=w.dtype, device=w.device)
        weight = weight.scatter_reduce(0, inverse, w, reduce="amax", include_self=False)
    n = max(num_nodes, 1)
    return UndirectedGraph(torch.stack([key // n, key % n]), weight, num_nodes)


def batch_from_ptr(ptr: Tensor, num_nodes: int | None = None) -> Tensor:
    """Graph id of every node, from node offsets ``ptr`` (the inverse of PyG's ``Batch.ptr``)."""
    sizes = ptr[1:] - ptr[:-1]
    graph_ids = torch.arange(sizes.numel(), device=ptr.device)
    return torch.repeat_interleave(graph_ids, sizes, output_size=num_nodes)


def per_node(per_graph: Tensor, ptr: Tensor | None, num_nodes: int) -> Tensor:
    """Rows of ``per_graph`` ``[G, ...]`` repeated for every node of their graph ``[N, ...]``;
    ``ptr`` None means one graph."""
    if per_graph.device.type == "cpu":  # numpy: torch.repeat costs ~20 us on a tiny tensor
        array = per_graph.numpy()
        if ptr is None:  # (np.repeat: ~1 us, a broadcast copy ~3)
            return torch.from_numpy(np.repeat(array, num_nodes, axis=0))
        counts = ptr.numpy()
        return torch.from_numpy(np.repeat(array, counts[1:] - counts[:-1], axis=0))
    if ptr is None:
        return per_graph.expand((num_nodes,) + per_graph.shape[1:]).contiguous()
    return torch.repeat_interleave(per_graph, ptr[1:] - ptr[:-1], dim=0, output_size=num_nodes)


def weights_scaled_per_graph(edge_weight: Tensor, edge_index: Tensor, ptr: Tensor) -> Tensor:
    """``edge_weight`` divided by the largest weight of its graph (computed in the weights' own
    dtype), so every weight lies in ``[0, 1]``. Operators that do not change when a graph's
    weights are scaled together (``D^-1 A``, ``D^-1/2 A D^-1/2``) can then be built in float32
    from weights of any finite size: 1e300 in float64 or 3e38 in float32 would otherwise
    overflow (degrees, or the cast) and 1e-300 underflow to an edgeless graph."""
    if edge_weight.numel() == 0:
        return edge_weight
    graph = torch.searchsorted(ptr, edge_index[0], right=True) - 1
    peak = edge_weight.new_zeros(ptr.numel() - 1).scatter_reduce(
        0, graph, edge_weight, reduce="amax", include_self=False)
    return edge_weight / peak[graph].clamp(min=torch.finfo(edge_weight.dtype).tiny)


def single_graph_ptr(num_nodes: int, device: torch.device | str | None = None) -> Tensor:
    return torch.tensor([0, num_nodes], dtype=torch.long, device=device)


def degree(
    edge_index: Tensor,
    num_nodes: int,
    edge_weight: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """(Weighted) out-degree of every node: ``sum_j A_ij`` over the stored edges."""
    row = edge_index[0]
    w = torch.ones(row.numel(), dtype=dtype, device=row.device) if edge_weight is None \
        else edge_weight.to(dtype)
    return torch.zeros(num_nodes, dtype=dtype, device=row.device).index_add_(0, row, w)


def edge_values(graph: UndirectedGraph, dtype: torch.dtype = torch.float32) -> Tensor:
    """Edge weights of ``graph`` as a dense vector (ones for an unweighted graph)."""
    if graph.edge_weight is None:
        return torch.ones(graph.edge_index.size(1), dtype=dtype, device=graph.edge_index.device)
    return graph.edge_weight.to(dtype)


def inv_sqrt_degree(deg: Tensor) -> Tensor:
    """``deg^{-1/2}`` with 0 for isolated nodes (Chung's convention: no division by zero)."""
    out = deg.pow(-0.5)
    return out.masked_fill_(deg <= 0, 0.0)


def laplacian_entries(
    graph: UndirectedGraph,
    normalization: str = "sym",
    dtype: torch.dtype = torch.float32,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Entries of the graph Laplacian, split into off-diagonal and diagonal parts.

    Returns ``(edge_index, off_diag_values, diag_values, deg)``.

    - ``sym``: ``L = I - D^{-1/2} A D^{-1/2}``, with ``L_ii = 0`` for an isolated node
      (Chung's convention), so that the multiplicity of eigenvalue 0 is the number of connected
      components, isolated nodes included.
    - ``rw``: the same symmetric matrix; ``L_rw = I - D^{-1} A`` is similar to it and its
      eigenvectors are ``D^{-1/2}`` times those of ``L_sym`` (see ``ops.eigen``).
    - ``none``: ``L = D - A``.
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
    w = edge_values(graph, dtype)
    deg = degree(graph.edge_index, graph.num_nodes, w, dtype)
    row, col = graph.edge_index
    if normalization == "none":
        return graph.edge_index, -w, deg, deg
    dis = inv_sqrt_degree(deg)
    off = -dis[row] * w * dis[col]
    diag = (deg > 0).to(dtype)
    return graph.edge_index, off, diag, deg


def sparse_operator(
    edge_index: Tensor,
    values: Tensor,
    num_nodes: int,
    diag: Tensor | None = None,
) -> Tensor:
    """A sparse CSR matrix from off-diagonal entries plus an optional diagonal."""
    if diag is not None:
        loop = torch.arange(num_nodes, device=edge_index.device)
        edge_index = torch.cat([edge_index, torch.stack([loop, loop])], dim=1)
        values = torch.cat([values, diag.to(values.dtype)])
    coo = torch.sparse_coo_tensor(
        edge_index, values, (num_nodes, num_nodes), check_invariants=False
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return coo.coalesce().to_sparse_csr()


def laplacian(
    edge_index: Tensor,
    num_nodes: int,
    edge_weight: Tensor | None = None,
    normalization: str = "sym",
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """The (normalized) Laplacian of the undirected simple graph underlying the input, as a
    sparse CSR tensor. See :func:`laplacian_entries` for the conventions."""
    validate_graph(edge_index, num_nodes, edge_weight)
    graph = undirected_simple(edge_index, num_nodes, edge_weight)
    ei, off, diag, _ = laplacian_entries(graph, normalization, dtype)
    if normalization == "rw":
        # The non-symmetric random-walk Laplacian itself: I - D^{-1} A.
        w = edge_values(graph, dtype)
        deg = degree(ei, num_nodes, w, dtype)
        inv = torch.where(deg > 0, 1.0 / deg.clamp(min=torch.finfo(dtype).tiny), 0.0)
        off = -inv[ei[0]] * w
    return sparse_operator(ei, off, num_nodes, diag)


def connected_components(
    edge_index: Tensor,
    num_nodes: int,
) -> Tensor:
    """Component label of every node: the smallest node index in its component.

    Runs scipy's union-find on the CPU (the structure is small next to any PE computed from it)
    and returns the labels on ``edge_index``'s device.
    """
    ei = edge_index.detach().cpu().numpy()
    import scipy.sparse as sp  # here: importing it takes ~0.1 s, which most processes skip
    from scipy.sparse.csgraph import connected_components as scipy_components

    adj = sp.coo_matrix(
        (np.ones(ei.shape[1], dtype=np.int8), (ei[0], ei[1])), shape=(num_nodes, num_nodes)
    )
    _, labels = scipy_components(adj, directed=True, connection="weak")
    labels = torch.from_numpy(labels.astype(np.int64))
    # Relabel each component by its smallest node, so labels do not depend on scipy's order.
    first = torch.full((int(labels.max()) + 1 if num_nodes else 0,), num_nodes, dtype=torch.long)
    first = first.scatter_reduce(0, labels, torch.arange(num_nodes), reduce="amin")
    return first[labels].to(edge_index.device)


def components_per_graph(labels: Tensor, ptr: Tensor) -> Tensor:
    """Number of connected components of every graph of the batch, from node labels."""
    num_nodes = labels.numel()
    is_root = labels == torch.arange(num_nodes, device=labels.device)
    graph = batch_from_ptr(ptr, num_nodes)
    counts = torch.zeros(ptr.numel() - 1, dtype=torch.long, device=labels.device)
    return counts.index_add_(0, graph[is_root], torch.ones_like(graph[is_root]))


class SizeBucket(NamedTuple):
    """Graphs whose node counts round up to the same padded size ``size``."""

    size: int
    graphs: Tensor  # graph ids in the batch, ascending


# Padded size <= 1.25 x the graph's own: a padded n^3 eigh then costs at most 1.95x the
# exact-size one (n^2 memory and products at most 1.56x). Coarser buckets (n_max / 4 wide, as
# before) padded an 11-node graph to 20 nodes in a 9-38 node batch: 6x the eigh work.
PADDING_GROWTH = 1.25


def bucket_growth_for(sizes: Tensor, exact_from_graphs: int = 1024) -> float | None:
    """How to bucket a batch by size: exact sizes (None) for a dataset chunk of at least
    ``exact_from_graphs`` graphs, where every size has enough graphs for its own batched call
    to pay; otherwise sizes rounded up to a geometric ladder (:data:`PADDING_GROWTH`), since
    a training batch (a few hundred graphs over dozens of sizes) would otherwise cost dozens
    of small calls, whose launch overhead dominates on a GPU."""
    return None if sizes.numel() >= exact_from_graphs else PADDING_GROWTH


def size_ladder(largest: int, growth: float = PADDING_GROWTH) -> list[int]:
    """Padded sizes ``1, 2, ..., 8`` and then each about ``growth`` times the last (rounded
    up), up to at least ``largest``: every size ``n`` rounds up to less than ``growth * n``."""
    ladder = list(range(1, 9))
    while ladder[-1] < largest:
        ladder.append(math.ceil(ladder[-1] * growth))
    return ladder


def size_buckets(sizes: Tensor, granularity: int = 1, max_size: int | None = None,
                 growth: float | None = None) -> list[SizeBucket]:
    """Group graphs by node count rounded up to a multiple of ``granularity``, or with
    ``growth`` to the next size of :func:`size_ladder` (padding at most ``growth`` x).

    Graphs with 0 nodes are left out, and so are graphs larger than ``max_size`` (the caller
    sends those down its sparse path).
    """
    if isinstance(granularity, bool) or not isinstance(granularity, int) or granularity < 1:
        raise ValueError(f"granularity must be an int >= 1, got {granularity!r}")
    if growth is not None and not growth > 1.0:
        raise ValueError(f"growth must be > 1, got {growth!r}")
    sizes = sizes.detach().cpu()
    keep = sizes > 0
    if max_size is not None:
        keep &= sizes <= max_size
    ids = torch.nonzero(keep).flatten()
    if ids.numel() == 0:
        return []
    if growth is None:
        padded = (sizes + granularity - 1) // granularity * granularity
    else:
        # (the ladder reaches the largest kept graph: only kept graphs are looked up on it)
        ladder = torch.tensor(size_ladder(int(sizes[ids].max()), growth))
        padded = torch.zeros_like(sizes)
        padded[ids] = ladder[torch.searchsorted(ladder, sizes[ids])]
    order = torch.argsort(padded[ids], stable=True)
    ids, padded_sorted = ids[order], padded[ids][order]
    values, counts = torch.unique_consecutive(padded_sorted, return_counts=True)
    return [
        SizeBucket(int(v), g)
        for v, g in zip(values.tolist(), torch.split(ids, counts.tolist()), strict=True)
    ]


def bucket_groups(
    buckets: list[SizeBucket], itemsize: int, budget_bytes: int
) -> list[list[SizeBucket]]:
    """Split buckets into groups whose padded ``[B, n, n]`` blocks take at most
    ``budget_bytes`` together (a bucket too large for one group is cut into slices of its
    graphs), so that a batch of mid-sized graphs is densified a group at a time."""
    groups: list[list[SizeBucket]] = [[]]
    used = 0
    for bucket in buckets:
        per_graph = itemsize * bucket.size * bucket.size
        graphs = bucket.graphs
        while graphs.numel():
            room = max(0, budget_bytes - used) // per_graph
            if room == 0:
                if used == 0:
                    room = 1  # one graph above the budget goes alone
                else:
                    groups.append([])
                    used = 0
                    continue
            take = graphs[:room]
            groups[-1].append(SizeBucket(bucket.size, take))
            used += per_graph * take.numel()
            graphs = graphs[room:]
    return [g for g in groups if g]


def dense_adjacency(
    edge_index: Tensor,
    ptr: Tensor,
    buckets: list[SizeBucket],
    edge_weight: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    self_loops: bool = False,
) -> list[Tensor]:
    """Padded dense adjacency matrices ``[B, n, n]``, one per size bucket, from raw edges.

    The matrices are those of the undirected simple graph (:func:`undirected_simple`): both
    directions are written, self loops are dropped (kept on the diagonal with ``self_loops``)
    and duplicates keep their largest weight.
    All buckets live in one flat buffer filled by a single scatter, so no sort of the edges is
    needed; edges of graphs outside every bucket are skipped. Padded rows and columns are 0.
    """
    device = edge_index.device
    num_graphs = ptr.numel() - 1
    num_nodes = int(ptr[-1])
    if not buckets:
        return []
    sizes = torch.tensor([b.size for b in buckets], dtype=torch.long)
    counts = torch.tensor([b.graphs.numel() for b in buckets], dtype=torch.long)
    bucket_offsets = torch.cat([torch.zeros(1, dtype=torch.long), (counts * sizes**2).cumsum(0)])
    base = torch.full((num_graphs,), -1, dtype=torch.long)
    width = torch.zeros(num_graphs, dtype=torch.long)
    for b, bucket in enumerate(buckets):  # a handful of buckets, not graphs
        slots = torch.arange(bucket.graphs.numel())
        base[bucket.graphs] = bucket_offsets[b] + slots * bucket.size**2
        width[bucket.graphs] = bucket.size
    base, width = base.to(device), width.to(device)

    graph_of_node = batch_from_ptr(ptr, num_nodes)
    local = torch.arange(num_nodes, device=device) - ptr[graph_of_node]
    # Flat position of row `node` in its graph's block: edge (u, v) lands at row_base[u] + local[v].
    row_base = base[graph_of_node] + local * width[graph_of_node]
    row, col = edge_index[0], edge_index[1]
    if not bool((base >= 0).all()):
        keep = row_base[row] >= 0
        row, col = row[keep], col[keep]
        edge_weight = None if edge_weight is None else edge_weight[keep]
    index = torch.cat([row_base[row] + local[col], row_base[col] + local[row]])
    flat = torch.zeros(int(bucket_offsets[-1]), dtype=dtype, device=device)
    if edge_weight is None:
        flat[index] = 1.0
    else:
        value = edge_weight.to(dtype)
        flat.scatter_reduce_(0, index, torch.cat([value, value]), reduce="amax", include_self=True)
    blocks = [
        flat[int(bucket_offsets[b]) : int(bucket_offsets[b + 1])].view(-1, bk.size, bk.size)
        for b, bk in enumerate(buckets)
    ]
    if not self_loops:
        for block in blocks:
            block.diagonal(dim1=-2, dim2=-1).zero_()  # self loops were written there; drop them
    return blocks


def directed_dense_adjacency(edge_index: Tensor, ptr: Tensor, buckets: list[SizeBucket],
                             edge_weight: Tensor | None = None) -> list[Tensor]:
    """Padded float64 adjacency blocks ``[B, n, n]`` per size bucket, ``A[i, j]`` for the edge
    ``i -> j`` (duplicates: the largest weight): the directed counterpart of
    :func:`dense_adjacency`, self loops kept on the diagonal."""
    device = edge_index.device
    num_nodes = int(ptr[-1])
    graph = batch_from_ptr(ptr, num_nodes)
    local = torch.arange(num_nodes, device=device) - ptr[graph]
    # each graph's bucket and its slot in that bucket's block (-1: a graph with no nodes)
    bucket_of = torch.full((ptr.numel() - 1,), -1, dtype=torch.long, device=device)
    slot = torch.full_like(bucket_of, -1)
    blocks = []
    for b, bucket in enumerate(buckets):
        graphs = bucket.graphs.to(device)
        bucket_of[graphs], slot[graphs] = b, torch.arange(graphs.numel(), device=device)
        blocks.append(torch.zeros(graphs.numel(), bucket.size, bucket.size,
                                  dtype=torch.float64, device=device))
    src, dst = edge_index
    weight = (torch.ones(src.numel(), dtype=torch.float64, device=device) if edge_weight is None
              else edge_weight.to(torch.float64))
    edge_bucket = bucket_of[graph[src]]
    for b, block in enumerate(blocks):
        here = edge_bucket == b
        s, d = src[here], dst[here]
        flat = (slot[graph[s]] * block.size(1) + local[s]) * block.size(1) + local[d]
        block.view(-1).scatter_reduce_(0, flat, weight[here], reduce="amax", include_self=True)
    return blocks


def node_range_subgraph(
    edge_index: Tensor, edge_weight: Tensor | None, start: int, end: int
) -> tuple[Tensor, Tensor | None]:
    """Edges among nodes ``start..end-1`` (one graph of a batch), relabelled from 0."""
    inside = (edge_index[0] >= start) & (edge_index[0] < end)
    sub = edge_index[:, inside] - start
    return sub, None if edge_weight is None else edge_weight[inside]


def bucket_node_index(ptr: Tensor, bucket: SizeBucket) -> tuple[Tensor, Tensor]:
    """For a bucket's padded ``[B, n]`` node grid: the global node id of every slot (0 where
    padded) and a mask of the slots that hold a real node."""
    device = ptr.device
    g = bucket.graphs.to(device)
    start, size = ptr[g], ptr[g + 1] - ptr[g]
    idx = torch.arange(bucket.size, device=device)
    inside = idx.unsqueeze(0) < size.unsqueeze(1)
    node = torch.where(inside, start.unsqueeze(1) + idx.unsqueeze(0), torch.zeros_like(idx))
    return node, inside



aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
