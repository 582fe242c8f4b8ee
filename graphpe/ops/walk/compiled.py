"""Compiled (numba) host kernels of the random-walk and path encodings: RWSE's landing
probabilities, RRWP (all pairs and local pairs), shortest-path distances and the edges along
shortest paths. The batched torch kernels they match are in :mod:`graphpe.ops.walk.tensor`
(RWSE) and :mod:`graphpe.ops.walk.pairs`; the shared host plumbing is :mod:`graphpe.ops.host`."""

from __future__ import annotations

import numpy as np
import torch

from graphpe.ops import aot
from graphpe.ops.host import (
    CACHE_LINE_BYTES,
    FASTMATH,
    HostCSR,
    aligned_empty,
    csr_degrees,
    csr_position,
    graph_chunks,
    prefetch,
    run_over_graphs,
    simple_csr_arrays,
)

# ----------------------------------------------------------------------------- RWSE


def landing_probs(csr: HostCSR, ptr: np.ndarray, walk_length: int, max_nodes: int,
                  out: np.ndarray, self_loops: bool = True) -> None:
    """``diag(P^t)``, ``t = 1..T``, for every graph of at most ``max_nodes`` nodes, written
    into the rows of ``out`` ``[N, T]`` (other graphs' rows are left as they are); with
    ``self_loops`` the walk may take the graph's self loops (``A_ii`` = their weight)."""
    loops = csr.loops if self_loops else np.zeros_like(csr.loops)
    run_over_graphs(lambda a, b: _landing_probs(csr.indptr, csr.indices, csr.weight, loops,
                                                ptr[a : b + 1], walk_length, max_nodes, out),
                    graph_chunks(ptr))


def graph_landing_probs(ei: np.ndarray, num_nodes: int, walk_length: int, out: np.ndarray,
                        self_loops: bool = True) -> bool:
    """:func:`landing_probs` of one unweighted graph given by its ``[2, E]`` int64 index array,
    in one compiled call (the index check, the simple graph and the walk): what a transform
    called per graph runs. Returns False, writing nothing, if an index is outside
    ``[0, num_nodes)``."""
    return _graph_landing_probs(ei, num_nodes, walk_length, out, self_loops)


@aot.njit(cache=True, nogil=True)
def _graph_landing_probs(ei, num_nodes, walk_length, out, self_loops):  # pragma: no cover
    for r in range(2):
        for e in range(ei.shape[1]):
            if ei[r, e] < 0 or ei[r, e] >= num_nodes:
                return False
    indptr, indices, weight, loops = simple_csr_arrays(ei[0], ei[1], np.empty(0), False, num_nodes)
    if not self_loops:
        loops[:] = 0.0
    ptr = np.array([0, num_nodes], dtype=np.int64)
    _landing_probs(indptr, indices, weight, loops, ptr, walk_length, num_nodes, out)
    return True


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _symmetric_walk(indptr, indices, weight, loops):  # pragma: no cover - compiled
    """The symmetric walk operator ``S = D^-1/2 (A + L) D^-1/2`` (``L`` the self loops,
    counted once in the degree ``D``) as the CSR's ``values`` and a ``diag``; a node without
    edges or loop has a zero row. ``S`` is similar to ``P = D^-1 (A + L)``
    (``P^t = D^-1/2 S^t D^1/2``), so ``diag(P^t) = diag(S^t)``."""
    deg, _ = csr_degrees(indptr, weight)
    n_all = indptr.shape[0] - 1
    dis = np.zeros(n_all)
    diag = np.zeros(n_all)  # S_ii from the self loops
    for i in range(n_all):
        if deg[i] + loops[i] > 0:
            dis[i] = 1.0 / np.sqrt(deg[i] + loops[i])
            diag[i] = loops[i] * dis[i] * dis[i]
    values = np.empty(indices.shape[0])
    for i in range(n_all):
        for p in range(indptr[i], indptr[i + 1]):
            values[p] = dis[i] * weight[p] * dis[indices[p]]
    return values, diag


