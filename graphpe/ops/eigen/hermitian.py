"""Compiled (numba) host kernels of Hermitian eigenproblems: the small dense Hermitian solver
(:func:`hermitian_eigh`: complex Householder reduction to a real symmetric tridiagonal matrix,
then the tridiagonal stages of the real solver of :mod:`graphpe.ops.eigen.compiled`; LAPACK's
``zheevr`` above :data:`~graphpe.ops.eigen.compiled.SMALL_EIGH_MAX` nodes), and the magnetic
Laplacian's eigenpairs over the graphs of a batch (:func:`dense_magnetic_eigenpairs_host`),
which call it once per graph and potential. The torch entry point, its batched torch kernel
and its sparse solver for large graphs are in :mod:`graphpe.ops.eigen.magnetic`."""

from __future__ import annotations

import numpy as np

from graphpe.ops import aot
from graphpe.ops.eigen.compiled import (
    SMALL_EIGH_MAX,
    ql_pair,
    ql_setup,
    split_tridiagonal,
    tridiagonal_vectors,
)
from graphpe.ops.host import FASTMATH, graph_chunks, run_over_graphs

# ----------------------------------------------------------------------------- Hermitian

# The smallest positive normal float64; below it a reciprocal overflows.
SMALLEST_NORMAL = float(np.finfo(np.float64).tiny)
# JOBZ, RANGE, UPLO, N, A, LDA, VL, VU, IL, IU, ABSTOL, M, W, Z, LDZ, ISUPPZ, WORK, LWORK,
# RWORK, LRWORK, IWORK, LIWORK, INFO
_zheevr = aot.LapackRoutine("zheevr", 23)


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _tridiagonalize_hermitian(ar, ai, n, d, e, hs, phase, pr, pi):  # pragma: no cover
    r"""Householder reduction of the Hermitian matrix ``ar + i ai`` (both triangles stored,
    real and imaginary parts apart so that every inner loop is a contiguous real loop) to a
    real symmetric tridiagonal matrix.

    Row ``i`` (from the last up) is reduced by :math:`H_i = I - u u^{\mathsf H} / h_i`
    (Hermitian and unitary, acting on ``0..i-1``): with :math:`c = a[0{:}i, i]` (the
    conjugate of row ``i``) and :math:`\beta = -e^{i \arg c_{i-1}} \|c\|`,
    :math:`u = c - \beta e_{i-1}`, :math:`h_i = \|c\|^2 + |c_{i-1}| \|c\|`, so that
    :math:`H_i c = \beta e_{i-1}`; the leading block becomes
    :math:`H_i B H_i = B - w u^{\mathsf H} - u w^{\mathsf H}` with :math:`p = B u / h_i`,
    :math:`w = p - \frac{u^{\mathsf H} p}{2 h_i} u`. ``u`` is stored in row ``i`` (columns
    ``:i``), ``hs[i] = h_i`` (0 where no reflector is needed: ``c`` already zero above its
    last entry, as on a graph's disconnected parts). With :math:`P = H_1 \cdots H_{n-1}`,
    :math:`T_c = P a P^{\mathsf H}` is Hermitian tridiagonal with complex off-diagonal
    :math:`t_i = T_c[i-1, i]`; the diagonal unitary :math:`\Delta = \operatorname{diag}(\delta)`,
    :math:`\delta_0 = 1`, :math:`\delta_i = \delta_{i-1} \bar t_i / |t_i|`, makes
    :math:`T = \Delta^{\mathsf H} T_c \Delta` real: diagonal ``d``, off-diagonal
    ``e[i] = |t_i|`` (``e[0] = 0``), ``phase = delta`` (complex). An eigenvector ``y`` of ``T``
    gives the eigenvector :math:`P^{\mathsf H} \Delta y` of ``a``
    (:func:`_hermitian_back_transform`). ``pr``, ``pi``: scratch of ``>= n`` floats."""
    for i in range(n - 1, 0, -1):
        l = i - 1
        sigma = 0.0  # |c_m|^2 over m < l
        for m in range(l):
            sigma += ar[i, m] * ar[i, m] + ai[i, m] * ai[i, m]
        clr, cli = ar[i, l], -ai[i, l]  # c_l
        # Nothing to annihilate: T_c[l, i] = c_l. Below the smallest normal number (entries
        # under 1e-154 on a matrix scaled to 1: far below eps) the entries are dropped, so
        # that h >= sigma stays normal and 1 / h finite.
        if sigma < SMALLEST_NORMAL:
            hs[i] = 0.0
            phase[i] = complex(clr, cli)
            continue
        absl = np.sqrt(clr * clr + cli * cli)
        norm = np.sqrt(sigma + absl * absl)
        unr, uni = (clr / absl, cli / absl) if absl > 0.0 else (1.0, 0.0)
        for m in range(l):
            ai[i, m] = -ai[i, m]  # u_m = c_m = conj(a[i, m])
        ar[i, l] = unr * (absl + norm)
        ai[i, l] = uni * (absl + norm)
        h = norm * (norm + absl)
        inv_h = 1.0 / h
        phase[i] = complex(-unr * norm, -uni * norm)  # beta = T_c[l, i]
        ur, ui = ar[i], ai[i]
        ktot = 0.0
        for j in range(i):  # p = B u / h over full rows
            br, bi = ar[j], ai[j]
            gr = 0.0
            gi = 0.0
            for k in range(i):
                gr += br[k] * ur[k] - bi[k] * ui[k]
                gi += br[k] * ui[k] + bi[k] * ur[k]
            pr[j] = gr * inv_h
            pi[j] = gi * inv_h
            ktot += ur[j] * pr[j] + ui[j] * pi[j]  # Re(conj(u_j) p_j)
        kk = ktot * 0.5 * inv_h
        for j in range(i):  # w = p - K u
            pr[j] -= kk * ur[j]
            pi[j] -= kk * ui[j]
        for j in range(i):  # B -= w u^H + u w^H
            br, bi = ar[j], ai[j]
            wr, wi, uj_r, uj_i = pr[j], pi[j], ur[j], ui[j]
            for k in range(i):
                br[k] -= wr * ur[k] + wi * ui[k] + uj_r * pr[k] + uj_i * pi[k]
                bi[k] -= wi * ur[k] - wr * ui[k] + uj_i * pr[k] - uj_r * pi[k]
        hs[i] = h
    _real_tridiagonal(ar, n, d, e, hs, phase)


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _real_tridiagonal(ar, n, d, e, hs, phase):  # pragma: no cover - compiled
    r"""The last step of :func:`_tridiagonalize_hermitian`: from the reduced matrix (diagonal
    in ``ar``, the complex off-diagonal :math:`t_i` in ``phase[i]``), the real tridiagonal
    :math:`T = \Delta^{\mathsf H} T_c \Delta`: ``d``, ``e[i] = |t_i|`` and ``phase = delta``."""
    if n > 0:
        hs[0] = 0.0
        e[0] = 0.0
        d[0] = ar[0, 0]
        phase[0] = 1.0
    delta = 1.0 + 0.0j
    for i in range(1, n):
        d[i] = ar[i, i]
        t = phase[i]
        size = abs(t)
        # A subnormal |t_i| is taken as 0 (the QL split drops it anyway, being far below
        # eps ||T||): its reciprocal overflows (``arcp`` turns t / |t| into t * (1 / |t|)).
        if size < SMALLEST_NORMAL:
            size = 0.0
        e[i] = size
        if size > 0.0:  # real divisions: a complex one squares |t| and underflows at 1e-160
            delta = delta * complex(t.real / size, -t.imag / size)
        phase[i] = delta


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _hermitian_back_transform(ar, ai, n, count, hs, phase, y, vr, vi, g):  # pragma: no cover
    """``vr + i vi = P^H Delta y`` (``[:n, :count]``): the eigenvectors of the Hermitian matrix
    reduced by :func:`_tridiagonalize_hermitian` (reflectors in the rows of ``ar``, ``ai``
    with ``hs``; ``phase``) from those of its real tridiagonal form (``y``); ``g``:
    ``[2, >= count]`` float scratch."""
    for k in range(n):
        dr, di = phase[k].real, phase[k].imag
        for c in range(count):
            vr[k, c] = dr * y[k, c]
            vi[k, c] = di * y[k, c]
    gr, gi = g[0], g[1]
    for i in range(1, n):  # H_{n-1} ... H_1 v: H_1 first
        h = hs[i]
        if h == 0.0:
            continue
        for c in range(count):
            gr[c] = 0.0
            gi[c] = 0.0
        for k in range(i):  # g = u^H v / h
            ur, ui = ar[i, k], ai[i, k]
            for c in range(count):
                gr[c] += ur * vr[k, c] + ui * vi[k, c]
                gi[c] += ur * vi[k, c] - ui * vr[k, c]
        inv_h = 1.0 / h
        for c in range(count):
            gr[c] *= inv_h
            gi[c] *= inv_h
        for k in range(i):  # v -= u g
            ur, ui = ar[i, k], ai[i, k]
            for c in range(count):
                vr[k, c] -= gr[c] * ur - gi[c] * ui
                vi[k, c] -= gr[c] * ui + gi[c] * ur


