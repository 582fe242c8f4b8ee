r"""Magnetic Laplacian positional encoding of a directed graph, for one or several potentials
``q``, with the stable (basis-invariant) encoder of Huang et al.

This module is a whole encoding in one file (kernel, transform, encoder, declaration), as
"Adding an encoding" in the docs describes.

Several ``q`` are one transform with ``q`` a tuple rather than a second declaration: one ``q``
is the case ``Q = 1`` of several, the kernel is the same for each (on the CPU one compiled
call over all graphs and potentials, each matrix solved at its own size; on other devices one
batched ``eigh`` over a size bucket's graphs and potentials together), the attributes keep one
layout ``[N, Q, k, ...]`` and the stable encoder reads ``Q`` as a channel axis, so both need
the same encoder.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from scipy.sparse.csgraph import connected_components as scipy_components
from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.common import mlp, read_attribute
from graphpe.layers.encoders import ChannelGIN, node_blocks, parameter_dtype
from graphpe.ops.aot import njit
from graphpe.ops.checks import check_choice, check_flag, check_positive_int, check_size_limit
from graphpe.ops.eigen import DENSE_MAX_NODES, batched_eigh
from graphpe.ops.eigen.compiled import (
    SMALL_EIGH_MAX,
    _hermitian_eigh,
    _hermitian_finish,
    _hermitian_prepare,
    _ql_pair,
    _ql_setup,
    hermitian_scratch,
)
from graphpe.ops.graph import (
    batch_from_ptr,
    bucket_groups,
    bucket_growth_for,
    bucket_node_index,
    directed_dense_adjacency,
    inv_sqrt_degree,
    node_range_subgraph,
    per_node,
    single_graph_ptr,
    size_buckets,
    validate_graph,
)
from graphpe.ops.host import graph_chunks, host_array, run_over_graphs, use_compiled
from graphpe.ops.walk import all_pairs, pair_row_edges

MAGLAP_NORMALIZATIONS = ("sym", "none")
KERNELS = ("auto", "compiled", "tensor")
PHASE_TOL = 1e-6  # |sum v |v|^2| below this (relative) is a vanishing phase statistic
ARPACK_TOL = 1e-10


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
    rounding. Larger graphs are solved per connected component, with scipy's ``eigsh``
    (Lanczos, then shift-invert where it does not converge) on the components above the limit.

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
        ptr_np = None if ptr is None else host_array(ptr, np.int64)
        vals, vecs = magnetic_eigenpairs_host(edge_index, num_nodes, k, qs, ptr_np, edge_weight,
                                              normalization, relative_q, dense_max_nodes)
        sizes = torch.from_numpy(np.diff(ptr_np) if ptr_np is not None
                                 else np.array([num_nodes]))
        return MagneticEigenpairs(torch.from_numpy(vals), torch.from_numpy(vecs),
                                  torch.arange(k).unsqueeze(0) < sizes.unsqueeze(1))
    ptr = single_graph_ptr(num_nodes, device) if ptr is None else ptr.to(device, torch.long)
    sizes = ptr.diff()
    num_graphs = sizes.numel()
    potentials = torch.tensor(qs, dtype=torch.float64, device=device).expand(num_graphs, -1)
    if relative_q:
        one_way = torch.minimum(_one_way_pairs(edge_index, edge_weight, ptr), sizes)
        potentials = potentials / one_way.clamp(min=1).unsqueeze(1)
    eigvals = torch.zeros(num_graphs, len(qs), k, dtype=torch.float64, device=device)
    eigvecs = torch.zeros(num_nodes, len(qs), k, dtype=torch.complex128, device=device)
    mask = torch.arange(k, device=device).unsqueeze(0) < sizes.unsqueeze(1)
    buckets = size_buckets(sizes, 1, dense_max_nodes, growth=bucket_growth_for(sizes))
    for group in bucket_groups(buckets, 16 * len(qs), max_dense_bytes):
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
            vals = vals.reshape(graphs.numel(), len(qs), bucket.size)[..., :m]
            vecs = vecs.reshape(graphs.numel(), len(qs), bucket.size, bucket.size)[..., :m]
            valid = mask[graphs, :m].unsqueeze(1)  # [B, 1, m]
            vecs = vecs * (inside[:, None, :, None] & valid.unsqueeze(-2))  # padding: exact 0
            vecs = vecs * canonical_phases(vecs)
            eigvals[graphs, :, :m] = torch.where(valid, vals, torch.zeros_like(vals))
            eigvecs[node[inside], :, :m] = vecs.transpose(1, 2)[inside]
    for g in torch.nonzero(sizes > dense_max_nodes).flatten().tolist():
        start, end = int(ptr[g]), int(ptr[g + 1])
        sub_ei, sub_w = node_range_subgraph(edge_index, edge_weight, start, end)
        vals, vecs = _sparse_smallest(sub_ei, sub_w, end - start, k,
                                      potentials[g].tolist(), normalization)
        vals, vecs = torch.from_numpy(vals).to(device), torch.from_numpy(vecs).to(device)
        eigvals[g] = vals
        eigvecs[start:end] = (vecs * canonical_phases(vecs)).transpose(0, 1)
    return MagneticEigenpairs(eigvals, eigvecs, mask)


def magnetic_eigenpairs_host(edge_index: Tensor, num_nodes: int, k: int,
                             qs: tuple[float, ...] | np.ndarray, ptr: np.ndarray | None = None,
                             edge_weight: Tensor | None = None, normalization: str = "sym",
                             relative_q: bool = False, dense_max_nodes: int = DENSE_MAX_NODES,
                             per_node: bool = False) -> tuple[np.ndarray, ...]:
    """:func:`magnetic_eigenpairs` of CPU tensors (already validated) as numpy arrays
    ``(eigvals [G, Q, k] float64, eigvecs [N, Q, k] complex128)``, or with ``per_node`` as
    :class:`MagneticLaplacianPE` writes them: ``(pe [N, Q, k, 2], eigvals [N, Q, k])``
    float32 and ``mask [N, k]``. Graphs up to ``dense_max_nodes`` nodes in one compiled call
    (:func:`_magnetic_kernel`: each graph's directed adjacency, ``L_q`` for every potential, a
    Hermitian ``eigh`` of exactly its size (:func:`graphpe.ops.eigen.compiled._hermitian_eigh`),
    phases as :func:`canonical_phases`; batches of many nodes split over threads by
    :func:`~graphpe.ops.host.run_over_graphs`), larger ones by :func:`_sparse_smallest`.
    ``ptr`` None means one graph."""
    ei = host_array(edge_index, np.int64)
    has_weight = edge_weight is not None
    weight = host_array(edge_weight, np.float64) if has_weight else _NO_WEIGHTS
    ptr_np = np.array([0, num_nodes], dtype=np.int64) if ptr is None else ptr
    num_graphs, num_q = ptr_np.shape[0] - 1, len(qs)
    qs_np = qs if isinstance(qs, np.ndarray) else np.array(qs, dtype=np.float64)
    if per_node:
        eigvals, eigvecs = _EMPTY_VALS, _EMPTY_VECS
        node_pe = np.zeros((num_nodes, num_q, k, 2), dtype=np.float32)
        node_vals = np.zeros((num_nodes, num_q, k), dtype=np.float32)
        node_mask = np.zeros((num_nodes, k), dtype=np.bool_)
    else:
        eigvals = np.zeros((num_graphs, num_q, k))
        eigvecs = np.zeros((num_nodes, num_q, k), dtype=np.complex128)
        node_pe, node_vals, node_mask = _EMPTY_PE, _EMPTY_VALS_32, _EMPTY_MASK
    chunks = graph_chunks(ptr_np)
    found = [False] * len(chunks)

    def run(a: int, b: int) -> None:
        found[chunks.index((a, b))] = _magnetic_kernel(
            ei[0], ei[1], weight, has_weight, ptr_np[a:b + 1], qs_np, relative_q, k,
            normalization == "sym", dense_max_nodes, PHASE_TOL, per_node,
            eigvals if per_node else eigvals[a:b], eigvecs, node_pe, node_vals, node_mask)

    run_over_graphs(run, chunks)
    big = any(found)
    if big:
        sizes = np.diff(ptr_np)
        for g in np.flatnonzero(sizes > dense_max_nodes).tolist():
            start, end = int(ptr_np[g]), int(ptr_np[g + 1])
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
                node_vals[start:end] = vals.astype(np.float32)
                node_pe[start:end] = vecs.view(np.float64).reshape(end - start, num_q, k, 2)
            else:
                eigvals[g] = vals
                eigvecs[start:end] = vecs
    if per_node:
        return node_pe, node_vals, node_mask
    return eigvals, eigvecs


_EMPTY_VALS = np.zeros((0, 0, 0))
_EMPTY_VECS = np.zeros((0, 0, 0), dtype=np.complex128)
_EMPTY_PE = np.zeros((0, 0, 0, 0), dtype=np.float32)
_EMPTY_VALS_32 = np.zeros((0, 0, 0), dtype=np.float32)
_EMPTY_MASK = np.zeros((0, 0), dtype=np.bool_)
_NO_WEIGHTS = np.empty(0)


@njit(cache=True, nogil=True)
def _magnetic_kernel(src, dst, weight, has_weight, ptr, qs, relative, k, sym, max_nodes, tol,
                     per_node, eigvals, eigvecs, node_pe, node_vals,
                     node_mask):  # pragma: no cover - compiled
    r"""The ``k`` smallest eigenpairs of :math:`L_q` (:func:`magnetic_eigenpairs`) of every
    graph of at most ``max_nodes`` nodes and every potential of ``qs``, into ``eigvals``
    ``[G, Q, k]`` (rows of the graphs of ``ptr``) and ``eigvecs`` ``[N, Q, k]`` (rows of the
    whole batch: ``ptr`` may be a slice of the batch's, one thread's graphs), or with
    ``per_node`` into ``node_pe``
    ``[N, Q, k, 2]`` (real and imaginary parts), ``node_vals`` ``[N, Q, k]`` (each node its
    graph's) and ``node_mask`` ``[N, k]`` (written for every graph); all zero on entry,
    padded columns stay zero. Returns whether larger graphs were left out.

    The edges are sorted by source (a counting sort); per graph, its directed adjacency
    :math:`A` (largest weight of duplicates, self loops and weights 0 dropped) as a dense
    ``n x n`` block, :math:`A_s = \max(A, A^\top)` and its degrees, the one-way pairs (for
    ``relative``); per potential, :math:`L_q` with entries
    :math:`-A_s(u, v) d_u d_v e^{2 \pi i q (B_{uv} - B_{vu})}` (:math:`d = D_s^{-1/2}`, 0 on
    isolated nodes, for ``sym``; 1 otherwise; :math:`B = [A > 0]`) and diagonal
    :math:`[D_s > 0]` (``sym``) or :math:`D_s`, its ``min(k, n)`` smallest eigenpairs by
    :func:`~graphpe.ops.eigen.compiled._hermitian_eigh`, each vector turned by the rule of
    :func:`canonical_phases`."""
    base = ptr[0]  # the graphs ptr[0]..ptr[-1] of the batch (a thread's chunk): their edges
    num_nodes = ptr[-1] - base
    num_graphs = ptr.shape[0] - 1
    num_q = qs.shape[0]
    # counting sort of the chunk's edges by source
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    for e in range(src.shape[0]):
        if base <= src[e] < ptr[-1]:
            indptr[src[e] - base + 1] += 1
    for i in range(num_nodes):
        indptr[i + 1] += indptr[i]
    fill = indptr[:-1].copy()
    order = np.empty(indptr[num_nodes], dtype=np.int64)
    for e in range(src.shape[0]):
        if base <= src[e] < ptr[-1]:
            order[fill[src[e] - base]] = e
            fill[src[e] - base] += 1
    nmax = 1
    big = False
    for g in range(num_graphs):
        n = ptr[g + 1] - ptr[g]
        if n > max_nodes:
            big = True
        else:
            nmax = max(nmax, n)
    kk = max(k, 1)
    adj_store = np.empty(nmax * nmax)
    # two solver slots: small matrices whose eigenvalues come from QL wait in a slot until a
    # second one joins them, and the two QL iterations run interleaved (_ql_pair: a QL sweep
    # is a chain of dependent divisions and square roots; two chains take about the time of
    # one); slot_job: graph, potential, first node, size, pairs; slot_norms: scale, ||T||
    re_store = np.empty((2, nmax * nmax))
    im_store = np.empty((2, nmax * nmax))
    vr = np.empty((nmax, kk))
    vi = np.empty((nmax, kk))
    deg = np.empty(nmax)
    dis = np.empty(nmax)
    scratch = hermitian_scratch(nmax, k)
    scratch2 = hermitian_scratch(nmax, k)
    slot_job = np.zeros((2, 5), dtype=np.int64)
    slot_norms = np.zeros((2, 2))
    filled = 0
    for g in range(num_graphs + 1):  # the extra pass flushes a waiting slot
        if g == num_graphs:
            if filled == 1:
                _finish_slots(1, re_store, im_store, slot_job, slot_norms, scratch, scratch2,
                              vr, vi, tol, per_node, eigvals, eigvecs, node_pe, node_vals)
            break
        s = ptr[g]
        n = ptr[g + 1] - s
        if per_node:
            for i in range(n):
                for c in range(min(k, n)):
                    node_mask[s + i, c] = True
        if n == 0 or n > max_nodes:
            continue
        adj = adj_store[: n * n].reshape((n, n))
        adj[:, :] = 0.0
        for i in range(n):
            for p in range(indptr[s - base + i], indptr[s - base + i + 1]):
                e = order[p]
                j = dst[e] - s
                w = weight[e] if has_weight else 1.0
                if j != i and w > adj[i, j]:
                    adj[i, j] = w
        one_way = 0
        for i in range(n):
            total = 0.0
            for j in range(n):
                total += max(adj[i, j], adj[j, i])
                if j > i and (adj[i, j] > 0.0) != (adj[j, i] > 0.0):
                    one_way += 1
            deg[i] = total
            dis[i] = 1.0 / np.sqrt(total) if total > 0.0 else 0.0
        m = min(k, n)
        for slot in range(num_q):
            q = qs[slot]
            if relative:
                q = q / max(min(one_way, n), 1)
            theta = 2.0 * np.pi * q
            cos_t, sin_t = np.cos(theta), np.sin(theta)
            ar = re_store[filled, : n * n].reshape((n, n))
            ai = im_store[filled, : n * n].reshape((n, n))
            for i in range(n):
                for j in range(n):
                    a = max(adj[i, j], adj[j, i])
                    if i == j:
                        ar[i, j] = (1.0 if deg[i] > 0.0 else 0.0) if sym else deg[i]
                        ai[i, j] = 0.0
                    elif a == 0.0:
                        ar[i, j] = 0.0
                        ai[i, j] = 0.0
                    else:
                        if sym:
                            a = a * dis[i] * dis[j]
                        skew = (1.0 if adj[i, j] > 0.0 else 0.0) - (1.0 if adj[j, i] > 0.0
                                                                   else 0.0)
                        if skew == 0.0:
                            ar[i, j] = -a
                            ai[i, j] = 0.0
                        else:  # e^{i theta skew}, skew = +-1
                            ar[i, j] = -a * cos_t
                            ai[i, j] = -a * (sin_t * skew)
            if n > SMALL_EIGH_MAX:  # LAPACK: solved at once
                vals = _hermitian_eigh(ar, ai, n, m, vr, vi, scratch if filled == 0
                                       else scratch2)
                _store_pairs(g, slot, s, n, m, vals, vr, vi, tol, per_node, eigvals, eigvecs,
                             node_pe, node_vals)
                continue
            held = scratch if filled == 0 else scratch2
            scale, tnorm = _hermitian_prepare(ar, ai, n, held)
            _ql_setup(held[1][0], held[1][1], n, held[0], held[1][3])
            slot_job[filled, 0], slot_job[filled, 1], slot_job[filled, 2] = g, slot, s
            slot_job[filled, 3], slot_job[filled, 4] = n, m
            slot_norms[filled, 0], slot_norms[filled, 1] = scale, tnorm
            filled += 1
            if filled == 2:
                _finish_slots(2, re_store, im_store, slot_job, slot_norms, scratch, scratch2,
                              vr, vi, tol, per_node, eigvals, eigvecs, node_pe, node_vals)
                filled = 0
    return big


@njit(cache=True, nogil=True)
def _finish_slots(filled, re_store, im_store, slot_job, slot_norms, scratch, scratch2, vr, vi,
                  tol, per_node, eigvals, eigvecs, node_pe, node_vals):  # pragma: no cover
    """The QL iterations of the ``filled`` (1 or 2) waiting matrices of :func:`_magnetic_kernel`,
    interleaved, then each one's vectors and outputs."""
    n2 = slot_job[1, 3] if filled == 2 else 0
    _ql_pair(scratch[0], scratch[1][3], slot_job[0, 3], scratch2[0], scratch2[1][3], n2)
    for slot_index in range(filled):
        g, slot, s = slot_job[slot_index, 0], slot_job[slot_index, 1], slot_job[slot_index, 2]
        n, m = slot_job[slot_index, 3], slot_job[slot_index, 4]
        ar = re_store[slot_index, : n * n].reshape((n, n))
        ai = im_store[slot_index, : n * n].reshape((n, n))
        vals = _hermitian_finish(ar, ai, n, m, vr, vi, scratch if slot_index == 0 else scratch2,
                                 slot_norms[slot_index, 0], slot_norms[slot_index, 1])
        _store_pairs(g, slot, s, n, m, vals, vr, vi, tol, per_node, eigvals, eigvecs, node_pe,
                     node_vals)


@njit(cache=True, nogil=True)
def _store_pairs(g, slot, s, n, m, vals, vr, vi, tol, per_node, eigvals, eigvecs, node_pe,
                 node_vals):  # pragma: no cover - compiled
    """Write the ``m`` pairs of graph ``g`` (first node ``s``) and potential ``slot``, each
    vector turned by :func:`_canonical_phase`."""
    for c in range(m):
        fr, fi = _canonical_phase(vr, vi, n, c, tol)
        if per_node:
            for i in range(n):
                node_vals[s + i, slot, c] = vals[c]
                node_pe[s + i, slot, c, 0] = fr * vr[i, c] - fi * vi[i, c]
                node_pe[s + i, slot, c, 1] = fr * vi[i, c] + fi * vr[i, c]
        else:
            eigvals[g, slot, c] = vals[c]
            for i in range(n):
                eigvecs[s + i, slot, c] = complex(fr * vr[i, c] - fi * vi[i, c],
                                                  fr * vi[i, c] + fi * vr[i, c])


@njit(cache=True, nogil=True)
def _canonical_phase(vr, vi, n, c, tol):  # pragma: no cover - compiled
    """The unit factor ``(re, im)`` of :func:`canonical_phases` for column ``c`` of
    ``vr + i vi`` (``n`` rows)."""
    sr = 0.0
    si = 0.0
    max_mag = 0.0
    for i in range(n):
        mag2 = vr[i, c] * vr[i, c] + vi[i, c] * vi[i, c]
        sr += vr[i, c] * mag2
        si += vi[i, c] * mag2
        max_mag = max(max_mag, np.sqrt(mag2))
    rr, ri = sr, si
    if not np.hypot(sr, si) > tol * max_mag**3:
        for i in range(n):
            if np.hypot(vr[i, c], vi[i, c]) >= max_mag - tol:
                rr, ri = vr[i, c], vi[i, c]
                break
    size = np.hypot(rr, ri)
    if size > 0.0:
        return rr / size, -ri / size
    return 1.0, 0.0


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
                try:
                    w, u = spla.eigsh(sub, k=want, which="SA", tol=ARPACK_TOL, maxiter=5000)
                except spla.ArpackNoConvergence:
                    # tiny gaps (long paths): shift-invert just below the spectrum converges
                    w, u = spla.eigsh(sub.tocsc(), k=want, sigma=-1e-3, which="LM",
                                      tol=ARPACK_TOL)
            pick = np.argsort(w, kind="stable")[:want]
            found.extend((float(w[j]), nodes, u[:, j]) for j in pick)
        chosen = sorted(range(len(found)), key=lambda i: found[i][0])[:k]
        for col, i in enumerate(chosen):
            eigvals[slot, col] = found[i][0]
            eigvecs[slot, found[i][1], col] = found[i][2]
    return eigvals, eigvecs


def _check_normalization(name: str, value: object) -> object:
    return check_choice(name, value, MAGLAP_NORMALIZATIONS)


@dataclass(eq=False, repr=False)
class MagneticLaplacianPE(PETransform):
    r"""Magnetic Laplacian positional encoding of directed graphs (Geisler, Li, Mankowitz,
    Cemgil, Günnemann, Paduraru, "Transformers Meet Directed Graphs", ICML 2023), for one
    potential ``q`` or several (Huang, Lu, Robinson, Yang, Zhang, Jegelka, Li, "What Are Good
    Positional Encodings for Directed Graphs?", ICLR 2025: Multi-q).

    For each graph and each potential :math:`q`, the ``k`` smallest eigenpairs of
    :math:`L_q = I - D_s^{-1/2} (A_s \circ e^{i \Theta_q}) D_s^{-1/2}`, :math:`A_s` the
    symmetrized adjacency, :math:`D_s` its degrees,
    :math:`\Theta_q(u, v) = 2 \pi q (A(u, v) - A(v, u))` (``none``: :math:`D_s - A_s \circ
    e^{i \Theta_q}`); see :func:`magnetic_eigenpairs` for weights, isolated nodes and solvers.
    It reads the direction of ``edge_index``; ``q = 0`` gives LapPE on the undirected graph
    (with its trivial pairs kept). Every eigenpair is kept, the trivial ones too. Writes, with
    ``Q`` the number of potentials:

    - ``maglap_pe`` ``[N, Q, k, 2]``: the eigenvectors' real (``[..., 0]``) and imaginary
      (``[..., 1]``) parts, rows are nodes;
    - ``maglap_eigvals`` ``[N, Q, k]``: each node carries its graph's eigenvalues;
    - ``maglap_mask`` ``[N, k]`` (bool): False in the columns past a graph's size, where the
      vectors and eigenvalues are 0.

    Phase: an eigenvector is defined up to a unit complex factor. Each is turned so that
    :math:`\sum_i v_i |v_i|^2` is real and positive, which does not depend on the node order
    (on a real vector, LapPE's canonical sign); where that sum vanishes the entry of largest
    magnitude is made real and positive, ties to the lowest index
    (:func:`canonical_phases`). Vectors of a repeated eigenvalue are an arbitrary basis of its
    space: the stable encoder (:class:`MagLapEncoder`) does not depend on either choice.

    Args:
        k: eigenpairs per potential (default 8).
        q: a potential or a tuple of them, each in ``[0, 1/2]`` (default ``(0.1,)``); ``L_q``
            has period 1 in ``q`` and ``L_{1-q}`` is the conjugate of ``L_q``.
        relative_q: divide ``q`` by each graph's number of one-way pairs, capped at its node
            count (Geisler et al.'s default ``q_absolute=False``; default False).
        normalization: ``"sym"`` (default) or ``"none"``.
        attr_names: names of the three attributes written.
        dense_max_nodes: larger graphs are solved per component with scipy's ``eigsh``.
    """

    k: int = option(8, check_positive_int)
    q: tuple[float, ...] = option((0.1,), check_q)
    relative_q: bool = option(False, check_flag)
    normalization: str = option("sym", _check_normalization)
    attr_names: tuple[str, str, str] = option(("maglap_pe", "maglap_eigvals", "maglap_mask"),
                                              lambda _, value: tuple(value))
    # solvers agree to rounding, but a cache must not mix their outputs
    dense_max_nodes: int = option(DENSE_MAX_NODES, check_size_limit)

    def validate(self) -> None:
        if len(self.attr_names) != 3:
            raise ValueError("attr_names must name (eigenvectors, eigenvalues, mask)")
        check_attr_names(dict(zip(("eigenvectors' name", "eigenvalues' name", "mask's name"),
                                  self.attr_names, strict=True)))

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        vec_name, val_name, mask_name = self.attr_names
        if edge_index.device.type == "cpu":  # numpy views, one compiled call, no tensor ops
            validate_graph(edge_index, num_nodes, edge_weight, ptr)
            pe, vals, mask = magnetic_eigenpairs_host(
                edge_index, num_nodes, self.k, self.q, None if ptr is None else
                host_array(ptr, np.int64), edge_weight, self.normalization, self.relative_q,
                self.dense_max_nodes, per_node=True)
            return {vec_name: torch.from_numpy(pe), val_name: torch.from_numpy(vals),
                    mask_name: torch.from_numpy(mask)}
        pairs = magnetic_eigenpairs(
            edge_index, num_nodes, self.k, self.q, ptr=ptr, edge_weight=edge_weight,
            normalization=self.normalization, relative_q=self.relative_q,
            dense_max_nodes=self.dense_max_nodes)
        return {vec_name: torch.view_as_real(pairs.eigvecs).float(),
                val_name: per_node(pairs.eigvals.float(), ptr, num_nodes),
                mask_name: per_node(pairs.mask, ptr, num_nodes)}


class MagLapEncoder(nn.Module):
    r"""The stable, basis-invariant encoder of complex eigenvectors (Huang et al., "What Are
    Good Positional Encodings for Directed Graphs?", ICLR 2025; their code's ``PEEncoder``
    with ``encoder='spe'``): SPE (:class:`~graphpe.nn.SPEEncoder`) carried to Hermitian
    matrices and several potentials. For each potential :math:`q` of a graph, an MLP
    :math:`\phi` (shared over the potentials) maps each eigenvalue to ``m`` weights, giving
    the ``n x n`` complex matrices

    .. math:: W_{q,c} = V_q \operatorname{diag}(\phi_c(\lambda_q)) V_q^{\mathsf H},
       \quad c = 1..m,

    whose entries :math:`(i, j)`, real and imaginary parts of all ``Q m`` of them, go through
    an MLP to ``rho_hidden`` channels; :math:`\rho`, a GIN over the graph (its directed
    edges, every column :math:`j` a copy of the graph), updates the rows, which are summed
    over :math:`j`, normalized and mapped to ``channels``:

    .. math:: h_i = \mathrm{Linear}\Big(\mathrm{BN}\Big(\sum_j
       \rho\big(\mathrm{MLP}([\operatorname{Re} W, \operatorname{Im} W]_{ij})\big)\Big)\Big).

    :math:`W_{q,c}` does not change when an eigenvector is multiplied by a unit complex
    number, nor when the basis of an eigenspace kept whole is turned by any unitary map
    (:math:`\phi` gives equal eigenvalues equal weights). As the reference, ``phi`` is shared
    over potentials, and the pair MLP halves its width once; as graphpe's ``SPEEncoder``, ``rho``
    normalizes between its layers and the sum is batch-normalized before a linear map (the
    reference: a LayerNorm, dropout and a GELU after the map). Memory ``O(Q n^2 m)`` per graph:
    for molecule-scale graphs.

    Args:
        k: eigenpairs per potential.
        num_q: the number of potentials ``Q``.
        channels: output channels.
        m: outputs of ``phi`` (default 8).
        phi_hidden, phi_layers: the eigenvalue MLP (default 16, 3).
        rho_hidden, rho_layers: the GIN ``rho`` (default 32, 2).
        attr_names: the (eigenvectors, eigenvalues, mask) attributes.
    """

    def __init__(self, k: int, num_q: int, channels: int, m: int = 8, phi_hidden: int = 16,
                 phi_layers: int = 3, rho_hidden: int = 32, rho_layers: int = 2,
                 attr_names: tuple[str, str, str] = ("maglap_pe", "maglap_eigvals",
                                                     "maglap_mask")) -> None:
        super().__init__()
        for name, value in (("k", k), ("num_q", num_q), ("channels", channels), ("m", m),
                            ("phi_hidden", phi_hidden), ("phi_layers", phi_layers),
                            ("rho_hidden", rho_hidden), ("rho_layers", rho_layers)):
            check_positive_int(name, value)
        self.k, self.num_q, self.m, self.attr_names = k, num_q, m, tuple(attr_names)
        self.phi = mlp([1] + [phi_hidden] * (phi_layers - 1) + [m])
        self.pair = mlp([2 * num_q * m, num_q * m, rho_hidden])
        self.rho = ChannelGIN([rho_hidden] * (rho_layers + 1), batch_norm=True)
        self.out_norm = nn.BatchNorm1d(rho_hidden)
        self.out = nn.Linear(rho_hidden, channels)

    def forward(self, batch) -> Tensor:
        """``batch`` with ``attr_names`` (``[N, Q, k, 2]``, ``[N, Q, k]``, ``[N, k]`` as
        :class:`MagneticLaplacianPE` writes them; ``batch.batch`` and ``edge_index``) ->
        ``[N, channels]``."""
        producer = f"MagneticLaplacianPE(k={self.k}) of graphpe.encodings.maglap"
        vec_name, val_name, mask_name = self.attr_names
        vecs = read_attribute(batch, vec_name, producer)
        shape = (self.num_q, self.k, 2)
        if vecs.dim() != 4 or tuple(vecs.shape[1:]) != shape:
            raise ValueError(f"expected {vec_name} [N, {', '.join(map(str, shape))}], got "
                             f"{list(vecs.shape)}")
        dtype = parameter_dtype(self)
        vecs = vecs.to(dtype)
        vals = read_attribute(batch, val_name, producer).to(dtype)
        mask = read_attribute(batch, mask_name, producer)
        num_nodes = vecs.size(0)
        graph, num_graphs, ptr, local, n_max, first = node_blocks(batch, num_nodes)
        weights = self.phi(vals[first].unsqueeze(-1))  # [G, Q, k, m]
        weights = weights * mask[first][:, None, :, None].to(dtype)
        # real arithmetic on (a + ib): V_i conj(V_j) = a_i a_j + b_i b_j + i (b_i a_j - a_i b_j)
        re, im = vecs[..., 0], vecs[..., 1]  # [N, Q, k]
        wa = re.unsqueeze(-1) * weights[graph]  # [N, Q, k, m]
        wb = im.unsqueeze(-1) * weights[graph]
        right = torch.cat([torch.cat([wa, wb], -1), torch.cat([wb, -wa], -1)], -2)  # [N,Q,2k,2m]
        dense = vecs.new_zeros(num_graphs, n_max, self.num_q, 2 * self.k)
        dense[graph, local] = torch.cat([re, im], -1)
        rows = dense.transpose(1, 2)[graph] @ right  # [N, Q, n_max, 2m]: Re W | Im W of (i, j)
        rows = rows.transpose(1, 2).reshape(num_nodes * n_max, 2 * self.num_q * self.m)
        pairs, pair_ptr = all_pairs(ptr)
        column = pairs[1] - ptr[graph[pairs[0]]]
        h = self.pair(rows.index_select(0, pairs[0] * n_max + column))  # [P, rho_hidden]
        h = self.rho(h, pair_row_edges(batch.edge_index, ptr, pair_ptr, graph))
        h = torch.zeros(num_nodes, h.size(1), dtype=h.dtype, device=h.device).index_add_(
            0, pairs[0], h)  # sum over each node's columns
        if not (self.training and h.size(0) < 2):
            h = self.out_norm(h)
        return self.out(h)


@register
class MagLapSpec(Encoding):
    name = "maglap"
    summary = ("magnetic Laplacian eigenvectors of the directed graph for one or several q, "
               "through a stable network over V diag(phi) V^H")
    paper = ("Geisler et al., Transformers Meet Directed Graphs, ICML 2023; Huang et al., What "
             "Are Good Positional Encodings for Directed Graphs?, ICLR 2025")
    family = "eigen"
    reference_test = ("tests/encodings/test_maglap.py::"
                      "test_equals_digraph_transformers_magnetic_laplacian")

    k: int = setting(8, check_positive_int)
    q: tuple[float, ...] = setting((0.1,), check_q)
    relative_q: bool = setting(False, check_flag)
    normalization: str = setting("sym", _check_normalization)
    m: int = setting(8, check_positive_int)
    rho_hidden: int = setting(32, check_positive_int)
    rho_layers: int = setting(2, check_positive_int)

    def transform(self) -> MagneticLaplacianPE:
        return MagneticLaplacianPE(self.k, self.q, relative_q=self.relative_q,
                                   normalization=self.normalization)

    def encoder(self, channels: int) -> nn.Module:
        return MagLapEncoder(self.k, len(self.q), channels, m=self.m,
                             rho_hidden=self.rho_hidden, rho_layers=self.rho_layers)
