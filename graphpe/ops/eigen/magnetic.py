r"""The magnetic Laplacian of a directed graph and its smallest eigenpairs, for one or several
potentials ``q`` (the magnetic Laplacian encoding, :mod:`graphpe.encodings.maglap`).

On CPU tensors one compiled call over all graphs and potentials, each matrix solved at its own
size (:mod:`graphpe.ops.eigen.hermitian`); otherwise one batched ``eigh`` over a size bucket's
graphs and potentials together; graphs above the dense limit per connected component, by
graphpe's thick-restart Lanczos on the complex Hermitian matrix (components of at least
:data:`LANCZOS_MIN_NODES` nodes) or scipy's ``eigsh``.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from scipy.sparse.csgraph import connected_components as scipy_components
from torch import Tensor

from graphpe.ops.checks import check_choice, check_positive_int
from graphpe.ops.eigen.dense import batched_eigh
from graphpe.ops.eigen.hermitian import PHASE_TOL, dense_magnetic_eigenpairs_host
from graphpe.ops.eigen.lanczos import thick_restart_lanczos
from graphpe.ops.eigen.tensor import DENSE_MAX_NODES
from graphpe.ops.graph import (
    batch_from_ptr,
    bucket_groups,
    bucket_growth_for,
    bucket_node_index,
    directed_dense_adjacency,
    inv_sqrt_degree,
    node_range_subgraph,
    single_graph_ptr,
    size_buckets,
    validate_graph,
)
from graphpe.ops.host import KERNELS, host_array, use_compiled

MAGLAP_NORMALIZATIONS = ("sym", "none")
ARPACK_TOL = 1e-10
# Components of at least this many nodes are solved by thick-restart Lanczos with partial
# reorthogonalization (graphpe.ops.eigen.lanczos, complex128), to a residual
# ||L v - lambda v|| <= LANCZOS_TOL * (the spectrum's bound): on ogbn-arxiv (169,343 nodes,
# k = 16, one thread) ARPACK's eigsh takes about 50 s, most of it reorthogonalizing its 33
# complex vectors at each of 1,500 products. Smaller ones (and any Lanczos does not converge)
# by ARPACK as before.
LANCZOS_MIN_NODES = 4096
LANCZOS_TOL = 1e-9


class MagneticEigenpairs(NamedTuple):
    """``eigvals`` ``[G, Q, k]`` (float64, ascending per graph and potential), ``eigvecs``
    ``[N, Q, k]`` (complex128, unit columns over each graph's nodes), ``mask`` ``[G, k]``
    (True where the column holds a real eigenpair: ``j < n`` for a graph of ``n`` nodes)."""

    eigvals: Tensor
    eigvecs: Tensor
    mask: Tensor


def check_q(name: str, value: object) -> tuple[float, ...]:
    """``value`` as a tuple of floats: a number, or a non-empty list of numbers, each in
    ``[0, 1/2]`` (``L_q`` has period 1 in ``q`` and ``L_{1-q}`` is the conjugate of ``L_q``,
    with the same eigenvalues, so ``[0, 1/2]`` holds every operator)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items or not all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                            and math.isfinite(v) and 0.0 <= v <= 0.5 for v in items):
        raise ValueError(f"{name} must be a number in [0, 0.5] or a non-empty list of them, "
                         f"got {value!r}")
    return tuple(float(v) for v in items)



