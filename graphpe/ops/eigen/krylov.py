"""The smallest eigenpairs of one large sparse symmetric Laplacian by Krylov methods:
thick-restart Lanczos (:mod:`graphpe.ops.eigen.lanczos`) and shift-invert Lanczos with a
sparse LU factorization (ARPACK, scipy's ``eigsh``); and ``auto``, the choice between them made
from bounded measurements of the graph at hand.

Both solvers work on the orthogonal complement of a known null space ``Z`` (one vector per
connected component, :class:`~graphpe.ops.eigen.sparse.ComponentBasis`), with the projector
``P = I - Z Z^T``:

- ``lanczos``: the smallest eigenvalues of ``P L P`` by thick-restart Lanczos with partial
  reorthogonalization; ``Z`` is projected out of every Lanczos vector, so a many-fold
  eigenvalue 0 is never met. Its stopping test is the absolute residual ``||L v - lambda v||
  <= tol``. Memory: ``ncv + 1`` Lanczos vectors, ``(ncv + 1) n * 8`` bytes, besides the
  operator (``ncv`` shrinks to fit a budget). Its cost depends on the gaps near the wanted
  end of the spectrum, which no cheap probe measures: from a few hundred products (social
  graphs) to tens of thousands (road networks, gaps of order 1e-6).
- ``shift_invert``: the largest eigenvalues ``nu`` of ``P (L - sigma I)^-1 P`` with ``sigma``
  slightly below 0, so ``lambda = sigma + 1 / nu``; tiny gaps near 0 become large relative
  gaps, and ARPACK converges in about ``2 k`` to ``5 k`` solves. ``L - sigma I`` is positive
  definite, so it is factored without pivoting in an approximate minimum degree order
  (:mod:`graphpe.ops.eigen.ordering`), whose factor size and work are known exactly before
  any numeric work. Memory: the factor (``2 nnz(C)`` values and row indices, 12 bytes each)
  plus ``ncv * n * 8`` bytes.

``auto`` (:func:`auto_eigenpairs`) never starts a step whose cost it has not bounded:

1. the symbolic analysis (:func:`~graphpe.ops.eigen.ordering.minimum_degree_order`, then
   :func:`~graphpe.ops.eigen.ordering.cholesky_column_counts`) runs under a work budget of
   :data:`ANALYSIS_WORK_PER_ENTRY` list entries per stored entry of ``L`` (sooner where its
   work so far projects past twice that: ``ordering.PROJECTED_WORK_MARGIN``) and a fill
   budget (the factor's memory budget, and the fill whose factorization could not finish within
   ``max_factor_seconds`` even at the best rate: ``flops >= nnz(C)^2 / (2 n)``). Graphs
   without small separators (hubs, expanders) stop there: ``lanczos``;
2. otherwise the factor's size and time are predicted from the exact column counts
   (:func:`predicted_factor_seconds`); past the memory budget or ``max_factor_seconds``:
   ``lanczos``;
3. otherwise both are affordable, and which is faster depends on the unmeasured gaps: a
   bounded race. Lanczos runs first for at most the predicted time of the whole shift-invert
   solve (:func:`predicted_shift_invert_seconds`); if it has not converged by then, the
   factorization and shift-invert follow. The total is at most about twice the faster
   method's time. A solve predicted under :data:`RACE_MIN_SECONDS` is not raced: shift-invert
   alone.

Every native step that can run long (the analysis, the factorization) runs through
:func:`~graphpe.ops.progress.run_interruptible`, so Ctrl-C returns within a fraction of a
second; Lanczos and ARPACK return to Python between operator products. Calls past
:data:`~graphpe.ops.progress.PROGRESS_DELAY_SECONDS` show a progress bar.

Neither solver's Ritz estimates are trusted as such: residuals ``||L v - lambda v||`` are
recomputed in float64 and returned.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from graphpe.ops.checks import check_positive_int
from graphpe.ops.eigen.lanczos import SPARSE_TOL, default_ncv, thick_restart_lanczos
from graphpe.ops.eigen.ordering import SymbolicFactor, symbolic_cholesky
from graphpe.ops.eigen.sparse import ComponentBasis, SparseEigenpairs
from graphpe.ops.progress import DelayedBar, run_interruptible

# scipy.sparse is imported where it is used: importing it takes ~0.1 s, which a process that
# never meets a large graph need not pay
if TYPE_CHECKING:
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

log = logging.getLogger("graphpe")

# Default memory budget of a sparse LU factor (shift-invert).
FACTOR_MAX_BYTES = 1 << 30
# ``auto``: the longest factorization it starts (seconds, predicted); a longer one would be
# the longest step Ctrl-C waits for if it were run in the calling thread.
FACTOR_MAX_SECONDS = 5.0
# ``auto``: the symbolic analysis scans at most this many list entries per stored entry of
# the Laplacian (measured: road networks need ~3, co-authorship cliques ~15; graphs whose
# ordering needs more have factors far too large to be worth it: a hub-heavy citation
# graph reached 235 and a fill of 320 nnz(L))
ANALYSIS_WORK_PER_ENTRY = 20
# SuperLU's factorization time on one thread, by the exact analysis: a cost per column and
# per multiply-add of the Cholesky factorization (supernodal: dense kernels on clustered
# columns; measured 2.6e9 on a co-authorship graph's 8e9). A shift-invert iteration: SuperLU's
# solve per stored factor entry (forward and back, measured 0.9-1.0 ns where the factor is
# dense-ish, ~4 where it is as sparse as a road network's), and ARPACK's work on its ``2 k + 1``
# basis vectors per node and wanted pair (measured ~6 ns)
FACTOR_SECONDS_PER_COLUMN = 1.0e-6
FACTOR_FLOPS_PER_SECOND = 2.5e9
SOLVE_SECONDS_PER_ENTRY = 1.0e-9
ARPACK_SECONDS_PER_NODE_PAIR = 6.0e-9
# shift-invert's solves per wanted pair (measured 3.2 - 5 for k = 16)
SOLVES_PER_PAIR = 4
# ``auto``: the shortest predicted shift-invert solve it races Lanczos against. Below it the
# race can save little, and Lanczos never won it on the graphs measured (Cora's and
# CiteSeer's largest components, predicted 0.02 s: Lanczos gave up after 124-154 products
# and the race cost 1.1-1.4x shift-invert alone); a factor that cheap means small separators,
# whose graphs have small, clustered low eigenvalues (slow for Lanczos)
RACE_MIN_SECONDS = 0.05
_INDEX_BYTES = 4
_VALUE_BYTES = 8


class Factor(NamedTuple):
    """A sparse LU factor of ``Q (L - sigma I) Q^T``, ``Q`` the symmetric ordering ``perm``
    (row ``i`` of the ordered matrix is row ``perm[i]`` of ``L``): scipy's ``SuperLU`` object,
    the shift, the ordering, the stored entries ``nnz(L) + nnz(U)``, their bytes (values and
    row indices) and the seconds the factorization took."""

    lu: spla.SuperLU
    sigma: float
    perm: np.ndarray
    nnz: int
    bytes: int
    seconds: float


class SolverChoice(NamedTuple):
    """The sparse eigensolver chosen for one connected component: its name, the reason in
    words, the measurements behind it, the symbolic factor where the analysis completed, and
    for ``shift_invert`` the seconds Lanczos runs first (the race; None: no race)."""

    solver: str
    reason: str
    probes: dict[str, float]
    symbolic: SymbolicFactor | None = None
    lanczos_seconds: float | None = 0.0


def default_sigma(upper: float) -> float:
    """The shift of ``shift_invert``: ``-1e-7 upper``, far below every nonzero eigenvalue of a
    graph of up to millions of nodes (``L - sigma I`` stays nonsingular, and the deflated null
    space it nearly annihilates is projected out on both sides)."""
    return -1e-7 * upper


def factor_bytes(symbolic: SymbolicFactor) -> int:
    """Bytes of the LU factor of the analysed matrix: ``L`` and ``U`` each hold the Cholesky
    factor's pattern (no pivoting), values and row indices."""
    return 2 * symbolic.nnz * (_VALUE_BYTES + _INDEX_BYTES)


