"""Compiled (numba) host kernels of Random Feature Propagation: the propagation operator's
CSR and the normalized trajectory of every graph. The batched torch kernels they match are in
:mod:`graphpe.ops.propagate.tensor`; the shared host plumbing is :mod:`graphpe.ops.host`."""

from __future__ import annotations

import numpy as np

from graphpe.ops import aot
from graphpe.ops.host import HostCSR, csr_degrees, graph_chunks, run_over_graphs

# -------------------------------------------------------------- random feature propagation

OPERATOR_CODES = {"adj": 0, "gcn": 1, "rw": 2, "lap_shift": 3}


def propagate_host(csr: HostCSR, ptr: np.ndarray, operator: str, x0: np.ndarray, steps: int,
                   normalization: str, *, rank_tol: float,
                   out_dtype: np.dtype | type = np.float64) -> np.ndarray:
    """Random Feature Propagation of every graph: ``x0`` ``[N, draws, d]`` (float64) ->
    trajectory ``[N, draws, steps + 1, d]``, as :func:`graphpe.ops.propagate.propagate` with
    the operator of :func:`graphpe.ops.propagate.propagation_operator`. The iterates are
    float64; ``out_dtype`` (float64 or float32) is only how they are stored, so a float32
    trajectory needs no second conversion pass over the whole output.

    ``qr`` orthonormalizes each graph's ``[n, d]`` block per draw by Gram-Schmidt done twice
    (numerically orthogonal), ``diag(R) >= 0``; a column whose remainder after projecting out
    the earlier ones has norm below ``rank_tol`` times the block's largest column norm lies in
    their span (numerical rank) and is set to zero, so ``n < d`` gives ``n`` columns and zeros.
    ``rank_tol`` is the trajectory's precision's
    (:func:`~graphpe.ops.propagate.tensor.rank_tolerance`), not the float64 iterates', so the
    columns kept are those the tensor kernels keep in that precision.
    """
    out = np.empty((x0.shape[0], x0.shape[1], steps + 1, x0.shape[2]), dtype=out_dtype)
    run_over_graphs(lambda a, b: _propagate(csr.indptr, csr.indices, csr.weight, ptr[a : b + 1],
                                            OPERATOR_CODES[operator], x0, steps,
                                            normalization == "qr", rank_tol, out),
                    graph_chunks(ptr))
    return out


@aot.njit(cache=True, nogil=True)
def _operator_values(indptr, indices, weight, op):  # pragma: no cover - compiled
    """Off-diagonal values and diagonal of the propagation operator, on the CSR pattern."""
    n = indptr.shape[0] - 1
    deg, _ = csr_degrees(indptr, weight)
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


