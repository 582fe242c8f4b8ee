"""Compiled (numba) host kernels of the Laplacian eigenpairs (LapPE, SignNet, SPE): one
dense solve per graph, of exactly its size. The batched torch kernels they match are in
:mod:`graphpe.ops.eigen.tensor`; the shared host plumbing is :mod:`graphpe.ops.host`.

The tridiagonal stages (:func:`ql_setup`, :func:`ql_pair`, :func:`split_tridiagonal`,
:func:`tridiagonal_vectors`) also serve the Hermitian solver of
:mod:`graphpe.ops.eigen.hermitian`."""

from __future__ import annotations

import numpy as np

from graphpe.ops import aot
from graphpe.ops.host import (
    FASTMATH,
    HostCSR,
    csr_degrees,
    graph_chunks,
    run_over_graphs,
)

_dsytrd = aot.LapackRoutine("dsytrd", 10)  # uplo, n, a, lda, d, e, tau, work, lwork, info
# side, uplo, trans, m, n, a, lda, tau, c, ldc, work, lwork, info
_dormtr = aot.LapackRoutine("dormtr", 13)


# ----------------------------------------------------------------------------- LapPE

# Up to this size the compiled solver below (its own Householder reduction) is fastest: LAPACK's
# fixed cost per call dominates small matrices (a full syevd of a 23-node molecule's Laplacian
# ~35 us, the compiled solver ~20). Above it LAPACK's blocked dsytrd reduction, called from
# compiled code, with bisection for the wanted eigenvalues (:func:`_reduced_eigenpairs`) wins
# (molecule-like graphs on this project's CPU, per graph, 16 pairs: 64 nodes 147 us compiled vs
# 170, 72 nodes 184 vs 177, 96 nodes 365 vs 284; 8 pairs cross over near 48 nodes).
SMALL_EIGH_MAX = 72


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _tridiagonalize(a, n, d, e, hs):  # pragma: no cover - compiled
    """Householder reduction of the symmetric a (lower triangle read) to tridiagonal form;
    reflector i is a[i, :i] with hs[i] (identity where hs[i] == 0)."""
    for i in range(n - 1, 0, -1):
        l = i - 1
        h = 0.0
        scale = 0.0
        if l > 0:
            for k in range(l + 1):
                scale += abs(a[i, k])
            if scale == 0.0:
                e[i] = a[i, l]
            else:
                inv_scale = 1.0 / scale
                for k in range(l + 1):
                    a[i, k] *= inv_scale
                    h += a[i, k] * a[i, k]
                f = a[i, l]
                g = -np.sqrt(h) if f >= 0.0 else np.sqrt(h)
                e[i] = scale * g
                h -= f * g
                a[i, l] = f - g
                f = 0.0
                for j in range(l + 1):
                    g = 0.0
                    for k in range(j + 1):
                        g += a[j, k] * a[i, k]
                    for k in range(j + 1, l + 1):
                        g += a[k, j] * a[i, k]
                    e[j] = g / h
                    f += e[j] * a[i, j]
                hh = f / (h + h)
                for j in range(l + 1):
                    f = a[i, j]
                    g = e[j] - hh * f
                    e[j] = g
                    for k in range(j + 1):
                        a[j, k] -= f * e[k] + g * a[i, k]
        else:
            e[i] = a[i, l]
        hs[i] = h
    hs[0] = 0.0
    e[0] = 0.0
    for i in range(n):
        d[i] = a[i, i]