@aot.njit(cache=True, nogil=True)
def hermitian_scratch(nmax, k):  # pragma: no cover - compiled
    """Scratch (a tuple of arrays) for :func:`hermitian_eigh` on matrices of up to ``nmax``
    nodes and ``k`` vectors."""
    nmax = max(nmax, 1)
    kk = max(k, 1)
    return (np.empty(nmax + 1), np.empty((12, nmax + 2)),
            np.empty(nmax + 1, dtype=np.complex128), np.empty((2, nmax + 1)),
            np.empty((nmax + 1, kk)))


@aot.njit(cache=True, nogil=True)
def _unit_scale_hermitian(ar, ai, n):  # pragma: no cover - compiled
    """Scale ``ar + i ai`` (both triangles) so that its largest real or imaginary part is 1
    (the modulus is then at most sqrt 2); returns the factor. A matrix already at 1 (a
    normalized Laplacian's diagonal) is left exactly as it is."""
    scale = 0.0
    for i in range(n):
        for j in range(i + 1):
            scale = max(scale, abs(ar[i, j]), abs(ai[i, j]))
    if scale == 0.0:
        scale = 1.0
    if scale != 1.0:
        inv_scale = 1.0 / scale
        for i in range(n):
            for j in range(n):
                ar[i, j] *= inv_scale
                ai[i, j] *= inv_scale
    return scale


