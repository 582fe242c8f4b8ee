"""The extreme eigenpairs of a large sparse symmetric operator by thick-restart Lanczos with
partial reorthogonalization, on the CPU (numpy and BLAS).

Thick restart (Wu and Simon, SIAM J. Matrix Anal. Appl. 2000; the symmetric case of
Stewart's Krylov-Schur): a Lanczos basis ``V = [v_0 .. v_(m-1)]`` of ``m = ncv`` vectors
satisfies ``A V = V H + beta v_m e_m^T`` with ``H = V^T A V``; at a restart the ``l`` Ritz pairs
``(theta_i, V y_i)`` nearest the wanted end are kept, and

    A X = X diag(theta) + v_m s^T,    s_i = beta y_(m-1, i),

so ``[X, v_m]`` starts the next cycle with ``H`` an arrowhead (``diag(theta)`` bordered by
``s``), and the Lanczos recurrence continues from ``v_m``. Ritz pairs converge when their
residual estimate ``|beta y_(m-1, i)|`` (``= ||A x_i - theta_i x_i||`` for an orthonormal
basis) is below ``tol``.

Partial reorthogonalization (Simon, Math. Comp. 1984; Larsen's PROPACK): in floating point the
Lanczos vectors lose orthogonality as Ritz pairs converge. The inner products
``omega_(j,i) = v_j^T v_i`` are not computed but estimated by the recurrence they obey,

    beta_(j+1) omega_(j+1, i) = (H^T omega_j)_i - (Omega H_(:, j))_i + rounding,

(``Omega`` the matrix of estimates; for the tridiagonal part this is Paige's recurrence, the
arrowhead of a restart is covered by the same formula), and a new vector is
orthogonalized against the whole basis (classical Gram-Schmidt, repeated where it cancels)
only when an estimate exceeds a threshold (:func:`reorth_threshold`), and again on the
following step (Simon's rule). Semi-orthogonality (``|omega| <= sqrt(eps)``) keeps ``H`` equal
to the projection of ``A`` onto the basis up to rounding, so the Ritz values keep full
accuracy; the threshold is lowered with the tolerance so the residuals do too. Most steps cost
one operator product and a few vector operations instead of two passes over the basis. The
vector following a restart is always orthogonalized against the whole basis.

Known eigenvectors (``null``, orthonormal columns: the null space of a Laplacian) are
projected out of every new vector: rounding would otherwise feed them back, and as extreme
eigenvectors they are what Lanczos converges to first.

A Hermitian operator (complex128 vectors, ``dtype=np.complex128``) runs the same recurrence
with conjugated inner products: ``H = V^H A V`` is then real (its diagonal ``v_j^H A v_j`` and
the norms ``beta`` are real), so the projected problem, the restarts and the orthogonality
estimates are unchanged (the magnetic Laplacian's eigenpairs,
:mod:`graphpe.ops.eigen.magnetic`).

Rows spread over processes (``reduce``): the vectors may hold one process's rows of an
operator partitioned by rows (:mod:`graphpe.ops.distributed`). Every inner product and norm is
then a sum of per-process partial sums, all-reduced by ``reduce``; ``H``, the orthogonality
estimates and every decision taken from them are then the same in every process, so the
processes run the same recurrence on their own rows.

Memory: ``(ncv + 1) n`` float64 (or complex128) values (the basis) plus the operator.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

import numpy as np

# BLAS level 1 on contiguous float64 vectors updates them in place (no temporary per step)
from scipy.linalg.blas import daxpy, dnrm2, dscal, dznrm2, zaxpy, zdscal

from graphpe.ops import aot

if TYPE_CHECKING:
    import scipy.sparse as sp

EPS = float(np.finfo(np.float64).eps)
# the residual ``||A x - theta x||`` a sparse solve of a Laplacian stops at by default (times
# half the spectrum's bound). An eigenspace's error is about the residual over the gap to the
# rest of the spectrum, and the smallest eigenvalues of large sparse graphs are clustered
# (ogbn-arxiv: gaps of 3e-5 among its 16 smallest): 1e-8 leaves a k = 16 eigenspace 1.4e-6
# from the converged one there, 1e-9 1.5e-8, for about a tenth more products
SPARSE_TOL = 1e-9
# the range of the estimated loss of orthogonality that triggers a reorthogonalization:
# sqrt(eps) is Simon's semi-orthogonality (Ritz values exact to rounding); below it, as far as
# the tolerance asks (``reorth_threshold``), down to eps^(3/4)
SEMI_ORTHOGONAL = EPS**0.5
MIN_REORTH_THRESHOLD = EPS**0.75
# a vector whose norm drops below this fraction in Gram-Schmidt is orthogonalized again
# (Daniel, Gragg, Kaufman and Stewart's test, 1976)
DGKS_RATIO = 0.717
# the step's sums may be reassociated (vectorized); no inf or NaN reaches them
FASTMATH = {"contract", "arcp", "reassoc", "nsz"}
# rows per block of the in-place restart product ``V[:, :l] = V[:, :m] Y``
_RESTART_ROWS = 1024


@runtime_checkable
class NullSpace(Protocol):
    """Known orthonormal eigenvectors ``Z`` ``[n, c]`` held in any form: ``shape`` is
    ``(rows, c)`` and ``project_(x)`` takes them out of a vector in place (``x -= Z Z^H x``,
    summed over the processes holding the other rows where the vectors are spread)."""

    shape: tuple[int, int]

    def project_(self, x: np.ndarray) -> None: ...


class LanczosResult(NamedTuple):
    """Ritz values ``[k]`` (ascending for ``smallest``, descending for ``largest``), Ritz
    vectors ``[n, k]`` (orthonormal columns), residual estimates ``|beta y_(m-1)|`` ``[k]``,
    operator products, restarts, reorthogonalized steps, and whether every estimate met
    ``tol``."""

    values: np.ndarray
    vectors: np.ndarray
    estimates: np.ndarray
    products: int
    restarts: int
    reorthogonalizations: int
    converged: bool


def default_ncv(k: int) -> int:
    """Lanczos basis size for ``k`` wanted pairs: ``max(3 k, k + 48)``. A longer basis means
    fewer restarts (each a ``n x ncv x keep`` product) and fewer products in all on clustered
    spectra, at ``n`` float64 values per vector."""
    return max(3 * k, k + 48)


def default_keep(k: int, ncv: int) -> int:
    """Ritz pairs kept at a restart: the ``k`` wanted and a sixth of the rest (8 of 48 for
    ``k = 16``), which keep the next unwanted eigenvalues resolved (their gap to the wanted
    ones drives convergence). A restart costs ``n ncv keep`` multiply-adds, and each cycle
    adds ``ncv - keep`` vectors: keeping fewer makes restarts cheaper and rarer for a few
    more products (measured, k = 16, one thread: 5-25% faster than keeping ``3/8`` of the
    rest on hub-heavy, social, co-authorship and citation graphs of 19k-170k nodes, at
    0-7% more products)."""
    return min(ncv - 1, k + (ncv - k) // 6)


def thick_restart_lanczos(
    matvec: Callable[[np.ndarray], np.ndarray] | sp.csr_matrix,
    n: int,
    k: int,
    *,
    which: str = "smallest",
    null: np.ndarray | NullSpace | None = None,
    tol: float = SPARSE_TOL,
    norm_bound: float = 1.0,
    ncv: int | None = None,
    keep: int | None = None,
    max_products: int | None = None,
    start: np.ndarray | None = None,
    seed: int = 0,
    vectors: bool = True,
    max_seconds: float | None = None,
    on_restart: Callable[[int, int], None] | None = None,
    dtype: type = np.float64,
    reduce: Callable[[np.ndarray], np.ndarray] | None = None,
) -> LanczosResult:
    """The ``k`` smallest (or largest) eigenpairs of a symmetric operator ``A`` restricted to
    the orthogonal complement of ``null``, by thick-restart Lanczos with partial
    reorthogonalization (module docstring).

    Args:
        matvec: ``x -> A x`` on float64 vectors of length ``n`` (may return a new array or a
            view it owns; the result is not kept), or ``A`` itself as a scipy CSR matrix:
            then, for a real operator on one process with at most one ``null`` column held
            as an array, each step runs in compiled passes (:func:`csr_product_dot`,
            :func:`lanczos_update`, :func:`remove_and_norm`: the same arithmetic, summed in
            another order).
        n: the operator's size.
        k: eigenpairs wanted; ``k + 1`` at most the dimension outside ``null``.
        which: ``"smallest"`` or ``"largest"`` eigenvalues.
        null: ``[n, c]`` orthonormal columns to exclude (eigenvectors of ``A``), or None; or a
            :class:`NullSpace` that projects them out itself (many columns kept sparse).
        tol: residual ``||A x - theta x||`` every returned pair must reach (estimated).
        norm_bound: an upper bound of ``||A||``; scales the rounding terms of the
            orthogonality estimates and the breakdown test.
        ncv: basis size (default :func:`default_ncv`), at most the dimension outside ``null``.
        keep: Ritz pairs kept at a restart, ``k <= keep < ncv`` (default
            :func:`default_keep`).
        max_products: stop after this many operator products (default ``100 n``) and
            return the best pairs, ``converged=False``.
        start: the first Lanczos vector (projected and normalized here); random where None.
        seed: seed of the random start and of the vectors that replace a breakdown.
        vectors: form the Ritz vectors (``[n, 0]`` where False: the values alone).
        max_seconds: stop at the end of the first cycle past this many seconds and return the
            best pairs, ``converged=False`` (no limit where None).
        on_restart: called at the end of every cycle with the operator products so far and
            the number of wanted pairs whose estimates meet ``tol`` (a progress bar).
        dtype: ``np.float64`` (a symmetric operator) or ``np.complex128`` (a Hermitian one:
            ``matvec`` takes and returns complex vectors, ``null``, ``start`` and the Ritz
            vectors are complex; a random start has independent real and imaginary parts).
        reduce: the vectors are this process's rows of vectors partitioned over processes
            (``n`` the total size): ``reduce`` sums an array of partial inner products over
            the processes (an all-reduce, the same result in every process). ``matvec`` then
            maps this process's rows of ``x`` to its rows of ``A x``; ``null`` and ``start``
            (required) hold this process's rows; random vectors are drawn per process.
    """
    if which not in ("smallest", "largest"):
        raise ValueError(f"which must be 'smallest' or 'largest', got {which!r}")
    free = n - (0 if null is None else null.shape[1])
    projector = null if isinstance(null, NullSpace) else None
    if not 0 < k < free:
        raise ValueError(f"k={k} must be in [1, {free - 1}] (the dimension outside the null "
                         f"space is {free})")
    m = min(free, default_ncv(k) if ncv is None else ncv)
    if m <= k:
        raise ValueError(f"ncv={m} must exceed k={k}")
    keep = default_keep(k, m) if keep is None else keep
    if not k <= keep < m:
        raise ValueError(f"keep={keep} must be in [k={k}, ncv={m})")
    max_products = 100 * n if max_products is None else max_products
    hermitian = np.dtype(dtype) == np.complex128
    if not hermitian and np.dtype(dtype) != np.float64:
        raise ValueError(f"dtype must be float64 or complex128, got {np.dtype(dtype)}")
    axpy, nrm2, scal = (zaxpy, dznrm2, _zdscal) if hermitian else (daxpy, dnrm2, dscal)
    local_dot = np.vdot if hermitian else np.dot
    rows = n
    if reduce is not None:
        if start is None:
            raise ValueError("with reduce, start must hold this process's rows of the first "
                             "vector")
        rows = len(start)

    def dot(a: np.ndarray, b: np.ndarray):
        if reduce is None:
            return local_dot(a, b)
        return reduce(np.atleast_1d(local_dot(a, b)))[0]

    def norm(x: np.ndarray, blas: bool = False) -> float:
        if reduce is None:
            return float(nrm2(x)) if blas else float(np.linalg.norm(x))
        return float(np.sqrt(reduce(np.atleast_1d(local_dot(x, x).real))[0]))

    def gram(basis: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``basis^H x`` (all rows)."""
        partial = np.conj(np.conj(x) @ basis) if hermitian else basis.T @ x
        return partial if reduce is None else reduce(partial)
    deadline = None if max_seconds is None else time.perf_counter() + max_seconds
    sign = 1.0 if which == "smallest" else -1.0
    threshold = reorth_threshold(tol, norm_bound)
    rng = np.random.default_rng(seed)

    def project(x: np.ndarray) -> None:
        if null is None:
            return
        if projector is not None:
            projector.project_(x)
        elif null.shape[1] == 1:  # one component: two vector operations, not a matmul
            axpy(null[:, 0], x, a=-dot(null[:, 0], x))
        elif reduce is None and hermitian:
            x -= null @ (null.conj().T @ x)
        else:
            x -= null @ gram(null, x)

    def draw() -> np.ndarray:
        if hermitian:
            return rng.standard_normal(rows) + 1j * rng.standard_normal(rows)
        return rng.standard_normal(rows)

    fused = _fusable(matvec, null, hermitian, reduce)
    if fused is None and not callable(matvec):
        matvec = matvec.__matmul__
    basis = np.zeros((rows, m + 1), dtype=dtype, order="F")
    # H = V^T A V: an arrowhead for the kept Ritz vectors after a restart, tridiagonal below
    proj = np.zeros((m + 1, m + 1))
    omega = np.eye(m + 1)  # estimated v_i^T v_j
    noise = 3.0 * EPS * norm_bound  # rounding added to the estimates each step
    v = draw() if start is None else np.array(start, dtype=dtype)
    project(v)
    basis[:, 0] = v / norm(v)
    lo = 0  # first new Lanczos vector of the cycle (the kept Ritz vectors come before)
    products = restarts = reorths = 0
    force = True  # orthogonalize the next vector in full: the first of a cycle, and the one
    # after each reorthogonalization
    while True:
        for j in range(lo, m):
            vj = basis[:, j]
            in_place = fused is not None
            if in_place:
                # the product lands in the next column; alpha, the three-term update, the
                # null vector's removal and the norm in three passes (:func:`_fused_step`)
                w = basis[:, j + 1]
                alpha, beta = _fused_step(fused, basis, j, lo, proj)
                products += 1
            else:
                w = np.asarray(matvec(vj), dtype=dtype)
                if np.may_share_memory(w, basis) or not w.flags.writeable:
                    w = w.copy()
                products += 1
                alpha = float(dot(vj, w).real)  # real for a Hermitian operator
                axpy(vj, w, a=-alpha)
                if j > lo:
                    axpy(basis[:, j - 1], w, a=-proj[j - 1, j])
                elif j > 0:
                    # right after a restart v_j is coupled to every kept Ritz vector
                    w -= basis[:, :j] @ proj[:j, j]
                project(w)
                beta = norm(w, blas=True)
            proj[j, j] = alpha
            if j > 0 and not force:
                est = (proj[: j + 1, :j].T @ omega[j, : j + 1]
                       - omega[:j, : j + 1] @ proj[: j + 1, j])
                est += np.copysign(noise, est)
                est /= max(beta, noise)
                omega[j + 1, :j] = omega[:j, j + 1] = est
                need = bool(np.abs(est).max() > threshold)
            else:
                need = True
            omega[j + 1, j] = omega[j, j + 1] = noise
            if need:
                beta = _orthogonalize(w, basis[:, : j + 1], beta, project, gram, norm)
                reorths += 1
                omega[j + 1, : j + 1] = omega[: j + 1, j + 1] = noise
                force = not force  # Simon: the next vector too, then stop
            if beta <= noise * np.sqrt(n):
                # an invariant subspace: continue with a random vector orthogonal to it
                w = draw()
                project(w)
                _orthogonalize(w, basis[:, : j + 1], norm(w), project, gram, norm)
                w /= norm(w)
                beta = 0.0
                in_place = False
            elif in_place:
                scale(w, 1.0 / beta)
            else:
                scal(1.0 / beta, w)
            proj[j + 1, j] = proj[j, j + 1] = beta
            if not in_place:
                basis[:, j + 1] = w
        theta, vecs = np.linalg.eigh(sign * proj[:m, :m])
        theta *= sign
        estimates = np.abs(beta * vecs[m - 1])
        met = estimates[:k] <= tol
        done = bool(met.all())
        if on_restart is not None:
            on_restart(products, int(met.sum()))
        late = deadline is not None and time.perf_counter() > deadline
        if done or products >= max_products or late:
            out = np.empty((rows, k if vectors else 0), dtype=dtype)
            if vectors:
                _combine(basis[:, :m], vecs[:, :k], out)
                # unit to rounding (a semi-orthogonal basis)
                if reduce is None:
                    out /= np.linalg.norm(out, axis=0)
                else:
                    out /= np.sqrt(reduce((out * np.conj(out)).real.sum(axis=0)))
            return LanczosResult(theta[:k], out, estimates[:k], products, restarts, reorths,
                                 done)
        # thick restart: keep the ``keep`` Ritz vectors nearest the wanted end and v_m
        lo = keep
        _combine(basis[:, :m], vecs[:, :lo], basis[:, :lo])
        basis[:, lo] = basis[:, m]
        proj[:] = 0.0
        proj[np.arange(lo), np.arange(lo)] = theta[:lo]
        proj[lo, :lo] = proj[:lo, lo] = beta * vecs[m - 1, :lo]
        spread = float(np.abs(omega - np.eye(m + 1)).max())
        omega[:] = max(spread, noise)
        np.fill_diagonal(omega, 1.0)
        restarts += 1
        force = True