def operator_csr(csr: HostCSR, operator: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, values)`` of the propagation operator (see
    :func:`graphpe.ops.propagate.propagation_operator`) on the graph's CSR pattern, with the
    diagonal entries of ``gcn`` and ``lap_shift`` merged in at their sorted place."""
    values, diag = _operator_values(csr.indptr, csr.indices, csr.weight, OPERATOR_CODES[operator])
    if operator in ("adj", "rw"):
        return csr.indptr, csr.indices, values
    return _with_diagonal(csr.indptr, csr.indices, values, diag)


@aot.njit(cache=True, nogil=True)
def _with_diagonal(indptr, indices, values, diag):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    out_ptr = np.empty(n + 1, dtype=np.int64)
    out_idx = np.empty(indices.shape[0] + n, dtype=np.int64)
    out_val = np.empty(indices.shape[0] + n)
    q = 0
    out_ptr[0] = 0
    for i in range(n):
        placed = False
        for p in range(indptr[i], indptr[i + 1]):
            if not placed and indices[p] > i:
                out_idx[q] = i
                out_val[q] = diag[i]
                q += 1
                placed = True
            out_idx[q] = indices[p]
            out_val[q] = values[p]
            q += 1
        if not placed:
            out_idx[q] = i
            out_val[q] = diag[i]
            q += 1
        out_ptr[i + 1] = q
    return out_ptr, out_idx, out_val


# A column whose remainder lies within this fraction of the rank cut is decided again with
# order-free sums (:func:`_cgs2`): there, the rounding of a sum taken in node order could move
# it across the cut, and relabelling the nodes would change which columns are kept.
RANK_BAND = 1e-3


@aot.njit(cache=True, nogil=True)
def _order_free_sum(terms):  # pragma: no cover - compiled
    """The sum of ``terms`` taken in sorted order: the same float for every permutation."""
    total = 0.0
    for v in np.sort(terms):
        total += v
    return total


@aot.njit(cache=True, nogil=True)
def _column_dot(cols, a, b, n, order_free, terms):  # pragma: no cover - compiled
    if order_free:
        for i in range(n):
            terms[i] = cols[a, i] * cols[b, i]
        return _order_free_sum(terms[:n])
    dot = 0.0
    for i in range(n):
        dot += cols[a, i] * cols[b, i]
    return dot


@aot.njit(cache=True, nogil=True)
def _cgs2(cols, n, d, rank_tol, order_free, dots, terms):  # pragma: no cover - compiled
    """Classical Gram-Schmidt done twice, in place, on the column-major block ``cols[:d, :n]``
    with the rank cut of :func:`propagate_host`. With ``order_free`` every sum over the nodes
    is :func:`_order_free_sum`, so the block's result is exactly equivariant to a relabelling
    of its rows. Returns whether a kept or cut column's remainder lay within
    :data:`RANK_BAND` of the cut."""
    biggest = 0.0
    for c in range(d):
        biggest = max(biggest, _column_dot(cols, c, c, n, order_free, terms))
    floor = rank_tol * np.sqrt(biggest)
    near_cut = False
    for c in range(d):
        for _ in range(2):
            for b in range(c):
                dots[b] = _column_dot(cols, b, c, n, order_free, terms)
            for b in range(c):
                dot = dots[b]
                for i in range(n):
                    cols[c, i] -= dot * cols[b, i]
        nrm = np.sqrt(_column_dot(cols, c, c, n, order_free, terms))
        near_cut = near_cut or (floor > 0.0 and abs(nrm - floor) <= RANK_BAND * floor)
        inv = 0.0 if nrm <= floor or nrm == 0.0 else 1.0 / nrm
        for i in range(n):
            cols[c, i] *= inv
    return near_cut


@aot.njit(cache=True, nogil=True)
def _normalize_block(x, qr, rank_tol, scratch):  # pragma: no cover - compiled
    """Normalize one graph's ``[n, d]`` block in place (l2 columns, or Gram-Schmidt x2);
    ``scratch`` is ``[d + 2, >= max(n, d)]``."""
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
    # CGS2 ("twice is enough", Giraud et al. 2005) on a column-major copy: every dot product
    # and update runs over contiguous memory, which the compiler vectorizes; the row-major
    # block would make each of them a strided walk.
    cols = scratch  # [d + 2, >= n], C-contiguous (a sliced view would defeat vectorizing)
    dots, terms = scratch[d], scratch[d + 1]
    for i in range(n):
        for c in range(d):
            cols[c, i] = x[i, c]
    if _cgs2(cols, n, d, rank_tol, False, dots, terms):
        # a remainder near the cut: decide every column again with order-free sums, so the
        # columns kept do not depend on the node order (rare; O(d^2 n log n))
        for i in range(n):
            for c in range(d):
                cols[c, i] = x[i, c]
        _cgs2(cols, n, d, rank_tol, True, dots, terms)
    for i in range(n):
        for c in range(d):
            x[i, c] = cols[c, i]


def normalize_block_host(x: np.ndarray, rank_tol: float) -> np.ndarray:
    """One ``[n, d]`` float64 block orthonormalized by the rule of :func:`propagate_host`
    (a new array): the tensor kernels' fallback for blocks with a remainder near the cut."""
    out = np.array(x, dtype=np.float64, order="C")
    n, d = out.shape
    _normalize_block(out, True, rank_tol, np.empty((d + 2, max(n, d, 1))))
    return out


@aot.njit(cache=True, nogil=True)
def _propagate(indptr, indices, weight, ptr, op, x0, steps, qr, rank_tol, out):  # pragma: no cover
    values, diag = _operator_values(indptr, indices, weight, op)
    num_graphs = ptr.shape[0] - 1
    draws, d = x0.shape[1], x0.shape[2]
    big = 0
    for g in range(num_graphs):  # compiled: looping over graphs here is the kernel's design
        big = max(big, ptr[g + 1] - ptr[g])
    cur = np.empty((big, d))
    nxt = np.empty((big, d))
    scratch = np.empty((d + 2, max(big, d)))
    for g in range(num_graphs):  # compiled: each graph at its own size, no padding
        s = ptr[g]
        n = ptr[g + 1] - s
        if n == 0:
            continue
        for r in range(draws):
            x = cur[:n]
            for i in range(n):
                for c in range(d):
                    x[i, c] = x0[s + i, r, c]
            _normalize_block(x, qr, rank_tol, scratch)
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
                _normalize_block(y, qr, rank_tol, scratch)
                for i in range(n):
                    for c in range(d):
                        out[s + i, r, t, c] = y[i, c]
                x, y = y, x


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