def symmetric_walk(csr: HostCSR, self_loops: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(values, diag)`` of ``S = D^-1/2 (A + L) D^-1/2`` on ``csr``'s pattern (``L`` the
    self loops with ``self_loops``, else none): ``values[p]`` is the entry of CSR position
    ``p``, ``diag[i]`` is ``S_ii``. ``diag(S^t) = diag(P^t)`` for ``P = D^-1 (A + L)``."""
    loops = csr.loops if self_loops else np.zeros_like(csr.loops)
    return _symmetric_walk(csr.indptr, csr.indices, csr.weight, loops)


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _landing_probs(indptr, indices, weight, loops, ptr, walk_length, max_nodes,
                   out):  # pragma: no cover - compiled
    # diag(P^t) = diag(S^t) for the symmetric S = D^-1/2 A D^-1/2 (P^t = D^-1/2 S^t D^1/2).
    # X = S^t is kept dense (n x n) and advanced by one sparse product per step, nnz * n
    # multiply-adds, against n^3 for a dense product. For t > h = ceil(T / 2) the diagonal is
    # read off lower powers, (S^(a+b))_ii = <row_i(S^a), row_i(S^b)> (S is symmetric), so only
    # h - 1 products are needed. Each power is its own contiguous n x n array (no aliasing
    # between the product and its input, so the inner loops vectorize).
    values, diag = _symmetric_walk(indptr, indices, weight, loops)
    num_graphs = ptr.shape[0] - 1
    half = (walk_length + 1) // 2
    big = 0
    for g in range(num_graphs):  # compiled: looping over graphs here is the kernel's design
        size = ptr[g + 1] - ptr[g]
        if size <= max_nodes and size > big:
            big = size
    store = np.zeros(half * big * big)
    for g in range(num_graphs):  # compiled: each graph at its own size, no padding
        s = ptr[g]
        n = ptr[g + 1] - s
        if n == 0 or n > max_nodes:
            continue
        powers = store[: half * n * n].reshape((half, n, n))
        x = powers[0]
        x[:, :] = 0.0
        for i in range(n):
            x[i, i] = diag[s + i]
            for p in range(indptr[s + i], indptr[s + i + 1]):
                x[i, indices[p] - s] = values[p]
        for t in range(1, half):
            _sparse_times_dense(indptr, indices, values, diag, s, n, powers[t - 1], powers[t])
        for t in range(walk_length):
            if t < half:
                xt = powers[t]
                for i in range(n):
                    out[s + i, t] = xt[i, i]
            else:  # S^(t+1) = S^a S^b with a = half, b = t + 1 - half
                xa = powers[half - 1]
                xb = powers[t - half]
                for i in range(n):
                    acc = 0.0
                    for c in range(n):
                        acc += xa[i, c] * xb[i, c]
                    out[s + i, t] = acc


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _sparse_times_dense(indptr, indices, values, diag, s, n, x, y):  # pragma: no cover
    """``y = S x`` for the rows ``s..s+n-1`` of a CSR matrix (local columns) plus a diagonal
    ``diag``, ``x``, ``y`` contiguous ``[n, n]``."""
    for i in range(n):
        row = y[i]
        d = diag[s + i]
        own = x[i]
        for c in range(n):
            row[c] = d * own[c]
        for p in range(indptr[s + i], indptr[s + i + 1]):
            v = values[p]
            src = x[indices[p] - s]
            for c in range(n):
                row[c] += v * src[c]


def blocked_landing_probs(csr: HostCSR, values: np.ndarray, diag: np.ndarray,
                          walk_length: int, out: np.ndarray, width: int,
                          threads: int | None = None, *, folded: np.ndarray | None = None,
                          columns: np.ndarray | None = None,
                          out_rows: np.ndarray | None = None) -> None:
    r"""``diag(S^t)``, ``t = 1..T``, of one graph by blocks of ``width`` columns of the
    identity: the entries of the nodes ``columns`` (default all) written into the rows
    ``out_rows`` (default ``columns``) of ``out [*, T]``. ``S`` is given by ``values`` and
    ``diag`` (:func:`symmetric_walk`, float32 or float64: the blocks take their dtype; the dot
    products are summed in float64).

    Each block ``E`` is multiplied by ``S`` ``h = ceil(T / 2)`` times; with
    ``X_a = S^a E`` (``[n, width]``, row-major: a product reads ``width`` contiguous values
    per stored entry) and ``S`` symmetric, ``(S^(2a-1))_jj = <X_a e_j, X_(a-1) e_j>`` and
    ``(S^(2a))_jj = <X_a e_j, X_a e_j>``, so only the last two powers are kept, and the dot
    products are taken as each row of ``X_a`` is made.

    ``folded`` (default none) describes leaves removed from the graph: ``folded[p]`` is
    :math:`\sum_l S_{pl}^2` over the removed leaves ``l`` of ``p`` (a leaf: one edge, no
    loop, never a column). A leaf's row is :math:`X_a[l] = S_{lp} X_{a-1}[p]`, so its
    contribution to row ``p`` of the next product is ``folded[p] X_(a-2)[p]`` and to the dot
    products ``folded[p] X_(a-1)[p] X_(a-2)[p]`` and ``folded[p] X_(a-1)[p]^2``: the walk
    through the leaves is exact without their rows.

    Time ``h (m + 3 n)`` multiply-adds per column for ``m`` stored entries; memory
    :func:`blocked_scratch_bytes` per thread. The columns are shared among ``threads``
    (default ``torch.get_num_threads()``) threads, each with its own two blocks, aligned to
    cache lines (:func:`~graphpe.ops.host.aligned_empty`)."""
    n = csr.indptr.shape[0] - 1
    if columns is None:
        columns = np.arange(n, dtype=np.int64)
    if out_rows is None:
        out_rows = columns
    folded = (np.zeros(n, dtype=values.dtype) if folded is None
              else folded.astype(values.dtype, copy=False))
    bounds = np.arange(columns.shape[0] + 1, dtype=np.int64)
    chunks = graph_chunks(bounds, threads, min_nodes=max(width, 1))

    def run(a: int, b: int) -> None:
        _blocked_landing(csr.indptr, csr.indices, values, diag, folded, walk_length,
                         columns[a:b], out_rows[a:b],
                         aligned_empty((n, width), values.dtype),
                         aligned_empty((n, width), values.dtype), out)

    run_over_graphs(run, chunks)


def blocked_scratch_bytes(n: int, width: int) -> int:
    """Working memory of :func:`blocked_landing_probs` per thread with float64 blocks: two
    ``[n, width]`` blocks (half with float32)."""
    return 16 * n * width


# How many stored entries ahead a sparse product asks for the row it will gather: enough for
# several misses to the last-level cache to overlap (8 to 32 measured alike on a social graph;
# without, a product took about 1.6x as long).
PREFETCH_AHEAD = 16


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _blocked_landing(indptr, indices, values, diag, folded, walk_length, columns, out_rows,
                     prev, cur, out):  # pragma: no cover - compiled
    # prev = X_(a-1), cur = X_(a-2) on entry to step a, overwritten row by row by X_a (the
    # folded leaves read X_(a-2)[i] first); both start at zero, X_(-1) = 0.
    n = indptr.shape[0] - 1
    m = indices.shape[0]
    width = prev.shape[1]
    line = max(CACHE_LINE_BYTES // prev.itemsize, 1)
    acc_odd = np.empty(width)
    acc_even = np.empty(width)
    for lo in range(0, columns.shape[0], width):
        w = min(width, columns.shape[0] - lo)
        for i in range(n):
            for c in range(w):
                prev[i, c] = 0.0
                cur[i, c] = 0.0
        for c in range(w):
            prev[columns[lo + c], c] = 1.0
        for a in range(1, (walk_length + 1) // 2 + 1):
            for c in range(w):
                acc_odd[c] = 0.0
                acc_even[c] = 0.0
            for i in range(n):  # cur = S prev (+ the folded leaves' walks)
                row = cur[i]
                own = prev[i]
                d = diag[i]
                f = folded[i]
                if f != 0.0:
                    for c in range(w):
                        acc_odd[c] += f * own[c] * row[c]
                        acc_even[c] += f * own[c] * own[c]
                        row[c] = d * own[c] + f * row[c]
                else:
                    for c in range(w):
                        row[c] = d * own[c]
                for p in range(indptr[i], indptr[i + 1]):
                    if p + PREFETCH_AHEAD < m:
                        ahead = indices[p + PREFETCH_AHEAD]
                        for c in range(0, w, line):
                            prefetch(prev, ahead, c)
                    v = values[p]
                    nbr = prev[indices[p]]
                    for c in range(w):
                        row[c] += v * nbr[c]
                for c in range(w):
                    acc_odd[c] += row[c] * own[c]
                    acc_even[c] += row[c] * row[c]
            for c in range(w):
                out[out_rows[lo + c], 2 * a - 2] = acc_odd[c]
                if 2 * a <= walk_length:
                    out[out_rows[lo + c], 2 * a - 1] = acc_even[c]
            prev, cur = cur, prev


def local_landing_probs(csr: HostCSR, values: np.ndarray, diag: np.ndarray, walk_length: int,
                        out: np.ndarray, cap: int | None = None) -> int:
    """``diag(S^t)``, ``t = 1..T``, of one graph by a local walk from every node, written into
    ``out [n, T]``; ``S`` is given by ``values`` and ``diag`` (:func:`symmetric_walk`).

    From node ``i`` the vectors ``x_k = S^k e_i``, ``k = 1..h`` with ``h = ceil(T / 2)``, are
    propagated over the ``k``-hop ball of ``i`` only (a breadth-first search grows with the
    walk; each vector is stored densely over the ball, in the order the search reached its
    nodes). ``(S^t)_ii = x_t[i]`` for ``t <= h`` and ``<x_h, x_(t-h)>`` for ``t > h`` (``S`` is
    symmetric). Cost per node: the sum of the degrees over its balls of radius ``0..h-1``,
    plus ``T`` times its ``h``-ball; nothing is ever sized by the whole graph but three
    ``n``-long index arrays per thread.

    The nodes are shared over ``torch.get_num_threads()`` threads
    (:func:`~graphpe.ops.host.graph_chunks`). Memory per thread: ``(h + 1) * cap`` float64
    (the vectors) and ``4 * n`` int64 (``cap`` default ``n``). Returns -1, or, when some
    node's ``h``-ball holds more than ``cap`` nodes, the first such node found (its rows and
    later ones of its thread are then not written)."""
    n = csr.indptr.shape[0] - 1
    cap = n if cap is None else max(1, min(int(cap), n))
    failed = []
    chunks = graph_chunks(np.arange(n + 1, dtype=np.int64))

    def call(a: int, b: int) -> None:
        failed.append(_local_landing(csr.indptr, csr.indices, values, diag, a, b, walk_length,
                                     cap, out))

    run_over_graphs(call, chunks)
    over = [f for f in failed if f >= 0]
    return min(over) if over else -1


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _local_landing(indptr, indices, values, diag, lo, hi, walk_length, cap,
                   out):  # pragma: no cover - compiled
    # x[k, l] = (S^k e_i)[queue[l]] for the l-th node the search reached; ball(k) is the
    # prefix queue[:sizes[k]] (search order), and x[k] is defined on that prefix only.
    # stamp[v] == i: v is in the current source's ball (no reset between sources).
    n = indptr.shape[0] - 1
    half = (walk_length + 1) // 2
    stamp = np.full(n, -1, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    queue = np.empty(cap, dtype=np.int64)
    x = np.empty((half + 1, cap))
    sizes = np.empty(half + 1, dtype=np.int64)
    for i in range(lo, hi):
        stamp[i] = i
        pos[i] = 0
        queue[0] = i
        x[0, 0] = 1.0
        sizes[0] = 1
        for k in range(1, half + 1):
            prev = x[k - 1]
            cur = x[k]
            size = sizes[k - 1]
            for a in range(size):
                cur[a] = diag[queue[a]] * prev[a]
            tail = size
            for a in range(size):  # push x_(k-1) one step: cur[u] += S_uv x_(k-1)[v]
                v = queue[a]
                xv = prev[a]
                for p in range(indptr[v], indptr[v + 1]):
                    u = indices[p]
                    if stamp[u] != i:
                        if tail == cap:
                            return i
                        stamp[u] = i
                        pos[u] = tail
                        queue[tail] = u
                        cur[tail] = 0.0
                        tail += 1
                    cur[pos[u]] += values[p] * xv
            sizes[k] = tail
        for t in range(1, walk_length + 1):
            if t <= half:
                out[i, t - 1] = x[t, 0]
            else:  # S^t = S^h S^(t-h); x_(t-h) is zero beyond its ball
                b = t - half
                xa = x[half]
                xb = x[b]
                acc = 0.0
                for a in range(sizes[b]):
                    acc += xa[a] * xb[a]
                out[i, t - 1] = acc
    return -1


def ball_profile(csr: HostCSR, sources: np.ndarray, hops: int) -> tuple[np.ndarray, np.ndarray]:
    """Breadth-first balls of ``sources`` up to ``hops`` hops: ``(sizes, volumes)``, each
    ``[len(sources), hops + 1]`` int64, ``sizes[r, k]`` the number of nodes within ``k`` hops of
    ``sources[r]`` and ``volumes[r, k]`` the sum of their degrees (CSR entries). Cost: the
    ``hops``-balls' volumes."""
    return _ball_profile(csr.indptr, csr.indices, np.ascontiguousarray(sources, np.int64), hops)


