"""One graph's rows partitioned over the processes of a ``torch.distributed`` group, and the
halo exchange that a product with a row-partitioned operator needs.

Rank ``r`` of ``R`` owns the contiguous node range ``[b_r, b_(r+1))``, ``b_r = floor(r n / R)``,
of the input's node order, or of a bandwidth-reducing reordering of it
(:func:`bandwidth_order`, reverse Cuthill-McKee): node ``order[i]`` of the input is row ``i``,
so that a rank's rows read fewer columns of other ranks (a smaller halo, less communication).
Everything below works on the rows' ids ``i``; only the random draws, the sign convention's
tie-break and the written rows go back to the input's ids (:attr:`RowPartition.nodes`). It
holds its rows of the undirected simple graph's CSR
(:class:`~graphpe.ops.host.HostCSR`, column ids global) and, for an operator ``A`` on that
pattern, its rows ``A_r``. Its rows read the columns ``C_r``; those owned by other ranks are its
*halo* ``H_r = C_r \\ [b_r, b_(r+1))``. A product ``y_r = A_r x`` needs ``x`` on ``H_r`` only:
before each product every rank sends each peer the rows of ``x`` that peer's halo holds and
receives its own halo's (point-to-point ``isend``/``irecv``, which gloo, NCCL and MPI all
support; gloo has no ``all_to_all``). A product of ``d`` columns moves
``sum_r |H_r| d`` values in all, never more.

Everything here is collective: every rank of the group calls it, in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

from graphpe.ops.host import HostCSR


class RowPartition(NamedTuple):
    """Contiguous row blocks: rank ``r`` owns rows ``bounds[r] .. bounds[r + 1] - 1``;
    ``nodes``: the input's ids of this rank's rows where the graph was reordered, None where
    row ``i`` is node ``i``."""

    bounds: tuple[int, ...]
    rank: int
    nodes: np.ndarray | None = None

    @property
    def world(self) -> int:
        return len(self.bounds) - 1

    @property
    def num_nodes(self) -> int:
        return self.bounds[-1]

    @property
    def lo(self) -> int:
        return self.bounds[self.rank]

    @property
    def hi(self) -> int:
        return self.bounds[self.rank + 1]

    @property
    def rows(self) -> int:
        return self.hi - self.lo

    def owner(self, rows: np.ndarray) -> np.ndarray:
        """The rank owning each of the global row ids ``rows``."""
        return np.searchsorted(np.asarray(self.bounds), rows, side="right") - 1

    def input_ids(self) -> np.ndarray:
        """The input's node id of each of this rank's rows."""
        return np.arange(self.lo, self.hi) if self.nodes is None else self.nodes


def row_partition(num_nodes: int, world: int, rank: int,
                  order: np.ndarray | None = None) -> RowPartition:
    """Balanced contiguous blocks of ``num_nodes`` rows over ``world`` ranks, of the rows in
    ``order`` (row ``i`` is the input's node ``order[i]``; None: the input's order);
    ``ValueError`` where a rank would own no node."""
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not a rank of a world of {world}")
    if num_nodes < world:
        raise ValueError(f"cannot partition a graph of {num_nodes} nodes over {world} ranks: "
                         "every rank needs at least one node")
    bounds = tuple(num_nodes * r // world for r in range(world + 1))
    if order is None:
        return RowPartition(bounds, rank)
    if order.shape != (num_nodes,):
        raise ValueError(f"order has {order.size} entries for a graph of {num_nodes} nodes")
    return RowPartition(bounds, rank, np.array(order[bounds[rank] : bounds[rank + 1]],
                                               dtype=np.int64))


REORDERINGS = ("none", "rcm")


def bandwidth_order(indptr: np.ndarray, indices: np.ndarray, num_nodes: int) -> np.ndarray:
    """The reverse Cuthill-McKee order of the undirected graph whose (symmetric or not) CSR
    pattern is ``indptr``, ``indices``: ``order[i]`` is the node placed at row ``i``. A
    breadth-first order from a peripheral node, each level by ascending degree, reversed
    (Cuthill & McKee 1969; George 1971); it narrows the band of the matrix, so contiguous row
    blocks read fewer columns outside themselves. Deterministic: every rank that computes it
    gets the same order."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    pattern = sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, indptr),
                            shape=(num_nodes, num_nodes))
    pattern = (pattern + pattern.T).tocsr()
    return np.asarray(reverse_cuthill_mckee(pattern, symmetric_mode=True), dtype=np.int64)