def magnetic_eigenpairs(edge_index: Tensor, num_nodes: int, k: int,
                        q: float | tuple[float, ...] = 0.1, *, ptr: Tensor | None = None,
                        edge_weight: Tensor | None = None, normalization: str = "sym",
                        relative_q: bool = False, dense_max_nodes: int = DENSE_MAX_NODES,
                        max_dense_bytes: int = 256 * 2**20,
                        kernel: str = "auto") -> MagneticEigenpairs:
    r"""The ``k`` smallest eigenpairs of every graph's magnetic Laplacian, for each potential
    of ``q``.

    With :math:`A_{uv}` the weight of the edge :math:`u \to v` (1 without weights; duplicates
    keep their largest weight; self loops dropped), :math:`A_s = \max(A, A^\top)` entrywise the
    symmetrized adjacency, :math:`D_s` its degrees, :math:`B = [A > 0]` the edges' directions and
    :math:`\Theta_q = 2\pi q (B - B^\top)`:

    .. math:: L_q = I - D_s^{-1/2} (A_s \circ e^{i \Theta_q}) D_s^{-1/2} \quad (\texttt{sym}),
       \qquad L_q = D_s - A_s \circ e^{i \Theta_q} \quad (\texttt{none}),

    a Hermitian matrix (Geisler et al., "Transformers Meet Directed Graphs", ICML 2023). An edge
    given both ways has phase 0; without weights :math:`A_s` is 1 on the pairs joined either way.
    ``sym`` puts 0 on an isolated node's diagonal (Chung's convention, as LapPE): with
    ``q = 0``, :math:`L_0` is LapPE's Laplacian of the underlying undirected graph. Its
    eigenvalues lie in ``[0, 2]`` (``sym``).

    With ``relative_q`` each graph's potentials are divided by its number of one-way pairs
    (node pairs joined in one direction only), capped at its node count and at least 1
    (Geisler et al.'s ``q_absolute=False``, Huang et al.'s ``dynamic_q``).

    Every eigenpair is kept, none dropped as trivial (at ``q > 0`` the smallest carries
    direction). A graph of ``n < k`` nodes has ``k - n`` padded columns: zero vectors, eigenvalue
    0, ``mask`` False. An eigenvector is defined up to a unit complex factor; each column is
    turned by :func:`canonical_phases`. Vectors of a repeated eigenvalue are an arbitrary
    orthonormal basis of its space.

    Graphs up to ``dense_max_nodes`` nodes are solved densely in complex128. On CPU tensors
    (``kernel`` ``auto`` or ``compiled``) by one compiled call over all graphs and potentials,
    each matrix solved at its own size (:func:`magnetic_eigenpairs_host`); otherwise
    (``tensor``, and any device) by one batched ``eigh`` per size bucket over its graphs and
    potentials (at most ``max_dense_bytes`` of matrices at once). Both give the same pairs to
    rounding. Larger graphs are solved per connected component: from
    :data:`LANCZOS_MIN_NODES` nodes by graphpe's thick-restart Lanczos in complex128
    (:func:`~graphpe.ops.eigen.lanczos.thick_restart_lanczos`), smaller ones (and any it does
    not converge on) by scipy's ``eigsh`` (Lanczos, then shift-invert where it does not
    converge).

    Args:
        edge_index: ``[2, E]`` directed edges of all graphs (node ids global to the batch).
        num_nodes: total number of nodes.
        k: eigenpairs kept per graph and potential.
        q: the potential, or a tuple of them, each in ``[0, 1/2]`` (default 0.1).
        ptr: ``[G + 1]`` node offsets of the graphs; one graph if None.
        edge_weight: ``[E]`` finite non-negative weights, or None.
        normalization: ``sym`` (default) or ``none``.
        relative_q: divide ``q`` by each graph's one-way pairs (default False).
        dense_max_nodes: largest graph solved densely.
        max_dense_bytes: memory of the dense matrices built at once (``tensor`` kernel).
        kernel: ``auto`` (compiled on CPU tensors), ``compiled`` or ``tensor``.
    """
    check_positive_int("k", k)
    qs = check_q("q", q)
    check_choice("normalization", normalization, MAGLAP_NORMALIZATIONS)
    check_choice("kernel", kernel, KERNELS)
    validate_graph(edge_index, num_nodes, edge_weight, ptr)
    device = edge_index.device
    if use_compiled(kernel, device):
        return _compiled_eigenpairs(edge_index, num_nodes, k, qs, ptr, edge_weight,
                                    normalization, relative_q, dense_max_nodes)
    ptr = single_graph_ptr(num_nodes, device) if ptr is None else ptr.to(device, torch.long)
    sizes = ptr.diff()
    num_graphs = sizes.numel()
    potentials = torch.tensor(qs, dtype=torch.float64, device=device).expand(num_graphs, -1)
    if relative_q:
        one_way = torch.minimum(_one_way_pairs(edge_index, edge_weight, ptr), sizes)
        potentials = potentials / one_way.clamp(min=1).unsqueeze(1)
    pairs = MagneticEigenpairs(
        torch.zeros(num_graphs, len(qs), k, dtype=torch.float64, device=device),
        torch.zeros(num_nodes, len(qs), k, dtype=torch.complex128, device=device),
        torch.arange(k, device=device).unsqueeze(0) < sizes.unsqueeze(1))
    _bucketed_eigenpairs(pairs, edge_index, edge_weight, ptr, potentials, normalization,
                         dense_max_nodes, max_dense_bytes)
    _large_graph_eigenpairs(pairs, edge_index, edge_weight, ptr, potentials, normalization,
                            dense_max_nodes)
    return pairs


