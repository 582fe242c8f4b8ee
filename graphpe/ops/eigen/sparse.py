"""The smallest eigenpairs of one large sparse symmetric Laplacian, by Chebyshev-filtered
subspace iteration (ChFSI; Zhou, Saad, Tiago and Chelikowsky, J. Comput. Phys. 2006; Zhou and
Saad, SIAM J. Matrix Anal. Appl. 2007).

Every step is a sparse-times-dense-block product (cuSPARSE/MKL SpMM) plus small dense algebra
on ``n x p`` blocks, with no factorization and no preconditioner, on CPU and CUDA tensors alike.

Each iteration, for a block ``X`` (``n x p``, orthonormal, ``p`` a few more than the wanted
``k``):

1. filter: ``Y = C_m(X)``, the degree-``m`` Chebyshev polynomial of ``L`` that is bounded by 1
   on ``[a, b]`` (``a`` = the block's largest Ritz value, ``b`` >= the spectrum's top) and grows
   fast below ``a``, so components along the wanted (smallest) eigenvectors are amplified;
2. deflate the known null space (one vector per connected component) and orthonormalize
   (Cholesky-QR2 in float64, Householder where that is unsafe);
3. Rayleigh-Ritz in float64: ``H = Q^T L Q``, ``H = W diag(theta) W^T``, ``X = Q W``;
4. residual check ``||L x_j - theta_j x_j|| <= tol`` for the ``k`` wanted pairs.

SpMM runs in the operator's dtype (float32 by default); Gram matrices, Ritz values and residual
norms are accumulated in float64.

With ``filter_dtype`` below the operator's dtype (float32 products for a float64 operator), the
filter acts on the residuals instead of the block. For a Ritz pair ``(theta, x)`` with residual
``r = L x - theta x``,

    p(L) x = p(theta) x + s(L) r,    s(lambda) = (p(lambda) - p(theta)) / (lambda - theta),

and ``D_i = p_i(L) x - p_i(theta) x`` obeys the filter's own three-term recurrence plus a
forcing term ``(2 sigma_i / e) p_(i-1)(theta) r``. Only ``D`` goes through the low-precision
products, so their rounding is relative to ``||r||``, not to ``||x||``: float32 SpMM refines
to float64 residuals (the operator's dtype serves the Rayleigh-Ritz product ``L Q``, one per
iteration).
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import torch
from torch import Tensor

from graphpe.ops.checks import check_positive_int
from graphpe.ops.propagate.tensor import column_norms, orthonormalize


class SparseEigenpairs(NamedTuple):
    """``eigvals`` ``[k]`` (float64, ascending), ``eigvecs`` ``[n, k]`` (unit columns),
    ``residuals`` ``[k]`` (``||L v - lambda v||``), iterations run, whether every residual
    met the tolerance, and the whole final Ritz basis ``block`` ``[n, p]`` (wanted and guard
    vectors: the ``start`` of a refining run)."""

    eigvals: Tensor
    eigvecs: Tensor
    residuals: Tensor
    iterations: int
    converged: bool
    block: Tensor


class ComponentBasis:
    """An orthonormal basis ``Z`` of known eigenvectors with disjoint supports, one per
    connected component: ``values`` ``[n]`` (unit norm over each component) and ``labels``
    ``[n]`` (component of each node, ``0 .. count - 1``)."""

    dense_max_count = 64  # up to here Z Z^T x is two thin products, beyond a segment sum

    def __init__(self, values: Tensor, labels: Tensor, count: int) -> None:
        self.values = values
        self.labels = labels
        self.count = count
        self._dense: dict[torch.dtype, Tensor] = {}

    def dense(self, dtype: torch.dtype | None = None) -> Tensor:
        """The basis as an ``n x count`` matrix."""
        dtype = dtype or self.values.dtype
        if dtype not in self._dense:
            n = self.values.numel()
            out = self.values.new_zeros(n, self.count, dtype=dtype)
            out[torch.arange(n, device=out.device), self.labels] = self.values.to(dtype)
            self._dense[dtype] = out
        return self._dense[dtype]

    def coefficients(self, block: Tensor) -> Tensor:
        """``Z^T block``, ``[count, p]``."""
        if self.count <= self.dense_max_count:
            return self.dense(block.dtype).transpose(0, 1) @ block
        z = self.values.to(block.dtype).unsqueeze(1)
        return block.new_zeros(self.count, block.size(1)).index_add_(0, self.labels, z * block)

    def expand(self, coef: Tensor) -> Tensor:
        """``Z coef``, ``[n, p]``."""
        if self.count <= self.dense_max_count:
            return self.dense(coef.dtype) @ coef
        return self.values.to(coef.dtype).unsqueeze(1) * coef[self.labels]

    def add_expanded_(self, out: Tensor, coef: Tensor, alpha: float) -> Tensor:
        """``out += alpha * Z coef`` in place."""
        if self.count <= self.dense_max_count:
            return out.addmm_(self.dense(coef.dtype), coef, alpha=alpha)
        return out.add_(self.values.to(coef.dtype).unsqueeze(1) * coef[self.labels], alpha=alpha)

    def project_out(self, block: Tensor) -> Tensor:
        """``block - Z (Z^T block)``."""
        return block - self.expand(self.coefficients(block))


def component_basis(labels: Tensor, weight: Tensor) -> ComponentBasis:
    """The null space of a graph Laplacian: per component, ``weight`` (``sqrt(deg)`` for
    ``L_sym``, ones for ``D - A``) restricted to it and normalized; a component whose weights
    are all zero (an isolated node under Chung's convention) gets its indicator vector.

    ``labels`` may be any component labels (e.g. the smallest node of each component)."""
    _, dense_labels = torch.unique(labels, return_inverse=True)
    count = int(dense_labels.max()) + 1 if labels.numel() else 0
    w = weight.to(torch.float64)
    norm2 = w.new_zeros(count).index_add_(0, dense_labels, w * w)
    empty = norm2 <= 0
    w = torch.where(empty[dense_labels], torch.ones_like(w), w)
    norm2 = torch.where(empty, w.new_zeros(count).index_add_(0, dense_labels, w * w), norm2)
    return ComponentBasis(w / norm2.sqrt()[dense_labels], dense_labels, count)


def chebyshev_eigenpairs(
    operator: Tensor,
    k: int,
    *,
    upper: float,
    deflate: ComponentBasis | None = None,
    block_size: int | None = None,
    degree: int = 32,
    tol: float = 1e-4,
    max_iter: int = 300,
    generator: torch.Generator | None = None,
    start: Tensor | None = None,
    warn: bool = True,
    filter_dtype: torch.dtype | None = None,
) -> SparseEigenpairs:
    """The ``k`` smallest eigenpairs of a sparse symmetric positive semi-definite ``operator``
    restricted to the orthogonal complement of ``deflate``.

    Args:
        operator: ``[n, n]`` sparse (CSR or COO) symmetric matrix with spectrum in
            ``[0, upper]``; its dtype is the SpMM dtype (float32 or float64).
        k: eigenpairs wanted.
        upper: an upper bound of the spectrum (2 for ``L_sym``; the Gershgorin bound
            ``2 max deg`` for ``D - A``).
        deflate: known eigenvectors (the null space) to exclude.
        block_size: subspace dimension ``p >= k``; ``k + max(16, k / 2)`` by default (guard
            vectors speed up the convergence of the ``k``-th pair).
        degree: degree of the Chebyshev filter per iteration.
        tol: residual ``||L v - lambda v||_2`` each returned pair must reach (float32 SpMM
            bottoms out around ``1e-6``).
        max_iter: filter iterations before giving up (the best pairs found are returned with
            ``converged=False``).
        generator: random start block (drawn on the CPU, then moved).
        start: ``[n, q]`` vectors to start from (e.g. the ``block`` of a float32 run refined
            here in float64); columns beyond ``q`` are random.
        warn: warn when ``max_iter`` is reached without convergence.
        filter_dtype: dtype of the filter's SpMM (default the operator's); a lower precision
            than the operator's filters the residuals (module docstring), and the returned
            pairs still reach residuals at the operator's precision.
    """
    k = check_positive_int("k", k)
    if operator.dim() != 2 or operator.size(0) != operator.size(1):
        raise ValueError(f"operator must be a square matrix, got shape {tuple(operator.shape)}")
    if degree < 1:
        raise ValueError(f"degree must be >= 1, got {degree}")
    if not upper > 0:
        raise ValueError(f"upper must be a positive bound of the spectrum, got {upper}")
    n = operator.size(0)
    free = n - (deflate.count if deflate is not None else 0)
    if k > free:
        raise ValueError(f"k={k} exceeds the {free} eigenpairs outside the deflated space")
    p = min(free, block_size if block_size is not None else k + max(16, k // 2))
    if p < k:
        raise ValueError(f"block_size must be >= k, got {block_size} < {k}")
    device, spmm_dtype = operator.device, operator.dtype

    shifted = _ShiftedOperator(operator, upper, deflate)
    filter_dtype = spmm_dtype if filter_dtype is None else filter_dtype
    corrected = torch.finfo(filter_dtype).eps > torch.finfo(spmm_dtype).eps
    filtering = (_ShiftedOperator(operator.to(filter_dtype), upper, deflate) if corrected
                 else shifted)

    def basis(block: Tensor) -> Tensor:
        return _orthonormal_basis(block, deflate, generator)

    q_start = 0
    if start is not None:
        if start.dim() != 2 or start.size(0) != n:
            raise ValueError(f"start must be [{n}, q], got {list(start.shape)}")
        q_start = min(start.size(1), p)
    block = torch.empty(n, p, dtype=torch.float64, device=device)
    if q_start:
        block[:, :q_start] = start[:, :q_start].to(device=device, dtype=torch.float64)
    if q_start < p:
        block[:, q_start:] = torch.randn(n, p - q_start, generator=generator,
                                         dtype=torch.float64).to(device)
    q = basis(block)
    theta, x, lx = _rayleigh_ritz(q, shifted.apply(q))
    r = _ritz_residuals(x, lx, theta)
    residuals = column_norms(r)
    # The damped interval ends strictly above the spectrum: ``upper`` itself can be an
    # eigenvalue (2 for L_sym of a bipartite component) and the block's largest Ritz value.
    top = upper * (1.0 + 1e-2)
    iterations = 0
    while not bool((residuals[:k] <= tol).all()) and iterations < max_iter:
        # damp [a, top], where a = the block's largest Ritz value: everything the block must
        # not converge to; the smallest Ritz value scales the filter so values stay O(1)
        a = float(theta[-1])
        low = float(theta[0])
        m = filter_degree(theta[:k], residuals[:k], tol, a, top, degree,
                          warm_up=None if start is not None else iterations)
        if corrected:
            y = _corrected_chebyshev_filter(filtering, x, r, theta, m, a, top, low)
        else:
            y = _chebyshev_filter(shifted, x.to(spmm_dtype), m, a, top, low)
        q = basis(y)
        theta, x, lx = _rayleigh_ritz(q, shifted.apply(q))
        r = _ritz_residuals(x, lx, theta)
        residuals = column_norms(r)
        iterations += 1
    converged = bool((residuals[:k] <= tol).all())
    if not converged and warn:
        warnings.warn(
            f"chebyshev_eigenpairs: {iterations} iterations, largest residual "
            f"{float(residuals[:k].max()):.2e} > tol {tol:.1e}; returning the best pairs found",
            RuntimeWarning,
            stacklevel=2,
        )
    return SparseEigenpairs(theta[:k], x[:, :k], residuals[:k], iterations, converged, x)


def filter_degree(
    theta: Tensor, residuals: Tensor, tol: float, a: float, b: float, degree: int,
    warm_up: int | None = None
) -> int:
    """The degree of the next Chebyshev filter, at most ``degree``.

    - Warm-up (iteration ``warm_up`` of a random start; None: a given start): the Ritz values
      of a random block say nothing about where the wanted eigenvalues end, so its cut ``a``
      sits far too high and a full-degree filter mostly amplifies the wrong interval. Degrees
      ``degree / 8`` (at least 4), then doubling, let the cut fall first.
    - Prediction: below the cut, the filter multiplies a pair's component by
      ``|C_m(t)| >= rho(t)^m / 2`` against at most 1 above it, ``t = (c - theta) / e``,
      ``rho(t) = t + sqrt(t^2 - 1)``. The degree that brings the slowest unconverged wanted
      pair from its residual to ``tol`` (plus a quarter and 2, at least ``degree / 4``) keeps
      the last filter from overshooting the tolerance by orders of magnitude.
    """
    m = degree
    if warm_up is not None:
        m = min(m, max(4, degree // 8) << min(warm_up, 16))
    e = (b - a) / 2.0
    c = (b + a) / 2.0
    t = (c - theta.double()) / e
    open_ = (residuals > tol) & (t > 1.0 + 1e-12)
    if bool(open_.any()) and bool(((residuals <= tol) | open_).all()):
        rho = t[open_] + (t[open_] ** 2 - 1.0).sqrt()
        need = torch.log(2.0 * residuals[open_].double() / tol) / torch.log(rho)
        predicted = int(math.ceil(1.25 * float(need.max()))) + 2
        m = min(m, max(predicted, degree // 4))
    return max(1, m)


class _ShiftedOperator:
    """``L + upper Z Z^T - c I`` applied to blocks, for any shift ``c``.

    The Wielandt shift ``upper Z Z^T`` moves the known null space to the top of the spectrum,
    into the interval the filter damps. Projecting it out only between filters is not enough:
    rounding re-creates null-space components in every product, and the filter would amplify
    them by ``|C_m(0)| / |C_m(lambda_2)|`` (~1e10 at degree 32), drowning the wanted directions
    in float32. ``- c I`` is folded into the CSR values (the diagonal is stored explicitly), so
    each filter step is one fused ``addmm`` (SpMM plus the recurrence's axpy) and one rank-
    ``count`` update, with no extra passes over the block.
    """

    def __init__(self, operator: Tensor, upper: float, deflate: ComponentBasis | None) -> None:
        n = operator.size(0)
        loop = torch.arange(n, device=operator.device)
        self.csr, self.diagonal = None, None
        if operator.layout == torch.sparse_csr:
            # a CSR operator that stores each diagonal entry once (as the Laplacians built
            # here do) is used as it is
            crow, col = operator.crow_indices(), operator.col_indices()
            row = torch.repeat_interleave(loop, crow.diff())
            diagonal = torch.nonzero(row == col).flatten()
            if torch.equal(row[diagonal], loop):
                self.csr, self.diagonal = operator, diagonal
        if self.csr is None:  # store the missing diagonal entries (zeros)
            coo = operator.to_sparse_coo().coalesce()
            indices = torch.cat([coo.indices(), torch.stack([loop, loop])], dim=1)
            values = torch.cat([coo.values(), coo.values().new_zeros(n)])
            coo = torch.sparse_coo_tensor(indices, values, (n, n), check_invariants=False)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
                self.csr = coo.coalesce().to_sparse_csr()
            crow, col = self.csr.crow_indices(), self.csr.col_indices()
            row = torch.repeat_interleave(loop, crow.diff())
            self.diagonal = torch.nonzero(row == col).flatten()
        self.upper = upper
        self.deflate = deflate
        self.dtype = operator.dtype

    def minus(self, c: float) -> Tensor:
        """The CSR matrix ``L - c I``."""
        values = self.csr.values().clone()
        values[self.diagonal] -= c
        return torch.sparse_csr_tensor(self.csr.crow_indices(), self.csr.col_indices(), values,
                                       self.csr.shape, check_invariants=False)

    def apply(self, block: Tensor, matrix: Tensor | None = None, alpha: float = 1.0,
              add: Tensor | None = None, beta: float = 0.0) -> Tensor:
        """``alpha (matrix + upper Z Z^T) block + beta add``, ``matrix`` = ``L`` by default."""
        block = block.to(self.dtype)
        matrix = self.csr if matrix is None else matrix
        if add is None:
            out = (matrix @ block).mul_(alpha)
        else:
            out = torch.addmm(add, matrix, block, beta=beta, alpha=alpha)
        if self.deflate is not None:
            self.deflate.add_expanded_(out, self.deflate.coefficients(block), alpha * self.upper)
        return out


def _chebyshev_filter(
    op: _ShiftedOperator, x: Tensor, degree: int, a: float, b: float, a0: float
) -> Tensor:
    """``p_m(L) X`` with ``p_m`` the degree-``m`` Chebyshev polynomial mapped from ``[-1, 1]``
    to ``[a, b]`` and scaled to ``p_m(a0) = 1`` (the scaled three-term recurrence of Zhou and
    Saad, Algorithm 4.1), so the damped interval shrinks to ``|p| <= 1 / |C_m(a0)|``."""
    e = (b - a) / 2.0
    c = (b + a) / 2.0
    shifted = op.minus(c)
    sigma = e / (min(a0, a) - c)  # a0 <= a < c: never a division by zero
    sigma1 = sigma
    y = op.apply(x, shifted, alpha=sigma1 / e)
    for _ in range(2, degree + 1):
        sigma_new = 1.0 / (2.0 / sigma1 - sigma)
        y_new = op.apply(y, shifted, alpha=2.0 * sigma_new / e, add=x, beta=-sigma * sigma_new)
        x, y, sigma = y, y_new, sigma_new
    return y


def _corrected_chebyshev_filter(
    op: _ShiftedOperator, x: Tensor, r: Tensor, theta: Tensor, degree: int, a: float,
    b: float, a0: float
) -> Tensor:
    """``p_m(L) X`` as :func:`_chebyshev_filter` computes it, for Ritz pairs ``(theta, X)``
    (float64) with residuals ``R = L X - X diag(theta)``: ``X diag(p_m(theta)) + D_m`` where
    ``D_i = p_i(L) X - X diag(p_i(theta))`` runs through ``op``'s products (its dtype) from
    ``D_0 = 0``, ``D_1 = (sigma_1 / e) R``:

        D_i = (2 sigma_i / e) (L - c I) D_(i-1) - sigma_(i-1) sigma_i D_(i-2)
              + (2 sigma_i / e) p_(i-1)(theta) R

    (the scalar recurrence of ``p_i(theta)`` subtracted from the block's). The rounding of
    ``op``'s dtype then scales with ``||R||`` instead of ``||X||``."""
    e = (b - a) / 2.0
    c = (b + a) / 2.0
    shifted = op.minus(c)
    sigma = e / (min(a0, a) - c)
    sigma1 = sigma
    r_low = r.to(op.dtype)
    p_prev = torch.ones_like(theta)
    p_cur = (sigma1 / e) * (theta - c)
    d_prev = None
    d = r_low * (sigma1 / e)
    for _ in range(2, degree + 1):
        sigma_new = 1.0 / (2.0 / sigma1 - sigma)
        alpha = 2.0 * sigma_new / e
        beta = -sigma * sigma_new
        # beta * (D_(i-2) + R * forcing / beta), so one addmm adds both
        forcing = (alpha / beta) * p_cur
        if d_prev is None:
            add = r_low * forcing.to(op.dtype).unsqueeze(0)
        else:
            add = d_prev.addcmul_(r_low, forcing.to(op.dtype).unsqueeze(0))
        d_new = op.apply(d, shifted, alpha=alpha, add=add, beta=beta)
        p_prev, p_cur = p_cur, alpha * (theta - c) * p_cur + beta * p_prev
        d_prev, d, sigma = d, d_new, sigma_new
    return x * p_cur.unsqueeze(0) + d.to(torch.float64)


def _orthonormal_basis(
    block: Tensor, deflate: ComponentBasis | None, generator: torch.Generator | None
) -> Tensor:
    """An orthonormal float64 basis of ``block`` (``n x p``) orthogonal to ``deflate``.

    The filter scales the Ritz vector of ``theta_j`` by about ``|p(theta_j)|``, so its output is
    an almost orthogonal block with wildly different column norms: scaling the columns to unit
    norm first keeps Cholesky-QR2 well conditioned. Directions the filter annihilated (zero
    columns, or ones beyond the numerical rank) are replaced by fresh random ones, as subspace
    iteration requires a full-rank block."""
    block = block.to(torch.float64)
    for _ in range(3):
        if deflate is not None:
            block = deflate.project_out(block)
        q = orthonormalize(block, scale_columns=True)
        lost = column_norms(q) < 0.5
        if not bool(lost.any()):
            return deflate.project_out(q) if deflate is not None else q
        fresh = torch.randn(block.size(0), int(lost.sum()), generator=generator,
                            dtype=torch.float64)
        block = q.clone()
        block[:, lost] = fresh.to(block.device)
    raise RuntimeError("could not complete an orthonormal basis of the subspace")


def _rayleigh_ritz(q: Tensor, lq: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Ritz values (ascending, float64), Ritz vectors ``Q W`` and ``L Q W`` (float64)."""
    h = q.transpose(0, 1) @ lq.to(torch.float64)
    h = 0.5 * (h + h.transpose(0, 1))
    # a p x p eigenproblem: LAPACK on the host beats a CUDA solver launch at this size
    theta, w = torch.linalg.eigh(h.cpu())
    w = w.to(q.device)
    return theta.to(q.device), q @ w, lq.to(torch.float64) @ w


def _ritz_residuals(x: Tensor, lx: Tensor, theta: Tensor) -> Tensor:
    """``L X - X diag(theta)`` (float64): its column norms test convergence, and the
    corrected filter starts from it."""
    return lx - x * theta.unsqueeze(0)