class _FusedOperator(NamedTuple):
    """The operator of the fused step: a CSR matrix (``indptr``, ``indices``, ``data``), or,
    where ``scale`` is not empty, ``I - S P S`` with ``S = diag(scale)`` and ``P`` the 0/1
    pattern (``indptr``, ``indices``, no diagonal; ``data`` empty)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    scale: np.ndarray
    null: np.ndarray  # the one null vector, or empty
    work: np.ndarray  # scratch of n values for the pattern product, or empty


_NO_VECTOR = np.empty(0)
# two entries are "equal" for :func:`normalized_pattern` within this many roundings
_PATTERN_ULPS = 8


def normalized_pattern(csr: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(indptr, indices, scale)`` where ``csr`` is the symmetric normalized Laplacian of an
    unweighted graph without isolated nodes, ``I - D^-1/2 A D^-1/2`` (every diagonal entry 1,
    every other stored entry ``-1 / sqrt(d_i d_j)`` with ``d_i`` the row's other entries, to
    :data:`_PATTERN_ULPS` roundings): the off-diagonal pattern and ``D^-1/2``; None otherwise.

    Its product ``x - s * (A (s * x))`` reads the pattern only, no values: a third less memory
    traffic than the CSR product, the same result to rounding."""
    n = csr.shape[0]
    indptr, indices, data = csr.indptr, csr.indices, csr.data
    if n == 0 or csr.dtype != np.float64:
        return None
    rows = np.repeat(np.arange(n, dtype=indices.dtype), np.diff(indptr))
    on_diagonal = indices == rows
    if int(on_diagonal.sum()) != n or not np.all(data[on_diagonal] == 1.0):
        return None
    degree = np.diff(indptr) - 1
    if degree.min() < 1:
        return None
    scale = 1.0 / np.sqrt(degree.astype(np.float64))
    off = ~on_diagonal
    expected = -scale[rows[off]] * scale[indices[off]]
    if not np.all(np.abs(data[off] - expected) <= _PATTERN_ULPS * EPS * np.abs(expected)):
        return None
    pattern_ptr = np.zeros(n + 1, dtype=indices.dtype)
    np.cumsum(degree, out=pattern_ptr[1:])
    return pattern_ptr, indices[off], scale


