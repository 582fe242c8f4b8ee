"""Spectral kernels of the graph Laplacian: ``V f(lambda) V^T`` per graph, from one dense
symmetric eigendecomposition per graph, batched over groups of equal-sized graphs.

- Heat kernel ``H_t = exp(-t L) = V exp(-t lambda) V^T`` for several times ``t``: all pairs in
  :func:`graphpe.ops.walk.heat_kernels`, the diagonal in :func:`heat_kernel_diagonals`.
- Pseudo-inverse ``L+ = sum_{lambda > 0} v v^T / lambda``: the resistance distance
  (:func:`graphpe.ops.walk.resistance_distances`) and GraphGPS's electrostatic encoding
  (:func:`electrostatic_encoding`).

The heat kernel diagonal and the electrostatic encoding are GraphGPS's (Rampasek et al., "Recipe for
a General, Powerful, Scalable Graph Transformer", NeurIPS 2022,
``graphgps/transform/posenc_stats.py``); the heat kernel diagonal as a structural encoding is from
Kreuzer et al. ("Rethinking Graph Transformers with Spectral Attention", NeurIPS 2021) via GraphGPS.

Every kernel here computes in float64 (on the data's device) through
:func:`laplacian_spectrum`, the one eigendecomposition they share, which solves with
:func:`graphpe.ops.eigen.dense.batched_eigh` (LAPACK on the CPU; on CUDA the batched solver that
avoids ``torch.linalg.eigh``'s slow path above 32 nodes). Graphs are dense ``n x n``, so this
is for graphs up to ``max_nodes`` (default 1,024) nodes.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable

import torch
from torch import Tensor

from graphpe.ops.checks import GraphRefusedError
from graphpe.ops.eigen.dense import batched_eigh
from graphpe.ops.graph import (
    bucket_node_index,
    connected_components,
    dense_adjacency,
    inv_sqrt_degree,
    single_graph_ptr,
    size_buckets,
    validate_graph,
)

SPECTRAL_MAX_NODES = 1024
HEAT_NORMALIZATIONS = ("none", "sym")
ELSTATIC_STATS = 10  # features per node of the electrostatic encoding


def check_times(times: object) -> tuple[float, ...]:
    """The diffusion times as a tuple of floats, or the ValueError that names the problem:
    ``times`` is a non-empty sequence (or one number) of finite, non-negative numbers."""
    if isinstance(times, Tensor):
        times = times.tolist()
    if isinstance(times, numbers.Real) and not isinstance(times, bool):
        times = (times,)
    if isinstance(times, (str, bytes)) or not isinstance(times, Iterable):
        raise ValueError(f"times must be a sequence of non-negative numbers, got {times!r}")
    values = tuple(times)
    if not values:
        raise ValueError("times must not be empty: give at least one diffusion time")
    for t in values:
        if isinstance(t, bool) or not isinstance(t, numbers.Real):
            raise ValueError(f"times must be numbers, got {t!r} in {list(values)!r}")
        if not (math.isfinite(t) and t >= 0):
            raise ValueError(f"times must be finite and non-negative, got {t!r}")
    return tuple(float(t) for t in values)


def check_normalization(normalization: object) -> str:
    if normalization not in HEAT_NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {HEAT_NORMALIZATIONS}, got "
                         f"{normalization!r}")
    return normalization  # type: ignore[return-value]


def dense_ptr(edge_index: Tensor, num_nodes: int, ptr: Tensor | None,
              edge_weight: Tensor | None, max_nodes: int, what: str) -> Tensor:
    """Validate the graphs of a kernel that densifies every graph and return ``ptr`` (one
    graph if None) on the edges' device; a graph above ``max_nodes`` is a ValueError that says
    ``what`` the kernel allocates."""
    validate_graph(edge_index, num_nodes, edge_weight, ptr)
    ptr = single_graph_ptr(num_nodes, edge_index.device) if ptr is None else \
        ptr.to(edge_index.device, torch.long)
    biggest = int((ptr[1:] - ptr[:-1]).max()) if ptr.numel() > 1 else 0
    if biggest > max_nodes:
        raise GraphRefusedError(f"a graph has {biggest} nodes: {what}, and "
                                f"max_nodes={max_nodes}")
    return ptr


def laplacian_spectrum(adj: Tensor, normalization: str = "none",
                       eigh_backend: str = "auto") -> tuple[Tensor, Tensor, Tensor]:
    """Eigenpairs of the Laplacians of adjacency blocks ``adj [B, n, n]`` (unpadded, self loops
    and duplicates already removed): ``(eigenvalues [B, n] ascending, eigenvectors [B, n, n]
    (columns), nontrivial [B, n])``, where ``nontrivial`` is False for the eigenvalue-0 pairs
    (one per connected component, isolated nodes included): eigenvalues up to
    ``1e-9 * max(1, lambda_max)``. ``none`` is ``L = D - A``; ``sym`` is
    ``I - D^-1/2 A D^-1/2`` with 0 on an isolated node's diagonal (Chung's convention)."""
    deg = adj.sum(-1)
    if normalization == "none":
        lap = torch.diag_embed(deg) - adj
    else:
        dis = inv_sqrt_degree(deg)
        lap = torch.diag_embed((deg > 0).to(adj.dtype)) - dis.unsqueeze(-1) * adj * \
            dis.unsqueeze(-2)
    vals, vecs = batched_eigh([lap], eigh_backend)[0]
    tol = 1e-9 * vals.abs().amax(-1, keepdim=True).clamp(min=1.0)
    return vals, vecs, vals > tol


def spectral_filter(vecs: Tensor, weights: Tensor) -> Tensor:
    """``V diag(w) V^T`` for every channel of ``weights [B, n, C]``: ``[B, n, n, C]``."""
    scaled = vecs.unsqueeze(1) * weights.transpose(1, 2).unsqueeze(2)  # [B, C, n, n]
    return (scaled @ vecs.transpose(-1, -2).unsqueeze(1)).permute(0, 2, 3, 1)


def heat_weights(vals: Tensor, nontrivial: Tensor, times: tuple[float, ...],
                 keep_trivial: bool) -> Tensor:
    """``exp(-t lambda)`` for every eigenvalue and time, ``[B, n, len(times)]``; 0 for the
    eigenvalue-0 pairs unless ``keep_trivial``."""
    t = torch.tensor(times, dtype=vals.dtype, device=vals.device)
    w = torch.exp(-vals.clamp(min=0.0).unsqueeze(-1) * t)
    return w if keep_trivial else w * nontrivial.unsqueeze(-1).to(w.dtype)


def pinv_weights(vals: Tensor, nontrivial: Tensor) -> Tensor:
    """``1 / lambda`` on the non-trivial eigenvalues, 0 on the eigenvalue-0 ones: the weights
    of the pseudo-inverse, ``[B, n, 1]``."""
    inv = torch.where(nontrivial, 1.0 / torch.where(nontrivial, vals, torch.ones_like(vals)),
                      torch.zeros_like(vals))
    return inv.unsqueeze(-1)


def per_bucket_nodes(edge_index: Tensor, num_nodes: int, ptr: Tensor,
                     edge_weight: Tensor | None, fn: Callable[[Tensor, Tensor], Tensor],
                     width: int, dtype: torch.dtype) -> Tensor:
    """``fn(adj [B, n, n] float64, node [B, n] global ids) -> [B, n, width]`` over groups of
    equal-sized graphs (no padding), written into ``[num_nodes, width]``."""
    out = torch.zeros(num_nodes, width, dtype=dtype, device=edge_index.device)
    buckets = size_buckets(ptr[1:] - ptr[:-1])  # exact sizes
    if not buckets:
        return out
    blocks = dense_adjacency(edge_index, ptr, buckets, edge_weight, torch.float64)
    for bucket, adj in zip(buckets, blocks, strict=True):
        node, _ = bucket_node_index(ptr, bucket)
        out[node.flatten()] = fn(adj, node).reshape(-1, width).to(dtype)
    return out


def heat_kernel_diagonals(
    edge_index: Tensor,
    num_nodes: int,
    times: Iterable[float],
    *,
    ptr: Tensor | None = None,
    edge_weight: Tensor | None = None,
    normalization: str = "none",
    keep_trivial: bool = False,
    dtype: torch.dtype = torch.float32,
    max_nodes: int = SPECTRAL_MAX_NODES,
) -> Tensor:
    r"""The diagonal of the heat kernel for every time, ``[num_nodes, len(times)]``:

    .. math:: \mathrm{hk}_{i,t} = \sum_{k} e^{-t \lambda_k} (v_k)_i^2

    over the eigenpairs :math:`(\lambda_k, v_k)` of the node's graph's Laplacian. By default
    the sum is GraphGPS's (``get_heat_kernels_diag``): ``L = D - A`` and the eigenvalue-0
    pairs (one per connected component) left out, which is ``exp(-t L)_ii - 1/n_c`` for a node
    in a component of ``n_c`` nodes (0 for an isolated node). ``keep_trivial=True`` keeps them
    and gives the heat kernel's diagonal itself, ``exp(-t L)_ii`` (1 at ``t = 0``).
    ``normalization="sym"`` uses ``I - D^-1/2 A D^-1/2`` instead (GraphGPS: always ``D - A``).
    Weights are conductances (GraphGPS ignores them)."""
    times = check_times(times)
    normalization = check_normalization(normalization)
    ptr = dense_ptr(edge_index, num_nodes, ptr, edge_weight, max_nodes,
                    "spectral encodings solve a dense n x n eigenproblem per graph")

    def diagonal(adj: Tensor, node: Tensor) -> Tensor:
        vals, vecs, nontrivial = laplacian_spectrum(adj, normalization)
        return (vecs * vecs) @ heat_weights(vals, nontrivial, times, keep_trivial)

    return per_bucket_nodes(edge_index, num_nodes, ptr, edge_weight, diagonal, len(times), dtype)


def electrostatic_encoding(
    edge_index: Tensor,
    num_nodes: int,
    *,
    ptr: Tensor | None = None,
    edge_weight: Tensor | None = None,
    per_component: bool = False,
    dtype: torch.dtype = torch.float32,
    max_nodes: int = SPECTRAL_MAX_NODES,
) -> Tensor:
    r"""ElstaticSE: GraphGPS's electrostatic encoding (``get_electrostatic_function_encoding``),
    ``[num_nodes, 10]``. With ``L = D - A`` of each graph, ``L+`` its pseudo-inverse and the
    potential :math:`E_{ij} = L^+_{ij} - L^+_{jj}` (0 on the diagonal), node ``i`` gets, as
    GraphGPS writes them (``std`` with Bessel's correction, as ``torch.std``):

    0-3. min, max, mean, std of column ``i``: :math:`E_{\cdot i}` (over the rows);
    4. min of row ``i``, :math:`E_{i \cdot}`;
    5. max of column ``i`` again (GraphGPS's line says "Max of Vj -> i" but reduces over
       ``dim=0`` like feature 1, so it repeats feature 1; kept for equal features);
    6-7. mean, std of row ``i``;
    8. :math:`\sum_j A_{ji} / d_j \, E_{ji}` and 9. :math:`\sum_j A_{ij} / d_i \, E_{ij}`
       (the potential averaged over the neighbours, two directions).

    ``L+`` is block diagonal over the connected components either way. GraphGPS takes the
    statistics over all ``n`` nodes of the graph, so in a disconnected graph a column also
    sees ``E_ij = -L+_jj`` for the ``i`` of other components, and a node's features depend on
    the components it is not connected to; ``per_component=True`` takes them over the node's
    component only (an isolated node then gets zeros). The default is GraphGPS's, which is the
    same on connected graphs. Where GraphGPS gives NaN this gives 0: an isolated node's
    ``1/d`` (GraphGPS's ``D^-1`` turns every feature 8-9 of the graph into NaN) and the std of
    one value (a 1-node graph or component). Computed from one eigendecomposition per graph
    (``L+ = sum_{lambda > 0} v v^T / lambda``)."""
    if not isinstance(per_component, bool):
        raise ValueError(f"per_component must be True or False, got {per_component!r}")
    ptr = dense_ptr(edge_index, num_nodes, ptr, edge_weight, max_nodes,
                    "spectral encodings solve a dense n x n eigenproblem per graph")
    labels = None
    if per_component:
        # an edge of weight 0 connects nothing (as in the Laplacian)
        linked = edge_index if edge_weight is None else edge_index[:, edge_weight > 0]
        labels = connected_components(linked, num_nodes)

    def features(adj: Tensor, node: Tensor) -> Tensor:
        vals, vecs, nontrivial = laplacian_spectrum(adj)
        pinv = spectral_filter(vecs, pinv_weights(vals, nontrivial)).squeeze(-1)
        pot = pinv - pinv.diagonal(dim1=-2, dim2=-1).unsqueeze(-2)  # E_ij = L+_ij - L+_jj
        if labels is None:
            same = torch.ones_like(pot, dtype=torch.bool)
        else:
            lab = labels[node]
            same = lab.unsqueeze(-1) == lab.unsqueeze(-2)
        col_min, col_max, col_mean, col_std = _masked_stats(pot, same, dim=-2)
        row_min, _, row_mean, row_std = _masked_stats(pot, same, dim=-1)
        deg = adj.sum(-1, keepdim=True)
        walk = torch.where(deg > 0, adj / torch.where(deg > 0, deg, torch.ones_like(deg)), 0.0)
        flow = walk * pot  # (D^-1 A)_ij E_ij
        return torch.stack([col_min, col_max, col_mean, col_std, row_min, col_max, row_mean,
                            row_std, flow.sum(-2), flow.sum(-1)], dim=-1)

    return per_bucket_nodes(edge_index, num_nodes, ptr, edge_weight, features, ELSTATIC_STATS,
                            dtype)


def _masked_stats(x: Tensor, mask: Tensor, dim: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """min, max, mean and std (Bessel-corrected; 0 for a single value) of ``x`` along ``dim``
    over the entries where ``mask`` holds (at least one per slice)."""
    count = mask.sum(dim).to(x.dtype)
    inf = torch.full_like(x, math.inf)
    low = torch.where(mask, x, inf).amin(dim)
    high = torch.where(mask, x, -inf).amax(dim)
    zero = torch.zeros_like(x)
    mean = torch.where(mask, x, zero).sum(dim) / count
    dev = torch.where(mask, x - mean.unsqueeze(dim), zero)
    var = (dev * dev).sum(dim) / (count - 1).clamp(min=1.0)
    return low, high, mean, var.sqrt()