def predicted_factor_seconds(symbolic: SymbolicFactor) -> float:
    """SuperLU's factorization time on one thread predicted from the exact analysis
    (:data:`FACTOR_SECONDS_PER_COLUMN`, :data:`FACTOR_FLOPS_PER_SECOND`)."""
    n = symbolic.perm.size
    return FACTOR_SECONDS_PER_COLUMN * n + symbolic.flops / FACTOR_FLOPS_PER_SECOND


def predicted_shift_invert_seconds(symbolic: SymbolicFactor, k: int) -> float:
    """The whole shift-invert solve: the factorization and :data:`SOLVES_PER_PAIR` ``k``
    iterations, each a solve (:data:`SOLVE_SECONDS_PER_ENTRY` per factor entry, twice
    ``nnz(C)``) and ARPACK's basis work (:data:`ARPACK_SECONDS_PER_NODE_PAIR` ``n k``)."""
    n = symbolic.perm.size
    iteration = (2 * symbolic.nnz * SOLVE_SECONDS_PER_ENTRY
                 + ARPACK_SECONDS_PER_NODE_PAIR * n * k)
    return predicted_factor_seconds(symbolic) + SOLVES_PER_PAIR * k * iteration


def analyze_factor(
    operator: sp.csr_matrix,
    *,
    max_fill: int | None = None,
    max_work: int | None = None,
) -> SymbolicFactor:
    """The approximate minimum degree ordering of ``operator``'s pattern and the exact
    column counts of its Cholesky factor (:mod:`graphpe.ops.eigen.ordering`), each stopped at
    ``max_fill`` entries below the diagonal, the ordering also at ``max_work`` scanned
    entries; ``complete`` says whether both finished. Runs interruptibly."""
    return run_interruptible(symbolic_cholesky, operator.indptr, operator.indices, max_fill,
                             max_work, desc="factor analysis")