def _fusable(matvec, null, hermitian: bool, reduce) -> _FusedOperator | None:
    """The operator's arrays where the step can be fused: a real float64 CSR matrix given as
    ``matvec`` (as a pattern where :func:`normalized_pattern` recognizes it), at most one
    null vector held densely, one process."""
    import scipy.sparse as sp
    if (callable(matvec) and not sp.issparse(matvec)) or hermitian or reduce is not None:
        return None
    if not sp.issparse(matvec) or matvec.format != "csr" or matvec.dtype != np.float64:
        return None
    if null is not None and (not isinstance(null, np.ndarray) or null.shape[1] != 1):
        return None
    z = _NO_VECTOR if null is None else np.ascontiguousarray(null[:, 0], dtype=np.float64)
    unsigned = np.uint32 if matvec.indices.dtype == np.int32 else np.uint64
    pattern = normalized_pattern(matvec)
    if pattern is not None:
        indptr, indices, scale = pattern
        return _FusedOperator(indptr.view(unsigned), np.ascontiguousarray(indices).view(unsigned),
                              _NO_VECTOR, scale, z, np.empty(matvec.shape[0]))
    return _FusedOperator(matvec.indptr.astype(matvec.indices.dtype, copy=False).view(unsigned),
                          matvec.indices.view(unsigned), matvec.data, _NO_VECTOR, z,
                          _NO_VECTOR)