@aot.njit(cache=True, nogil=True, inline="always")
def _ql_advance(w, off, n, l, m, i, phase, s, c, p, g, it):  # pragma: no cover - compiled
    """One step of the implicit QL iteration for the eigenvalues of a symmetric tridiagonal
    matrix (diagonal ``w``, off-diagonal ``off[i]`` between ``i`` and ``i + 1``; both
    overwritten; Numerical Recipes' ``tqli`` without vectors) as a state machine (``phase``
    0: look for the next unreduced block at ``l``, 1: one rotation of a sweep, 2: done), so
    that two independent matrices can be advanced in turns (see :func:`ql_pair`)."""
    if phase == 0:
        if l >= n:
            return l, m, i, 2, s, c, p, g, it
        m = l
        while m < n - 1:
            dd = abs(w[m]) + abs(w[m + 1])
            if abs(off[m]) <= 1e-300 + 2.220446049250313e-16 * dd:
                break
            m += 1
        if m == l or it >= 60:  # converged (or given up): next eigenvalue
            return l + 1, m, i, 0, s, c, p, g, 0
        g = (w[l + 1] - w[l]) / (2.0 * off[l])
        r = np.sqrt(g * g + 1.0)
        g = w[m] - w[l] + off[l] / (g + (r if g >= 0 else -r))
        return l, m, m - 1, 1, 1.0, 1.0, 0.0, g, it + 1
    if phase == 1:
        f = s * off[i]
        b = c * off[i]
        r = np.sqrt(f * f + g * g)
        off[i + 1] = r
        if r == 0.0:
            w[i + 1] -= p
            off[m] = 0.0
            return l, m, i, 0, s, c, p, g, it
        inv = 1.0 / r
        s = f * inv
        c = g * inv
        g = w[i + 1] - p
        r = (w[i] - g) * s + 2.0 * c * b
        p = s * r
        w[i + 1] = g + p
        g = c * r - b
        if i == l:  # sweep done
            w[l] -= p
            off[l] = g
            off[m] = 0.0
            return l, m, i, 0, s, c, p, g, it
        return l, m, i - 1, 1, s, c, p, g, it
    return l, m, i, phase, s, c, p, g, it


@aot.njit(cache=True, nogil=True)
def ql_setup(d, e, n, w, off):  # pragma: no cover - compiled
    """The input of :func:`ql_pair`: the diagonal ``d`` into ``w`` and the off-diagonal
    ``e[1:n]`` (``e[i]`` between ``i - 1`` and ``i``) into ``off[:n - 1]`` (``off[i]`` between
    ``i`` and ``i + 1``), ``off[n - 1] = 0``."""
    for i in range(n):
        w[i] = d[i]
    for i in range(1, n):
        off[i - 1] = e[i]
    if n > 0:
        off[n - 1] = 0.0


@aot.njit(cache=True, nogil=True)
def ql_pair(w1, off1, n1, w2, off2, n2):  # pragma: no cover - compiled
    """Eigenvalues (in place, unsorted) of two independent tridiagonal matrices, their QL
    steps taken in turns: a QL sweep is one long chain of dependent square roots and
    divisions, so a single matrix leaves the core idle for most of each step's latency, and
    two interleaved chains run in about the time of one."""
    l1, m1, i1, ph1, s1, c1, p1, g1, it1 = 0, 0, 0, 0, 1.0, 1.0, 0.0, 0.0, 0
    l2, m2, i2, ph2, s2, c2, p2, g2, it2 = 0, 0, 0, 0, 1.0, 1.0, 0.0, 0.0, 0
    while ph1 != 2 or ph2 != 2:
        l1, m1, i1, ph1, s1, c1, p1, g1, it1 = _ql_advance(
            w1, off1, n1, l1, m1, i1, ph1, s1, c1, p1, g1, it1)
        l2, m2, i2, ph2, s2, c2, p2, g2, it2 = _ql_advance(
            w2, off2, n2, l2, m2, i2, ph2, s2, c2, p2, g2, it2)


@aot.njit(cache=True, nogil=True)
def _tridiag_factor(d, e, n, lam, dl, dm, du, du2, piv, tiny):  # pragma: no cover - compiled
    """LU factors with partial pivoting of ``T - lam I`` (LAPACK's dlagtf), tiny pivots
    replaced by ``tiny`` so that inverse iteration at an exact eigenvalue stays finite."""
    for i in range(n):
        dm[i] = d[i] - lam
    for i in range(n - 1):
        du[i] = e[i + 1]
        dl[i] = e[i + 1]
        du2[i] = 0.0
    for i in range(n - 1):
        if abs(dm[i]) >= abs(dl[i]):
            piv[i] = 0.0
            if dm[i] == 0.0:
                dm[i] = tiny
            mult = dl[i] / dm[i]
            dl[i] = mult
            dm[i + 1] -= mult * du[i]
        else:
            piv[i] = 1.0
            mult = dm[i] / dl[i]
            dm[i] = dl[i]
            dl[i] = mult
            t = du[i]
            du[i] = dm[i + 1]
            dm[i + 1] = t - mult * dm[i + 1]
            if i < n - 2:
                du2[i] = du[i + 1]
                du[i + 1] = -mult * du[i + 1]
    for i in range(n):
        if abs(dm[i]) < tiny:
            dm[i] = tiny if dm[i] >= 0 else -tiny
        dm[i] = 1.0 / dm[i]  # the solves multiply by reciprocals (no division chain)


