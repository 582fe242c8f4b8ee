"""Local Curvature Profiles (LCP, :class:`graphpe.encodings.curvature.LCP`) of one graph
partitioned by rows over a ``torch.distributed`` group: each rank gets its rows of the single
process's :func:`~graphpe.ops.curvature.local_curvature_profile`, computed by the same
compiled kernels on a local CSR of the rows around its own.

What each curvature of an edge ``x ~ y`` reads (``x`` a rank's own node, ``y`` any neighbour):

- ``forman``, ``4 - d_x - d_y``: the degrees of the 1-hop halo ``H = N(own) \\ own``.
- ``afrc``, ``4 - d_x - d_y + 3 t_xy``, and ``orc_bounds`` (Jost-Liu lower and triangle upper
  bounds, both from ``d_x``, ``d_y`` and ``t_xy``): the common neighbours
  ``t_xy = |N(x) & N(y)|``, so the rows of ``H``. As ``N(x)`` lies in the 1-hop ball
  ``B1 = own + H``, a row of ``H`` restricted to ``B1`` has the same intersection with it.
  The rows of ``H`` come in rounds (:func:`_triangles`): a local CSR on ``B1`` holds the own
  rows and one round's rows restricted to ``B1`` (the degrees kept apart, whole).
- ``orc``, ``1 - W1(m_x, m_y)``: the transport costs between ``supp m_x`` (in ``N[x]``) and
  ``supp m_y`` (in ``N[y]``, within distance 2 of ``x``) are 1 (adjacent), 2 (a common
  neighbour) or 3, read from the rows of ``N[x]`` and ``N[y]``
  (:func:`~graphpe.ops.curvature.compiled.solve_edges`). So a rank needs the rows of its
  2-hop ball ``B2`` (every node within distance 2 of its own nodes). The rows of ``B1`` lie
  in ``B2`` whole; a row of a node ``z`` at distance 2 is restricted to ``B2``, which is
  exact: a common neighbour of ``z`` and ``w in N[x]`` is a neighbour of ``w``, hence in
  ``B2``, and the hub test that picks how the kernel looks for it (a degree comparison)
  changes only the search, never the cost it finds. Every node of the local CSR has its row,
  so the kernel reads no absent row.

For ``orc`` the local CSR numbers the ball's nodes in ascending global id (compact ids
increasing with the global ones), so every row keeps the single process's order and each
transport problem is the single process's, entry for entry: the values are the same bit for
bit. The triangle counts are integers, whatever the numbering.

Exchanged (point-to-point ``isend``/``irecv``, gloo having no ``all_to_all``; one
``all_gather`` of ``world`` counts per request): :func:`fetch_rows` sends each owner the ids
it wants (``|H|`` int64, then for ``orc`` the ``|B2 \\ B1|`` ids at distance 2), the owner
returns the rows' lengths (the degrees: all that ``forman`` needs) and then their entries
(``sum_{z in H} d_z`` int64; for ``orc`` also ``sum_{z in B2 \\ B1} d_z``: whole rows,
restricted to ``B2`` on arrival; for ``afrc`` and ``orc_bounds`` the entries of ``H``'s rows
come in rounds of about ``round_entries``, each owner sending the rows of each round both
ends derive from the rows' lengths). For ``orc`` an edge between two ranks' nodes is solved
once, by the owner of its lower end where the ends' ids sum to an even number and of its
upper end otherwise (so boundary edges are shared about evenly), which sends the other end's
owner its curvature (one float64 per such edge, in an order both sides derive: no counts
are exchanged). ``forman``, ``afrc`` and ``orc_bounds`` compute a boundary edge on both
ranks (a few flops, cheaper than a message).

Memory: a rank holds its rows and the fetched rows: for ``afrc`` / ``orc_bounds`` one round
of ``H``'s rows (about as many entries as its own rows hold, by default), and the formulas
run over blocks of entries (:data:`FORMULA_BLOCK`), so the memory divides with the ranks; for
``orc`` those of ``B2``, which on a small-world graph (social, web, citation graphs:
diameter ~ log n, hubs) can be most of the graph on every rank, as a hub at distance 2
brings its whole neighbourhood. ``orc`` suits graphs whose 2-hop balls stay small (meshes,
road networks), best with rows in a bandwidth-reducing order
(:func:`~.partition.bandwidth_order`). ``info`` reports the ball's size.

The transport budget of ``orc`` (:func:`~graphpe.ops.curvature.check_transport_budget`) is
checked on the global count once the halo's degrees are in, before any row's entries are
fetched or anything is solved: each undirected edge is counted once, by the owner of its
lower end, the counts all-reduced (exact int64), and every rank raises the single process's
:class:`~graphpe.ops.curvature.TransportBudgetError`, message included.

The curvatures are those of the graph of the rows' pattern (:class:`~.partition.LocalRows`,
self loops apart and ignored, weights ignored), as the single process's of the same graph.
(Rows built from a weighted graph have lost its edges of weight 0, which
:func:`~graphpe.ops.host.simple_csr` drops; the single process's LCP, ignoring weights, keeps
them.) Everything here is collective: every rank of the group calls it, in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

from graphpe.ops.checks import check_positive_int
from graphpe.ops.curvature.compiled import (
    ORC_CELLS_PER_SECOND,
    edge_triangles_host,
    node_profile_host,
    solve_edges,
    transport_cells,
)
from graphpe.ops.curvature.tensor import (
    CURVATURES,
    DEFAULT_MAX_TRANSPORT_CELLS,
    PROFILE_STATS,
    TransportCost,
    check_alpha,
    check_budget,
    check_profile_stats,
    check_transport_budget,
    degree_triangle_bounds,
    forman_from_counts,
)
from graphpe.ops.distributed.partition import (
    LocalRows,
    RowPartition,
    exchange_blocks,
    extended_columns,
    extended_ids,
    incoming_counts,
)
from graphpe.ops.host import HostCSR

# the fewest halo-row entries a rank receives in one round by default (afrc, orc_bounds)
MIN_ROUND_ENTRIES = 1 << 16
# the entries whose curvature is computed at once from degrees and triangles
FORMULA_BLOCK = 1 << 18


@dataclass
class _Traffic:
    """What this rank sent point-to-point: values and bytes."""

    values: int = 0
    bytes: int = 0


def _swap(send: list[Tensor], recv: list[Tensor], part: RowPartition,
          group: dist.ProcessGroup | None, traffic: _Traffic) -> list[Tensor]:
    """:func:`~.partition.exchange_blocks`, its traffic counted; returns ``recv``."""
    values, nbytes = exchange_blocks(send, recv, part.rank, group)
    traffic.values += values
    traffic.bytes += nbytes
    return recv


def _gather_rows(indptr: np.ndarray, indices: np.ndarray,
                 rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lengths of the CSR rows ``rows`` and their entries, concatenated in that order."""
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    total = int(lengths.sum())
    shift = starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return lengths, indices[np.repeat(shift, lengths) + np.arange(total, dtype=np.int64)]