@aot.njit(cache=True, nogil=True)
def hermitian_eigh(ar, ai, n, count, vr, vi, scratch):  # pragma: no cover - compiled
    """The ``count`` smallest eigenvalues (ascending; returned as a view of the scratch) and
    eigenvectors (``vr + i vi``, ``[:n, :count]``, unit columns, their phase as the solver
    leaves it) of the Hermitian ``ar + i ai`` (``[:n, :n]``, both triangles, destroyed).

    Up to :data:`~graphpe.ops.eigen.compiled.SMALL_EIGH_MAX` nodes, the stages of the real
    solver (``_small_eigh`` of :mod:`graphpe.ops.eigen.compiled`) carried to Hermitian
    matrices: the matrix scaled (:func:`_unit_scale_hermitian`), reduced to a real
    symmetric tridiagonal matrix (:func:`_tridiagonalize_hermitian`: complex reflectors, then
    a diagonal unitary phase scaling), split where an off-diagonal entry is below
    ``eps ||T||``; all eigenvalues of the real tridiagonal matrix by implicit QL and the wanted
    vectors by inverse iteration, as for a real one (:func:`tridiagonal_vectors`), turned back
    by the phases and reflectors (:func:`_hermitian_back_transform`). Above, LAPACK's
    ``zheevr`` (relatively robust representations) for the wanted pairs alone. ``scratch``:
    :func:`hermitian_scratch`."""
    w, work, phase, reals, y = scratch
    if n > SMALL_EIGH_MAX:
        return _hermitian_eigh_lapack(ar, ai, n, count, vr, vi, w)
    scale, tnorm = _hermitian_prepare(ar, ai, n, scratch)
    ql_setup(work[0], work[1], n, w, work[3])
    ql_pair(w, work[3], n, w, work[3], 0)
    return _hermitian_finish(ar, ai, n, count, vr, vi, scratch, scale, tnorm)