def _compiled_eigenpairs(edge_index: Tensor, num_nodes: int, k: int, qs: tuple[float, ...],
                         ptr: Tensor | None, edge_weight: Tensor | None, normalization: str,
                         relative_q: bool, dense_max_nodes: int) -> MagneticEigenpairs:
    """:func:`magnetic_eigenpairs` on the CPU's compiled path
    (:func:`magnetic_eigenpairs_host`), as tensors."""
    ptr_np = None if ptr is None else host_array(ptr, np.int64)
    vals, vecs = magnetic_eigenpairs_host(edge_index, num_nodes, k, qs, ptr_np, edge_weight,
                                          normalization, relative_q, dense_max_nodes)
    sizes = torch.from_numpy(np.diff(ptr_np) if ptr_np is not None
                             else np.array([num_nodes]))
    return MagneticEigenpairs(torch.from_numpy(vals), torch.from_numpy(vecs),
                              torch.arange(k).unsqueeze(0) < sizes.unsqueeze(1))


def _bucketed_eigenpairs(pairs: MagneticEigenpairs, edge_index: Tensor,
                         edge_weight: Tensor | None, ptr: Tensor, potentials: Tensor,
                         normalization: str, dense_max_nodes: int,
                         max_dense_bytes: int) -> None:
    """The pairs of the graphs up to ``dense_max_nodes`` nodes into ``pairs`` (zero on entry),
    for the potentials ``[G, Q]``: one batched ``eigh`` per size bucket over its graphs and
    potentials (at most ``max_dense_bytes`` of matrices at once), phases by
    :func:`canonical_phases`."""
    eigvals, eigvecs, mask = pairs
    device = edge_index.device
    num_q, k = potentials.size(1), eigvals.size(2)
    sizes = ptr.diff()
    buckets = size_buckets(sizes, 1, dense_max_nodes, growth=bucket_growth_for(sizes))
    for group in bucket_groups(buckets, 16 * num_q, max_dense_bytes):
        blocks = directed_dense_adjacency(edge_index, ptr, group, edge_weight)
        laplacians = []
        for bucket, directed in zip(group, blocks, strict=True):
            inside = bucket_node_index(ptr, bucket)[1]
            lap = _dense_magnetic_laplacian(directed, inside, potentials[bucket.graphs.to(device)],
                                            normalization)
            laplacians.append(lap.reshape(-1, bucket.size, bucket.size))
        for bucket, (vals, vecs) in zip(group, batched_eigh(laplacians), strict=True):
            graphs, m = bucket.graphs.to(device), min(k, bucket.size)
            node, inside = bucket_node_index(ptr, bucket)
            vals = vals.reshape(graphs.numel(), num_q, bucket.size)[..., :m]
            vecs = vecs.reshape(graphs.numel(), num_q, bucket.size, bucket.size)[..., :m]
            valid = mask[graphs, :m].unsqueeze(1)  # [B, 1, m]
            vecs = vecs * (inside[:, None, :, None] & valid.unsqueeze(-2))  # padding: exact 0
            vecs = vecs * canonical_phases(vecs)
            eigvals[graphs, :, :m] = torch.where(valid, vals, torch.zeros_like(vals))
            eigvecs[node[inside], :, :m] = vecs.transpose(1, 2)[inside]


def _large_graph_eigenpairs(pairs: MagneticEigenpairs, edge_index: Tensor,
                            edge_weight: Tensor | None, ptr: Tensor, potentials: Tensor,
                            normalization: str, dense_max_nodes: int) -> None:
    """The pairs of the graphs above ``dense_max_nodes`` nodes into ``pairs``, for the
    potentials ``[G, Q]``: each graph per connected component (:func:`_sparse_smallest`),
    phases by :func:`canonical_phases`."""
    eigvals, eigvecs, _ = pairs
    device, k = edge_index.device, eigvals.size(2)
    for g in torch.nonzero(ptr.diff() > dense_max_nodes).flatten().tolist():
        start, end = int(ptr[g]), int(ptr[g + 1])
        sub_ei, sub_w = node_range_subgraph(edge_index, edge_weight, start, end)
        vals, vecs = _sparse_smallest(sub_ei, sub_w, end - start, k,
                                      potentials[g].tolist(), normalization)
        vals, vecs = torch.from_numpy(vals).to(device), torch.from_numpy(vecs).to(device)
        eigvals[g] = vals
        eigvecs[start:end] = (vecs * canonical_phases(vecs)).transpose(0, 1)


