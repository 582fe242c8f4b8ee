"""The smallest eigenpairs of one large sparse symmetric Laplacian by Krylov methods:
thick-restart Lanczos (:mod:`graphpe.ops.eigen.lanczos`) and shift-invert Lanczos with a
sparse LU factorization (ARPACK, scipy's ``eigsh``); and the per-component choice among them
and Chebyshev-filtered subspace iteration (:mod:`graphpe.ops.eigen.sparse`) from cheap probes
of the graph.

Both solvers work on the orthogonal complement of a known null space ``Z`` (one vector per
connected component, :class:`~graphpe.ops.eigen.sparse.ComponentBasis`), with the projector
``P = I - Z Z^T``:

- ``lanczos``: the smallest eigenvalues of ``P L P`` by thick-restart Lanczos with partial
  reorthogonalization; ``Z`` is projected out of every Lanczos vector, so a many-fold
  eigenvalue 0 is never met. Its stopping test is the absolute residual ``||L v - lambda v||
  <= tol``. Memory: ``ncv + 1`` Lanczos vectors, ``(ncv + 1) n * 8`` bytes, besides the
  operator (``ncv`` shrinks to fit a budget).
- ``shift_invert``: the largest eigenvalues ``nu`` of ``P (L - sigma I)^-1 P`` with ``sigma``
  slightly below 0, so ``lambda = sigma + 1 / nu``; ``(L - sigma I)`` is factored once by
  SuperLU with a fill-reducing column order. With ``|sigma|`` far below the wanted eigenvalues
  ``nu_j ~ 1 / lambda_j``: tiny gaps near 0 (long paths, road networks) become large relative
  gaps, and ARPACK converges in about ``2 k`` solves. Memory: the factor (``nnz(L + U)`` values
  and row indices, 12 bytes each, measured before use by :func:`factor_laplacian`) plus
  ``ncv * n * 8`` bytes.

Neither solver's Ritz estimates are trusted as such: residuals ``||L v - lambda v||`` are
recomputed in float64 and returned.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from graphpe.ops.checks import check_positive_int
from graphpe.ops.eigen.lanczos import default_ncv, thick_restart_lanczos
from graphpe.ops.eigen.sparse import ComponentBasis, SparseEigenpairs

# scipy.sparse is imported where it is used: importing it takes ~0.1 s, which a process that
# never meets a large graph need not pay
if TYPE_CHECKING:
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

log = logging.getLogger("graphpe")

# Default memory budget of a sparse LU factor (shift-invert); ``auto`` skips shift-invert for a
# component whose factor would exceed it.
FACTOR_MAX_BYTES = 1 << 30
# ``auto``: a component whose smallest Ritz value after a short Lanczos probe is below this
# fraction of the spectrum's width has gaps too small for Krylov methods on L itself.
SMALL_GAP = 1e-2
PROBE_STEPS = 30
# nodes of the larger of the two nested BFS balls (the smaller has half as many) whose
# factorizations predict a component's fill
FILL_SAMPLE_NODES = 2000
# ``auto``: the largest predicted fill ``nnz(L + U) / nnz(A)`` for which shift-invert is
# chosen: the factorization's work grows with the square of the fill per column, and past
# this it costs more than a Krylov solve.
MAX_FILL_RATIO = 8.0
_INDEX_BYTES = 4
_VALUE_BYTES = 8


class Factor(NamedTuple):
    """A sparse LU factor of ``L - sigma I``: scipy's ``SuperLU`` object, the shift, the
    stored entries ``nnz(L) + nnz(U)``, their bytes (values and row indices) and the seconds
    the factorization took."""

    lu: spla.SuperLU
    sigma: float
    nnz: int
    bytes: int
    seconds: float


class SolverChoice(NamedTuple):
    """The sparse eigensolver chosen for one connected component: its name, the reason in
    words, the probes' measurements, and the LU factor already computed while choosing
    (reused by ``shift_invert``; None otherwise)."""

    solver: str
    reason: str
    probes: dict[str, float]
    factor: Factor | None = None


def default_sigma(upper: float) -> float:
    """The shift of ``shift_invert``: ``-1e-7 upper``, far below every nonzero eigenvalue of a
    graph of up to millions of nodes (``L - sigma I`` stays nonsingular, and the deflated null
    space it nearly annihilates is projected out on both sides)."""
    return -1e-7 * upper


def factor_laplacian(
    operator: sp.spmatrix, sigma: float, permc_spec: str = "MMD_AT_PLUS_A"
) -> Factor:
    """Factor ``operator - sigma I`` with SuperLU (``scipy.sparse.linalg.splu``) in the
    fill-reducing column order ``permc_spec`` (minimum degree on ``A^T + A`` by default, the
    right one for a symmetric matrix), and measure its fill."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla
    n = operator.shape[0]
    start = time.perf_counter()
    lu = spla.splu((operator - sigma * sp.identity(n, format="csr")).tocsc(),
                   permc_spec=permc_spec, options={"SymmetricMode": True})
    nnz = int(lu.L.nnz + lu.U.nnz)
    return Factor(lu, sigma, nnz, nnz * (_VALUE_BYTES + _INDEX_BYTES),
                  time.perf_counter() - start)