@aot.njit(cache=True, nogil=True)
def _ball_profile(indptr, indices, sources, hops):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    seen = np.full(n, -1, dtype=np.int64)
    level = np.empty(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    sizes = np.zeros((sources.shape[0], hops + 1), dtype=np.int64)
    volumes = np.zeros((sources.shape[0], hops + 1), dtype=np.int64)
    for r in range(sources.shape[0]):
        tail = _ball(indptr, indices, sources[r], hops, seen, level, queue)
        for q in range(tail):
            v = queue[q]
            sizes[r, level[v]] += 1
            volumes[r, level[v]] += indptr[v + 1] - indptr[v]
        for k in range(1, hops + 1):
            sizes[r, k] += sizes[r, k - 1]
            volumes[r, k] += volumes[r, k - 1]
    return sizes, volumes


# ----------------------------------------------------------------------------- RRWP


@aot.njit(cache=True, nogil=True)
def _walk_matrix(indptr, indices, weight, loops):  # pragma: no cover - compiled
    """``M = D^-1 A`` with the self loops, as the CSR's ``values`` and a ``diag``; a node
    without edges has a zero row. Each row is divided by its largest weight first, so 1e300
    weights cannot overflow the sum."""
    n = indptr.shape[0] - 1
    values = np.zeros(indices.shape[0])
    diag = np.zeros(n)
    for i in range(n):
        top = loops[i]
        for p in range(indptr[i], indptr[i + 1]):
            top = max(top, weight[p])
        if top > 0:
            total = loops[i] / top
            for p in range(indptr[i], indptr[i + 1]):
                total += weight[p] / top
            diag[i] = loops[i] / top / total
            for p in range(indptr[i], indptr[i + 1]):
                values[p] = weight[p] / top / total
    return values, diag


def relative_walk_probs(csr: HostCSR, ptr: np.ndarray, pair_ptr: np.ndarray, num_steps: int,
                        pair_index: np.ndarray, out: np.ndarray) -> None:
    """RRWP of every graph: ``out[p, k] = (M^k)_ij`` for the pair ``p = (i, j)`` (row-major
    per graph from ``pair_ptr[g]``) and ``M = D^-1 A`` with the self loops; fills
    ``pair_index [2, P]`` (global node ids) and ``out [P, K]`` (float32 or float64)."""
    run_over_graphs(lambda a, b: _relative_walk_probs(
        csr.indptr, csr.indices, csr.weight, csr.loops, ptr[a : b + 1], pair_ptr[a : b + 1],
        num_steps, pair_index, out), graph_chunks(ptr))


# Up to this size all K powers of a graph are kept (a [K, n * n] float64 scratch: 21 x 96^2 is
# 1.5 MB) and the graph's [n * n, K] output block is written row by row, each pair's K values
# contiguous; writing power by power instead strides every store by K (a new cache line each):
# 1.28x slower on ZINC with the output already in memory, ~12% of a whole call.
RRWP_STACK_MAX_NODES = 96


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _relative_walk_probs(indptr, indices, weight, loops, ptr, pair_ptr, num_steps, pair_index,
                         out):  # pragma: no cover - compiled
    # M^k is advanced by one sparse product per step, M^(k+1) = M M^k (nnz * n multiply-adds,
    # against n^3 for a dense product). Small graphs keep every power and write the output row
    # by row (RRWP_STACK_MAX_NODES); larger ones keep two n x n powers and write each power
    # into its column of the graph's [n * n, K] block.
    values, diag = _walk_matrix(indptr, indices, weight, loops)
    num_graphs = ptr.shape[0] - 1
    big = 0
    small = 0
    for g in range(num_graphs):  # compiled: the largest graphs size the scratch blocks
        n = ptr[g + 1] - ptr[g]
        big = max(big, n)
        if n <= RRWP_STACK_MAX_NODES:
            small = max(small, n)
    stack = np.empty((num_steps, small * small))
    store = np.empty(2 * big * big if big > RRWP_STACK_MAX_NODES else 0)
    for g in range(num_graphs):  # compiled: each graph at its own size, no padding
        s = ptr[g]
        n = ptr[g + 1] - s
        if n == 0:
            continue
        base = pair_ptr[g]
        if n <= RRWP_STACK_MAX_NODES:
            first = stack[0, : n * n].reshape((n, n))
            for i in range(n):
                for j in range(n):
                    first[i, j] = 1.0 if i == j else 0.0
            for k in range(1, num_steps):
                _sparse_times_dense(indptr, indices, values, diag, s, n,
                                    stack[k - 1, : n * n].reshape((n, n)),
                                    stack[k, : n * n].reshape((n, n)))
            for i in range(n):
                for j in range(n):
                    r = base + i * n + j
                    pair_index[0, r] = s + i
                    pair_index[1, r] = s + j
                    for k in range(num_steps):
                        out[r, k] = stack[k, i * n + j]
            continue
        x = store[: n * n].reshape((n, n))
        y = store[big * big: big * big + n * n].reshape((n, n))
        for i in range(n):
            for j in range(n):
                r = base + i * n + j
                pair_index[0, r] = s + i
                pair_index[1, r] = s + j
                x[i, j] = 1.0 if i == j else 0.0
                out[r, 0] = x[i, j]
        for k in range(1, num_steps):
            _sparse_times_dense(indptr, indices, values, diag, s, n, x, y)
            for i in range(n):
                for j in range(n):
                    out[base + i * n + j, k] = y[i, j]
            x, y = y, x


def local_pairs_host(csr: HostCSR, hops: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair ``(i, j)`` with ``d(i, j) <= hops`` (``i`` itself included):
    ``(pair_index [2, P], dist [P])``, sorted by ``i`` then ``j``, by one breadth-first search
    per source cut at ``hops`` levels; memory ``O(P)``, never ``n^2``."""
    n = csr.indptr.shape[0] - 1
    counts = np.zeros(n + 1, dtype=np.int64)
    scratch = (np.full(n, -1, dtype=np.int64), np.empty(n, dtype=np.int64),
               np.empty(n, dtype=np.int64))
    _local_pairs(csr.indptr, csr.indices, hops, counts, np.empty((2, 0), np.int64),
                 np.empty(0, np.int64), True, *scratch)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts[:n], out=starts[1:])
    pair_index = np.empty((2, starts[-1]), dtype=np.int64)
    dist = np.empty(starts[-1], dtype=np.int64)
    scratch[0][:] = -1
    _local_pairs(csr.indptr, csr.indices, hops, starts, pair_index, dist, False, *scratch)
    return pair_index, dist


@aot.njit(cache=True, nogil=True, inline="always")
def _ball(indptr, indices, i, hops, seen, level, queue):  # pragma: no cover - compiled
    """Breadth-first search from ``i`` cut at ``hops`` levels: ``seen[v] = i`` and ``level[v]``
    for every node reached, in ``queue[:tail]`` in the order reached; returns ``tail``.
    ``seen`` is stamped with the source, so it needs no reset between sources."""
    seen[i] = i
    queue[0] = i
    level[i] = 0
    head, tail = 0, 1
    while head < tail:
        v = queue[head]
        head += 1
        if level[v] == hops:
            continue
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if seen[u] != i:
                seen[u] = i
                level[u] = level[v] + 1
                queue[tail] = u
                tail += 1
    return tail


@aot.njit(cache=True, nogil=True)
def _local_pairs(indptr, indices, hops, offsets, pair_index, dist, count_only, seen, queue,
                 level):  # pragma: no cover - compiled
    # count_only: offsets[i] <- the size of i's ball; else write i's ball, sorted by node, at
    # offsets[i]. seen[v] == i marks v as reached from source i (no reset between sources).
    n = indptr.shape[0] - 1
    for i in range(n):
        tail = _ball(indptr, indices, i, hops, seen, level, queue)
        if count_only:
            offsets[i] = tail
            continue
        ball = np.sort(queue[:tail])
        base = offsets[i]
        for r in range(tail):
            pair_index[0, base + r] = i
            pair_index[1, base + r] = ball[r]
            dist[base + r] = level[ball[r]]


def _one_off_output(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialized int64 output written once (a transform's), allocated by torch rather
    than with :func:`host_empty` (whose huge-page advice pays only for re-used sizes)."""
    return torch.empty(shape, dtype=torch.long).numpy()


def all_pairs_distances_host(csr: HostCSR, ptr: np.ndarray,
                             max_dist: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hop distances of every ordered pair of each graph, capped (``max_dist + 1``: farther or
    in another component): ``(pair_index [2, P], dist [P], pair_ptr [G + 1])``, pairs in
    ``all_pairs``' order (row-major per graph), by one breadth-first search per source cut at
    ``max_dist`` levels."""
    sizes = ptr[1:] - ptr[:-1]
    pair_ptr = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes * sizes, out=pair_ptr[1:])
    n = csr.indptr.shape[0] - 1
    pair_index = _one_off_output((2, int(pair_ptr[-1])))
    dist = _one_off_output((int(pair_ptr[-1]),))
    _all_pairs_distances(csr.indptr, csr.indices, ptr, max_dist, pair_ptr, pair_index, dist,
                         np.full(n, -1, dtype=np.int64), np.empty(n, dtype=np.int64),
                         np.empty(n, dtype=np.int64))
    return pair_index, dist, pair_ptr


@aot.njit(cache=True, nogil=True)
def _all_pairs_distances(indptr, indices, ptr, max_dist, pair_ptr, pair_index, out, seen,
                         level, queue):  # pragma: no cover - compiled
    # seen[v] == i: v reached from source i (no reset between sources)
    for g in range(ptr.shape[0] - 1):
        s, e = ptr[g], ptr[g + 1]
        n = e - s
        for i in range(s, e):
            _ball(indptr, indices, i, max_dist, seen, level, queue)
            row = pair_ptr[g] + (i - s) * n - s
            for j in range(s, e):
                pair_index[0, row + j] = i
                pair_index[1, row + j] = j
                out[row + j] = level[j] if seen[j] == i else max_dist + 1


def path_edges_host(csr: HostCSR, edge_index: np.ndarray, pair_index: np.ndarray,
                    max_hops: int) -> np.ndarray:
    """For every pair ``(i, j)`` of ``pair_index [2, P]``, the ids (columns of
    ``edge_index [2, E]``, whose simple undirected graph ``csr`` is) of the first ``max_hops``
    edges of one shortest path from ``i`` to ``j``: ``[P, max_hops]`` int64, -1 past the
    path's end (``i == j``, another component).

    The path is fixed by node ids alone: each node's predecessor on it is its smallest-id
    neighbour one hop closer to ``i``. The edge of a hop ``u -> v`` is an input edge
    ``u -> v`` if there is one, else ``v -> u``, the smallest id among duplicates; self loops
    are never on a shortest path. One breadth-first search per source, stopped once the
    source's listed targets are reached (pairs grouped by source, as :func:`local_pairs_host`
    and ``all_pairs`` list them, search once per source); a node's first ``max_hops`` edges
    are its predecessor's plus one, so a pair costs ``max_hops`` writes whatever its
    distance."""
    out = _one_off_output((pair_index.shape[1], max_hops))
    _path_edges(csr.indptr, csr.indices, edge_index, pair_index, max_hops, out,
                np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64))
    return out


def batch_path_edges_host(csr: HostCSR, edge_index: np.ndarray, pair_index: np.ndarray,
                          max_hops: int, ptr: np.ndarray) -> np.ndarray:
    """:func:`path_edges_host` for the graphs of a batch (node offsets ``ptr``, edges listed
    graph by graph in graph order), with each edge id counted from its graph's first edge (a
    graph-local id); ValueError for a pair of nodes from two graphs."""
    sizes = ptr[1:] - ptr[:-1]
    node_graph = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    edge_graph = node_graph[edge_index[0]]
    if (edge_graph[1:] < edge_graph[:-1]).any():
        raise ValueError("edge_index must list its edges graph by graph, in graph order "
                         "(as PyG's Batch does), for graph-local edge ids")
    first_edge = np.searchsorted(edge_graph, np.arange(sizes.size))
    out = _one_off_output((pair_index.shape[1], max_hops))
    if _path_edges(csr.indptr, csr.indices, edge_index, pair_index, max_hops, out, node_graph,
                   first_edge) >= 0:
        raise ValueError("pair_index holds a pair of nodes from different graphs")
    return out


@aot.njit(cache=True, nogil=True)
def _path_edges(indptr, indices, edge_index, pair_index, max_hops, out, node_graph,
                first_edge):  # pragma: no cover - compiled
    # ids are written less the first edge of the source's graph (node_graph empty: one graph,
    # first_edge [0]); returns the first pair whose nodes lie in two graphs, else -1
    n = indptr.shape[0] - 1
    batched = node_graph.shape[0] > 0
    # the input edge of every CSR entry (u, v): the first u -> v, else the first v -> u
    forward = np.full(indices.shape[0], -1, dtype=np.int64)
    for e in range(edge_index.shape[1]):
        u, v = edge_index[0, e], edge_index[1, e]
        if u != v:
            p = csr_position(indptr, indices, u, v)
            if forward[p] < 0:
                forward[p] = e
    ids = forward.copy()
    for u in range(n):
        for p in range(indptr[u], indptr[u + 1]):
            if ids[p] < 0:
                ids[p] = forward[csr_position(indptr, indices, indices[p], u)]
    # seen[v] == run: v reached by the current source's search (dist[v] valid); wanted[v] ==
    # run: v is a target of one of its pairs. Stamps need no reset between sources.
    # prefix[v]: the first max_hops edges of v's path (its predecessor's, plus the last hop
    # while it is among the first), set when v leaves the queue, when every node nearer to
    # the source has been reached.
    seen = np.full(n, -1, dtype=np.int64)
    wanted = np.full(n, -1, dtype=np.int64)
    dist = np.empty(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    prefix = np.empty((n, max_hops), dtype=np.int64)
    num_pairs = pair_index.shape[1]
    start, run = 0, 0
    while start < num_pairs:
        i = pair_index[0, start]
        stop, remaining = start, 0
        while stop < num_pairs and pair_index[0, stop] == i:
            j = pair_index[1, stop]
            if wanted[j] != run:
                wanted[j] = run
                remaining += 1
            stop += 1
        seen[i] = run
        dist[i] = 0
        for t in range(max_hops):
            prefix[i, t] = -1
        queue[0] = i
        head, tail = 0, 1
        while head < tail and remaining > 0:
            v = queue[head]
            head += 1
            if v != i:
                hop = dist[v] - 1
                u = v
                for p in range(indptr[v], indptr[v + 1]):  # ascending: the smallest first
                    u = indices[p]
                    if seen[u] == run and dist[u] == hop:
                        break
                for t in range(max_hops):
                    prefix[v, t] = prefix[u, t]
                if hop < max_hops:  # the entry (u, v) of row u: its id prefers u -> v
                    prefix[v, hop] = ids[csr_position(indptr, indices, u, v)]
            if wanted[v] == run:
                remaining -= 1
            for p in range(indptr[v], indptr[v + 1]):
                u = indices[p]
                if seen[u] != run:
                    seen[u] = run
                    dist[u] = dist[v] + 1
                    queue[tail] = u
                    tail += 1
        base = first_edge[node_graph[i]] if batched else first_edge[0]
        for r in range(start, stop):
            j = pair_index[1, r]
            if batched and node_graph[j] != node_graph[i]:
                return r
            reached = seen[j] == run
            for t in range(max_hops):
                e = prefix[j, t] if reached else -1
                out[r, t] = e - base if e >= 0 else -1
        start = stop
        run += 1
    return -1


def local_walk_probs_host(csr: HostCSR, pair_index: np.ndarray, num_steps: int,
                          out: np.ndarray) -> None:
    """``out[p, k] = (M^k)_ij`` for the pairs ``p = (i, j)`` of ``pair_index`` (sorted by
    ``i``; as :func:`local_pairs_host` gives them), ``M = D^-1 A`` with the self loops as in
    :func:`relative_walk_probs`: exact, from one sparse walk of ``num_steps - 1`` steps per
    source over the nodes it reaches (cost ``n`` times the ``(num_steps - 1)``-hop ball)."""
    _local_walk_probs(csr.indptr, csr.indices, csr.weight, csr.loops, pair_index, num_steps,
                      out)


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _local_walk_probs(indptr, indices, weight, loops, pair_index, num_steps,
                      out):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    values, diag = _walk_matrix(indptr, indices, weight, loops)
    x = np.zeros(n)
    y = np.zeros(n)
    on = np.full(n, -1, dtype=np.int64)  # on[v] == stamp: v is already in the next support
    stamp = 0  # one per step of every source, so nothing is reset between sources
    support = np.empty(n, dtype=np.int64)
    nxt = np.empty(n, dtype=np.int64)
    num_pairs = pair_index.shape[1]
    start = 0
    while start < num_pairs:
        i = pair_index[0, start]
        stop = start
        while stop < num_pairs and pair_index[0, stop] == i:
            stop += 1
        for r in range(start, stop):
            out[r, 0] = 1.0 if pair_index[1, r] == i else 0.0
        x[i] = 1.0
        support[0] = i
        size = 1
        for k in range(1, num_steps):
            # y = x M over the support (a row vector walking one step), then swap
            stamp += 1
            count = 0
            for a in range(size):
                v = support[a]
                xv = x[v]
                if diag[v] != 0.0:
                    if on[v] != stamp:
                        on[v] = stamp
                        nxt[count] = v
                        count += 1
                    y[v] += xv * diag[v]
                for p in range(indptr[v], indptr[v + 1]):
                    u = indices[p]
                    if on[u] != stamp:
                        on[u] = stamp
                        nxt[count] = u
                        count += 1
                    y[u] += xv * values[p]
            for a in range(size):
                x[support[a]] = 0.0
            for a in range(count):
                v = nxt[a]
                x[v] = y[v]
                y[v] = 0.0
                support[a] = v
            size = count
            for r in range(start, stop):
                out[r, k] = x[pair_index[1, r]]
        for a in range(size):
            x[support[a]] = 0.0
        start = stop


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
