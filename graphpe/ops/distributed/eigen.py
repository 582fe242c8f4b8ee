"""LapPE of one graph partitioned by rows over a ``torch.distributed`` group: the smallest
Laplacian eigenpairs by thick-restart Lanczos (:func:`~graphpe.ops.eigen.lanczos.
thick_restart_lanczos`, its inner products all-reduced), on the rows each rank holds.

The Laplacian is the single process's (:func:`~graphpe.ops.graph.laplacian_entries` on the
undirected simple graph): ``sym`` ``I - D^-1/2 A D^-1/2`` (Chung's 0 on an isolated node's
diagonal), ``rw`` the same matrix with eigenvectors mapped by ``D^-1/2`` and renormalized,
``none`` ``D - A``. Its null space is known, one vector per connected component (``D^1/2 1``,
``1`` for ``none``, normalized over the component; components found by min-label propagation
over the halo exchange; kept sparse, :class:`ComponentNullSpace`), and deflated: Lanczos
runs on its orthogonal complement, where the ``k`` smallest eigenvalues are the wanted
non-trivial ones. One Lanczos over the whole graph (the single process solves component by
component): equal spectra as long as no eigenvalue among the wanted ones is shared by
several components.

Signs are :func:`~graphpe.ops.eigen.canonical_signs`' rule with every sum and maximum taken
over all ranks; eigenvalue and mask columns are padded as :func:`~graphpe.ops.eigen.
laplacian_eigenpairs` pads them.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

from graphpe.ops.distributed.partition import (
    DistributedOperator,
    HaloExchange,
    LocalRows,
    all_max,
    all_sum,
    connected_labels,
    halo_values,
)
from graphpe.ops.eigen.lanczos import SPARSE_TOL, thick_restart_lanczos
from graphpe.ops.eigen.tensor import check_eigenpair_options

# the residual every pair reaches by default (times half the spectrum's bound): a tenth of the
# single process's. Two solves to the same residual differ by up to both their errors (each
# about the residual over the gap to the rest of the spectrum: on arxiv, 1e-9 left 4e-7 at 4
# ranks); a tenth of it leaves about the single process's own error, for a few more products
DISTRIBUTED_TOL = SPARSE_TOL / 10


class LocalEigenpairs(NamedTuple):
    """This rank's rows of the eigenvectors ``[rows, k]`` (float64), the eigenvalues ``[k]``
    (float64, padded with ``pad_value``), the mask ``[k]``, the operator products run and the
    largest residual ``||L v - lambda v||``."""

    eigvecs: Tensor
    eigvals: Tensor
    mask: Tensor
    products: int
    residual: float


def laplacian_operator(rows: LocalRows, exchange: HaloExchange,
                       normalization: str = "sym") -> tuple[DistributedOperator, np.ndarray]:
    """This rank's rows of the Laplacian (``normalization`` as in :func:`laplacian_entries`)
    and the rows' degrees."""
    deg = rows.degrees()
    if normalization == "none":
        return DistributedOperator(rows, exchange, -rows.weight, deg), deg
    with np.errstate(divide="ignore"):
        dis = np.where(deg > 0, deg ** -0.5, 0.0)
    dis_ext = halo_values(exchange, dis)
    from graphpe.ops.distributed.partition import extended_columns

    cols = extended_columns(rows, exchange.halo)
    row = np.repeat(np.arange(rows.rows), np.diff(rows.indptr))
    off = -dis[row] * rows.weight * dis_ext[cols]
    return DistributedOperator(rows, exchange, off, (deg > 0).astype(np.float64)), deg