@aot.njit(cache=True, nogil=True)
def _hermitian_prepare(ar, ai, n, scratch):  # pragma: no cover - compiled
    """First stage of :func:`hermitian_eigh` (up to :data:`SMALL_EIGH_MAX` nodes): scale,
    reduce to a real tridiagonal matrix, split; returns ``(scale, ||T||)``. With
    :func:`ql_setup` on ``work[0], work[1]`` into ``w, work[3]``, :func:`ql_pair` and
    :func:`_hermitian_finish`, two matrices' QL iterations can run interleaved."""
    w, work, phase, reals, y = scratch
    scale = _unit_scale_hermitian(ar, ai, n)
    _tridiagonalize_hermitian(ar, ai, n, work[0], work[1], work[2], phase, reals[0], reals[1])
    return scale, split_tridiagonal(n, work[0], work[1], work[10])


@aot.njit(cache=True, nogil=True)
def _hermitian_finish(ar, ai, n, count, vr, vi, scratch, scale, tnorm):  # pragma: no cover
    """Last stage of :func:`hermitian_eigh` after :func:`_hermitian_prepare` and the QL
    iteration on ``w`` (all eigenvalues): the ``count`` smallest pairs, as it returns them."""
    w, work, phase, reals, y = scratch
    tridiagonal_vectors(n, 0, count, w, y, work, scale, tnorm)
    _hermitian_back_transform(ar, ai, n, count, work[2], phase, y, vr, vi, reals[:2])
    return w[:count]


@aot.njit(cache=True, nogil=True)
def _hermitian_eigh_lapack(ar, ai, n, count, vr, vi, w):  # pragma: no cover - compiled
    """:func:`hermitian_eigh` above :data:`SMALL_EIGH_MAX` nodes: LAPACK's ``zheevr`` for
    the ``count`` smallest pairs."""
    a = np.empty((n, n), dtype=np.complex128)
    for i in range(n):
        for j in range(i + 1):  # C-order lower = column-major upper ('U') of a^T = conj(a)
            a[i, j] = complex(ar[i, j], ai[i, j])
    z = np.empty(n * max(count, 1), dtype=np.complex128)
    work = np.empty(66 * n, dtype=np.complex128)
    rwork = np.empty(24 * n)
    iwork = np.empty(10 * n, dtype=np.int32)
    isuppz = np.empty(2 * max(count, 1), dtype=np.int32)
    chars = np.array([ord("V"), ord("I"), ord("U")], dtype=np.uint8)
    ints = np.zeros(10, dtype=np.int32)
    ints[0], ints[1], ints[2], ints[3] = n, n, 1, count  # n, lda, il, iu
    ints[5], ints[6], ints[7], ints[8] = n, work.shape[0], rwork.shape[0], iwork.shape[0]
    reals = np.zeros(3)  # vl, vu (unused), abstol (0: LAPACK's default)
    _zheevr(chars[0:].ctypes, chars[1:].ctypes, chars[2:].ctypes, ints[0:].ctypes, a.ctypes,
            ints[1:].ctypes, reals[0:].ctypes, reals[1:].ctypes, ints[2:].ctypes,
            ints[3:].ctypes, reals[2:].ctypes, ints[4:].ctypes, w.ctypes, z.ctypes,
            ints[5:].ctypes, isuppz.ctypes, work.ctypes, ints[6:].ctypes, rwork.ctypes,
            ints[7:].ctypes, iwork.ctypes, ints[8:].ctypes, ints[9:].ctypes)
    if ints[9] != 0 or ints[4] != count:
        raise np.linalg.LinAlgError("LAPACK zheevr failed")
    for c in range(count):  # the vectors of conj(a): conjugated back
        for i in range(n):
            vr[i, c] = z[c * n + i].real
            vi[i, c] = -z[c * n + i].imag
    return w[:count]


# ----------------------------------------------------------------------------- magnetic Laplacian

# |sum v |v|^2| below this (relative) is a vanishing phase statistic (the rule of
# graphpe.ops.eigen.magnetic.canonical_phases)
PHASE_TOL = 1e-6