@dataclass
class LocalRows:
    """Rows ``lo .. hi - 1`` of a graph's :class:`~graphpe.ops.host.HostCSR` (the undirected
    simple graph: neighbours ascending, weights, self loops apart in ``loops``), with global
    column ids; ``num_nodes`` is the whole graph's."""

    partition: RowPartition
    indptr: np.ndarray
    indices: np.ndarray
    weight: np.ndarray
    loops: np.ndarray

    @property
    def rows(self) -> int:
        return self.partition.rows

    def degrees(self) -> np.ndarray:
        """Weighted degrees of the rows (self loops not counted, as the Laplacian's)."""
        row = np.repeat(np.arange(self.rows), np.diff(self.indptr))
        return np.bincount(row, weights=self.weight, minlength=self.rows).astype(np.float64)


def local_rows(csr: HostCSR, partition: RowPartition) -> LocalRows:
    """``partition``'s rows of the whole graph's ``csr`` (copies: the whole CSR can be freed)."""
    lo, hi = partition.lo, partition.hi
    a, b = int(csr.indptr[lo]), int(csr.indptr[hi])
    return LocalRows(partition, (csr.indptr[lo : hi + 1] - a).astype(np.int64),
                     csr.indices[a:b].astype(np.int64), csr.weight[a:b].astype(np.float64),
                     csr.loops[lo:hi].astype(np.float64))


@dataclass
class HaloExchange:
    """The halo of one rank's rows and the plan that fills it (built by :func:`halo_exchange`).

    ``halo``: the global ids of the halo nodes, ascending (so grouped by owner);
    ``recv_counts[p]``: how many of them rank ``p`` owns; ``send_rows[p]``: this rank's local
    rows that rank ``p``'s halo holds. ``values_sent`` counts the values this rank has sent
    (over all calls of :meth:`exchange`), ``calls`` the exchanges."""

    partition: RowPartition
    halo: np.ndarray
    recv_counts: list[int]
    send_rows: list[Tensor]
    group: dist.ProcessGroup | None = None
    values_sent: int = 0
    bytes_sent: int = 0
    calls: int = 0
    _recv_offsets: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._recv_offsets = [0, *np.cumsum(self.recv_counts).tolist()]

    @property
    def size(self) -> int:
        return int(self.halo.size)

    def send_size(self) -> int:
        """Rows this rank sends per exchange."""
        return sum(int(rows.numel()) for rows in self.send_rows)

    def exchange(self, x: Tensor) -> Tensor:
        """``x`` (this rank's rows ``[rows, ...]``) on the halo: ``[|halo|, ...]``."""
        out = x.new_empty((self.size,) + tuple(x.shape[1:]))
        offsets = self._recv_offsets
        send = [x.index_select(0, rows.to(x.device)) if rows.numel() else x[:0]
                for rows in self.send_rows]
        recv = [out[offsets[p] : offsets[p + 1]] for p in range(self.partition.world)]
        values, nbytes = exchange_blocks(send, recv, self.partition.rank, self.group)
        self.values_sent += values
        self.bytes_sent += nbytes
        self.calls += 1
        return out

    def reset_counts(self) -> None:
        self.values_sent = self.bytes_sent = self.calls = 0


def global_rank(rank: int, group: dist.ProcessGroup | None) -> int:
    """The default group's rank of ``group``'s rank ``rank`` (point-to-point calls and
    broadcasts name their peer by it)."""
    return rank if group is None else dist.get_global_rank(group, rank)


def broadcast_first(value: Tensor, group: dist.ProcessGroup | None = None) -> Tensor:
    """``group``'s rank 0's ``value`` on every rank (a copy; collective)."""
    value = value.clone()
    dist.broadcast(value, global_rank(0, group), group=group)
    return value