@aot.njit(cache=True, nogil=True)
def _tridiag_solve(n, dl, dm, du, du2, piv, x):  # pragma: no cover - compiled
    """``x <- (T - lam I)^-1 x`` from the factors of :func:`_tridiag_factor` (``dm`` holds
    the pivots' reciprocals)."""
    for i in range(n - 1):
        if piv[i] == 0:
            x[i + 1] -= dl[i] * x[i]
        else:
            t = x[i]
            x[i] = x[i + 1]
            x[i + 1] = t - dl[i] * x[i + 1]
    x[n - 1] *= dm[n - 1]
    if n > 1:
        x[n - 2] = (x[n - 2] - du[n - 2] * x[n - 1]) * dm[n - 2]
    for i in range(n - 3, -1, -1):
        x[i] = (x[i] - du[i] * x[i + 1] - du2[i] * x[i + 2]) * dm[i]


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _small_eigh(a, n, first, count, w, v, work):  # pragma: no cover - compiled
    """Eigenvalues (all, ascending, into ``w[:n]``) and the eigenvectors ``first`` to
    ``first + count - 1`` (columns of ``v[:n, :count]``) of the symmetric ``a[:n, :n]``
    (lower triangle read, destroyed); ``work`` is ``[12, >= n + 1]`` scratch.

    The matrix is scaled to unit largest entry; Householder tridiagonalization without forming
    Q; the tridiagonal matrix is split where an off-diagonal entry is below ``eps ||T||``
    (disconnected graphs split exactly), all eigenvalues of each block by implicit QL; the
    wanted eigenvectors by inverse iteration on their own block (zero elsewhere: a component's
    vector has exact zeros off the component), two solves from a fixed start; eigenvalues of
    one block closer than ``1e-3 ||T||`` get shifts at least ``10 eps ||T||`` apart and
    vectors orthogonalized against each other, as LAPACK's ``dstein`` does; finally the
    reflectors are applied to those vectors only. For a 23-node molecule that is ~n^3 +
    2 n^2 k flops against LAPACK's full ``syevd``, and no library call overhead."""
    scale, tnorm = _eigh_prepare(a, n, work)
    ql_setup(work[0], work[1], n, w, work[3])
    ql_pair(w, work[3], n, w, work[3], 0)
    _eigh_vectors(a, n, first, count, w, v, work, scale, tnorm)


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _eigh_prepare(a, n, work):  # pragma: no cover - compiled
    """First stage of :func:`_small_eigh`: scale, tridiagonalize, split into unreduced blocks
    (off-diagonal entries below ``eps ||T||`` set to 0, ``work[10]`` the block start of each
    position); returns ``(scale, ||T||)``. The QL iteration never crosses a zero off-diagonal,
    so each eigenvalue stays at a position of its own block."""
    d, e, hs = work[0], work[1], work[2]
    block_of = work[10]
    scale = _unit_scale(a, n)
    _tridiagonalize(a, n, d, e, hs)
    return scale, split_tridiagonal(n, d, e, block_of)


@aot.njit(cache=True, nogil=True)
def _unit_scale(a, n):  # pragma: no cover - compiled
    """Scale the lower triangle of ``a`` to unit largest entry; returns the factor."""
    scale = 0.0
    for i in range(n):
        for j in range(i + 1):
            scale = max(scale, abs(a[i, j]))
    if scale == 0.0:
        scale = 1.0
    if scale != 1.0:  # (a normalized Laplacian's largest entry is already 1)
        inv_scale = 1.0 / scale
        for i in range(n):
            for j in range(i + 1):
                a[i, j] *= inv_scale
    return scale