def dense_magnetic_eigenpairs_host(src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
                                   has_weight: bool, ptr: np.ndarray, qs: np.ndarray, k: int,
                                   sym: bool, relative: bool, max_nodes: int,
                                   per_node: bool) -> tuple[tuple[np.ndarray, ...], bool]:
    """The ``k`` smallest eigenpairs of the magnetic Laplacian :math:`L_q`
    (:func:`graphpe.ops.eigen.magnetic.magnetic_eigenpairs`: ``sym`` or not, potentials
    ``qs`` relative to each graph's one-way pairs where ``relative``) of every graph of
    ``ptr`` of at most ``max_nodes`` nodes, from its directed edges ``src -> dst`` (weights
    ``weight`` where ``has_weight``), in one compiled call (:func:`_magnetic_kernel`), batches
    of many nodes split over threads by :func:`~graphpe.ops.host.run_over_graphs`.

    Returns ``((eigvals [G, Q, k] float64, eigvecs [N, Q, k] complex128), larger)``, or with
    ``per_node`` ``((pe [N, Q, k, 2], eigvals [N, Q, k]) float32, mask [N, k]), larger)``,
    per node (real and imaginary parts last); the rows of graphs above ``max_nodes`` are left
    zero (the mask is written for every graph), and ``larger`` says whether there are any."""
    num_graphs, num_nodes, num_q = ptr.shape[0] - 1, int(ptr[-1]), qs.shape[0]
    if per_node:
        eigvals, eigvecs = _EMPTY_VALS, _EMPTY_VECS
        node_pe = np.zeros((num_nodes, num_q, k, 2), dtype=np.float32)
        node_vals = np.zeros((num_nodes, num_q, k), dtype=np.float32)
        node_mask = np.zeros((num_nodes, k), dtype=np.bool_)
    else:
        eigvals = np.zeros((num_graphs, num_q, k))
        eigvecs = np.zeros((num_nodes, num_q, k), dtype=np.complex128)
        node_pe, node_vals, node_mask = _EMPTY_PE, _EMPTY_VALS_32, _EMPTY_MASK
    chunks = graph_chunks(ptr)
    found = [False] * len(chunks)

    def run(a: int, b: int) -> None:
        found[chunks.index((a, b))] = _magnetic_kernel(
            src, dst, weight, has_weight, ptr[a:b + 1], qs, relative, k, sym, max_nodes,
            PHASE_TOL, per_node, eigvals if per_node else eigvals[a:b], eigvecs, node_pe,
            node_vals, node_mask)

    run_over_graphs(run, chunks)
    outputs = (node_pe, node_vals, node_mask) if per_node else (eigvals, eigvecs)
    return outputs, any(found)


_EMPTY_VALS = np.zeros((0, 0, 0))
_EMPTY_VECS = np.zeros((0, 0, 0), dtype=np.complex128)
_EMPTY_PE = np.zeros((0, 0, 0, 0), dtype=np.float32)
_EMPTY_VALS_32 = np.zeros((0, 0, 0), dtype=np.float32)
_EMPTY_MASK = np.zeros((0, 0), dtype=np.bool_)


