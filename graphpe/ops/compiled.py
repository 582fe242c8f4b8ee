"""Compiled (numba) kernels for small graphs on the host CPU.

A transform called on one ``Data`` (PyG's ``pre_transform`` path), or on a training batch on
the CPU, does little maths: a 23-node molecule needs a ~40 us LAPACK ``eigh`` or a few tiny
matrix products. Done as batched torch operations, the same work costs ~100 tensor-op
dispatches of 3-10 us each, 20-50x the maths. Here every kernel is one compiled loop over the
graphs of a batch, on numpy views of the CPU tensors: per-graph cost follows the graph (no
padding to size buckets), and a whole dataset chunk costs one call as well.

Kernels start from :func:`simple_csr`, the undirected simple graph of the input in CSR form
(the same graph as :func:`graphpe.ops.graph.undirected_simple`: symmetrized, self loops
dropped, duplicates merged keeping the largest weight, and edges of weight 0 dropped, since
they connect nothing). They compute in float64 and give the results of the batched torch
kernels (``ops.eigen``, ``ops.propagate``, ``ops.curvature``) to rounding; the tests check
both paths against each other.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
import torch
from torch import Tensor

KERNELS = ("auto", "compiled", "tensor")
# Largest graph the compiled kernels take by default: their dense per-graph work (an n x n
# eigh or walk matrix) is the same as the tensor path's there, without the padding.
COMPILED_MAX_NODES = 1024


class HostCSR(NamedTuple):
    """The undirected simple graph of a batch in CSR form (numpy, host memory): row ``i``'s
    neighbours are ``indices[indptr[i]:indptr[i + 1]]``, ascending, with ``weight`` (float64;
    1 for an unweighted graph)."""

    indptr: np.ndarray
    indices: np.ndarray
    weight: np.ndarray


def use_compiled(kernel: str, device: torch.device) -> bool:
    """Whether to take the compiled host path: ``auto`` takes it for CPU tensors."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if kernel == "compiled" and device.type != "cpu":
        raise ValueError(f"kernel='compiled' runs on CPU tensors, got a {device.type} tensor")
    return kernel == "compiled" or (kernel == "auto" and device.type == "cpu")


def host_array(t: Tensor, dtype: np.dtype | None = None) -> np.ndarray:
    """A numpy view of a CPU tensor (a copy only when ``dtype`` asks for one)."""
    a = t.detach().numpy()
    return a if dtype is None else a.astype(dtype, copy=False)


def simple_csr(edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None = None) -> HostCSR:
    """The undirected simple graph of ``edge_index`` (CPU) as a :class:`HostCSR`."""
    ei = host_array(edge_index, np.int64)
    has_weight = edge_weight is not None
    w = host_array(edge_weight, np.float64) if has_weight else np.empty(0)
    indptr, indices, weight = _simple_csr(ei[0], ei[1], w, has_weight, num_nodes)
    return HostCSR(indptr, indices, weight)


@numba.njit(cache=True, nogil=True)
def _simple_csr(row, col, w, has_weight, num_nodes):  # pragma: no cover - compiled
    # counting sort by row, then a short insertion sort of each row by column (rows are
    # neighbourhoods: a few entries), merging duplicates with the largest weight
    num_edges = row.shape[0]
    counts = np.zeros(num_nodes + 1, dtype=np.int64)
    for e in range(num_edges):
        if row[e] != col[e]:
            counts[row[e] + 1] += 1
            counts[col[e] + 1] += 1
    for i in range(num_nodes):
        counts[i + 1] += counts[i]
    fill = counts[:-1].copy()
    nbr = np.empty(counts[num_nodes], dtype=np.int64)
    val = np.empty(counts[num_nodes])
    for e in range(num_edges):
        r, c = row[e], col[e]
        if r != c:
            we = w[e] if has_weight else 1.0
            nbr[fill[r]] = c
            val[fill[r]] = we
            fill[r] += 1
            nbr[fill[c]] = r
            val[fill[c]] = we
            fill[c] += 1
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    out = 0
    for i in range(num_nodes):
        lo, hi = counts[i], counts[i + 1]
        for a in range(lo + 1, hi):  # insertion sort by column
            c, v = nbr[a], val[a]
            b = a - 1
            while b >= lo and nbr[b] > c:
                nbr[b + 1] = nbr[b]
                val[b + 1] = val[b]
                b -= 1
            nbr[b + 1] = c
            val[b + 1] = v
        start = out
        for a in range(lo, hi):
            if out > start and nbr[out - 1] == nbr[a]:
                if val[a] > val[out - 1]:
                    val[out - 1] = val[a]
            else:
                nbr[out] = nbr[a]
                val[out] = val[a]
                out += 1
        # an edge of weight 0 connects nothing (and adds nothing to any operator)
        kept = start
        for a in range(start, out):
            if val[a] > 0.0:
                nbr[kept] = nbr[a]
                val[kept] = val[a]
                kept += 1
        out = kept
        indptr[i + 1] = out
    return indptr, nbr[:out].copy(), val[:out].copy()


