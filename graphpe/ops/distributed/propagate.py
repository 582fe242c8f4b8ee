"""RFP of one graph partitioned by rows over a ``torch.distributed`` group: the single
process's trajectory (:func:`~graphpe.ops.propagate.random_feature_propagation`, the ``tensor``
kernel of a graph above :data:`~graphpe.ops.host.COMPILED_MAX_NODES` nodes) on each rank's
rows.

- Draws: the single process draws ``R_0 = randn(n, draws, d)`` from one generator; CPU
  ``randn`` fills blocks of 16 values from the stream in order, so drawing it in chunks of a
  multiple of 16 rows gives the same numbers. Each rank draws the chunks up to its last row
  and keeps its own (``O(chunk)`` memory, the stream before its rows drawn and dropped).
- Products: ``S_r X`` by one halo exchange (:class:`~.partition.DistributedOperator`, the
  operator's values those of :func:`~graphpe.ops.propagate.propagation_operator`).
- ``qr``: CholeskyQR2 with Gram matrices all-reduced, ``G_1 = sum_r X_r^T X_r``,
  ``R_1 = chol(G_1)^T``, ``Q_1 = X R_1^-1``, the same with ``Q_1`` (the single process's
  :func:`~graphpe.ops.propagate.orthonormalize`, its acceptance rule on the pivots); a
  block it rejects (numerically rank-deficient) is gathered whole on every rank and
  orthonormalized there by the single process's rank-cutting Gram-Schmidt.
- ``l2``: column norms from all-reduced squared sums.

The results equal the single process's to the rounding of the Gram sums' order.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

from graphpe.ops.distributed.partition import (
    DistributedOperator,
    HaloExchange,
    LocalRows,
    RowPartition,
    extended_columns,
    halo_values,
)
from graphpe.ops.propagate.tensor import (
    OPERATORS,
    PROPAGATION_NORMS,
    cholesky_r_inv,
    gram_matrix,
    orthonormalize,
)

# rows per chunk of the random stream: a multiple of 16, so chunks keep randn's blocks
DRAW_CHUNK_ROWS = 16 * 1024


def own_draws(generator: torch.Generator, partition: RowPartition, draws: int,
              dim: int) -> Tensor:
    """This rank's rows of ``torch.randn(n, draws, dim, generator=generator)`` (float32),
    row ``i`` the draw of the input's node ``partition.input_ids()[i]``: the stream drawn in
    chunks of :data:`DRAW_CHUNK_ROWS` rows up to the rank's last node, the others dropped."""
    nodes = partition.input_ids()
    out = torch.empty(partition.rows, draws, dim)
    if nodes.size == 0:
        return out
    # the rank's rows sorted by input id, so that each chunk of the stream fills a run of them
    by_id = np.argsort(nodes, kind="stable")
    sorted_ids = nodes[by_id]
    last = int(sorted_ids[-1]) + 1
    for start in range(0, last, DRAW_CHUNK_ROWS):
        stop = min(start + DRAW_CHUNK_ROWS, partition.num_nodes)
        chunk = torch.randn(stop - start, draws, dim, generator=generator)
        a, b = np.searchsorted(sorted_ids, [start, stop])
        if a < b:
            rows = torch.from_numpy(by_id[a:b])
            out[rows] = chunk[torch.from_numpy(sorted_ids[a:b] - start)]
    return out


def propagation_operator_rows(rows: LocalRows, exchange: HaloExchange, kind: str = "gcn",
                              dtype: torch.dtype = torch.float32) -> DistributedOperator:
    """This rank's rows of :func:`~graphpe.ops.propagate.propagation_operator` ``kind``
    (``adj``, ``gcn``, ``rw``, ``lap_shift``), values computed in float64 as the single
    process's, products in ``dtype``."""
    if kind not in OPERATORS:
        raise ValueError(f"operator must be one of {OPERATORS}, got {kind!r}")
    deg = rows.degrees()
    diag = None
    with np.errstate(divide="ignore"):
        if kind == "gcn":
            scale = 1.0 / np.sqrt(deg + 1.0)
            diag = scale * scale
        elif kind == "rw":
            scale = np.where(deg > 0, 1.0 / deg, 0.0)
        else:
            scale = np.where(deg > 0, 1.0 / np.sqrt(deg), 0.0)
            if kind == "lap_shift":
                diag = np.where(deg > 0, 1.0, 2.0)
    row = np.repeat(np.arange(rows.rows), np.diff(rows.indptr))
    values = scale[row] * rows.weight
    if kind != "rw":
        values = values * halo_values(exchange, scale)[extended_columns(rows, exchange.halo)]
    return DistributedOperator(rows, exchange, values, diag, dtype)