@aot.njit(cache=True, nogil=True)
def split_tridiagonal(n, d, e, block_of):  # pragma: no cover - compiled
    """Zero the off-diagonal entries ``e[i]`` (between ``i - 1`` and ``i``) below
    ``eps ||T||`` and record each position's block start; returns ``||T||`` (at least 1: the
    matrix was scaled to unit largest entry)."""
    tnorm = 1.0  # >= ||A||_2 / max|a_ij| = 1 after scaling (and 1 for a zero matrix)
    for i in range(n):
        tnorm = max(tnorm, abs(d[i]) + abs(e[i]) + (abs(e[i + 1]) if i + 1 < n else 0.0))
    eps = 2.220446049250313e-16
    start = 0
    for i in range(n):
        if i > 0 and abs(e[i]) <= eps * tnorm:
            e[i] = 0.0
            start = i
        block_of[i] = start
    return tnorm


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _eigh_vectors(a, n, first, count, w, v, work, scale, tnorm):  # pragma: no cover
    """Last stage of :func:`_small_eigh`: sort the eigenvalues ``w[:n]`` (with their blocks),
    inverse iteration for the wanted ones, back-transformation, eigenvalues rescaled."""
    tridiagonal_vectors(n, first, count, w, v, work, scale, tnorm)
    hs, x = work[2], work[8]
    # back-transform the tridiagonal eigenvectors: v <- P_{n-1} ... P_1 v, all columns at once
    # (rows of v are contiguous: the inner loops run over the wanted columns)
    g = x[:count]
    for i in range(1, n):
        h = hs[i]
        if h == 0.0:
            continue
        for c in range(count):
            g[c] = 0.0
        for k in range(i):
            aik = a[i, k]
            for c in range(count):
                g[c] += aik * v[k, c]
        inv_h = 1.0 / h
        for c in range(count):
            g[c] *= inv_h
        for k in range(i):
            aik = a[i, k]
            for c in range(count):
                v[k, c] -= g[c] * aik


@aot.njit(cache=True, nogil=True)
def tridiagonal_vectors(n, first, count, w, v, work, scale, tnorm):  # pragma: no cover
    """Sort the eigenvalues ``w[:n]`` of the tridiagonal matrix in ``work`` (with their
    blocks), compute the wanted eigenvectors ``first..first+count-1`` of the tridiagonal
    matrix into ``v[:n, :count]`` (:func:`_inverse_iteration`), and rescale ``w``."""
    order = np.argsort(w[:n])
    sorted_w = w[:n][order]
    sorted_block = work[10][:n][order]
    _inverse_iteration(n, first, sorted_w[first : first + count],
                       sorted_block[first : first + count], count, v, work, tnorm)
    for i in range(n):
        w[i] = sorted_w[i] * scale


@aot.njit(cache=True, nogil=True, inline="always")
def _block_end(block_of, b0, n):  # pragma: no cover - compiled
    """One past the last position of the unreduced block starting at ``b0`` (``block_of``
    as written by :func:`split_tridiagonal`)."""
    b1 = b0 + 1
    while b1 < n and block_of[b1] == b0:
        b1 += 1
    return b1


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _inverse_iteration(n, first, lams, blocks, count, v, work, tnorm):  # pragma: no cover
    """Eigenvectors of the (split) tridiagonal matrix in ``work`` for the ascending eigenvalues
    ``lams[:count]`` (numbers ``first..`` among all), each in the unreduced block starting at
    ``blocks[c]``, into the columns of ``v[:n, :count]``: two solves from a fixed pseudo-random
    start on the eigenvalue's own block (zero elsewhere); eigenvalues of one block closer than
    ``1e-3 ||T||`` get shifts at least ``10 eps ||T||`` apart and vectors orthogonalized against
    each other, as LAPACK's ``dstein`` does."""
    d, e = work[0], work[1]
    dl, dm, du, du2, x, piv = work[4], work[5], work[6], work[7], work[8], work[9]
    block_of, shifts = work[10], work[11]
    eps = 2.220446049250313e-16
    ortol = 1e-3 * tnorm
    for c in range(count):
        lam = lams[c]
        b0 = int(blocks[c])
        b1 = _block_end(block_of, b0, n)
        nb = b1 - b0
        shift = lam
        for q in range(c):  # keep shifts apart within a cluster of this block
            if blocks[q] == b0 and lam - lams[q] <= ortol:
                shift = max(shift, shifts[q] + 10.0 * eps * tnorm)
        shifts[c] = shift
        state = np.uint32(12345 + 7919 * (first + c))  # a fixed pseudo-random start
        for i in range(n):
            x[i] = 0.0
        for i in range(b0, b1):
            state = state * np.uint32(1664525) + np.uint32(1013904223)
            x[i] = state * (1.0 / 4294967296.0) - 0.5
        _tridiag_factor(d[b0:b1], e[b0:b1], nb, shift, dl, dm, du, du2, piv, eps * tnorm)
        for _ in range(2):
            _tridiag_solve(nb, dl, dm, du, du2, piv, x[b0:b1])
            for q in range(c):  # orthogonalize within the cluster
                if blocks[q] == b0 and lam - lams[q] <= ortol:
                    dot = 0.0
                    for i in range(b0, b1):
                        dot += v[i, q] * x[i]
                    for i in range(b0, b1):
                        x[i] -= dot * v[i, q]
            nrm = 0.0
            for i in range(b0, b1):
                nrm += x[i] * x[i]
            inv = 1.0 / np.sqrt(nrm)
            for i in range(b0, b1):
                x[i] *= inv
        for i in range(n):
            v[i, c] = x[i]