# The kernel below is split where a call per chunk, graph or potential costs nothing against
# its O(n^2) work (the edges' sort, the scratch, a graph's adjacency, one L_q); the two solver
# slots stay in its loop, since they carry a matrix from one graph or potential to the next.
@aot.njit(cache=True, nogil=True)
def _magnetic_kernel(src, dst, weight, has_weight, ptr, qs, relative, k, sym, max_nodes, tol,
                     per_node, eigvals, eigvecs, node_pe, node_vals,
                     node_mask):  # pragma: no cover - compiled
    r"""The ``k`` smallest eigenpairs of :math:`L_q`
    (:func:`graphpe.ops.eigen.magnetic.magnetic_eigenpairs`) of every graph of at most
    ``max_nodes`` nodes and every potential of ``qs``, into ``eigvals`` ``[G, Q, k]`` (rows of
    the graphs of ``ptr``) and ``eigvecs`` ``[N, Q, k]`` (rows of the whole batch: ``ptr`` may
    be a slice of the batch's, one thread's graphs), or with ``per_node`` into ``node_pe``
    ``[N, Q, k, 2]`` (real and imaginary parts), ``node_vals`` ``[N, Q, k]`` (each node its
    graph's) and ``node_mask`` ``[N, k]`` (written for every graph); all zero on entry,
    padded columns stay zero. Returns whether larger graphs were left out.

    The edges are sorted by source (a counting sort, :func:`_edges_by_source`); per graph, its
    directed adjacency :math:`A` (largest weight of duplicates, self loops and weights 0
    dropped) as a dense ``n x n`` block, :math:`A_s = \max(A, A^\top)` and its degrees, the
    one-way pairs (for ``relative``; :func:`_graph_adjacency`); per potential, :math:`L_q`
    (:func:`_fill_magnetic_laplacian`), its ``min(k, n)`` smallest eigenpairs by
    :func:`hermitian_eigh`, each vector turned by the rule of
    :func:`graphpe.ops.eigen.magnetic.canonical_phases`."""
    base = ptr[0]  # the graphs ptr[0]..ptr[-1] of the batch (a thread's chunk): their edges
    num_graphs = ptr.shape[0] - 1
    indptr, order = _edges_by_source(src, base, ptr[-1])
    nmax, big = _largest_dense(ptr, max_nodes)
    # two solver slots: small matrices whose eigenvalues come from QL wait in a slot until a
    # second one joins them, and the two QL iterations run interleaved (ql_pair: a QL sweep
    # is a chain of dependent divisions and square roots; two chains take about the time of
    # one); slot_job: graph, potential, first node, size, pairs; slot_norms: scale, ||T||
    (adj_store, re_store, im_store, vr, vi, deg, dis, scratch, scratch2, slot_job,
     slot_norms) = _kernel_scratch(nmax, k)
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
        one_way = _graph_adjacency(indptr, order, dst, weight, has_weight, s - base, s, n, adj,
                                   deg, dis)
        m = min(k, n)
        for slot in range(qs.shape[0]):
            q = qs[slot]
            if relative:
                q = q / max(min(one_way, n), 1)
            ar = re_store[filled, : n * n].reshape((n, n))
            ai = im_store[filled, : n * n].reshape((n, n))
            _fill_magnetic_laplacian(adj, deg, dis, n, 2.0 * np.pi * q, sym, ar, ai)
            if n > SMALL_EIGH_MAX:  # LAPACK: solved at once
                vals = hermitian_eigh(ar, ai, n, m, vr, vi, scratch if filled == 0
                                      else scratch2)
                _store_pairs(g, slot, s, n, m, vals, vr, vi, tol, per_node, eigvals, eigvecs,
                             node_pe, node_vals)
                continue
            held = scratch if filled == 0 else scratch2
            scale, tnorm = _hermitian_prepare(ar, ai, n, held)
            ql_setup(held[1][0], held[1][1], n, held[0], held[1][3])
            slot_job[filled, 0], slot_job[filled, 1], slot_job[filled, 2] = g, slot, s
            slot_job[filled, 3], slot_job[filled, 4] = n, m
            slot_norms[filled, 0], slot_norms[filled, 1] = scale, tnorm
            filled += 1
            if filled == 2:
                _finish_slots(2, re_store, im_store, slot_job, slot_norms, scratch, scratch2,
                              vr, vi, tol, per_node, eigvals, eigvecs, node_pe, node_vals)
                filled = 0
    return big


@aot.njit(cache=True, nogil=True)
def _largest_dense(ptr, max_nodes):  # pragma: no cover - compiled
    """``(nmax, big)``: the size of the largest graph of ``ptr`` of at most ``max_nodes``
    nodes (at least 1), and whether a graph is larger."""
    nmax = 1
    big = False
    for g in range(ptr.shape[0] - 1):
        n = ptr[g + 1] - ptr[g]
        if n > max_nodes:
            big = True
        else:
            nmax = max(nmax, n)
    return nmax, big


@aot.njit(cache=True, nogil=True)
def _kernel_scratch(nmax, k):  # pragma: no cover - compiled
    """The scratch of :func:`_magnetic_kernel` for graphs of up to ``nmax`` nodes and ``k``
    pairs: the adjacency, the two solver slots' matrices (real and imaginary parts), the
    vectors, degrees and ``D^-1/2``, the two slots' :func:`hermitian_scratch`, their jobs and
    norms."""
    kk = max(k, 1)
    return (np.empty(nmax * nmax), np.empty((2, nmax * nmax)), np.empty((2, nmax * nmax)),
            np.empty((nmax, kk)), np.empty((nmax, kk)), np.empty(nmax), np.empty(nmax),
            hermitian_scratch(nmax, k), hermitian_scratch(nmax, k),
            np.zeros((2, 5), dtype=np.int64), np.zeros((2, 2)))