def _gathered(x: Tensor, group: dist.ProcessGroup | None, world: int) -> Tensor:
    """The whole block: every rank's rows of ``x``, in rank order (an all-gather of blocks
    padded to the most rows: gloo gathers equal sizes only)."""
    counts = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(counts, torch.tensor([x.size(0)]), group=group)
    most = max(int(c[0]) for c in counts)
    padded = x.new_zeros((most,) + tuple(x.shape[1:]))
    padded[: x.size(0)] = x
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded, group=group)
    return torch.cat([p[: int(c[0])] for p, c in zip(parts, counts, strict=True)])


def orthonormalize_distributed(x: Tensor, partition: RowPartition,
                               group: dist.ProcessGroup | None = None,
                               batched: bool = False) -> Tensor:
    """This rank's rows of :func:`~graphpe.ops.propagate.orthonormalize` of the
    row-partitioned block ``x`` (``[rows, d]``), by CholeskyQR2 on all-reduced Gram matrices.
    ``batched``: the formulas of a block of a batch (``Q_1`` formed, then ``Q_1 R_2^-1``),
    as the single process orthonormalizes each of several draws; otherwise those of one
    ``[n, d]`` block (``X (R_1^-1 R_2^-1)``)."""

    def reduced(gram: Tensor) -> Tensor:
        dist.all_reduce(gram, group=group)
        return gram

    if partition.num_nodes >= x.size(1) and x.size(1):
        r1, ok1 = cholesky_r_inv(reduced(gram_matrix(x)), x.dtype)
        if ok1 is not None:
            q1 = x @ r1.to(x.dtype)
            r2, ok2 = cholesky_r_inv(reduced(gram_matrix(q1)), x.dtype)
            if ok2 is not None and bool(ok1 & ok2):
                if batched:
                    return q1 @ r2.to(x.dtype)
                return x @ (r1 @ r2).to(x.dtype)
    whole = _gathered(x, group, partition.world)
    q = orthonormalize(whole.unsqueeze(0).unsqueeze(0) if batched else whole)
    return q.reshape(whole.shape)[partition.lo : partition.hi]


def normalize_distributed(x: Tensor, partition: RowPartition, mode: str, block: int,
                          group: dist.ProcessGroup | None = None) -> Tensor:
    """:func:`~graphpe.ops.propagate.normalize_per_graph` of one row-partitioned graph:
    ``l2`` unit columns, ``qr`` each ``block`` of columns (a draw) orthonormalized."""
    if mode not in PROPAGATION_NORMS:
        raise ValueError(f"normalization must be one of {PROPAGATION_NORMS}, got {mode!r}")
    if mode == "l2":
        squares = (x.transpose(0, 1) @ x).diagonal().clone()
        dist.all_reduce(squares, group=group)
        norm = squares.clamp(min=0).sqrt()
        inv = torch.where(norm > 0, 1.0 / norm.clamp(min=1e-30), torch.zeros_like(norm))
        return x * inv
    draws = x.size(1) // block
    if draws == 1:
        return orthonormalize_distributed(x, partition, group)
    return torch.cat([orthonormalize_distributed(x[:, d * block : (d + 1) * block].contiguous(),
                                                 partition, group, batched=True)
                      for d in range(draws)], dim=1)


def distributed_rfp(rows: LocalRows, exchange: HaloExchange, x0: Tensor, steps: int,
                    operator: str = "gcn", normalization: str = "qr",
                    dtype: torch.dtype = torch.float32) -> Tensor:
    """This rank's rows ``[rows, draws, (steps + 1) d]`` of the RFP trajectory
    ``[X_0, ..., X_L]``, ``X_l = normalize(S X_(l-1))``, of the partitioned graph from this
    rank's rows ``x0`` ``[rows, draws, d]`` of the initial features (collective)."""
    part, group = rows.partition, exchange.group
    if x0.dim() != 3 or x0.size(0) != part.rows:
        raise ValueError(f"x0 must be [rows={part.rows}, draws, d], got {list(x0.shape)}")
    draws, d = x0.size(1), x0.size(2)
    op = propagation_operator_rows(rows, exchange, operator, dtype)
    # written straight into the output's layout [rows, draws, step, d]: no trajectory copy
    out = torch.empty(part.rows, draws, steps + 1, d, dtype=dtype)
    x = normalize_distributed(x0.to(dtype).reshape(part.rows, draws * d), part,
                              normalization, d, group)
    out[:, :, 0] = x.reshape(part.rows, draws, d)
    for step in range(1, steps + 1):
        x = normalize_distributed(op.matmul(x), part, normalization, d, group)
        out[:, :, step] = x.reshape(part.rows, draws, d)
    return out.reshape(part.rows, draws, (steps + 1) * d)