@numba.njit(cache=True, nogil=True)
def _inv_sqrt_degree(indptr, weight):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    dis = np.zeros(n)
    for i in range(n):
        d = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            d += weight[p]
        if d > 0.0:
            dis[i] = 1.0 / np.sqrt(d)
    return dis


# ----------------------------------------------------------------------------- RWSE


def landing_probs(csr: HostCSR, ptr: np.ndarray, walk_length: int, max_nodes: int,
                  out: np.ndarray) -> None:
    """``diag(P^t)``, ``t = 1..T``, for every graph of at most ``max_nodes`` nodes, written
    into the rows of ``out`` ``[N, T]`` (other graphs' rows are left as they are)."""
    _landing_probs(csr.indptr, csr.indices, csr.weight, ptr, walk_length, max_nodes, out)


@numba.njit(cache=True, nogil=True)
def _landing_probs(indptr, indices, weight, ptr, walk_length, max_nodes, out):  # pragma: no cover
    # diag(P^t) = diag(S^t) for the symmetric S = D^-1/2 A D^-1/2 (P^t = D^-1/2 S^t D^1/2).
    # X = S^t is kept dense (n x n) and advanced by one sparse product per step, nnz * n
    # multiply-adds, against n^3 for a dense product. For t > h = ceil(T / 2) the diagonal is
    # read off lower powers, (S^(a+b))_ii = <row_i(S^a), row_i(S^b)> (S is symmetric), so only
    # h - 1 products are needed.
    dis = _inv_sqrt_degree(indptr, weight)
    num_graphs = ptr.shape[0] - 1
    big = 0
    for g in range(num_graphs):
        size = ptr[g + 1] - ptr[g]
        if size <= max_nodes and size > big:
            big = size
    half = (walk_length + 1) // 2
    powers = np.zeros((half, big, big))
    for g in range(num_graphs):
        s = ptr[g]
        n = ptr[g + 1] - s
        if n == 0 or n > max_nodes:
            continue
        x = powers[0, :n, :n]
        x[:, :] = 0.0
        for i in range(n):
            for p in range(indptr[s + i], indptr[s + i + 1]):
                j = indices[p] - s
                x[i, j] = dis[s + i] * weight[p] * dis[s + j + 0]
        for t in range(1, half):
            prev = powers[t - 1, :n, :n]
            nxt = powers[t, :n, :n]
            nxt[:, :] = 0.0
            for i in range(n):
                for p in range(indptr[s + i], indptr[s + i + 1]):
                    j = indices[p] - s
                    v = dis[s + i] * weight[p] * dis[s + j]
                    for c in range(n):
                        nxt[i, c] += v * prev[j, c]
        for t in range(walk_length):
            if t < half:
                xt = powers[t]
                for i in range(n):
                    out[s + i, t] = xt[i, i]
            else:  # S^(t+1) = S^a S^b with a = half, b = t + 1 - half
                xa = powers[half - 1]
                xb = powers[t - half]
                for i in range(n):
                    acc = 0.0
                    for c in range(n):
                        acc += xa[i, c] * xb[i, c]
                    out[s + i, t] = acc


# ----------------------------------------------------------------------------- LapPE

NORMALIZATION_CODES = {"sym": 0, "rw": 1, "none": 2}
SIGN_CODES = {"canonical": 0, "random": 1, "none": 2}