@aot.njit(cache=True, nogil=True)
def _finish_slots(filled, re_store, im_store, slot_job, slot_norms, scratch, scratch2, vr, vi,
                  tol, per_node, eigvals, eigvecs, node_pe, node_vals):  # pragma: no cover
    """The QL iterations of the ``filled`` (1 or 2) waiting matrices of :func:`_magnetic_kernel`,
    interleaved, then each one's vectors and outputs."""
    n2 = slot_job[1, 3] if filled == 2 else 0
    ql_pair(scratch[0], scratch[1][3], slot_job[0, 3], scratch2[0], scratch2[1][3], n2)
    for slot_index in range(filled):
        g, slot, s = slot_job[slot_index, 0], slot_job[slot_index, 1], slot_job[slot_index, 2]
        n, m = slot_job[slot_index, 3], slot_job[slot_index, 4]
        ar = re_store[slot_index, : n * n].reshape((n, n))
        ai = im_store[slot_index, : n * n].reshape((n, n))
        vals = _hermitian_finish(ar, ai, n, m, vr, vi, scratch if slot_index == 0 else scratch2,
                                 slot_norms[slot_index, 0], slot_norms[slot_index, 1])
        _store_pairs(g, slot, s, n, m, vals, vr, vi, tol, per_node, eigvals, eigvecs, node_pe,
                     node_vals)


@aot.njit(cache=True, nogil=True)
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


@aot.njit(cache=True, nogil=True)
def _canonical_phase(vr, vi, n, c, tol):  # pragma: no cover - compiled
    """The unit factor ``(re, im)`` of :func:`graphpe.ops.eigen.magnetic.canonical_phases` for
    column ``c`` of ``vr + i vi`` (``n`` rows)."""
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


@aot.njit(cache=True, nogil=True)
def _edges_by_source(src, start, end):  # pragma: no cover - compiled
    """The edges whose source is one of the nodes ``start..end-1``, grouped by source (a
    counting sort): node ``start + i``'s edges are ``order[indptr[i]:indptr[i + 1]]`` (ids
    into ``src``)."""
    num_nodes = end - start
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    for e in range(src.shape[0]):
        if start <= src[e] < end:
            indptr[src[e] - start + 1] += 1
    for i in range(num_nodes):
        indptr[i + 1] += indptr[i]
    fill = indptr[:-1].copy()
    order = np.empty(indptr[num_nodes], dtype=np.int64)
    for e in range(src.shape[0]):
        if start <= src[e] < end:
            order[fill[src[e] - start]] = e
            fill[src[e] - start] += 1
    return indptr, order


@aot.njit(cache=True, nogil=True)
def _graph_adjacency(indptr, order, dst, weight, has_weight, row, s, n, adj, deg,
                     dis):  # pragma: no cover - compiled
    r"""The directed adjacency :math:`A` of the graph of nodes ``s..s+n-1`` into ``adj``
    ``[n, n]`` (:math:`A_{ij}` the largest weight of the edges ``i -> j``; self loops and
    weights 0 dropped), its edges those of :func:`_edges_by_source` from position ``row``;
    the degrees of :math:`A_s = \max(A, A^\top)` into ``deg`` and :math:`D_s^{-1/2}` (0 on
    isolated nodes) into ``dis``. Returns the number of one-way pairs (node pairs joined in
    one direction only)."""
    adj[:, :] = 0.0
    for i in range(n):
        for p in range(indptr[row + i], indptr[row + i + 1]):
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
    return one_way


@aot.njit(cache=True, nogil=True)
def _fill_magnetic_laplacian(adj, deg, dis, n, theta, sym, ar,
                             ai):  # pragma: no cover - compiled
    r""":math:`L_q` of one graph into ``ar + i ai`` ``[n, n]`` (both triangles), from its
    directed adjacency ``adj``, degrees ``deg`` and ``dis`` (:func:`_graph_adjacency`) and
    ``theta`` :math:`= 2 \pi q`: entries :math:`-A_s(u, v) d_u d_v e^{2 \pi i q (B_{uv} -
    B_{vu})}` (:math:`d = D_s^{-1/2}`, 0 on isolated nodes, for ``sym``; 1 otherwise;
    :math:`B = [A > 0]`) and diagonal :math:`[D_s > 0]` (``sym``) or :math:`D_s`."""
    cos_t, sin_t = np.cos(theta), np.sin(theta)
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


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