def lanczos_eigenpairs(
    operator: sp.spmatrix,
    k: int,
    *,
    upper: float,
    deflate: ComponentBasis | None = None,
    tol: float = 1e-8,
    ncv: int | None = None,
    max_products: int | None = None,
    max_basis_bytes: int | None = None,
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
        seed: seed of the start vector.

    ``iterations`` counts operator applications; ``block`` is ``eigvecs``.
    """
    n, _, start, k = _prepare(operator, k, deflate, seed)
    if ncv is None and max_basis_bytes is not None:
        fits = max_basis_bytes // (8 * n) - 1
        if fits < k + 8:
            raise MemoryError(
                f"lanczos_eigenpairs: a basis of {k + 8} vectors of {n:,} float64 values "
                f"({(k + 9) * n * 8:,} bytes) exceeds max_basis_bytes={max_basis_bytes:,}")
        ncv = min(default_ncv(k), fits)
    csr = operator.tocsr()
    solved = thick_restart_lanczos(lambda x: csr @ x, n, k, null=_null_columns(deflate),
                                   tol=tol, norm_bound=upper, ncv=ncv,
                                   max_products=max_products, start=start, seed=seed)
    return _finish(operator, solved.values, solved.vectors, tol, solved.products)


def shift_invert_eigenpairs(
    operator: sp.spmatrix,
    k: int,
    *,
    upper: float,
    deflate: ComponentBasis | None = None,
    sigma: float | None = None,
    tol: float = 1e-8,
    factor: Factor | None = None,
    permc_spec: str = "MMD_AT_PLUS_A",
    max_factor_bytes: int | None = None,
    ncv: int | None = None,
    seed: int = 0,
) -> SparseEigenpairs:
    """The ``k`` smallest eigenpairs of a sparse symmetric positive semi-definite ``operator``
    restricted to the orthogonal complement of ``deflate``, by ARPACK's Lanczos on
    ``P (L - sigma I)^-1 P`` (``which='LA'``), one sparse LU factorization of ``L - sigma I``.

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
        factor: a factor of ``operator - sigma I`` from :func:`factor_laplacian` (its
            ``sigma`` is used); computed here where None.
        permc_spec: SuperLU's fill-reducing column order.
        max_factor_bytes: raise ``MemoryError`` where the factor (measured) exceeds this.
        ncv: Lanczos basis size (default ``max(2 k + 1, 20)``).
        seed: seed of the start vector.

    Memory: the factor's ``bytes`` plus ``ncv * n * 8``. ``iterations`` counts solves.
    """
    import scipy.sparse.linalg as spla
    n, project, v0, k = _prepare(operator, k, deflate, seed)
    if factor is None:
        factor = factor_laplacian(operator, default_sigma(upper) if sigma is None else sigma,
                                  permc_spec)
    if max_factor_bytes is not None and factor.bytes > max_factor_bytes:
        raise MemoryError(f"shift_invert_eigenpairs: the LU factor takes {factor.bytes:,} "
                          f"bytes > max_factor_bytes={max_factor_bytes:,}")
    count = [0]

    def matvec(x: np.ndarray) -> np.ndarray:
        count[0] += 1
        return project(factor.lu.solve(project(x.ravel())))

    inverse = spla.LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    ncv = min(n, ncv if ncv is not None else max(2 * k + 1, 20))
    nu, vecs = spla.eigsh(inverse, k=k, which="LA", tol=tol / upper, v0=v0, ncv=ncv)
    return _finish(operator, factor.sigma + 1.0 / nu, vecs, tol, count[0])


def _prepare(operator: sp.spmatrix, k: int, deflate: ComponentBasis | None, seed: int):
    """Checks, the projector ``x -> P x`` on numpy vectors, and a random start in range(P)."""
    k = check_positive_int("k", k)
    if operator.ndim != 2 or operator.shape[0] != operator.shape[1]:
        raise ValueError(f"operator must be a square matrix, got shape {operator.shape}")
    n = operator.shape[0]
    free = n - (deflate.count if deflate is not None else 0)
    if k >= free:
        # ARPACK needs k < n; a space this small is solved densely by the callers
        raise ValueError(f"k={k} must be below the {free} eigenpairs outside the deflated "
                         "space (solve such small problems densely)")

    def project(x: np.ndarray) -> np.ndarray:
        if deflate is None:
            return x
        return deflate.project_out(torch.from_numpy(x).unsqueeze(1)).squeeze(1).numpy()

    v0 = project(np.random.default_rng(seed).standard_normal(n))
    return n, project, v0, k


def _finish(operator: sp.spmatrix, vals: np.ndarray, vecs: np.ndarray, tol: float,
            applications: int) -> SparseEigenpairs:
    order = np.argsort(vals, kind="stable")
    vals, vecs = vals[order], np.ascontiguousarray(vecs[:, order])
    residuals = np.linalg.norm(operator @ vecs - vecs * vals, axis=0)
    vecs_t = torch.from_numpy(vecs)
    return SparseEigenpairs(torch.from_numpy(vals), vecs_t, torch.from_numpy(residuals),
                            applications, bool((residuals <= tol).all()), vecs_t)


def lanczos_ritz_values(
    operator: sp.spmatrix, steps: int, *, deflate: ComponentBasis | None = None,
    upper: float | None = None, seed: int = 0
) -> np.ndarray:
    """The ``steps - 1`` smallest Ritz values (ascending) of ``steps`` Lanczos steps on
    ``operator`` restricted to the complement of ``deflate`` (one cycle of
    :func:`~graphpe.ops.eigen.lanczos.thick_restart_lanczos`, no vectors formed). The smallest
    is an upper bound of the smallest eigenvalue there, and close to it where the gaps near it
    are large relative to the spectrum's width. ``upper`` bounds ``||operator||`` (Gershgorin's
    bound where None). Memory ``(steps + 1) n * 8`` bytes."""
    n, _, start, _ = _prepare(operator, 1, deflate, seed)
    free = n - (deflate.count if deflate is not None else 0)
    steps = max(2, min(steps, free))
    csr = operator.tocsr()
    if upper is None:
        upper = float(abs(csr).sum(axis=1).max())
    probe = thick_restart_lanczos(lambda x: csr @ x, n, steps - 1, null=_null_columns(deflate),
                                  tol=0.0, norm_bound=upper, ncv=steps, keep=steps - 1,
                                  max_products=steps, start=start, seed=seed, vectors=False)
    return probe.values


def _null_columns(deflate: ComponentBasis | None) -> np.ndarray | None:
    return None if deflate is None else np.ascontiguousarray(
        deflate.dense(torch.float64).numpy())


def bfs_ball(operator: sp.csr_matrix, root: int, size: int) -> np.ndarray:
    """The first ``size`` nodes of a breadth-first search from ``root`` in the pattern of
    ``operator``, in the order visited (its prefixes are smaller balls)."""
    from scipy.sparse.csgraph import breadth_first_order
    order = breadth_first_order(operator, root, directed=False, return_predecessors=False)
    return order[:size]


def choose_sparse_solver(
    operator: sp.csr_matrix,
    k: int,
    *,
    upper: float,
    deflate: ComponentBasis | None = None,
    sigma: float | None = None,
    max_factor_bytes: int = FACTOR_MAX_BYTES,
    seed: int = 0,
) -> SolverChoice:
    """Choose ``lanczos`` or ``shift_invert`` for the ``k`` smallest nonzero eigenpairs of one
    connected component's Laplacian ``operator`` (null space ``deflate``), on the CPU.

    Probes, cheapest first:

    1. degree statistics (mean and max degree, fraction of degree <= 2 nodes; logged);
    2. :data:`PROBE_STEPS` Lanczos steps (:func:`lanczos_ritz_values`): the smallest Ritz
       value ``theta_1`` bounds ``lambda_1`` from above. Where ``theta_1 >= SMALL_GAP * upper``
       the wanted eigenvalues are well separated relative to the spectrum's width and Lanczos
       converges in a few hundred products: ``lanczos``, no factorization;
    3. otherwise (tiny gaps: Lanczos on ``L`` may need thousands of products, where
       shift-invert needs about ``2 k`` solves) the factorizations of two nested BFS balls
       around the highest-degree node predict the component's fill
       (:func:`predicted_fill_ratio`: hubs make it explode, near-planar graphs keep it within
       a small factor of ``nnz(L)``); where the predicted fill ratio is at most
       :data:`MAX_FILL_RATIO` and the predicted bytes fit ``max_factor_bytes``, the component
       is factored and its fill measured: ``shift_invert`` with that factor where it fits;
       else ``lanczos``.

    Chebyshev-filtered subspace iteration is not chosen here: on the CPU thick-restart
    Lanczos needs several times fewer operator products on every spectrum measured (clustered
    small eigenvalues among many components included); it is the GPU's solver.

    The choice and its reasons are logged at DEBUG on ``logging.getLogger("graphpe")``.
    """
    n = operator.shape[0]
    deg = np.diff(operator.indptr) - 1  # off-diagonal pattern (the diagonal is stored)
    probes: dict[str, float] = {
        "nodes": float(n), "nnz": float(operator.nnz), "mean_degree": float(deg.mean()),
        "max_degree": float(deg.max()), "low_degree_fraction": float((deg <= 2).mean())}
    ritz = lanczos_ritz_values(operator, PROBE_STEPS, deflate=deflate, upper=upper, seed=seed)
    probes["ritz_min"] = float(ritz[0])
    relative = float(ritz[0]) / upper
    probes["relative_gap"] = relative
    if relative >= SMALL_GAP:
        return _chosen(SolverChoice(
            "lanczos", f"smallest Ritz value {ritz[0]:.2e} >= {SMALL_GAP:g} x spectrum width: "
            "well separated eigenvalues", probes))
    sigma = default_sigma(upper) if sigma is None else sigma
    if n > FILL_SAMPLE_NODES:
        ratio = predicted_fill_ratio(operator, int(np.argmax(deg)), sigma, probes)
        predicted = int(ratio * operator.nnz * (_VALUE_BYTES + _INDEX_BYTES))
        probes["predicted_fill_ratio"] = ratio
        probes["predicted_factor_bytes"] = float(predicted)
        if predicted > max_factor_bytes or ratio > MAX_FILL_RATIO:
            return _chosen(SolverChoice(
                "lanczos", f"tiny gaps (smallest Ritz value {ritz[0]:.2e}), but the LU "
                f"factor would fill in {ratio:.1f}x (limit {MAX_FILL_RATIO:g}x), "
                f"~{predicted:,} bytes (budget {max_factor_bytes:,})", probes))
    factor = factor_laplacian(operator, sigma)
    probes["factor_bytes"] = float(factor.bytes)
    probes["factor_seconds"] = factor.seconds
    if factor.bytes > max_factor_bytes:
        return _chosen(SolverChoice(
            "lanczos", f"tiny gaps (smallest Ritz value {ritz[0]:.2e}), but the LU factor "
            f"takes {factor.bytes:,} bytes > {max_factor_bytes:,}", probes))
    return _chosen(SolverChoice(
        "shift_invert", f"tiny gaps (smallest Ritz value {ritz[0]:.2e} < {SMALL_GAP:g} x "
        f"spectrum width) and the LU factor fits ({factor.bytes:,} bytes, fill "
        f"{factor.nnz / operator.nnz:.1f}x)", probes, factor))


def predicted_fill_ratio(operator: sp.csr_matrix, root: int, sigma: float,
                         probes: dict[str, float] | None = None) -> float:
    """The fill ratio ``nnz(L + U) / nnz(A)`` of the factorization of ``operator - sigma I``,
    extrapolated from two nested BFS balls around ``root`` (:data:`FILL_SAMPLE_NODES` nodes and
    half as many): with ratios ``r_1`` and ``r_2``, ``r_2 (n / s_2)^p``,
    ``p = max(0, log2(r_2 / r_1))``. The fill of a ball under-predicts the whole graph's, by
    more the faster it grows with size: near-planar graphs (roads, meshes) stay within a small
    factor of ``nnz(A)`` at every size (``p`` near 0), graphs without small separators (hubs,
    expanders) fill in polynomially. The balls' ratios go to ``probes`` where given."""
    n = operator.shape[0]
    big = bfs_ball(operator, root, FILL_SAMPLE_NODES)
    ratios = []
    for size in (FILL_SAMPLE_NODES // 2, FILL_SAMPLE_NODES):
        ball = np.sort(big[:size])
        sample = operator[ball][:, ball]
        ratios.append(factor_laplacian(sample, sigma).nnz / sample.nnz)
    growth = max(0.0, float(np.log2(ratios[1] / ratios[0])))
    if probes is not None:
        probes["half_sample_fill_ratio"], probes["sample_fill_ratio"] = ratios
        probes["fill_growth"] = growth
    return ratios[1] * (n / FILL_SAMPLE_NODES) ** growth


def _chosen(choice: SolverChoice) -> SolverChoice:
    p = choice.probes
    log.debug("sparse eigensolver for a component of %d nodes (mean degree %.2f, max %d, "
              "%.0f%% of degree <= 2): %s: %s", int(p["nodes"]), p["mean_degree"],
              int(p["max_degree"]), 100 * p["low_degree_fraction"], choice.solver,
              choice.reason)
    return choice