def magnetic_eigenpairs_host(edge_index: Tensor, num_nodes: int, k: int,
                             qs: tuple[float, ...] | np.ndarray, ptr: np.ndarray | None = None,
                             edge_weight: Tensor | None = None, normalization: str = "sym",
                             relative_q: bool = False, dense_max_nodes: int = DENSE_MAX_NODES,
                             per_node: bool = False) -> tuple[np.ndarray, ...]:
    """:func:`magnetic_eigenpairs` of CPU tensors (already validated) as numpy arrays
    ``(eigvals [G, Q, k] float64, eigvecs [N, Q, k] complex128)``, or with ``per_node`` per
    node: ``(pe [N, Q, k, 2], eigvals [N, Q, k])`` float32 (real and imaginary parts last)
    and ``mask [N, k]``. Graphs up to ``dense_max_nodes`` nodes
    in one compiled call (:func:`~graphpe.ops.eigen.hermitian.dense_magnetic_eigenpairs_host`:
    each graph's directed adjacency, ``L_q`` for every potential, a Hermitian ``eigh`` of
    exactly its size (:func:`graphpe.ops.eigen.hermitian.hermitian_eigh`), phases as
    :func:`canonical_phases`; batches of many nodes split over threads by
    :func:`~graphpe.ops.host.run_over_graphs`), larger ones by :func:`_sparse_smallest`.
    ``ptr`` None means one graph."""
    ei = host_array(edge_index, np.int64)
    has_weight = edge_weight is not None
    weight = host_array(edge_weight, np.float64) if has_weight else _NO_WEIGHTS
    ptr_np = np.array([0, num_nodes], dtype=np.int64) if ptr is None else ptr
    qs_np = qs if isinstance(qs, np.ndarray) else np.array(qs, dtype=np.float64)
    outputs, big = dense_magnetic_eigenpairs_host(
        ei[0], ei[1], weight, has_weight, ptr_np, qs_np, k, normalization == "sym", relative_q,
        dense_max_nodes, per_node)
    if big:
        _large_graph_eigenpairs_host(outputs, edge_index, edge_weight, ptr_np, k, qs,
                                     normalization, relative_q, dense_max_nodes, per_node)
    return outputs


_NO_WEIGHTS = np.empty(0)


def _large_graph_eigenpairs_host(outputs: tuple[np.ndarray, ...], edge_index: Tensor,
                                 edge_weight: Tensor | None, ptr: np.ndarray, k: int,
                                 qs: tuple[float, ...] | np.ndarray, normalization: str,
                                 relative_q: bool, dense_max_nodes: int,
                                 per_node: bool) -> None:
    """The pairs of the graphs above ``dense_max_nodes`` nodes into the ``outputs`` of
    :func:`magnetic_eigenpairs_host` (each graph per connected component,
    :func:`_sparse_smallest`; its potentials relative to its own one-way pairs where
    ``relative_q``), phases by :func:`canonical_phases`."""
    num_q = len(qs)
    sizes = np.diff(ptr)
    for g in np.flatnonzero(sizes > dense_max_nodes).tolist():
        start, end = int(ptr[g]), int(ptr[g + 1])
        sub_ei, sub_w = node_range_subgraph(edge_index, edge_weight, start, end)
        potentials = [float(q) for q in qs]
        if relative_q:
            sub_ptr = torch.tensor([0, end - start])
            one_way = min(float(_one_way_pairs(sub_ei, sub_w, sub_ptr)[0]), end - start)
            potentials = [q / max(one_way, 1.0) for q in potentials]
        vals, vecs = _sparse_smallest(sub_ei, sub_w, end - start, k, potentials,
                                      normalization)
        vecs_t = torch.from_numpy(vecs)
        vecs = (vecs_t * canonical_phases(vecs_t)).transpose(0, 1).numpy()
        if per_node:
            node_pe, node_vals, _ = outputs
            node_vals[start:end] = vals.astype(np.float32)
            node_pe[start:end] = vecs.view(np.float64).reshape(end - start, num_q, k, 2)
        else:
            eigvals, eigvecs = outputs
            eigvals[g] = vals
            eigvecs[start:end] = vecs