class ComponentNullSpace:
    """This rank's rows of the Laplacian's null space, one unit vector per connected
    component (values ``values`` ``[rows]`` on the component's nodes), kept sparse:
    ``column[i]`` is row ``i``'s component in the order of the components' smallest nodes.
    A projection ``x - Z Z^T x`` sums ``Z^T x`` locally for the components inside this rank
    and all-reduces the sums of the components that span several ranks (``shared``, their
    place among those), so isolated nodes and small components cost no communication."""

    def __init__(self, values: np.ndarray, column: np.ndarray, count: int,
                 shared: np.ndarray, group: dist.ProcessGroup | None) -> None:
        self.values, self.column, self.count, self.group = values, column, count, group
        self.shape = (values.size, count)
        place = np.full(count, -1, dtype=np.int64)
        place[shared] = np.arange(shared.size)
        self.shared_place = place[column]  # -1: a component inside this rank
        self.num_shared = int(shared.size)
        self.local = self.shared_place < 0
        _, self.local_index = np.unique(column[self.local], return_inverse=True)

    def project_(self, x: np.ndarray) -> None:
        """``x -= Z Z^T x`` in place (``x``: this rank's rows of one vector)."""
        vx = self.values * x
        coef = np.zeros(x.size)
        if self.local.any():
            sums = np.bincount(self.local_index, weights=vx[self.local])
            coef[self.local] = sums[self.local_index]
        if self.num_shared:
            on = ~self.local
            sums = all_sum(np.bincount(self.shared_place[on], weights=vx[on],
                                       minlength=self.num_shared), self.group)
            coef[on] = sums[self.shared_place[on]]
        x -= self.values * coef

    def columns(self, count: int) -> np.ndarray:
        """The first ``count`` vectors as dense columns ``[rows, count]``."""
        out = np.zeros((self.values.size, count))
        mine = self.column < count
        out[np.flatnonzero(mine), self.column[mine]] = self.values[mine]
        return out


def null_space(rows: LocalRows, exchange: HaloExchange, deg: np.ndarray,
               normalization: str) -> ComponentNullSpace:
    """This rank's rows of the Laplacian's null space, one orthonormal vector per connected
    component, components in the order of their smallest nodes (as
    :func:`~graphpe.ops.eigen.component_basis`: ``sqrt(deg)``, ones for ``none``, the
    indicator of an isolated node). Collective: every rank tells the others the components
    its rows meet and their partial squared norms (an all-gather of one pair per such
    component)."""
    group = exchange.group
    labels = connected_labels(rows, exchange)
    weight = np.ones(rows.rows) if normalization == "none" else np.sqrt(np.maximum(deg, 0))
    mine, inverse = np.unique(labels, return_inverse=True)
    sums = np.bincount(inverse, weights=weight * weight, minlength=mine.size)
    gathered: list = [None] * exchange.partition.world
    dist.all_gather_object(gathered, (mine, sums), group=group)
    every, seen = np.unique(np.concatenate([g[0] for g in gathered]), return_counts=True)
    norm2 = np.zeros(every.size)
    for labs, s in gathered:
        np.add.at(norm2, np.searchsorted(every, labs), s)
    column = np.searchsorted(every, labels)
    empty = norm2[column] <= 0  # an isolated node: its indicator
    weight = np.where(empty, 1.0, weight)
    norm2 = np.where(norm2 <= 0, 1.0, norm2)
    return ComponentNullSpace(weight / np.sqrt(norm2[column]), column, every.size,
                              np.flatnonzero(seen > 1), group)


def canonical_signs_distributed(vecs: Tensor, ids: np.ndarray, valid: Tensor,
                                group: dist.ProcessGroup | None = None,
                                tol: float = 1e-6) -> Tensor:
    """:func:`~graphpe.ops.eigen.canonical_signs` of row-partitioned ``vecs`` (this rank's
    rows ``[rows, k]``, of the input's nodes ``ids``): ``sum_i v_i^3`` over all rows, and
    where it is within ``tol`` of 0 the sign of the entry of largest magnitude at the lowest
    input id (the single process's first); ``[1, k]``, +1 where ``valid`` is False."""
    k = vecs.size(1)
    third = torch.from_numpy(all_sum(vecs.pow(3).sum(0).double().numpy(), group))
    mag = vecs.abs()
    max_mag = mag.amax(0) if vecs.size(0) else torch.zeros(k, dtype=vecs.dtype)
    max_mag = max_mag.double().clone()
    dist.all_reduce(max_mag, op=dist.ReduceOp.MAX, group=group)
    near = mag >= (max_mag - tol).to(vecs.dtype)
    never = np.iinfo(np.int64).max
    id_of = torch.as_tensor(np.asarray(ids, dtype=np.int64)).unsqueeze(1)
    first = torch.where(near, id_of, never).amin(0) if vecs.size(0) else torch.full(
        (k,), never, dtype=torch.long)
    dist.all_reduce(first, op=dist.ReduceOp.MIN, group=group)
    at_first = id_of == first.unsqueeze(0)
    mine = at_first.any(0)
    local = torch.argmax(at_first.to(torch.uint8), 0) if vecs.size(0) else first.clamp(max=0)
    at_max = torch.where(mine, vecs[local, torch.arange(k)].double().sign()
                         if vecs.size(0) else torch.zeros(k, dtype=torch.float64),
                         torch.zeros(k, dtype=torch.float64))
    at_max = torch.from_numpy(all_sum(at_max.numpy(), group))
    scale = max_mag.pow(3).clamp(min=1e-30)
    sign = torch.where(third.abs() > tol * scale, third.sign(), at_max)
    sign = torch.where((sign == 0) | ~valid, torch.ones_like(sign), sign)
    return sign.to(vecs.dtype).unsqueeze(0)