@dataclass
class _RowRequest:
    """One request of rows (:func:`_ask`): ``nodes`` the global ids wanted (ascending, none
    this rank's), ``offsets[p] .. offsets[p + 1]`` those rank ``p`` owns; ``asked[p]`` this
    rank's rows (less ``lo``) that rank ``p`` wants; ``lengths`` the wanted rows' lengths."""

    nodes: np.ndarray
    offsets: np.ndarray
    asked: list[np.ndarray]
    lengths: np.ndarray


def _ask(rows: LocalRows, nodes: np.ndarray, group: dist.ProcessGroup | None,
         traffic: _Traffic) -> _RowRequest:
    """Send each owner the ids of ``nodes`` it owns and receive the rows' lengths
    (collective). Also answers the other ranks' requests with this rank's lengths."""
    part = rows.partition
    nodes = np.ascontiguousarray(nodes, dtype=np.int64)
    if nodes.size and (np.any(np.diff(nodes) <= 0) or nodes[0] < 0
                       or nodes[-1] >= part.num_nodes):
        raise ValueError("the nodes to fetch must be distinct node ids, ascending")
    owner = part.owner(nodes)
    if np.any(owner == part.rank):
        raise ValueError("a rank cannot fetch its own rows")
    counts = np.bincount(owner, minlength=part.world).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    incoming = incoming_counts(counts, part.rank, group)
    asked = _swap([torch.from_numpy(nodes[offsets[p] : offsets[p + 1]])
                   for p in range(part.world)],
                  [torch.empty(int(incoming[p]), dtype=torch.int64)
                   for p in range(part.world)], part, group, traffic)
    asked = [a.numpy() - part.lo for a in asked]
    own_lengths = np.diff(rows.indptr).astype(np.int64)
    lengths = _swap([torch.from_numpy(own_lengths[a]) for a in asked],
                    [torch.empty(int(counts[p]), dtype=torch.int64)
                     for p in range(part.world)], part, group, traffic)
    return _RowRequest(nodes, offsets, asked,
                       torch.cat(lengths).numpy() if lengths else np.zeros(0, np.int64))