def canonical_phases(vecs: Tensor, tol: float = PHASE_TOL) -> Tensor:
    r"""Unit complex factors ``[..., 1, k]`` that make the columns of ``vecs`` ``[..., n, k]``
    (padded rows zero) canonical: each column :math:`v` is turned so that
    :math:`s = \sum_i v_i |v_i|^2` is real and positive. :math:`s` turns with :math:`v` and
    does not depend on the order of the nodes, so the result is a function of the eigenspace
    alone where the eigenvalue is simple. On a real vector :math:`s = \sum_i v_i^3`: the rule
    of :func:`~graphpe.ops.eigen.canonical_signs`, whose fallback this shares: where
    :math:`|s|` is within ``tol`` of 0 (relative to :math:`\max_i |v_i|^3`), the entry of
    largest magnitude is made real and positive, ties (within ``tol``) going to the lowest
    index. Zero columns get 1."""
    mag = vecs.abs()
    s = (vecs * mag.square()).sum(dim=-2, keepdim=True)
    max_mag = mag.amax(dim=-2, keepdim=True)
    first = torch.argmax((mag >= max_mag - tol).to(torch.uint8), dim=-2, keepdim=True)
    at_max = torch.gather(vecs, -2, first)
    ref = torch.where(s.abs() > tol * max_mag.pow(3), s, at_max)
    size = ref.abs()
    return torch.where(size > 0, ref.conj() / size.clamp(min=1e-300), torch.ones_like(ref))