def _fused_step(op: _FusedOperator, basis: np.ndarray, j: int, lo: int,
                proj: np.ndarray) -> tuple[float, float]:
    """One Lanczos step from ``v_j = basis[:, j]`` into ``basis[:, j + 1]``: ``w = A v_j``,
    ``alpha = v_j^T w``, ``w -= alpha v_j + beta_(j-1) v_(j-1)`` (or the kept Ritz vectors'
    couplings right after a restart), ``w -= (z^T w) z`` for the null vector ``z``; returns
    ``(alpha, ||w||)``."""
    vj, w = basis[:, j], basis[:, j + 1]
    if op.scale.size:
        alpha = pattern_product_dot(op.indptr, op.indices, op.scale, vj, op.work, w)
    else:
        alpha = csr_product_dot(op.indptr, op.indices, op.data, vj, w)
    if j > lo:
        c = lanczos_update(w, vj, alpha, basis[:, j - 1], proj[j - 1, j], op.null)
    else:
        c = lanczos_update(w, vj, alpha, _NO_VECTOR, 0.0, op.null)
        if j > 0:  # right after a restart v_j is coupled to every kept Ritz vector
            w -= basis[:, :j] @ proj[:j, j]
            c = float(op.null @ w) if op.null.size else 0.0
    return alpha, remove_and_norm(w, op.null, c)