def _deliver(rows: LocalRows, request: _RowRequest, group: dist.ProcessGroup | None,
             traffic: _Traffic) -> tuple[np.ndarray, np.ndarray]:
    """The entries of the rows of ``request`` (collective: every rank sends the rows it was
    asked for): ``(indptr, indices)`` of a CSR of ``request.nodes``, global column ids."""
    part = rows.partition
    indptr = np.asarray(rows.indptr, dtype=np.int64)
    indices = np.asarray(rows.indices, dtype=np.int64)
    send = [torch.from_numpy(_gather_rows(indptr, indices, a)[1]) for a in request.asked]
    ends = np.concatenate([[0], np.cumsum(request.lengths)]).astype(np.int64)
    off = request.offsets
    recv = [torch.empty(int(ends[off[p + 1]] - ends[off[p]]), dtype=torch.int64)
            for p in range(part.world)]
    got = _swap(send, recv, part, group, traffic)
    return ends, (torch.cat(got).numpy() if got else np.zeros(0, np.int64))


def fetch_rows(rows: LocalRows, nodes: np.ndarray, group: dist.ProcessGroup | None = None
               ) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """The rows of the global nodes ``nodes`` (ascending, none of them this rank's) from
    their owners (collective: every rank calls it with its own ``nodes``, and serves the
    others'). Three point-to-point rounds after one ``all_gather`` of counts: the ids to
    each owner, the rows' lengths back, then their entries.

    Returns ``(indptr, indices, traffic)``: a CSR of the rows in the order of ``nodes``,
    global column ids ascending in each row, and ``{"values_sent", "bytes_sent"}`` of this
    rank (ids, lengths and the entries of the rows it served)."""
    traffic = _Traffic()
    indptr, indices = _deliver(rows, _ask(rows, nodes, group, traffic), group, traffic)
    return indptr, indices, {"values_sent": traffic.values, "bytes_sent": traffic.bytes}