def factor_laplacian(
    operator: sp.spmatrix,
    sigma: float,
    symbolic: SymbolicFactor | None = None,
    *,
    max_factor_bytes: int | None = None,
) -> Factor:
    """Factor ``operator - sigma I`` (symmetric, positive definite for ``sigma`` below its
    spectrum) in the order of ``symbolic`` (:func:`analyze_factor` where None): SuperLU on
    the symmetrically ordered matrix with its natural column order and no row interchanges,
    so ``L`` and ``U^T`` have the Cholesky factor's pattern. ``MemoryError`` before any
    numeric work where the factor would exceed ``max_factor_bytes`` (an analysis computed
    here stops as soon as it does). Runs interruptibly."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla
    n = operator.shape[0]
    if symbolic is None or not symbolic.complete:
        # the analysis stops once the factor passes the budget (no work spent past it)
        cap = None if max_factor_bytes is None else max_factor_bytes // (
            2 * (_VALUE_BYTES + _INDEX_BYTES))
        symbolic = analyze_factor(operator.tocsr(), max_fill=cap)
        if not symbolic.complete:
            raise MemoryError(f"factor_laplacian: the LU factor would take more than "
                              f"max_factor_bytes={max_factor_bytes:,} bytes (its analysis "
                              f"stopped past {cap:,} entries)")
    need = factor_bytes(symbolic)
    if max_factor_bytes is not None and need > max_factor_bytes:
        raise MemoryError(f"factor_laplacian: the LU factor would take {need:,} bytes > "
                          f"max_factor_bytes={max_factor_bytes:,}")
    perm = symbolic.perm
    shifted = (operator - sigma * sp.identity(n, format="csr")).tocsr()[perm][:, perm].tocsc()
    start = time.perf_counter()
    lu = run_interruptible(
        lambda: spla.splu(shifted, permc_spec="NATURAL",
                          options={"SymmetricMode": True, "DiagPivotThresh": 0.0}),
        desc="sparse LU factor", expected_seconds=predicted_factor_seconds(symbolic))
    nnz = int(lu.L.nnz + lu.U.nnz)
    return Factor(lu, sigma, perm, nnz, nnz * (_VALUE_BYTES + _INDEX_BYTES),
                  time.perf_counter() - start)


def lanczos_eigenpairs(
    operator: sp.spmatrix,
    k: int,
    *,
    upper: float,
    deflate: ComponentBasis | None = None,
    tol: float = SPARSE_TOL,
    ncv: int | None = None,
    max_products: int | None = None,
    max_basis_bytes: int | None = None,
    max_seconds: float | None = None,
    seed: int = 0,
) -> SparseEigenpairs:
    """The ``k`` smallest eigenpairs of a sparse symmetric positive semi-definite ``operator``
    restricted to the orthogonal complement of ``deflate``, by thick-restart Lanczos with
    partial reorthogonalization (:func:`~graphpe.ops.eigen.lanczos.thick_restart_lanczos`).

    Args:
        operator: ``[n, n]`` scipy sparse symmetric matrix with spectrum in ``[0, upper]``.
        k: eigenpairs wanted.
        upper: an upper bound of the spectrum (2 for ``L_sym``).
        deflate: known eigenvectors (the null space) to exclude; its dense ``[n, c]`` columns
            are formed (one per component: a single component is the intended use).
        tol: residual ``||L v - lambda v||`` wanted.
        ncv: Lanczos basis size (default
            :func:`~graphpe.ops.eigen.lanczos.default_ncv`); memory ``(ncv + 1) n * 8`` bytes.
        max_products: operator products before giving up (default ``100 n``).
        max_basis_bytes: memory budget of the basis: the default ``ncv`` shrinks to fit it
            (fewer vectors: more restarts); ``MemoryError`` where ``k + 8`` vectors do not fit.
        max_seconds: give up after the first restart past this many seconds (no limit where
            None); ``converged`` is then False.
        seed: seed of the start vector.

    ``iterations`` counts operator applications; ``block`` is ``eigvecs``. Past
    :data:`~graphpe.ops.progress.PROGRESS_DELAY_SECONDS` a bar shows the converged pairs.
    """
    n, start, k = _prepare(operator, k, deflate, seed)
    if ncv is None and max_basis_bytes is not None:
        fits = max_basis_bytes // (8 * n) - 1
        if fits < k + 8:
            raise MemoryError(
                f"lanczos_eigenpairs: a basis of {k + 8} vectors of {n:,} float64 values "
                f"({(k + 9) * n * 8:,} bytes) exceeds max_basis_bytes={max_basis_bytes:,}")
        ncv = min(default_ncv(k), fits)
    order = degree_order(operator)
    csr = permuted(operator, order)
    null = _null_columns(deflate)
    with DelayedBar(f"lanczos ({n:,} nodes)", total=k, unit="pair") as bar:

        def on_restart(products: int, converged: int) -> None:
            bar.n = converged
            bar.set_postfix(products=products)

        solved = thick_restart_lanczos(
            csr, n, k, null=None if null is None else null[order], tol=tol,
            norm_bound=upper, ncv=ncv, max_products=max_products, start=start[order],
            seed=seed, max_seconds=max_seconds, on_restart=on_restart)
    return _finish(csr, solved.values, solved.vectors, tol, solved.products, order)


def degree_order(operator: sp.spmatrix) -> np.ndarray:
    """The rows of ``operator`` by decreasing stored entries (ties in their order): the order
    Lanczos multiplies in. A sparse product gathers ``x[j]`` for every stored ``(i, j)``;
    with the hubs first, the entries most gathered share a few cache lines, and rows of one
    length follow each other (measured on one thread: the Laplacian's product 1.4-2.0x
    faster on hub-heavy, co-authorship, citation and road-like graphs of 20k-170k nodes).
    Lanczos is unchanged by a symmetric permutation ``Q L Q^T`` with the start ``Q x``, up to
    rounding."""
    return np.argsort(-np.diff(operator.tocsr().indptr), kind="stable")


def permuted(operator: sp.spmatrix, order: np.ndarray) -> sp.csr_matrix:
    """``Q A Q^T`` in CSR for the ordering ``order`` (row ``i`` of the result is row
    ``order[i]`` of ``A``, and likewise the columns)."""
    return operator.tocsr()[order][:, order].tocsr()


def shift_invert_eigenpairs(
    operator: sp.spmatrix,
    k: int,
    *,
    upper: float,
    deflate: ComponentBasis | None = None,
    sigma: float | None = None,
    tol: float = SPARSE_TOL,
    factor: Factor | None = None,
    symbolic: SymbolicFactor | None = None,
    max_factor_bytes: int | None = None,
    ncv: int | None = None,
    seed: int = 0,
) -> SparseEigenpairs:
    """The ``k`` smallest eigenpairs of a sparse symmetric positive semi-definite ``operator``
    restricted to the orthogonal complement of ``deflate``, by ARPACK's Lanczos on
    ``P (L - sigma I)^-1 P`` (``which='LA'``), one sparse LU factorization of ``L - sigma I``
    (:func:`factor_laplacian`), all in the factor's ordering.

    Args:
        operator: ``[n, n]`` scipy sparse symmetric matrix with spectrum in ``[0, upper]``.
        k: eigenpairs wanted.
        upper: an upper bound of the spectrum (scales the default ``sigma`` and the
            tolerance).
        deflate: known eigenvectors (the null space) to exclude; required where ``operator``
            is singular and ``sigma`` is near 0, or the null space is what would be found.
        sigma: the shift, below the spectrum (default :func:`default_sigma`).
        tol: residual ``||L v - lambda v||`` wanted (ARPACK's relative tolerance on the
            inverted operator is ``tol / upper``, which bounds it).
        factor: a factor from :func:`factor_laplacian` (its ``sigma`` is used); computed here
            where None, in the order of ``symbolic`` where given.
        symbolic: the analysis :func:`analyze_factor` of ``operator`` (computed where None).
        max_factor_bytes: raise ``MemoryError`` where the factor exceeds this (checked
            before factoring).
        ncv: Lanczos basis size (default ``max(2 k + 1, 20)``).
        seed: seed of the start vector.

    Memory: the factor's ``bytes`` plus ``ncv * n * 8``. ``iterations`` counts solves.
    """
    import scipy.sparse.linalg as spla
    n, v0, k = _prepare(operator, k, deflate, seed)
    if factor is None:
        factor = factor_laplacian(operator, default_sigma(upper) if sigma is None else sigma,
                                  symbolic, max_factor_bytes=max_factor_bytes)
    if max_factor_bytes is not None and factor.bytes > max_factor_bytes:
        raise MemoryError(f"shift_invert_eigenpairs: the LU factor takes {factor.bytes:,} "
                          f"bytes > max_factor_bytes={max_factor_bytes:,}")
    perm = factor.perm
    null = _null_columns(deflate)
    null = None if null is None else np.ascontiguousarray(null[perm])
    ncv = min(n, ncv if ncv is not None else max(2 * k + 1, 20))
    # the bar's total is the usual count (its estimate); ARPACK may need more
    with DelayedBar(f"shift-invert ({n:,} nodes)", total=SOLVES_PER_PAIR * k,
                    unit="solve") as bar:

        def matvec(x: np.ndarray) -> np.ndarray:
            # projected on both sides: the inverse keeps the null space invariant, but ARPACK's
            # basis drifts into it, and that component, amplified by 1 / |sigma|, costs the
            # Ritz vectors accuracy (measured: residuals 1e-12 to 1e-10 with the output alone
            # projected, 1e-15 to 5e-12 with both, on a hub-heavy test graph)
            bar.update(1)
            return _project(null, factor.lu.solve(_project(null, x.ravel().copy())))

        inverse = spla.LinearOperator((n, n), matvec=matvec, dtype=np.float64)
        nu, vecs_ordered = spla.eigsh(inverse, k=k, which="LA", tol=tol / upper,
                                      v0=v0[perm], ncv=ncv)
        solves = bar.n
    vecs = np.empty_like(vecs_ordered)
    vecs[perm] = vecs_ordered
    return _finish(operator, factor.sigma + 1.0 / nu, vecs, tol, solves)


def _project(null: np.ndarray | None, x: np.ndarray) -> np.ndarray:
    """``x - Z (Z^T x)`` in place for orthonormal columns ``Z = null``."""
    if null is not None:
        x -= null @ (null.T @ x)
    return x


def _prepare(operator: sp.spmatrix, k: int, deflate: ComponentBasis | None, seed: int):
    """Checks, and a random start vector in the complement of ``deflate``."""
    k = check_positive_int("k", k)
    if operator.ndim != 2 or operator.shape[0] != operator.shape[1]:
        raise ValueError(f"operator must be a square matrix, got shape {operator.shape}")
    n = operator.shape[0]
    free = n - (deflate.count if deflate is not None else 0)
    if k >= free:
        # ARPACK needs k < n; a space this small is solved densely by the callers
        raise ValueError(f"k={k} must be below the {free} eigenpairs outside the deflated "
                         "space (solve such small problems densely)")
    v0 = _project(_null_columns(deflate), np.random.default_rng(seed).standard_normal(n))
    return n, v0, k


def _finish(operator: sp.spmatrix, vals: np.ndarray, vecs: np.ndarray, tol: float,
            applications: int, order: np.ndarray | None = None) -> SparseEigenpairs:
    """Ascending pairs with their residuals recomputed; ``operator`` and ``vecs`` may be in
    the node order ``order`` (:func:`permuted`), the returned vectors are in the graph's."""
    ascending = np.argsort(vals, kind="stable")
    vals, vecs = vals[ascending], np.ascontiguousarray(vecs[:, ascending])
    residuals = np.linalg.norm(operator @ vecs - vecs * vals, axis=0)
    if order is not None:
        ordered, vecs = vecs, np.empty_like(vecs)
        vecs[order] = ordered
    vecs_t = torch.from_numpy(vecs)
    return SparseEigenpairs(torch.from_numpy(vals), vecs_t, torch.from_numpy(residuals),
                            applications, bool((residuals <= tol).all()), vecs_t)