def _zdscal(a: float, x: np.ndarray) -> np.ndarray:
    """``x *= a`` in place for complex ``x`` (BLAS ``zdscal`` copies unless told not to)."""
    return zdscal(a, x, overwrite_x=1)


def reorth_threshold(tol: float, norm_bound: float) -> float:
    """The estimated loss of orthogonality past which a Lanczos vector is reorthogonalized:
    ``tol / (100 ||A||)``, within ``[eps^(3/4), sqrt(eps)]``.

    Semi-orthogonality (``sqrt(eps)``) keeps the Ritz values exact to rounding, but not the
    Ritz vectors: the components a reorthogonalization removes (``~ omega beta``) are left out
    of ``H``, so the true residual ``||A x - theta x||`` can sit above the estimate by about the
    loss at that step (measured: ``1e-10`` true for ``1e-12`` estimated with ``sqrt(eps)``).
    The estimates are bounds, so a threshold a hundred times below ``tol / ||A||`` keeps that
    floor under the tolerance, for a few more reorthogonalized steps."""
    return min(SEMI_ORTHOGONAL, max(MIN_REORTH_THRESHOLD, tol / (100.0 * norm_bound)))


def _orthogonalize(w: np.ndarray, basis: np.ndarray, norm: float,
                   project: Callable[[np.ndarray], None],
                   gram: Callable[[np.ndarray, np.ndarray], np.ndarray],
                   vector_norm: Callable[[np.ndarray], float]) -> float:
    """``w`` minus its components along ``basis`` (classical Gram-Schmidt, repeated while the
    norm drops by more than :data:`DGKS_RATIO`, at most twice more), in place; its new norm.
    ``gram(basis, w)``: the components ``basis^H w`` (summed over the processes holding the
    other rows, where they are spread), ``vector_norm`` the norm over all rows."""
    for _ in range(3):
        w -= basis @ gram(basis, w)
        project(w)
        new = vector_norm(w)
        if new > DGKS_RATIO * norm:
            return new
        norm = new
    return norm