# Bisection stops at this width (times ||T||), the Rayleigh quotient of the inverse-iteration
# vector then gives the eigenvalue to rounding: 35 halvings instead of 52. The shift error it
# leaves is far below the gaps (>= 1e-3 ||T||) outside which vectors are not orthogonalized, so
# two inverse-iteration solves still converge.
BISECTION_TOL = 1e-10


@aot.njit(cache=True, nogil=True)
def _smallest_by_bisection(n, d, e, block_of, want, tol, lams, blocks, scratch,
                           counts):  # pragma: no cover - compiled
    """The ``want`` smallest eigenvalues of the split tridiagonal matrix ``(d, e)`` (layout of
    :func:`split_tridiagonal`), ascending, into ``lams[:want]`` with their block starts in
    ``blocks``: per unreduced block its ``min(want, size)`` smallest by bisection on Sturm
    counts (LAPACK's ``dstebz`` rule: the count of negative pivots of ``T - x I`` is the number
    of eigenvalues below ``x``), to within ``tol``, then the smallest ``want`` of all blocks.

    All of a block's wanted eigenvalues are bisected together, one lane each (independent
    chains of Sturm-count divisions, a loop over lanes that vectorizes).
    ``scratch``: ``[4, >= n]`` floats; ``counts``: ``>= n`` ints."""
    eps = 2.220446049250313e-16
    pivmin = 2.2250738585072014e-308 * 4.0  # > 0: a zero pivot counts as negative
    atol = max(tol, 2.0 * eps)
    lo, hi, mid, q = scratch[0], scratch[1], scratch[2], scratch[3]
    total = 0
    b0 = 0
    while b0 < n:
        b1 = _block_end(block_of, b0, n)
        r = min(want, b1 - b0)
        glo, ghi = np.inf, -np.inf  # Gershgorin bounds of the block
        for i in range(b0, b1):
            radius = (abs(e[i]) if i > b0 else 0.0) + (abs(e[i + 1]) if i + 1 < b1 else 0.0)
            glo = min(glo, d[i] - radius)
            ghi = max(ghi, d[i] + radius)
        glo -= atol
        ghi += atol
        for j in range(r):
            lo[total + j] = glo
            hi[total + j] = ghi
        lanes_lo = lo[total : total + r]
        lanes_hi = hi[total : total + r]
        lanes_mid = mid[:r]
        lanes_q = q[:r]
        lanes_count = counts[:r]
        for _ in range(128):  # ~35 halvings reach 1e-10 ||T|| from the Gershgorin interval
            wide = False
            for j in range(r):
                width = lanes_hi[j] - lanes_lo[j]
                if width > atol + 2.0 * eps * max(abs(lanes_lo[j]), abs(lanes_hi[j])):
                    wide = True
                lanes_mid[j] = 0.5 * (lanes_lo[j] + lanes_hi[j])
            if not wide:
                break
            for j in range(r):
                lanes_q[j] = 1.0
                lanes_count[j] = 0
            for i in range(b0, b1):
                e2 = e[i] * e[i] if i > b0 else 0.0
                di = d[i]
                for j in range(r):  # independent lanes: vectorized
                    t = di - lanes_mid[j] - e2 / lanes_q[j]
                    negative = t <= pivmin
                    lanes_q[j] = min(t, -pivmin) if negative else t
                    lanes_count[j] += 1 if negative else 0
            for j in range(r):  # eigenvalue j of the block lies below mid iff count > j
                if lanes_count[j] > j:
                    lanes_hi[j] = lanes_mid[j]
                else:
                    lanes_lo[j] = lanes_mid[j]
        for j in range(r):
            lams[total + j] = 0.5 * (lanes_lo[j] + lanes_hi[j])
            blocks[total + j] = b0
        total += r
        b0 = b1
    order = np.argsort(lams[:total])
    found = lams[:total][order]
    found_blocks = blocks[:total][order]
    for j in range(want):
        lams[j] = found[j]
        blocks[j] = found_blocks[j]