def _null_columns(deflate: ComponentBasis | None) -> np.ndarray | None:
    return None if deflate is None else np.ascontiguousarray(
        deflate.dense(torch.float64).numpy())


def choose_sparse_solver(
    operator: sp.csr_matrix,
    k: int,
    *,
    max_factor_bytes: int = FACTOR_MAX_BYTES,
    max_factor_seconds: float = FACTOR_MAX_SECONDS,
) -> SolverChoice:
    """Choose ``lanczos`` or ``shift_invert`` for the ``k`` smallest nonzero eigenpairs of one
    connected component's Laplacian ``operator``, on the CPU, from the bounded symbolic
    analysis of its factor (module docstring, steps 1 and 2). ``shift_invert`` comes with the
    seconds Lanczos is given first (:func:`auto_eigenpairs` runs the race).

    The choice and its reasons are logged at DEBUG on ``logging.getLogger("graphpe")``."""
    n = operator.shape[0]
    deg = np.diff(operator.indptr) - 1  # off-diagonal pattern (the diagonal is stored)
    probes: dict[str, float] = {
        "nodes": float(n), "nnz": float(operator.nnz), "mean_degree": float(deg.mean()),
        "max_degree": float(deg.max())}
    entries = 2 * (_VALUE_BYTES + _INDEX_BYTES)  # bytes per entry of the Cholesky pattern
    # the fill past which the factorization cannot finish in time even at the best rate
    # (flops >= nnz(C)^2 / (2 n) by Cauchy-Schwarz over the column counts)
    timely = math.sqrt(2.0 * n * FACTOR_FLOPS_PER_SECOND * max_factor_seconds)
    max_fill = int(min(max_factor_bytes // entries, timely))
    max_work = ANALYSIS_WORK_PER_ENTRY * int(operator.nnz)
    start = time.perf_counter()
    symbolic = analyze_factor(operator, max_fill=max_fill, max_work=max_work)
    probes["analysis_seconds"] = time.perf_counter() - start
    if not symbolic.complete:
        return _chosen(SolverChoice(
            "lanczos", f"the factor's analysis stopped at its budget ({max_work:,} scanned "
            f"entries, {max_fill:,} factor entries): the factor fills in too much", probes))
    predicted = predicted_factor_seconds(symbolic)
    probes.update(factor_nnz=float(symbolic.nnz), factor_flops=symbolic.flops,
                  factor_bytes=float(factor_bytes(symbolic)), factor_seconds=predicted,
                  fill_ratio=(2 * symbolic.nnz - n) / operator.nnz)
    if factor_bytes(symbolic) > max_factor_bytes or predicted > max_factor_seconds:
        return _chosen(SolverChoice(
            "lanczos", f"the LU factor would take {factor_bytes(symbolic):,} bytes (budget "
            f"{max_factor_bytes:,}) and ~{predicted:.2f} s (limit {max_factor_seconds:g} s)",
            probes, symbolic))
    race = predicted_shift_invert_seconds(symbolic, k)
    probes["shift_invert_seconds"] = race
    if race < RACE_MIN_SECONDS:
        return _chosen(SolverChoice(
            "shift_invert", f"the LU factor fits ({factor_bytes(symbolic):,} bytes, fill "
            f"{probes['fill_ratio']:.1f}x) and the whole solve is predicted at {race:.3f} s, "
            f"below the {RACE_MIN_SECONDS:g} s worth racing Lanczos for: no race", probes,
            symbolic, None))
    return _chosen(SolverChoice(
        "shift_invert", f"the LU factor fits ({factor_bytes(symbolic):,} bytes, fill "
        f"{probes['fill_ratio']:.1f}x, ~{predicted:.2f} s): Lanczos first for the "
        f"predicted shift-invert time, {race:.2f} s", probes, symbolic, race))


def auto_eigenpairs(
    operator: sp.csr_matrix,
    k: int,
    *,
    upper: float,
    deflate: ComponentBasis | None = None,
    tol: float = SPARSE_TOL,
    max_factor_bytes: int = FACTOR_MAX_BYTES,
    max_factor_seconds: float = FACTOR_MAX_SECONDS,
    max_basis_bytes: int | None = None,
    seed: int = 0,
) -> tuple[SparseEigenpairs, str]:
    """The ``k`` smallest eigenpairs of one connected component's Laplacian by the solver
    :func:`choose_sparse_solver` picks, with the race of the module docstring (step 3) where
    it picks ``shift_invert``. Returns the eigenpairs and the solver that produced them."""
    choice = choose_sparse_solver(operator, k, max_factor_bytes=max_factor_bytes,
                                  max_factor_seconds=max_factor_seconds)
    common = {"upper": upper, "deflate": deflate, "tol": tol, "seed": seed}
    if choice.solver == "lanczos":
        solved = lanczos_eigenpairs(operator, k, max_basis_bytes=max_basis_bytes, **common)
        return _solved_by(solved, "lanczos", "no race")
    raced = choice.lanczos_seconds is not None
    if raced:
        solved = lanczos_eigenpairs(operator, k, max_basis_bytes=max_basis_bytes,
                                    max_seconds=choice.lanczos_seconds, **common)
        if solved.converged:
            return _solved_by(solved, "lanczos",
                              f"within the race ({solved.iterations} products)")
        log.debug("sparse eigensolver: Lanczos did not converge in %.2f s (%d products)",
                  choice.lanczos_seconds, solved.iterations)
    solved = shift_invert_eigenpairs(operator, k, symbolic=choice.symbolic,
                                     max_factor_bytes=max_factor_bytes, **common)
    return _solved_by(solved, "shift_invert",
                      f"{'' if raced else 'no race, '}{solved.iterations} solves")


def _solved_by(solved: SparseEigenpairs, solver: str,
               detail: str) -> tuple[SparseEigenpairs, str]:
    log.debug("sparse eigensolver: solved by %s (%s)", solver, detail)
    return solved, solver


def _chosen(choice: SolverChoice) -> SolverChoice:
    p = choice.probes
    log.debug("sparse eigensolver for a component of %d nodes (mean degree %.2f, max %d): "
              "%s: %s", int(p["nodes"]), p["mean_degree"], int(p["max_degree"]),
              choice.solver, choice.reason)
    return choice