def _combine(basis: np.ndarray, coef: np.ndarray, out: np.ndarray) -> None:
    """``out = basis @ coef`` a block of rows at a time, so ``out`` may be the leading columns
    of ``basis`` itself (each block of rows depends on the same rows only)."""
    for lo in range(0, basis.shape[0], _RESTART_ROWS):
        out[lo : lo + _RESTART_ROWS] = basis[lo : lo + _RESTART_ROWS] @ coef


# ----------------------------------------------------------------------------- the fused step
# One Lanczos step reads and writes each vector of length n about ten times in separate numpy
# and BLAS calls; these kernels do the same arithmetic in four passes (the vectors of a large
# graph do not stay in cache between calls).


@aot.njit(cache=True, nogil=True)
def csr_product_dot(indptr, indices, data, x, out):  # pragma: no cover - compiled
    """``out = A x`` for the CSR matrix ``A`` (``indptr``, ``indices``, ``data``); returns
    ``x^T A x``. The index arrays are unsigned (a view of scipy's): with signed ones numba
    checks every gather for a negative index, which made the product twice scipy's time; and
    no reassociation, which would vectorize the row sums into gathers, slow on this
    project's CPUs."""
    acc = 0.0
    for i in range(x.shape[0]):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * x[indices[p]]
        out[i] = s
        acc += x[i] * s
    return acc