def _ball_csr(blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CSR on compact ids of the rows of ``blocks`` (each ``(global ids, indptr,
    indices)``, the ids of all blocks distinct), each row restricted to the blocks' nodes:
    ``(ball, indptr, indices)``, ``ball`` the global id of each compact id, ascending, so
    that each row keeps its order."""
    nodes = np.concatenate([b[0] for b in blocks]).astype(np.int64)
    lengths = np.concatenate([np.diff(b[1]) for b in blocks]).astype(np.int64)
    flat = np.concatenate([b[2] for b in blocks]).astype(np.int64)
    order = np.argsort(nodes, kind="stable")
    ball = nodes[order]
    lengths, flat = _gather_rows(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                                 flat, order)
    pos = np.searchsorted(ball, flat)
    inside = pos < ball.size
    inside[inside] = ball[pos[inside]] == flat[inside]
    row = np.repeat(np.arange(ball.size, dtype=np.int64), lengths)
    kept = np.bincount(row[inside], minlength=ball.size).astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
    return ball, indptr, np.ascontiguousarray(pos[inside], dtype=np.int64)


def _all_reduce_int(values: list[int], group: dist.ProcessGroup | None,
                    op: dist.ReduceOp = dist.ReduceOp.SUM) -> list[int]:
    """Exact int64 all-reduce (the budget's counts can pass float64's integers)."""
    t = torch.tensor(values, dtype=torch.int64)
    dist.all_reduce(t, op=op, group=group)
    return [int(v) for v in t]


def distributed_lcp(
    rows: LocalRows,
    curvature: str = "orc",
    alpha: float = 0.0,
    stats: tuple[str, ...] = PROFILE_STATS,
    max_transport_cells: int | None = DEFAULT_MAX_TRANSPORT_CELLS,
    round_entries: int | None = None,
    group: dist.ProcessGroup | None = None,
) -> tuple[Tensor, dict[str, int]]:
    """This rank's rows of the Local Curvature Profile of the partitioned graph (collective).

    ``LCP(v) = [stats of {kappa(v, u) : u ~ v}]`` (``min, max, mean, std`` (ddof 0),
    ``median``; zeros for a node without edges), ``kappa`` the curvature ``curvature`` of the
    unweighted simple graph of the rows: ``orc`` exact Ollivier-Ricci ``1 - W1(m_x, m_y)``
    with laziness ``alpha``; ``orc_bounds`` the midpoint of its Jost-Liu lower and triangle
    upper bounds; ``forman`` ``4 - d_x - d_y``; ``afrc`` ``4 - d_x - d_y + 3 t_xy``. What is
    fetched for each, and the memory, in the module's docstring.

    Args:
        rows: this rank's rows of the graph (:func:`~.partition.local_rows`).
        curvature: one of ``orc``, ``orc_bounds``, ``forman``, ``afrc``.
        alpha: laziness of ORC's walks, in ``[0, 1)`` (unused by ``forman`` and ``afrc``).
        stats: the statistics, in the order of the output's columns.
        max_transport_cells: the budget of ``orc`` in transport cells over the whole graph
            (:func:`~graphpe.ops.curvature.orc_transport_cost`); past it every rank raises
            :class:`~graphpe.ops.curvature.TransportBudgetError`, the single process's
            message, after the halo's degrees are exchanged and before any row's entries
            are fetched or anything is solved. None: no limit.
        round_entries: for ``afrc`` and ``orc_bounds``, the entries of halo rows a rank
            receives in one round (plus at most one row's from each owner), the same on
            every rank; None: as many as a rank's own rows hold on average, at least
            :data:`MIN_ROUND_ENTRIES`.
        group: the process group (None: the default one).

    Returns ``(profile, info)``: ``profile`` float64 ``[rows.rows, len(stats)]``, the rows
    ``lo .. hi - 1`` of :func:`~graphpe.ops.curvature.local_curvature_profile` of the same
    graph (bit for bit); ``info``: ``rows_fetched`` (rows received from other ranks),
    ``ball_nodes`` / ``ball_entries`` (the local CSR's nodes and its largest entry count),
    ``fetch_rounds`` (the rounds the halo rows came in: ``afrc``, ``orc_bounds``), ``values_sent`` /
    ``bytes_sent`` (point-to-point, this rank), ``edges_solved`` / ``cells_solved`` (the
    transport problems this rank solved, and their cells), ``transport_edges`` /
    ``transport_cells`` / ``transport_largest`` (the whole graph's budget count; 0 but for
    ``orc``).
    """
    if curvature not in CURVATURES:
        raise ValueError(f"curvature must be one of {CURVATURES}, got {curvature!r}")
    check_alpha(alpha)
    stats = tuple(stats)
    check_profile_stats(stats)
    max_transport_cells = check_budget("max_transport_cells", max_transport_cells)
    if round_entries is not None:
        check_positive_int("round_entries", round_entries)
    part = rows.partition
    lo, hi = part.lo, part.hi
    traffic = _Traffic()
    indptr = np.ascontiguousarray(rows.indptr, dtype=np.int64)
    cols = np.ascontiguousarray(rows.indices, dtype=np.int64)
    deg_own = np.diff(indptr)
    own_col = (cols >= lo) & (cols < hi)
    halo = np.unique(cols[~own_col])
    # the halo's degrees: the lengths of its rows, which the owners send first
    request = _ask(rows, halo, group, traffic)
    deg_col = np.empty(cols.size, dtype=np.int64)
    deg_col[own_col] = deg_own[cols[own_col] - lo]
    deg_col[~own_col] = request.lengths[np.searchsorted(halo, cols[~own_col])]
    info = {"rows_fetched": 0, "ball_nodes": part.rows, "ball_entries": int(cols.size),
            "fetch_rounds": 0, "edges_solved": 0, "cells_solved": 0, "transport_edges": 0,
            "transport_cells": 0, "transport_largest": 0}
    own_block = (np.arange(lo, hi, dtype=np.int64), indptr, cols)
    if curvature == "orc":
        row = np.repeat(np.arange(lo, hi, dtype=np.int64), deg_own)
        value = _orc(rows, row, cols, own_col, halo, deg_col, request, alpha,
                     max_transport_cells, own_block, group, traffic, info)
    else:
        del own_col
        t = None
        if curvature != "forman":
            # both ends of a round derive it from the round's size: the same on every rank
            if round_entries is None:  # the ranks' mean
                total = _all_reduce_int([int(cols.size)], group)[0]
                round_entries = max(total // part.world, MIN_ROUND_ENTRIES)
            else:
                high, low = _all_reduce_int([round_entries, -round_entries], group,
                                            dist.ReduceOp.MAX)
                if high != -low:
                    raise ValueError("round_entries must be the same on every rank, got "
                                     f"{-low} to {high}")
            t = _triangles(rows, request, halo, round_entries, group, traffic, info)
        # the single process's formulas on the same float64 degrees and triangle counts,
        # elementwise, so a block of entries at a time bounds their temporaries
        deg_row = np.repeat(deg_own, deg_own)
        value = np.empty(cols.size)
        for a in range(0, cols.size, FORMULA_BLOCK):
            b = min(a + FORMULA_BLOCK, cols.size)
            dx = torch.from_numpy(deg_row[a:b].astype(np.float64))
            dy = torch.from_numpy(deg_col[a:b].astype(np.float64))
            tb = None if t is None else torch.from_numpy(t[a:b])
            if curvature == "orc_bounds":
                lower, upper = degree_triangle_bounds(dx, dy, tb, alpha)
                value[a:b] = ((lower + upper) / 2).numpy()
            else:
                value[a:b] = forman_from_counts(dx, dy, tb).numpy()
        del deg_row, deg_col, t
    profile = node_profile_host(HostCSR(indptr, cols, rows.weight, rows.loops),
                                np.ascontiguousarray(value, dtype=np.float64), stats)
    info.update(values_sent=traffic.values, bytes_sent=traffic.bytes)
    return torch.from_numpy(profile), info


def _round_of(lengths: np.ndarray, per_peer: int) -> np.ndarray:
    """The round in which each of the rows one rank asks of one owner travels, in the order
    asked: a row goes in round ``c`` where the entries of the rows before it number
    ``c b .. (c + 1) b - 1`` (``b = per_peer``), so a round carries at most ``b`` entries
    plus one row's. Both ends derive it from the rows' lengths."""
    return (np.cumsum(lengths) - lengths) // per_peer


def _triangles(rows: LocalRows, request: _RowRequest, halo: np.ndarray, round_entries: int,
               group: dist.ProcessGroup | None, traffic: _Traffic, info: dict) -> np.ndarray:
    """The common neighbours ``t_xy`` of every own entry ``(x, y)``, the halo's rows
    received in rounds (collective).

    On the 1-hop ball ``B1`` in extended ids (:func:`~.partition.extended_columns`: the own
    rows first, then the halo), a CSR holds the own rows and, in round ``c``, the halo rows
    of that round restricted to ``B1``;
    :func:`~graphpe.ops.curvature.compiled.edge_triangles_host` counts the own rows'
    entries first (those to own nodes are whole: the halo rows are empty then), then each
    round's halo rows, whose entries ``(y, x)`` to own nodes give ``t_xy = |N(y) & N(x)|``
    (``N(x)`` lies in ``B1``). A rank holds its rows and one round's."""
    part = rows.partition
    own, n = part.rows, part.num_nodes
    indptr = np.ascontiguousarray(rows.indptr, dtype=np.int64)
    cols = np.ascontiguousarray(rows.indices, dtype=np.int64)
    nnz = cols.size
    off = request.offsets
    per_peer = max(1, round_entries // max(1, part.world - 1))
    mine = [_round_of(request.lengths[off[p] : off[p + 1]], per_peer)
            for p in range(part.world)]
    degree = np.diff(indptr)
    served = [_round_of(degree[a], per_peer) for a in request.asked]
    rounds = max([int(r[-1]) + 1 for r in mine + served if r.size], default=0)
    rounds = _all_reduce_int([rounds], group, dist.ReduceOp.MAX)[0]
    in_round = np.concatenate(mine) if mine else np.zeros(0, np.int64)  # of each halo row
    largest = int(np.bincount(in_round, weights=request.lengths, minlength=1).max()) \
        if in_round.size else 0
    # the CSR's columns: the own rows' (whole, written once), then a round's rows'
    columns = np.empty(nnz + largest, dtype=np.int64)
    columns[:nnz] = extended_columns(rows, halo)
    b_indptr = np.full(own + halo.size + 1, nnz, dtype=np.int64)
    b_indptr[: own + 1] = indptr
    t = edge_triangles_host(b_indptr, columns[:nnz], np.arange(own, dtype=np.int64))
    # an own entry (x, y) is key (x - lo) n + y, ascending in the rows' order
    keys = np.repeat(np.arange(own, dtype=np.int64) * n, degree) + cols
    counts = np.zeros(halo.size, dtype=np.int64)  # a round's rows' entries in B1
    held = nnz
    for c in range(rounds):
        send = [torch.from_numpy(_gather_rows(indptr, cols, a[r == c])[1])
                for a, r in zip(request.asked, served, strict=True)]
        now = np.flatnonzero(in_round == c)  # this round's halo rows (ascending)
        lengths = request.lengths[now]
        entries = np.empty(int(lengths.sum()), dtype=np.int64)
        ends = np.concatenate([[0], np.cumsum(np.bincount(
            np.searchsorted(off, now, side="right") - 1, weights=lengths,
            minlength=part.world).astype(np.int64))])
        _swap(send, [torch.from_numpy(entries[ends[p] : ends[p + 1]])
                     for p in range(part.world)], part, group, traffic)
        del send
        # the entries in B1, in extended ids; each row's count of them
        ext, inside = extended_ids(entries, part, halo)
        del entries
        kept = np.diff(np.concatenate([[0], np.cumsum(inside)])[
            np.concatenate([[0], np.cumsum(lengths)])])
        k = int(kept.sum())
        columns[nnz : nnz + k] = ext[inside]
        del ext, inside
        counts[now] = kept
        b_indptr[own + 1 :] = nnz + np.cumsum(counts)
        counts[now] = 0
        held = max(held, nnz + k)
        tri = edge_triangles_host(b_indptr, columns[: nnz + k], own + now)
        # a halo row's entries (y, x) to own nodes: t_xy
        halo_columns = columns[nnz : nnz + k]
        to_own = halo_columns < own
        per_row = np.diff(np.concatenate([[0], np.cumsum(to_own)])[
            np.concatenate([[0], np.cumsum(kept)])])
        want = halo_columns[to_own] * n + np.repeat(halo[now], per_row)
        where = np.searchsorted(keys, want)
        if np.any(keys[np.minimum(where, keys.size - 1)] != want):  # pragma: no cover
            raise AssertionError("a halo row names an own node whose row lacks it: the rows "
                                 "are not symmetric")
        t[where] = tri[nnz:][to_own]
        del tri, to_own, want, where
    info.update(rows_fetched=int(halo.size), ball_nodes=int(own + halo.size),
                ball_entries=held, fetch_rounds=rounds)
    return t


def _orc(rows: LocalRows, row: np.ndarray, cols: np.ndarray, own_col: np.ndarray,
         halo: np.ndarray, deg_col: np.ndarray, request: _RowRequest, alpha: float,
         max_transport_cells: int | None, own_block: tuple, group: dist.ProcessGroup | None,
         traffic: _Traffic, info: dict) -> np.ndarray:
    """Exact ORC on the own rows' entries: the budget, the 2-hop ball, the edges this rank
    solves, and the boundary curvatures exchanged with the other ends' owners."""
    part = rows.partition
    lo, hi, n = part.lo, part.hi, part.num_nodes
    deg_own = np.diff(own_block[1])
    # the budget: each undirected edge counted once, at its lower end's owner, by the single
    # process's cell formula (transport_cells on the degrees of [own rows, halo])
    upper = row < cols
    ext_deg = np.concatenate([deg_own, request.lengths])
    ext_indptr = np.concatenate([[0], np.cumsum(ext_deg)]).astype(np.int64)
    ext_col = np.where(own_col, cols - lo, part.rows + np.searchsorted(halo, cols))
    cells = transport_cells(ext_indptr, row[upper] - lo, ext_col[upper], alpha)
    edges, total = _all_reduce_int([int(upper.sum()), int(cells.sum())], group)
    (largest,) = _all_reduce_int([int(cells.max()) if cells.size else 0], group,
                                 dist.ReduceOp.MAX)
    cost = TransportCost(edges, total, largest, total / ORC_CELLS_PER_SECOND)
    info.update(transport_edges=edges, transport_cells=total, transport_largest=largest)
    check_transport_budget(cost, max_transport_cells)  # the same numbers on every rank
    # the 2-hop ball: the halo's rows, then the rows of their neighbours at distance 2
    h_indptr, h_indices = _deliver(rows, request, group, traffic)
    near = np.unique(h_indices)
    far = near[((near < lo) | (near >= hi)) & ~_member(near, halo)]
    f_indptr, f_indices = _deliver(rows, _ask(rows, far, group, traffic), group, traffic)
    ball, b_indptr, b_indices = _ball_csr([own_block, (halo, h_indptr, h_indices),
                                           (far, f_indptr, f_indices)])
    info.update(rows_fetched=int(halo.size + far.size), ball_nodes=int(ball.size),
                ball_entries=int(b_indices.size))
    # who solves: an edge within the rank's rows here (once, as its upper entry); an edge
    # between ranks at its lower end's owner where the ends' ids sum to an even number, at
    # its upper end's otherwise
    low, high = np.minimum(row, cols), np.maximum(row, cols)
    peer = part.owner(cols)
    solver = np.where((low + high) % 2 == 0, part.owner(low), part.owner(high))
    solve = np.where(own_col, upper, solver == part.rank)
    # solved as the single process solves it: (lower end, upper end), compact ids ascending
    # as the global ones, so each problem is the single process's, entry for entry
    src = np.searchsorted(ball, low[solve])
    dst = np.searchsorted(ball, high[solve])
    kappa = solve_edges(b_indptr, b_indices, src, dst, alpha)
    info.update(edges_solved=int(src.size),
                cells_solved=int(transport_cells(b_indptr, src, dst, alpha).sum()))
    # the boundary curvatures: each side lists the edges of a peer in the order of their
    # key (low n + high), so the values need no ids and the counts are known on both sides
    key = low * n + high
    sent, wanted = solve & ~own_col, ~solve & ~own_col
    send, recv, slots = [], [], []
    solved_key = key[solve]
    for p in range(part.world):
        mine = np.flatnonzero(sent[solve] & (peer[solve] == p))
        mine = mine[np.argsort(solved_key[mine], kind="stable")]
        send.append(torch.from_numpy(np.ascontiguousarray(kappa[mine])))
        theirs = np.flatnonzero(wanted & (peer == p))
        theirs = theirs[np.argsort(key[theirs], kind="stable")]
        slots.append(theirs)
        recv.append(torch.empty(theirs.size, dtype=torch.float64))
    _swap(send, recv, part, group, traffic)
    # every own entry's value: an own edge's (either direction) by its key among the solved
    value = np.empty(cols.size)
    order = np.argsort(solved_key, kind="stable")
    inner = np.flatnonzero(own_col)
    value[inner] = kappa[order[np.searchsorted(solved_key[order], key[inner])]]
    outer = np.flatnonzero(sent)
    value[outer] = kappa[np.searchsorted(np.flatnonzero(solve), outer)]
    for p in range(part.world):
        if slots[p].size:
            value[slots[p]] = recv[p].numpy()
    return value


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is in the ascending array ``sorted_set``."""
    pos = np.searchsorted(sorted_set, values)
    out = pos < sorted_set.size
    out[out] = sorted_set[pos[out]] == values[out]
    return out