@aot.njit(cache=True, nogil=True)
def _tridiagonal_pairs(n, first, count, d, e, w, v, work, scratch, counts, scale,
                       tnorm):  # pragma: no cover - compiled
    """Eigenpairs ``first..first+count-1`` (ascending) of the split real symmetric tridiagonal
    matrix ``(d, e)`` (layout of :func:`split_tridiagonal`, ``work`` as :func:`_small_eigh`'s):
    eigenvalues times ``scale`` into ``w[:count]``, vectors into ``v[:n, :count]``. Where the
    wanted are at most a quarter, by bisection (:func:`_smallest_by_bisection`), inverse
    iteration and the Rayleigh quotient (accurate to rounding); otherwise all eigenvalues by
    QL (:func:`tridiagonal_vectors`). ``scratch``: ``[6, >= n + 1]`` floats; ``counts``:
    ``>= n + 1`` ints."""
    if 4 * (first + count) <= n:
        lams, blocks = scratch[4], scratch[5]
        _smallest_by_bisection(n, d, e, work[10], first + count, BISECTION_TOL * tnorm, lams,
                               blocks, scratch, counts)
        _inverse_iteration(n, first, lams[first : first + count],
                           blocks[first : first + count], count, v, work, tnorm)
        for c in range(count):  # the Rayleigh quotient: accurate to rounding
            b0 = int(blocks[first + c])
            b1 = _block_end(work[10], b0, n)
            rq = d[b0] * v[b0, c] * v[b0, c]
            for i in range(b0 + 1, b1):
                rq += v[i, c] * (d[i] * v[i, c] + 2.0 * e[i] * v[i - 1, c])
            w[c] = rq * scale
    else:
        ql_setup(d, e, n, w, work[3])
        ql_pair(w, work[3], n, w, work[3], 0)
        tridiagonal_vectors(n, first, count, w, v, work, scale, tnorm)
        for c in range(count):
            w[c] = w[first + c]


@aot.njit(cache=True, nogil=True)
def _reduced_eigenpairs(indptr, indices, weight, ptr, graphs, k, norm, keep_trivial, sign,
                        flips, sign_tol, eigvals, eigvecs, mask):  # pragma: no cover - compiled
    """The graphs ``graphs`` (above :data:`SMALL_EIGH_MAX` nodes): LAPACK's blocked ``dsytrd``
    reduction to tridiagonal form, the wanted eigenvalues by bisection
    (:func:`_smallest_by_bisection`; QL for all of them where the wanted are more than a
    quarter), inverse iteration for their vectors, LAPACK's blocked ``dormtr``
    back-transformation."""
    deg, dis = csr_degrees(indptr, weight)
    nmax = 1
    for g in graphs:  # compiled: the largest graph sizes the scratch
        nmax = max(nmax, ptr[g + 1] - ptr[g])
    kk = max(k, 1)
    lap_store = np.empty(nmax * nmax)
    parent = np.empty(nmax, dtype=np.int64)
    work = np.empty((12, nmax + 2))
    w = np.empty(nmax + 1)
    scratch = np.empty((6, nmax + 1))
    counts = np.empty(nmax + 1, dtype=np.int64)
    vt = np.empty((kk, nmax))  # column-major n x count for dormtr: row c is vector c
    diag = np.empty(nmax)
    sub = np.empty(nmax)
    tau = np.empty(nmax)
    vec = np.empty(nmax)
    # dsytrd: n x 32 (its block size); dormtr: count x 64 + 65 x 64 (its T factor)
    lapack_work = np.empty(64 * max(nmax, kk) + 65 * 64)
    ints = np.zeros(16, dtype=np.int32)
    # the C-order lower triangle that _fill_laplacian and _unit_scale write is, read column
    # major as LAPACK does, the upper triangle: hence uplo 'U'
    chars = np.array([ord("U"), ord("L"), ord("N")], dtype=np.uint8)
    for g in graphs:  # compiled: one solve per graph at its own size (the kernel's design)
        s = ptr[g]
        n = ptr[g + 1] - s
        skip = 0 if keep_trivial else _component_count(indptr, indices, s, n, parent)
        m = min(k, n - skip)
        if m <= 0:
            continue
        lap = _fill_laplacian(indptr, indices, weight, deg, dis, s, n, norm,
                              lap_store[: n * n].reshape((n, n)))
        scale = _unit_scale(lap, n)
        ints[0], ints[1], ints[2] = n, n, lapack_work.shape[0]
        _dsytrd(chars[0:].ctypes, ints[0:].ctypes, lap.ctypes, ints[1:].ctypes, diag.ctypes,
                sub.ctypes, tau.ctypes, lapack_work.ctypes, ints[2:].ctypes, ints[3:].ctypes)
        if ints[3] != 0:
            raise np.linalg.LinAlgError("LAPACK dsytrd failed")
        d, e = work[0], work[1]
        for i in range(n):
            d[i] = diag[i]
            e[i] = sub[i - 1] if i > 0 else 0.0
        tnorm = split_tridiagonal(n, d, e, work[10])
        v = vt[:m, :n].T  # v[i, c] is vt[c, i]
        _tridiagonal_pairs(n, skip, m, d, e, w, v, work, scratch, counts, scale, tnorm)
        ints[4], ints[5], ints[6], ints[7], ints[8] = n, m, n, nmax, lapack_work.shape[0]
        _dormtr(chars[1:].ctypes, chars[0:].ctypes, chars[2:].ctypes, ints[4:].ctypes,
                ints[5:].ctypes, lap.ctypes, ints[6:].ctypes, tau.ctypes, vt.ctypes,
                ints[7:].ctypes, lapack_work.ctypes, ints[8:].ctypes, ints[9:].ctypes)
        if ints[9] != 0:
            raise np.linalg.LinAlgError("LAPACK dormtr failed")
        _store_pairs(g, s, n, w[:m], v, m, dis, norm, sign, flips, sign_tol, eigvals, eigvecs,
                     mask, vec)