@aot.njit(cache=True, nogil=True)
def pattern_product_dot(indptr, indices, scale, x, work, out):  # pragma: no cover - compiled
    """``out = x - s * (P (s * x))`` for the 0/1 pattern ``P`` (``indptr``, ``indices``,
    unsigned) and ``s = scale`` (``work``: ``n`` values of scratch); returns ``x^T out``."""
    n = x.shape[0]
    for i in range(n):
        work[i] = scale[i] * x[i]
    acc = 0.0
    for i in range(n):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += work[indices[p]]
        y = x[i] - scale[i] * s
        out[i] = y
        acc += x[i] * y
    return acc


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def lanczos_update(w, v, alpha, prev, beta_prev, z):  # pragma: no cover - compiled
    """``w -= alpha v + beta_prev prev`` in place (``prev`` empty: no second term); returns
    ``z^T w`` after the update (``z`` empty: 0)."""
    n = w.shape[0]
    acc = 0.0
    with_prev = prev.shape[0] == n
    with_z = z.shape[0] == n
    if with_prev and with_z:
        for i in range(n):
            x = w[i] - alpha * v[i] - beta_prev * prev[i]
            w[i] = x
            acc += z[i] * x
    elif with_prev:
        for i in range(n):
            w[i] = w[i] - alpha * v[i] - beta_prev * prev[i]
    elif with_z:
        for i in range(n):
            x = w[i] - alpha * v[i]
            w[i] = x
            acc += z[i] * x
    else:
        for i in range(n):
            w[i] = w[i] - alpha * v[i]
    return acc


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def remove_and_norm(w, z, c):  # pragma: no cover - compiled
    """``w -= c z`` in place (``z`` empty: unchanged); returns ``||w||``."""
    acc = 0.0
    if z.shape[0] == w.shape[0]:
        for i in range(w.shape[0]):
            x = w[i] - c * z[i]
            w[i] = x
            acc += x * x
    else:
        for i in range(w.shape[0]):
            acc += w[i] * w[i]
    return np.sqrt(acc)


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def scale(w, a):  # pragma: no cover - compiled
    """``w *= a`` in place."""
    for i in range(w.shape[0]):
        w[i] *= a


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