def laplacian_eigenpairs_host(
    csr: HostCSR,
    ptr: np.ndarray,
    k: int,
    normalization: str,
    keep_trivial: bool,
    sign: str,
    flips: np.ndarray,
    max_nodes: int,
    eigvals: np.ndarray,
    eigvecs: np.ndarray,
    mask: np.ndarray,
    sign_tol: float = 1e-6,
) -> None:
    """The ``k`` smallest (non-trivial) Laplacian eigenpairs of every graph of at most
    ``max_nodes`` nodes, written into ``eigvals`` ``[G, k]``, ``eigvecs`` ``[N, k]`` and
    ``mask`` ``[G, k]`` (pre-filled with the padding). Conventions as
    :func:`graphpe.ops.eigen.laplacian_eigenpairs`: one LAPACK ``eigh`` per graph of exactly
    its size, the trivial pairs (one per connected component) skipped unless
    ``keep_trivial``, ``rw`` vectors rescaled by ``D^-1/2`` to unit norm, signs as
    :func:`graphpe.ops.eigen.canonical_signs` (or ``flips`` ``[G, k]`` for ``random``)."""
    _laplacian_eigenpairs(csr.indptr, csr.indices, csr.weight, ptr, k,
                          NORMALIZATION_CODES[normalization], keep_trivial, SIGN_CODES[sign],
                          flips, max_nodes, sign_tol, eigvals, eigvecs, mask)


@numba.njit(cache=True, nogil=True)
def _find(parent, i):  # pragma: no cover - compiled
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@numba.njit(cache=True, nogil=True)
def _component_count(indptr, indices, s, n, parent):  # pragma: no cover - compiled
    """Connected components of nodes ``s..s+n-1`` (union-find over the CSR rows)."""
    for i in range(n):
        parent[i] = i
    count = n
    for i in range(n):
        for p in range(indptr[s + i], indptr[s + i + 1]):
            a = _find(parent, i)
            b = _find(parent, indices[p] - s)
            if a != b:
                parent[max(a, b)] = min(a, b)
                count -= 1
    return count


@numba.njit(cache=True, nogil=True)
def _canonical_sign(v, n, tol):  # pragma: no cover - compiled
    # the rule of ops.eigen.canonical_signs: sign of sum v^3; where that is within tol of 0,
    # the sign of the first entry of largest magnitude (ties within tol)
    third = 0.0
    max_mag = 0.0
    for i in range(n):
        third += v[i] ** 3
        max_mag = max(max_mag, abs(v[i]))
    scale = max(max_mag**3, 1e-30)
    if abs(third) > tol * scale:
        return 1.0 if third > 0 else -1.0
    for i in range(n):
        if abs(v[i]) >= max_mag - tol:
            if v[i] < 0:
                return -1.0
            return 1.0
    return 1.0


@numba.njit(cache=True, nogil=True)
def _laplacian_eigenpairs(indptr, indices, weight, ptr, k, norm, keep_trivial, sign, flips,
                          max_nodes, sign_tol, eigvals, eigvecs, mask):  # pragma: no cover
    num_graphs = ptr.shape[0] - 1
    num_nodes = indptr.shape[0] - 1
    deg = np.zeros(num_nodes)
    for i in range(num_nodes):
        for p in range(indptr[i], indptr[i + 1]):
            deg[i] += weight[p]
    dis = np.zeros(num_nodes)
    for i in range(num_nodes):
        if deg[i] > 0:
            dis[i] = 1.0 / np.sqrt(deg[i])
    parent = np.empty(max(max_nodes, 1), dtype=np.int64)
    vec = np.empty(max(max_nodes, 1))
    for g in range(num_graphs):
        s = ptr[g]
        n = ptr[g + 1] - s
        if n == 0 or n > max_nodes:
            continue
        skip = 0 if keep_trivial else _component_count(indptr, indices, s, n, parent)
        lap = np.zeros((n, n))
        for i in range(n):
            if norm == 2:
                lap[i, i] = deg[s + i]
            elif deg[s + i] > 0:
                lap[i, i] = 1.0  # Chung's convention: 0 on an isolated node's diagonal
            for p in range(indptr[s + i], indptr[s + i + 1]):
                j = indices[p] - s
                if norm == 2:
                    lap[i, j] = -weight[p]
                else:
                    lap[i, j] = -dis[s + i] * weight[p] * dis[s + j]
        w, u = np.linalg.eigh(lap)
        m = min(k, n - skip)
        for c in range(m):
            col = skip + c
            eigvals[g, c] = w[col]
            mask[g, c] = True
            for i in range(n):
                vec[i] = u[i, col]
            if norm == 1:  # L_rw eigenvector D^-1/2 u, back to unit norm
                nrm = 0.0
                for i in range(n):
                    vec[i] *= dis[s + i]
                    nrm += vec[i] * vec[i]
                nrm = max(np.sqrt(nrm), 1e-30)
                for i in range(n):
                    vec[i] /= nrm
            f = 1.0
            if sign == 0:
                f = _canonical_sign(vec, n, sign_tol)
            elif sign == 1:  # random flips of the canonical orientation
                f = _canonical_sign(vec, n, sign_tol) * flips[g, c]
            for i in range(n):
                eigvecs[s + i, c] = f * vec[i]