def _one_way_pairs(edge_index: Tensor, edge_weight: Tensor | None, ptr: Tensor) -> Tensor:
    """Per graph ``[G]`` (float64): the node pairs joined by an edge (of positive weight) in one
    direction only, self loops aside."""
    src, dst = edge_index[0].long(), edge_index[1].long()
    keep = src != dst if edge_weight is None else (src != dst) & (edge_weight > 0)
    src, dst = src[keep], dst[keep]
    n = max(int(ptr[-1]), 1)
    key = torch.unique(src * n + dst)
    one_way = ~torch.isin((key % n) * n + key // n, key)
    graph = batch_from_ptr(ptr, int(ptr[-1]))[key[one_way] // n]
    return torch.bincount(graph, minlength=ptr.numel() - 1).to(torch.float64)


def _dense_magnetic_laplacian(directed: Tensor, inside: Tensor, q: Tensor,
                              normalization: str) -> Tensor:
    """``[B, Q, n, n]`` complex128 magnetic Laplacians from directed adjacency blocks
    ``[B, n, n]`` (``A[u, v]`` for ``u -> v``, padded rows 0) and potentials ``q`` ``[B, Q]``;
    padded diagonal entries sit above the spectrum, so padded eigenpairs sort last."""
    directed = directed.clone()
    directed.diagonal(dim1=-2, dim2=-1).zero_()  # self loops: no direction, dropped
    pattern = (directed > 0).to(directed.dtype)
    sym = torch.maximum(directed, directed.mT)
    angle = (2 * math.pi * q)[:, :, None, None] * (pattern - pattern.mT).unsqueeze(1)
    deg = sym.sum(-1)
    if normalization == "sym":
        dis = inv_sqrt_degree(deg)
        sym = sym * dis.unsqueeze(-1) * dis.unsqueeze(-2)
        # Chung's convention: 0 on an isolated node; 3 > 2 >= every eigenvalue on padding
        diag = torch.where(inside, (deg > 0).to(deg.dtype), torch.full_like(deg, 3.0))
    else:
        # eigenvalues of D_s - A_s o exp(i Theta) are at most 2 * max degree
        diag = torch.where(inside, deg, 2.0 * deg.amax(dim=1, keepdim=True) + 1.0)
    lap = -torch.polar(sym.unsqueeze(1).expand_as(angle), angle)
    lap.diagonal(dim1=-2, dim2=-1).copy_(diag.unsqueeze(1).expand(-1, q.size(1), -1))
    return lap


def _sparse_smallest(edge_index: Tensor, edge_weight: Tensor | None, n: int, k: int,
                     qs: list[float], normalization: str) -> tuple[np.ndarray, np.ndarray]:
    """``(eigvals [Q, k], eigvecs [Q, n, k])`` of one large graph (padded to ``k``), solved
    per connected component: the spectrum of a disconnected graph is the union of its
    components', and Lanczos on one component never has to resolve one eigenvalue per
    component. Components up to ``k + 1`` nodes are solved densely. Runs on the CPU."""
    src, dst = edge_index[0].long().cpu(), edge_index[1].long().cpu()
    weight = (torch.ones(src.numel(), dtype=torch.float64) if edge_weight is None
              else edge_weight.double().cpu())
    keep = (src != dst) & (weight > 0)
    key, inverse = torch.unique(src[keep] * n + dst[keep], return_inverse=True)
    peak = torch.zeros(key.numel(), dtype=torch.float64).scatter_reduce(
        0, inverse, weight[keep], reduce="amax", include_self=False)
    directed = sp.csr_matrix((peak.numpy(), ((key // n).numpy(), (key % n).numpy())),
                             shape=(n, n))
    pattern = (directed > 0).astype(np.float64)
    sym = directed.maximum(directed.T).tocoo()
    skew = np.asarray((pattern - pattern.T)[sym.row, sym.col]).ravel()
    deg = np.asarray(sym.sum(axis=1)).ravel()
    if normalization == "sym":
        dis = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
        values, diag = sym.data * dis[sym.row] * dis[sym.col], (deg > 0).astype(np.float64)
    else:
        values, diag = sym.data, deg
    count, labels = scipy_components(sym, directed=False)
    order = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=count))])
    eigvals, eigvecs = np.zeros((len(qs), k)), np.zeros((len(qs), n, k), dtype=np.complex128)
    for slot, q in enumerate(qs):
        phase = np.exp(2j * np.pi * q * skew)
        lap = (sp.csr_matrix((-values * phase, (sym.row, sym.col)), shape=(n, n))
               + sp.diags(diag.astype(np.complex128))).tocsr()
        found: list[tuple[float, np.ndarray, np.ndarray]] = []
        for comp in range(count):
            nodes = order[bounds[comp]:bounds[comp + 1]]
            if nodes.size == 1:  # an isolated node: its diagonal entry and indicator
                found.append((float(diag[nodes[0]]), nodes, np.ones(1)))
                continue
            sub = lap[nodes][:, nodes]
            want = min(k, nodes.size)
            if nodes.size <= k + 1:
                w, u = np.linalg.eigh(sub.toarray())
            else:
                w, u = _component_smallest(sub, want, 2.0 * float(diag.max()) if
                                           normalization != "sym" else 2.0)
            pick = np.argsort(w, kind="stable")[:want]
            found.extend((float(w[j]), nodes, u[:, j]) for j in pick)
        chosen = sorted(range(len(found)), key=lambda i: found[i][0])[:k]
        for col, i in enumerate(chosen):
            eigvals[slot, col] = found[i][0]
            eigvecs[slot, found[i][1], col] = found[i][2]
    return eigvals, eigvecs


def _component_smallest(sub: sp.csr_matrix, want: int,
                        bound: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``want`` smallest eigenpairs of one connected component's ``L_q`` (sparse,
    Hermitian, spectrum within ``[0, bound]``), ``want`` below its size minus one: thick-restart
    Lanczos from :data:`LANCZOS_MIN_NODES` nodes (to :data:`LANCZOS_TOL` times ``bound``),
    else (or where it does not converge) ARPACK."""
    n = sub.shape[0]
    if n >= LANCZOS_MIN_NODES:
        solved = thick_restart_lanczos(lambda x: sub @ x, n, want, tol=LANCZOS_TOL * bound,
                                       norm_bound=bound, dtype=np.complex128)
        if solved.converged:
            return solved.values, solved.vectors
    try:
        return spla.eigsh(sub, k=want, which="SA", tol=ARPACK_TOL, maxiter=5000)
    except spla.ArpackNoConvergence:
        # tiny gaps (long paths): shift-invert just below the spectrum converges
        return spla.eigsh(sub.tocsc(), k=want, sigma=-1e-3, which="LM", tol=ARPACK_TOL)