def incoming_counts(counts: np.ndarray, rank: int,
                    group: dist.ProcessGroup | None = None) -> np.ndarray:
    """How many items each rank sends rank ``rank`` (this one), from every rank's ``counts``
    (``[world]``: the items it sends each rank), by one ``all_gather`` (collective)."""
    world = counts.size
    every = [torch.zeros(world, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(every, torch.from_numpy(np.ascontiguousarray(counts, dtype=np.int64)),
                    group=group)
    return np.array([int(every[p][rank]) for p in range(world)], dtype=np.int64)


def exchange_blocks(send: list[Tensor], recv: list[Tensor], rank: int,
                    group: dist.ProcessGroup | None = None) -> tuple[int, int]:
    """``send[p]`` to each other rank ``p`` of the group and ``recv[p]`` (contiguous, its size
    known here, e.g. from :func:`incoming_counts`) filled from it, point-to-point (gloo has
    no ``all_to_all``); empty blocks are not sent, and ``send[rank]``, ``recv[rank]`` are
    left alone. Every pair of ranks that exchanges calls it (collective). Returns the
    values and bytes this rank sent."""
    requests, keep = [], []
    values = nbytes = 0
    for p in range(len(send)):
        if p == rank:
            continue
        peer = global_rank(p, group)
        if recv[p].numel():
            requests.append(dist.irecv(recv[p], src=peer, group=group))
        if send[p].numel():
            block = send[p].contiguous()
            keep.append(block)  # alive until the send completes
            values += block.numel()
            nbytes += block.numel() * block.element_size()
            requests.append(dist.isend(block, dst=peer, group=group))
    for request in requests:
        request.wait()
    return values, nbytes


def halo_exchange(rows: LocalRows, group: dist.ProcessGroup | None = None) -> HaloExchange:
    """The halo of ``rows`` (the columns its rows read that other ranks own) and the plan of
    its exchange: every rank tells each owner which of its rows it needs (collective)."""
    part = rows.partition
    cols = np.unique(rows.indices)
    halo = cols[(cols < part.lo) | (cols >= part.hi)]
    owner = part.owner(halo)
    recv_counts = np.bincount(owner, minlength=part.world).astype(np.int64)
    send_counts = incoming_counts(recv_counts, part.rank, group)
    send_rows = [torch.empty(int(send_counts[p]), dtype=torch.int64) for p in range(part.world)]
    offsets = np.concatenate([[0], np.cumsum(recv_counts)])
    wanted = [torch.from_numpy(halo[offsets[p] : offsets[p + 1]].astype(np.int64))
              for p in range(part.world)]
    exchange_blocks(wanted, send_rows, part.rank, group)
    send_rows = [r - part.lo for r in send_rows]
    return HaloExchange(part, halo, recv_counts.tolist(), send_rows, group)


def extended_ids(ids: np.ndarray, partition: RowPartition,
                 halo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each global id's place in the rank's extended vector ``[own rows, halo]`` (``i - lo``
    for an own id ``i``, ``rows + (i's place in the ascending halo)`` otherwise), and whether
    it has one: an id neither the rank's nor in ``halo`` has none (0 there)."""
    own = (ids >= partition.lo) & (ids < partition.hi)
    out = np.where(own, ids - partition.lo, 0)
    other = ids[~own]
    place = np.searchsorted(halo, other)
    found = place < halo.size
    found[found] = halo[place[found]] == other[found]
    out[~own] = partition.rows + np.where(found, place, 0)
    own[~own] = found
    return out, own


def extended_columns(rows: LocalRows, halo: np.ndarray) -> np.ndarray:
    """The column of each stored entry in the rank's extended vector ``[own rows, halo]``
    (:func:`extended_ids`; ``halo``: the ascending ids of the other ranks' columns the rows
    read, e.g. :attr:`HaloExchange.halo`)."""
    return extended_ids(rows.indices, rows.partition, halo)[0]


def all_sum(values: np.ndarray | Tensor, group: dist.ProcessGroup | None = None) -> np.ndarray:
    """The elementwise sum of ``values`` over the group's ranks (float64, every rank)."""
    t = torch.as_tensor(np.asarray(values, dtype=np.float64)).clone()
    dist.all_reduce(t, group=group)
    return t.numpy()


def all_max(value: float, group: dist.ProcessGroup | None = None) -> float:
    """The largest ``value`` over the group's ranks."""
    t = torch.tensor([float(value)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return float(t[0])


def all_min(value: float, group: dist.ProcessGroup | None = None) -> float:
    """The smallest ``value`` over the group's ranks."""
    return -all_max(-value, group)


def halo_values(exchange: HaloExchange, own: np.ndarray) -> np.ndarray:
    """``own`` (one value per own row) extended by its values on the halo:
    ``[rows + |halo|]`` (one exchange, not counted in the product's volume)."""
    counts = exchange.values_sent, exchange.bytes_sent, exchange.calls
    halo = exchange.exchange(torch.from_numpy(np.ascontiguousarray(own))).numpy()
    exchange.values_sent, exchange.bytes_sent, exchange.calls = counts
    return np.concatenate([own, halo])


def connected_labels(rows: LocalRows, exchange: HaloExchange) -> np.ndarray:
    """Connected-component labels of the rows: the smallest input node id of each row's
    component (:meth:`RowPartition.input_ids`), by min-label propagation over the halo
    exchange (as many rounds as the longest shortest path to a component's smallest node,
    plus one; collective)."""
    part = rows.partition
    labels = np.array(part.input_ids(), dtype=np.int64)
    ext_cols = extended_columns(rows, exchange.halo)
    has = np.diff(rows.indptr) > 0
    starts = rows.indptr[:-1][has]
    while True:
        ext = halo_values(exchange, labels)
        new = labels.copy()
        if starts.size:
            new[has] = np.minimum(labels[has], np.minimum.reduceat(ext[ext_cols], starts))
        changed = int((new != labels).sum())
        labels = new
        if all_sum(np.array([changed]), exchange.group)[0] == 0:
            return labels


class DistributedOperator:
    """One rank's rows ``A_r`` of a sparse operator on the partitioned graph's pattern (plus
    an optional diagonal), applied to row-partitioned vectors by one halo exchange and one
    local product over the extended vector ``[own rows, halo]``.

    Entries keep the order of the whole graph's CSR row (ascending global column, the diagonal
    at its sorted place), so each row's sum is taken in the single process's order.

    Args:
        rows: the rank's rows of the graph.
        exchange: their halo (:func:`halo_exchange`).
        values: ``[nnz]`` the operator's value at each stored entry of ``rows``.
        diag: ``[rows]`` diagonal entries, or None for none.
        dtype: the torch dtype of :meth:`matmul`'s products.
    """

    def __init__(self, rows: LocalRows, exchange: HaloExchange, values: np.ndarray,
                 diag: np.ndarray | None = None, dtype: torch.dtype = torch.float64) -> None:
        part = rows.partition
        indptr, cols, vals = rows.indptr, rows.indices, np.asarray(values, np.float64)
        if diag is not None:
            # the diagonal entry goes before the first column above the row (sorted place)
            counts = np.diff(indptr)
            row = np.repeat(np.arange(part.rows), counts)
            below = np.bincount(row, weights=cols < (row + part.lo),
                                minlength=part.rows).astype(np.int64)
            place = indptr[:-1] + below + np.arange(part.rows)
            keep = np.ones(cols.size + part.rows, dtype=bool)
            keep[place] = False
            new_cols = np.empty(cols.size + part.rows, dtype=np.int64)
            new_vals = np.empty(cols.size + part.rows)
            new_cols[keep], new_vals[keep] = cols, vals
            new_cols[place] = np.arange(part.lo, part.hi)
            new_vals[place] = diag
            indptr = indptr + np.arange(part.rows + 1)
            cols, vals = new_cols, new_vals
        ext = LocalRows(part, indptr, cols, vals, rows.loops)
        self.exchange = exchange
        self.rows = part.rows
        self.width = part.rows + exchange.size
        self.indptr, self.columns, self.values = indptr, extended_columns(ext, exchange.halo), vals
        self.dtype = dtype
        self._matrix = self._tensor = None  # built on first use: one copy, not two
        self.products = 0

    @property
    def matrix(self):
        """The rows as a scipy CSR matrix ``[rows, rows + |halo|]`` (float64)."""
        if self._matrix is None:
            import scipy.sparse as sp

            self._matrix = sp.csr_matrix((self.values, self.columns, self.indptr),
                                         shape=(self.rows, self.width))
            self._matrix.has_sorted_indices = True  # (keep the stored order: no sort)
        return self._matrix

    @property
    def tensor(self) -> Tensor:
        """The rows as a torch sparse CSR tensor in the operator's dtype."""
        if self._tensor is None:
            import warnings

            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
                self._tensor = torch.sparse_csr_tensor(
                    torch.from_numpy(self.indptr.astype(np.int64, copy=False)),
                    torch.from_numpy(self.columns.astype(np.int64, copy=False)),
                    torch.from_numpy(self.values).to(self.dtype), (self.rows, self.width),
                    check_invariants=False)
        return self._tensor

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``A_r x`` for this rank's rows ``x`` ``[rows]`` or ``[rows, d]`` (float64 numpy)."""
        halo = self.exchange.exchange(torch.from_numpy(np.ascontiguousarray(x))).numpy()
        self.products += 1
        return self.matrix @ np.concatenate([x, halo])

    def matmul(self, x: Tensor, out: Tensor | None = None) -> Tensor:
        """``A_r x`` for this rank's rows ``x`` ``[rows, d]`` (torch, the operator's dtype)."""
        ext = torch.cat([x, self.exchange.exchange(x)])
        self.products += 1
        return torch.mm(self.tensor, ext) if out is None else torch.mm(self.tensor, ext, out=out)