def distributed_laplacian_eigenpairs(
    rows: LocalRows,
    exchange: HaloExchange,
    k: int,
    *,
    normalization: str = "sym",
    keep_trivial: bool = False,
    sign: str = "canonical",
    flips: Tensor | None = None,
    pad_value: float = 0.0,
    tol: float | None = None,
    seed: int = 0,
) -> LocalEigenpairs:
    """The ``k`` smallest (non-trivial unless ``keep_trivial``) eigenpairs of the partitioned
    graph's Laplacian, this rank's rows of them (collective).

    Args:
        rows, exchange: the rank's rows and their halo (:mod:`.partition`).
        k: eigenpairs wanted; fewer exist where ``k`` exceeds ``n - components`` (then the
            missing columns are padded: zero vectors, ``pad_value``, mask False).
        normalization, keep_trivial, sign, pad_value: as
            :func:`~graphpe.ops.eigen.laplacian_eigenpairs`.
        flips: ``[k]`` signs (+-1) multiplying the canonical ones where ``sign="random"``:
            the same in every rank.
        tol: residual ``||L v - lambda v||`` every pair must reach (default
            :data:`DISTRIBUTED_TOL`, a tenth of the single process's, times half the
            spectrum's bound).
        seed: seed of the Lanczos start (each rank draws its rows from ``(seed, rank)``).
    """
    check_eigenpair_options(k, normalization, sign)
    part, group = rows.partition, exchange.group
    n = part.num_nodes
    op, deg = laplacian_operator(rows, exchange, normalization)
    null = null_space(rows, exchange, deg, normalization)
    count = null.count
    upper = 2.0 * all_max(deg.max(initial=0.0), group) * (1 + 1e-6) \
        if normalization == "none" else 2.0
    tol = DISTRIBUTED_TOL * upper / 2.0 if tol is None else tol
    trivial = min(k, count) if keep_trivial else 0
    want = min(k - trivial, n - count)
    if 0 < want and want + 1 >= n - count:
        raise ValueError(f"k={k}: the distributed LapPE needs more than k + 1 eigenpairs "
                         f"outside the null space ({n - count} here); encode a graph this "
                         "small in one process")
    vals = np.zeros(trivial)
    vecs = null.columns(trivial)
    products, residual = 0, 0.0
    if want > 0:
        start = np.random.default_rng([seed, part.rank]).standard_normal(rows.rows)

        def reduce(partial: np.ndarray) -> np.ndarray:
            return all_sum(partial, group)

        solved = thick_restart_lanczos(op.matvec, n, want, null=null,
                                       tol=tol, norm_bound=upper, start=start,
                                       seed=seed + part.rank, reduce=reduce)
        lv = op.matvec(solved.vectors)
        res = np.sqrt(all_sum(((lv - solved.vectors * solved.values) ** 2).sum(0), group))
        residual = float(res.max(initial=0.0))
        if residual > tol:
            warnings.warn(f"distributed lanczos: residual {residual:.2e} > tol {tol:.1e} "
                          f"after {solved.products} products", RuntimeWarning, stacklevel=2)
        vals = np.concatenate([vals, solved.values])
        vecs = np.concatenate([vecs, solved.vectors], axis=1)
        products = solved.products
    m = vals.size
    out = torch.zeros(rows.rows, k, dtype=torch.float64)
    out[:, :m] = torch.from_numpy(np.ascontiguousarray(vecs))
    valid = torch.arange(k) < m
    if normalization == "rw":
        scale = np.where(deg > 0, deg ** -0.5, 1.0) if deg.size else deg
        out = out * torch.from_numpy(scale).unsqueeze(1)
        norms = np.sqrt(all_sum((out ** 2).sum(0).numpy(), group))
        out = out / torch.from_numpy(norms).clamp(min=1e-30)
    if sign != "none":
        signs = canonical_signs_distributed(out, part.input_ids(), valid, group)
        if sign == "random":
            signs = signs * flips.to(signs).reshape(1, k)
        out = out * signs
    eigvals = torch.full((k,), float(pad_value), dtype=torch.float64)
    eigvals[:m] = torch.from_numpy(vals)
    return LocalEigenpairs(out, eigvals, valid, products, residual)