# ----------------------------------------------------------------------------- RFP

OPERATOR_CODES = {"adj": 0, "gcn": 1, "rw": 2, "lap_shift": 3}


def propagate_host(csr: HostCSR, ptr: np.ndarray, operator: str, x0: np.ndarray, steps: int,
                   normalization: str, rank_tol: float = 1e-6) -> np.ndarray:
    """Random Feature Propagation of every graph: ``x0`` ``[N, draws, d]`` (float64) ->
    trajectory ``[N, draws, steps + 1, d]``, as :func:`graphpe.ops.propagate.propagate` with
    the operator of :func:`graphpe.ops.propagate.propagation_operator`.

    ``qr`` orthonormalizes each graph's ``[n, d]`` block per draw by Gram-Schmidt done twice
    (numerically orthogonal), ``diag(R) >= 0``; a column whose remainder after projecting out
    the earlier ones has norm below ``rank_tol`` times the block's largest column norm lies in
    their span (numerical rank) and is set to zero, so ``n < d`` gives ``n`` columns and zeros.
    """
    out = np.empty((x0.shape[0], x0.shape[1], steps + 1, x0.shape[2]))
    _propagate(csr.indptr, csr.indices, csr.weight, ptr, OPERATOR_CODES[operator], x0, steps,
               normalization == "qr", rank_tol, out)
    return out


@numba.njit(cache=True, nogil=True)
def _operator_values(indptr, indices, weight, op):  # pragma: no cover - compiled
    """Off-diagonal values and diagonal of the propagation operator, on the CSR pattern."""
    n = indptr.shape[0] - 1
    deg = np.zeros(n)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            deg[i] += weight[p]
    scale = np.zeros(n)
    diag = np.zeros(n)
    for i in range(n):
        if op == 1:
            scale[i] = 1.0 / np.sqrt(deg[i] + 1.0)
            diag[i] = scale[i] * scale[i]
        elif op == 2:
            scale[i] = 1.0 / deg[i] if deg[i] > 0 else 0.0
        else:
            scale[i] = 1.0 / np.sqrt(deg[i]) if deg[i] > 0 else 0.0
            if op == 3:
                diag[i] = 1.0 if deg[i] > 0 else 2.0
    values = np.empty(indices.shape[0])
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if op == 2:
                values[p] = scale[i] * weight[p]
            else:
                values[p] = scale[i] * weight[p] * scale[indices[p]]
    return values, diag


@numba.njit(cache=True, nogil=True)
def _normalize_block(x, qr, rank_tol):  # pragma: no cover - compiled
    """Normalize one graph's ``[n, d]`` block in place (l2 columns, or Gram-Schmidt x2)."""
    n, d = x.shape
    if not qr:
        for c in range(d):
            nrm = 0.0
            for i in range(n):
                nrm += x[i, c] * x[i, c]
            if nrm > 0:
                inv = 1.0 / np.sqrt(nrm)
                for i in range(n):
                    x[i, c] *= inv
        return
    biggest = 0.0
    for c in range(d):
        nrm = 0.0
        for i in range(n):
            nrm += x[i, c] * x[i, c]
        biggest = max(biggest, nrm)
    floor = rank_tol * np.sqrt(biggest)
    for c in range(d):
        for _ in range(2):  # twice is enough (Kahan-Parlett)
            for b in range(c):
                dot = 0.0
                for i in range(n):
                    dot += x[i, b] * x[i, c]
                for i in range(n):
                    x[i, c] -= dot * x[i, b]
        nrm = 0.0
        for i in range(n):
            nrm += x[i, c] * x[i, c]
        nrm = np.sqrt(nrm)
        if nrm <= floor or nrm == 0.0:
            for i in range(n):
                x[i, c] = 0.0
        else:
            inv = 1.0 / nrm
            for i in range(n):
                x[i, c] *= inv


