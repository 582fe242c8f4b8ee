"""RWSE's random-walk estimate (:mod:`graphpe.ops.walk.sampled`, the ``collision``
estimator) of one graph partitioned by rows over a ``torch.distributed`` group, with walks
crossing the partition.

A walk's step from node ``x`` reads ``x``'s row only, and its random draw is counter-based:
step ``s`` of walk ``k`` from source ``i`` takes SplitMix64 draw ``k S + s`` of the stream
keyed by the seed and ``i`` (:func:`~graphpe.ops.walk.sampled._walk`). So the rank owning
``x`` takes the step, whichever rank the walk started on, and draws exactly the number the
single process draws: the walks, hence the estimate, are the single process's.

The sources are taken in rounds (every rank the same number, a fixed budget of walks each).
In a round every walk of the round's sources advances a step at a time: each rank moves the
walks standing on its rows, then sends each walk to the owner of its new node (two int64 per
walk: its number and node, point-to-point). Each move is recorded (three int64: the walk, the
node, ``1 / d(node)``) and sent at once to the source's owner, which writes it into the
source's ``W x (h + 1)`` positions; at the end of the round the owners compute each source's
estimate and jackknife standard error by the single process's formulas (``source_collisions``,
compiled).
Memory: the rows, ``O(round)`` walks and records; no rank holds the whole graph.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from graphpe.ops import aot
from graphpe.ops.checks import check_choice, check_positive_int, check_seed
from graphpe.ops.distributed.partition import (
    HaloExchange,
    LocalRows,
    RowPartition,
    all_max,
    all_min,
    exchange_blocks,
    extended_columns,
    halo_values,
    incoming_counts,
)
from graphpe.ops.host import csr_position
from graphpe.ops.memory import release_freed_host_memory

# the single process's kernels, reused: the draw (SplitMix64's output function), the weighted
# choice, the walk tables and the collision estimator of one source
from graphpe.ops.walk.sampled import (
    ESTIMATORS,
    MIN_WALKS,
    source_collisions,
    splitmix64,
    walk_tables,
    weighted_entry,
)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_TO_UNIT = 1.0 / 2.0**53
# walk positions (walks times steps) of one round, on every rank: 16 bytes a position for the
# positions kept, and a step's walks and records in flight
ROUND_POSITIONS = 1 << 18


@aot.njit(cache=True, nogil=True)
def _advance(walkers, walks, s, steps, base, lo, indptr, indices, cum, loops, deg,
             inv_deg_ext, halo, unit, nxt, inv):  # pragma: no cover - compiled
    """One step of the walks ``walkers`` (rows ``[source * walks + walk, node]``, every node
    this rank's): ``nxt[j]`` the node walk ``j`` moves to, ``inv[j]`` its ``1 / d``; the draw
    and the choice of :func:`~graphpe.ops.walk.sampled._walk`."""
    own = indptr.shape[0] - 1
    for j in range(walkers.shape[0]):
        src, k, x = walkers[j, 0] // walks, walkers[j, 0] % walks, walkers[j, 1]
        r0 = x - lo
        stream = splitmix64(base ^ np.uint64(src))
        draw = splitmix64(stream + np.uint64(k * steps + s) * _GOLDEN)
        u = np.float64(draw >> np.uint64(11)) * _TO_UNIT
        start, length = indptr[r0], indptr[r0 + 1] - indptr[r0]
        e = -1
        if unit:
            choices = length + (1 if loops[r0] > 0.0 else 0)
            r = min(np.int64(u * choices), choices - 1)
            if r < length:
                e = start + r
        else:
            target = u * deg[r0]
            if target >= loops[r0]:
                e = weighted_entry(cum, start, length, target - loops[r0])
        y = indices[e] if e >= 0 else x
        nxt[j] = y
        if y >= lo and y < lo + own:
            inv[j] = inv_deg_ext[y - lo]
        else:  # a halo node: its place in the sorted halo
            inv[j] = inv_deg_ext[own + np.searchsorted(halo, y)]


@aot.njit(cache=True, nogil=True)
def _estimate(sources, pos, inv_pos, lo, indptr, indices, weight, ext_cols, loops, deg,
              inv_deg_ext, walk_length, estimate, stderr):  # pragma: no cover - compiled
    """The collision estimates of ``sources`` (global ids, this rank's) from their walks'
    positions ``pos [S, W, h + 1]`` and ``1 / d`` there (``inv_pos``), into the rows of
    ``estimate`` and ``stderr``: ``_sampled_landing``'s formulas (``t = 1, 2`` exactly,
    then :func:`~graphpe.ops.walk.sampled.source_collisions`), the walks' nodes renamed in
    sorted order. ``inv_deg_ext``: ``1 / d`` of the rank's rows, then of its halo;
    ``ext_cols``: each stored entry's column there."""
    walks, width = pos.shape[1], pos.shape[2]
    local = np.empty((walks, width), dtype=np.int64)
    back = np.empty(walks * width)
    counts = np.zeros((width, walks * width))
    spread = np.empty(walks)
    for q in range(sources.shape[0]):
        i = sources[q]
        r = i - lo
        start, stop = indptr[r], indptr[r + 1]
        own_back = loops[r] * inv_deg_ext[r]
        estimate[r, 0] = own_back
        if walk_length > 1:
            acc = own_back * own_back
            for p in range(start, stop):
                acc += weight[p] * inv_deg_ext[r] * (weight[p] * inv_deg_ext[ext_cols[p]])
            estimate[r, 1] = acc
        if walk_length <= 2:
            continue
        flat = pos[q].copy().reshape(walks * width)
        order = np.argsort(flat, kind="mergesort")
        used = -1
        previous = -1
        for j in range(flat.shape[0]):
            node = flat[order[j]]
            k, s = order[j] // width, order[j] % width
            if j == 0 or node != previous:
                used += 1
                previous = node
                # P(node, i) = w(i, node) / d(node): node's place in row i
                value = 0.0
                if node == i:
                    value = own_back
                else:
                    a = csr_position(indptr, indices, r, node)
                    if a < stop and indices[a] == node:
                        value = weight[a] * inv_pos[q, k, s]
                back[used] = value
            local[k, s] = used
        source_collisions(local, inv_pos[q], back, deg[r], walk_length, counts, spread,
                          estimate[r], stderr[r])


def _route(block: torch.Tensor, dest: np.ndarray, partition: RowPartition,
           group: dist.ProcessGroup | None, sent: list[int]) -> torch.Tensor:
    """Rows of ``block`` (int64 ``[m, c]``) sent to the ranks ``dest``; the rows this rank
    receives (its own kept), in rank order. ``sent[0]`` grows by the values sent."""
    world, rank = partition.world, partition.rank
    order = np.argsort(dest, kind="stable")
    block = block[torch.from_numpy(order)]
    counts = np.bincount(dest, minlength=world).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    incoming = incoming_counts(counts, rank, group)
    parts = [block.new_empty((int(incoming[p]), block.size(1))) for p in range(world)]
    parts[rank] = block[offsets[rank] : offsets[rank + 1]]
    sent[0] += exchange_blocks([block[offsets[p] : offsets[p + 1]] for p in range(world)],
                               parts, rank, group)[0]
    return torch.cat(parts)


def distributed_sampled_landing_probs(
    rows: LocalRows, exchange: HaloExchange, walk_length: int, walks: int, seed: int = 0, *,
    self_loops: bool = True, estimator: str = "collision",
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """This rank's rows ``[rows, walk_length]`` of
    :func:`~graphpe.ops.walk.sampled.sampled_landing_probs` (estimate, standard error) of the
    partitioned graph, one graph (collective), and the walks' traffic: ``{"walk_values_sent":
    int64 values this rank sent (walks handed on, records to the sources' owners),
    "rounds": rounds}``. ``estimator``: ``collision`` only."""
    walk_length = check_positive_int("walk_length", walk_length)
    walks = check_positive_int("walks", walks)
    if walks < MIN_WALKS:
        raise ValueError(f"walks must be at least {MIN_WALKS}, got {walks!r}")
    seed = check_seed(seed)
    if seed is None:
        raise ValueError("seed must be an int, got None")
    check_choice("estimator", estimator, ESTIMATORS)
    if estimator != "collision":
        raise ValueError(f"estimator={estimator!r} has no distributed path (collision only)")
    part, group = rows.partition, exchange.group
    lo = part.lo
    loops = rows.loops if self_loops else np.zeros_like(rows.loops)
    unit_here = bool(np.all(rows.weight == 1.0) and np.all((loops == 0.0) | (loops == 1.0)))
    unit = all_min(float(unit_here), group) == 1.0
    deg, cum = walk_tables(rows.indptr, rows.weight, loops, unit,
                            np.empty((rows.rows, 4), dtype=np.int64))
    inv_deg = np.zeros(rows.rows)
    np.divide(1.0, deg, out=inv_deg, where=deg > 0.0)
    inv_ext = halo_values(exchange, inv_deg)
    ext_cols = extended_columns(rows, exchange.halo)
    steps = (walk_length + 1) // 2
    base = np.uint64(splitmix64(np.uint64(seed % 2**63)))
    estimate = np.zeros((rows.rows, walk_length))
    stderr = np.zeros((rows.rows, walk_length))
    active = np.flatnonzero(deg > 0.0) + lo
    width = steps + 1 if walk_length > 2 else 1
    per_round = max(1, ROUND_POSITIONS // (walks * width))
    rounds = int(all_max(-(-active.size // per_round), group)) if walk_length > 2 else 1
    sent = [0]
    for rnd in range(rounds):
        src = active[rnd * per_round : (rnd + 1) * per_round]
        pos = np.empty((src.size, walks, width), dtype=np.int64)
        inv_pos = np.empty((src.size, walks, width))
        pos[:, :, 0] = src[:, None]
        inv_pos[:, :, 0] = inv_deg[src - lo][:, None]
        if walk_length > 2:
            _walk_round(src, walks, steps, base, rows, cum, loops, deg, inv_ext, exchange,
                        unit, pos, inv_pos, sent)
        _estimate(src, pos, inv_pos, lo, rows.indptr, rows.indices, rows.weight, ext_cols,
                  loops, deg, inv_ext, walk_length, estimate, stderr)
        # the round's blocks (a few hundred KB each) stay in glibc's heap when freed, and the
        # rounds' leftovers grew a rank's resident size as much as its estimates did
        release_freed_host_memory()
    return estimate, stderr, {"walk_values_sent": sent[0], "rounds": rounds}


def _walk_round(src: np.ndarray, walks: int, steps: int, base: np.uint64, rows: LocalRows,
                cum: np.ndarray, loops: np.ndarray, deg: np.ndarray, inv_ext: np.ndarray,
                exchange: HaloExchange, unit: bool, pos: np.ndarray, inv_pos: np.ndarray,
                sent: list[int]) -> None:
    """The walks of one round (``walks`` from each of this rank's sources ``src``, every
    rank in step), their positions written into ``pos`` / ``inv_pos`` ``[src, walk, step]``."""
    part, group = rows.partition, exchange.group
    # a walk is [source * walks + walk, node]; a record of a step [walk, node, the bits of
    # 1 / d(node)], sent to the source's owner as soon as the step is taken
    walkers = np.empty((src.size * walks, 2), dtype=np.int64)
    walkers[:, 0] = (src[:, None] * walks + np.arange(walks)).ravel()
    walkers[:, 1] = np.repeat(src, walks)
    for s in range(1, steps + 1):
        nxt = np.empty(walkers.shape[0], dtype=np.int64)
        inv = np.empty(walkers.shape[0])
        _advance(walkers, walks, s, steps, base, part.lo, rows.indptr, rows.indices, cum,
                 loops, deg, inv_ext, exchange.halo, unit, nxt, inv)
        walkers[:, 1] = nxt
        rec = np.stack([walkers[:, 0], nxt, inv.view(np.int64)], axis=1)
        rec = _route(torch.from_numpy(rec), part.owner(walkers[:, 0] // walks), part, group,
                     sent).numpy()
        source, k = np.divmod(rec[:, 0], walks)
        q = np.searchsorted(src, source)
        pos[q, k, s] = rec[:, 1]
        inv_pos[q, k, s] = rec[:, 2].view(np.float64)
        del rec, source, k, q
        walkers = _route(torch.from_numpy(walkers), part.owner(nxt), part, group,
                         sent).numpy()


aot.bind(globals())  # (binds nothing until the module joins aot.AOT_MODULES)