NORMALIZATION_CODES = {"sym": 0, "rw": 1, "none": 2}
SIGN_CODES = {"canonical": 0, "random": 1, "none": 2}


def laplacian_eigenpairs_host(
    csr: HostCSR,
    ptr: np.ndarray,
    k: int,
    normalization: str = "sym",
    keep_trivial: bool = False,
    sign: str = "canonical",
    flips: np.ndarray | None = None,
    max_nodes: int = 384,
    pad_value: float = 0.0,
    dtype: np.dtype = np.float64,
    sign_tol: float = 1e-6,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """The ``k`` smallest (non-trivial) Laplacian eigenpairs of every graph of at most
    ``max_nodes`` nodes: ``(eigvals [G, k], eigvecs [N, k], mask [G, k], larger graphs)``,
    eigenvalues and vectors in ``dtype``, padding as :func:`graphpe.ops.eigen.
    laplacian_eigenpairs` (``pad_value``, zero vectors, mask False), and the ids of the graphs
    above ``max_nodes``, left for the caller's sparse solver.

    One solve per graph, of exactly its size (:func:`_small_eigh` up to
    :data:`SMALL_EIGH_MAX` nodes; above, :func:`_reduced_eigenpairs`), the trivial pairs (one per
    connected component) skipped unless ``keep_trivial``, ``rw`` vectors rescaled by
    ``D^-1/2`` to unit norm, signs as :func:`graphpe.ops.eigen.canonical_signs` (for
    ``random``, canonical signs times ``flips`` ``[G, k]``)."""
    num_graphs, num_nodes = ptr.shape[0] - 1, csr.indptr.shape[0] - 1
    eigvals = np.full((num_graphs, k), pad_value, dtype=dtype)
    eigvecs = np.zeros((num_nodes, k), dtype=dtype)
    mask = np.zeros((num_graphs, k), dtype=np.bool_)
    flips = _NO_FLIPS if flips is None else flips
    norm, sign_code = NORMALIZATION_CODES[normalization], SIGN_CODES[sign]
    per_graph_flips = sign_code == SIGN_CODES["random"]  # [G, k]: each chunk its rows
    run_over_graphs(
        lambda a, b: _laplacian_eigenpairs(
            csr.indptr, csr.indices, csr.weight, ptr[a : b + 1], k, norm, keep_trivial,
            sign_code, flips[a:b] if per_graph_flips else flips,
            min(max_nodes, SMALL_EIGH_MAX), sign_tol, eigvals[a:b], eigvecs, mask[a:b]),
        graph_chunks(ptr))
    sizes = ptr[1:] - ptr[:-1]
    biggest = int(sizes.max()) if num_graphs else 0
    if biggest <= min(SMALL_EIGH_MAX, max_nodes):
        return eigvals, eigvecs, mask, []
    mid = np.flatnonzero((sizes > SMALL_EIGH_MAX) & (sizes <= max_nodes))
    _reduced_eigenpairs(csr.indptr, csr.indices, csr.weight, ptr, mid, k, norm, keep_trivial,
                        sign_code, flips, sign_tol, eigvals, eigvecs, mask)
    return eigvals, eigvecs, mask, np.flatnonzero(sizes > max_nodes).tolist()


_NO_FLIPS = np.ones((1, 1))


@aot.njit(cache=True, nogil=True)
def _find(parent, i):  # pragma: no cover - compiled
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@aot.njit(cache=True, nogil=True)
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


@aot.njit(cache=True, nogil=True)
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


@aot.njit(cache=True, nogil=True)
def _fill_laplacian(indptr, indices, weight, deg, dis, s, n, norm, lap):  # pragma: no cover
    """The dense Laplacian of nodes ``s..s+n-1`` (one graph of the batch), written into
    ``lap`` (``[n, n]``, overwritten)."""
    lap[:, :] = 0.0
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
    return lap


@aot.njit(cache=True, nogil=True)
def _store_pairs(g, s, n, vals, vecs, m, dis, norm, sign, flips, sign_tol, eigvals, eigvecs,
                 mask, vec):  # pragma: no cover - compiled
    """Write graph ``g``'s ``m`` pairs (``vecs`` columns are the vectors): ``L_rw``
    rescaling, signs, outputs (``vec``: scratch of >= n entries)."""
    for c in range(m):
        eigvals[g, c] = vals[c]
        mask[g, c] = True
        for i in range(n):
            vec[i] = vecs[i, c]
        if norm == 1:  # L_rw eigenvector D^-1/2 u (1 on isolated nodes), back to unit norm
            nrm = 0.0
            for i in range(n):
                if dis[s + i] > 0:
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


@aot.njit(cache=True, nogil=True)
def _laplacian_eigenpairs(indptr, indices, weight, ptr, k, norm, keep_trivial, sign, flips,
                          max_nodes, sign_tol, eigvals, eigvecs, mask):  # pragma: no cover
    """Graphs up to ``max_nodes`` nodes (larger ones are left alone), solved two at a time:
    their QL iterations interleaved (:func:`ql_pair`)."""
    num_graphs = ptr.shape[0] - 1
    deg, dis = csr_degrees(indptr, weight)
    parent = np.empty(max(max_nodes, 1), dtype=np.int64)
    vec = np.empty(max(max_nodes, 1))
    # two solver slots: graph, first node, size, pairs skipped, pairs kept, scale, ||T||
    w = np.empty((2, max_nodes + 1))
    u = np.empty((2, max_nodes + 1, max(k, 1)))
    work = np.empty((2, 12, max_nodes + 2))
    lap_store = np.empty((2, max_nodes * max_nodes))
    slot_graph = np.zeros(2, dtype=np.int64)
    slot_info = np.zeros((2, 4), dtype=np.int64)  # s, n, skip, m
    slot_norms = np.zeros((2, 2))  # scale, ||T||
    filled = 0
    for g in range(num_graphs + 1):  # compiled; the extra pass flushes a half-filled pair
        if g < num_graphs:
            s = ptr[g]
            n = ptr[g + 1] - s
            if n == 0 or n > max_nodes:
                continue
            skip = 0 if keep_trivial else _component_count(indptr, indices, s, n, parent)
            m = min(k, n - skip)
            if m <= 0:
                continue
            lap = _fill_laplacian(indptr, indices, weight, deg, dis, s, n, norm,
                                  lap_store[filled, : n * n].reshape((n, n)))
            scale, tnorm = _eigh_prepare(lap, n, work[filled])
            ql_setup(work[filled, 0], work[filled, 1], n, w[filled], work[filled, 3])
            slot_graph[filled] = g
            slot_info[filled, 0], slot_info[filled, 1] = s, n
            slot_info[filled, 2], slot_info[filled, 3] = skip, m
            slot_norms[filled, 0], slot_norms[filled, 1] = scale, tnorm
            filled += 1
            if filled < 2:
                continue
        elif filled == 0:
            break
        n2 = slot_info[1, 1] if filled == 2 else 0
        ql_pair(w[0], work[0, 3], slot_info[0, 1], w[1], work[1, 3], n2)
        for q in range(filled):
            s, n, skip, m = slot_info[q, 0], slot_info[q, 1], slot_info[q, 2], slot_info[q, 3]
            lap = lap_store[q, : n * n].reshape((n, n))
            _eigh_vectors(lap, n, skip, m, w[q], u[q], work[q], slot_norms[q, 0],
                          slot_norms[q, 1])
            _store_pairs(slot_graph[q], s, n, w[q, skip : skip + m], u[q], m, dis, norm,
                         sign, flips, sign_tol, eigvals, eigvecs, mask, vec)
        filled = 0


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