@numba.njit(cache=True, nogil=True)
def _propagate(indptr, indices, weight, ptr, op, x0, steps, qr, rank_tol, out):  # pragma: no cover
    values, diag = _operator_values(indptr, indices, weight, op)
    num_graphs = ptr.shape[0] - 1
    draws, d = x0.shape[1], x0.shape[2]
    big = 0
    for g in range(num_graphs):
        big = max(big, ptr[g + 1] - ptr[g])
    cur = np.empty((big, d))
    nxt = np.empty((big, d))
    for g in range(num_graphs):
        s = ptr[g]
        n = ptr[g + 1] - s
        if n == 0:
            continue
        for r in range(draws):
            x = cur[:n]
            for i in range(n):
                for c in range(d):
                    x[i, c] = x0[s + i, r, c]
            _normalize_block(x, qr, rank_tol)
            for i in range(n):
                for c in range(d):
                    out[s + i, r, 0, c] = x[i, c]
            y = nxt[:n]
            for t in range(1, steps + 1):
                for i in range(n):
                    for c in range(d):
                        y[i, c] = diag[s + i] * x[i, c]
                    for p in range(indptr[s + i], indptr[s + i + 1]):
                        j = indices[p] - s
                        v = values[p]
                        for c in range(d):
                            y[i, c] += v * x[j, c]
                _normalize_block(y, qr, rank_tol)
                for i in range(n):
                    for c in range(d):
                        out[s + i, r, t, c] = y[i, c]
                x, y = y, x


# ----------------------------------------------------------------------------- curvature


def node_profile_host(csr: HostCSR, values: np.ndarray, stats: tuple[str, ...]) -> np.ndarray:
    """Per-node ``[min, max, mean, std, median]`` (the ``stats`` asked for, in that order of
    the request) of ``values`` given on the CSR entries; zeros for a node without edges."""
    codes = np.array([PROFILE_CODES[s] for s in stats], dtype=np.int64)
    return _profile(csr.indptr, values, codes)


PROFILE_CODES = {"min": 0, "max": 1, "mean": 2, "std": 3, "median": 4}


@numba.njit(cache=True, nogil=True)
def _profile(indptr, values, codes):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    out = np.zeros((n, codes.shape[0]))
    for i in range(n):
        lo, hi = indptr[i], indptr[i + 1]
        cnt = hi - lo
        if cnt == 0:
            continue
        row = np.sort(values[lo:hi])
        mean = 0.0
        for a in range(cnt):
            mean += row[a]
        mean /= cnt
        var = 0.0
        for a in range(cnt):
            var += (row[a] - mean) ** 2
        for q in range(codes.shape[0]):
            code = codes[q]
            if code == 0:
                out[i, q] = row[0]
            elif code == 1:
                out[i, q] = row[cnt - 1]
            elif code == 2:
                out[i, q] = mean
            elif code == 3:
                out[i, q] = np.sqrt(var / cnt)
            else:
                out[i, q] = (row[(cnt - 1) // 2] + row[cnt // 2]) / 2
    return out


@numba.njit(cache=True, nogil=True)
def edge_triangles_host(indptr, indices):  # pragma: no cover - compiled
    """Common neighbours of every CSR entry ``(i, indices[p])`` (marker per row)."""
    n = indptr.shape[0] - 1
    out = np.zeros(indices.shape[0])
    mark = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            mark[indices[p]] = i
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            t = 0
            for q in range(indptr[j], indptr[j + 1]):
                if mark[indices[q]] == i:
                    t += 1
            out[p] = t
    return out


def per_input_edge_host(edge_index: Tensor, csr: HostCSR, values: np.ndarray) -> np.ndarray:
    """Map values on the CSR entries back to the input edges (0 on self loops)."""
    ei = host_array(edge_index, np.int64)
    return _per_input_edge(ei[0], ei[1], csr.indptr, csr.indices, values)


@numba.njit(cache=True, nogil=True)
def _per_input_edge(row, col, indptr, indices, values):  # pragma: no cover - compiled
    shape = (row.shape[0],) + values.shape[1:]
    out = np.zeros(shape)
    for e in range(row.shape[0]):
        r, c = row[e], col[e]
        if r == c:
            continue
        lo, hi = indptr[r], indptr[r + 1]
        while lo < hi:  # binary search: rows are sorted by column
            mid = (lo + hi) // 2
            if indices[mid] < c:
                lo = mid + 1
            else:
                hi = mid
        if lo < indptr[r + 1] and indices[lo] == c:
            out[e] = values[lo]
    return out
