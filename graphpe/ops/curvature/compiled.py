"""Compiled (numba) host kernels of the curvatures: the exact Ollivier-Ricci transport
problems (the only ORC solver, whichever path calls it), triangle counts, the per-node
profiles and the map back to the input edges. The torch kernels they match are in
:mod:`graphpe.ops.curvature.tensor`; the shared host plumbing is :mod:`graphpe.ops.host`."""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from graphpe.ops import aot
from graphpe.ops.host import HostCSR, csr_position, host_array

# ----------------------------------------------------------------------------- exact ORC


@aot.njit(cache=True, nogil=True)
def _transport_cost(a, b, cost, flow, m, n):  # pragma: no cover - compiled
    """Exact min-cost transport of supplies ``a[:m]`` to demands ``b[:n]`` (equal totals) with
    integer costs ``cost[:m, :n]``, by the primal-dual method: Bellman-Ford distances on the
    residual graph (free of negative cycles) give potentials, then augmenting paths are found by
    depth-first search among the arcs on shortest paths (reduced cost 0) until none is left,
    and the distances are recomputed. Costs between two walk measures of an edge lie in 1..3,
    so shortest-path lengths take at most three values: few phases, each a cheap search.
    ``a`` and ``b`` are consumed."""
    eps = 1e-13
    inf = 1e30
    tie = 1e-9
    dist_s = np.empty(m)
    dist_t = np.empty(n)
    pred_s = np.empty(m, dtype=np.int64)  # sink we came from on the DFS path (-1: start)
    pred_t = np.empty(n, dtype=np.int64)  # source we came from
    seen_s = np.zeros(m, dtype=np.bool_)
    seen_t = np.zeros(n, dtype=np.bool_)
    stack = np.empty(m + n, dtype=np.int64)  # entries: i >= 0 a source, -(j + 1) a sink
    for i in range(m):
        for j in range(n):
            flow[i, j] = 0.0
    remaining = 0.0
    for i in range(m):
        remaining += a[i]
    total = 0.0
    while remaining > eps:
        # potentials: shortest distances from the sources that still have supply
        for i in range(m):
            dist_s[i] = 0.0 if a[i] > eps else inf
        for j in range(n):
            dist_t[j] = inf
        changed = True
        while changed:
            changed = False
            for i in range(m):
                di = dist_s[i]
                if di >= inf:
                    continue
                for j in range(n):
                    nd = di + cost[i, j]
                    if nd < dist_t[j] - tie:
                        dist_t[j] = nd
                        changed = True
            for j in range(n):
                dj = dist_t[j]
                if dj >= inf:
                    continue
                for i in range(m):
                    if flow[i, j] > eps:
                        nd = dj - cost[i, j]
                        if nd < dist_s[i] - tie:
                            dist_s[i] = nd
                            changed = True
        target = inf
        for j in range(n):
            if b[j] > eps and dist_t[j] < target:
                target = dist_t[j]
        if target >= inf:
            break
        # augment along shortest paths only, until the admissible graph has none left
        while remaining > eps:
            for i in range(m):
                seen_s[i] = False
            for j in range(n):
                seen_t[j] = False
            top = 0
            for i in range(m):
                if a[i] > eps and abs(dist_s[i]) <= tie:
                    stack[top] = i
                    top += 1
                    seen_s[i] = True
                    pred_s[i] = -1
            found = -1
            while top > 0 and found < 0:
                top -= 1
                node = stack[top]
                if node >= 0:
                    i = node
                    for j in range(n):
                        if not seen_t[j] and abs(dist_s[i] + cost[i, j] - dist_t[j]) <= tie:
                            seen_t[j] = True
                            pred_t[j] = i
                            if b[j] > eps and abs(dist_t[j] - target) <= tie:
                                found = j
                                break
                            stack[top] = -(j + 1)
                            top += 1
                else:
                    j = -node - 1
                    for i in range(m):
                        if (not seen_s[i] and flow[i, j] > eps
                                and abs(dist_t[j] - cost[i, j] - dist_s[i]) <= tie):
                            seen_s[i] = True
                            pred_s[i] = j
                            stack[top] = i
                            top += 1
            if found < 0:
                break  # no admissible path at this distance: recompute the potentials
            delta = b[found]
            j = found
            while True:
                i = pred_t[j]
                if pred_s[i] < 0:
                    delta = min(delta, a[i])
                    break
                j = pred_s[i]
                delta = min(delta, flow[i, j])
            j = found
            b[found] -= delta
            while True:
                i = pred_t[j]
                flow[i, j] += delta
                total += delta * cost[i, j]
                if pred_s[i] < 0:
                    a[i] -= delta
                    break
                j = pred_s[i]
                flow[i, j] -= delta
                total -= delta * cost[i, j]
            remaining -= delta
    return total


@aot.njit(cache=True, nogil=True)
def _walk_measure(node, alpha, indptr, indices, nodes, mass):  # pragma: no cover - compiled
    """Support and masses of the lazy walk measure of ``node`` (alpha on itself when positive,
    the rest spread over its neighbours); returns the support size."""
    count = 0
    if alpha > 0.0:
        nodes[0] = node
        mass[0] = alpha
        count = 1
    share = (1.0 - alpha) / (indptr[node + 1] - indptr[node])
    for p in range(indptr[node], indptr[node + 1]):
        nodes[count] = indices[p]
        mass[count] = share
        count += 1
    return count


@aot.njit(cache=True, nogil=True)
def _compact(nodes, mass, count):  # pragma: no cover - compiled
    """Drop entries with (numerically) no mass; returns the new count."""
    k = 0
    for i in range(count):
        if mass[i] > 1e-15:
            nodes[k] = nodes[i]
            mass[k] = mass[i]
            k += 1
    return k


@aot.njit(cache=True, nogil=True)
def _orc_kernel(indptr, indices, src, dst, alpha):  # pragma: no cover - compiled
    """``1 - W1(m_x, m_y)`` for every edge ``(src[e], dst[e])``, in one call."""
    out = np.empty(src.shape[0])
    _orc_into(indptr, indices, src, dst, alpha, out, 0, src.shape[0])
    return out


@aot.njit(cache=True, nogil=True)
def _orc_into(indptr, indices, src, dst, alpha, out, lo, hi):  # pragma: no cover - compiled
    """``out[e] = 1 - W1(m_x, m_y)`` for the edges ``lo <= e < hi``. Each edge is solved on its
    own (the work arrays are rewritten before they are read), so any split of the edges into
    ranges, run in any order or on any threads, gives the same values bit for bit."""
    num_nodes = indptr.shape[0] - 1
    max_deg = 0
    for e in range(lo, hi):
        max_deg = max(max_deg, indptr[src[e] + 1] - indptr[src[e]],
                      indptr[dst[e] + 1] - indptr[dst[e]])
    size = max_deg + 1
    sx = np.empty(size, dtype=np.int64)
    sy = np.empty(size, dtype=np.int64)
    a = np.empty(size)
    b = np.empty(size)
    cost = np.empty((size, size))
    flow = np.empty((size, size))
    spare = np.empty((size, size))
    key = np.empty(size, dtype=np.int64)
    keep = np.empty(size, dtype=np.int64)
    mark = np.full(num_nodes, -1, dtype=np.int64)
    where = np.zeros(num_nodes, dtype=np.int64)
    stamp = 0
    for e in range(lo, hi):
        m = _walk_measure(src[e], alpha, indptr, indices, sx, a)
        n = _walk_measure(dst[e], alpha, indptr, indices, sy, b)
        # W1 depends only on m_x - m_y (Kantorovich-Rubinstein), so mass on a node in both
        # supports stays where it is: cancel it, and drop the entries left empty.
        stamp += 1
        for j in range(n):
            mark[sy[j]] = stamp
            where[sy[j]] = j
        for i in range(m):
            if mark[sx[i]] == stamp:
                j = where[sx[i]]
                common = min(a[i], b[j])
                a[i] -= common
                b[j] -= common
        m = _compact(sx, a, m)
        n = _compact(sy, b, n)
        # costs 1/2/3 (no node is in both supports now): mark N(u), then test v and N(v)
        for i in range(m):
            u = sx[i]
            du = indptr[u + 1] - indptr[u]
            stamp += 1
            for p in range(indptr[u], indptr[u + 1]):
                mark[indices[p]] = stamp
            for j in range(n):
                v = sy[j]
                if mark[v] == stamp:
                    c = 1.0
                elif indptr[v + 1] - indptr[v] > 8 * du:
                    # a hub v: look N(u) up in N(v) (sorted) instead of scanning N(v)
                    c = 3.0
                    for p in range(indptr[u], indptr[u + 1]):
                        if _in_row(indptr, indices, v, indices[p]):
                            c = 2.0
                            break
                else:
                    c = 3.0
                    for p in range(indptr[v], indptr[v + 1]):
                        if mark[indices[p]] == stamp:
                            c = 2.0
                            break
                cost[i, j] = c
        if m * n > MERGE_MIN_CELLS:
            m, n = _merge_equal(cost, spare, a, b, m, n, key, keep)
        out[e] = 1.0 - _transport_cost(a, b, cost, flow, m, n)


# Problems of more cells than this have their equal cost rows (and columns) merged first.
MERGE_MIN_CELLS = 64


@aot.njit(cache=True, nogil=True)
def _in_row(indptr, indices, v, w):  # pragma: no cover - compiled
    """Whether ``w`` is a neighbour of ``v`` (binary search of the sorted row)."""
    at = csr_position(indptr, indices, v, w)
    return at < indptr[v + 1] and indices[at] == w


@aot.njit(cache=True, nogil=True)
def _merge_equal(cost, spare, a, b, m, n, key, keep):  # pragma: no cover - compiled
    """Merge the sources whose cost rows are equal into one holding their summed supply, then
    the sinks whose cost columns are equal. Exact: a plan of the merged problem splits among
    the merged sources (sinks) in proportion to their masses at the same cost, and any plan of
    the original one adds up to a plan of the merged one, so both optima are equal. Around a
    hub most neighbours see the other end's support alike (cost 3 to all, or 1 to the hub),
    so thousands of sources fall to a few, and so do the augmenting paths of the solve.
    ``spare`` is scratch of ``cost``'s shape; returns the new ``(m, n)``."""
    m = _merge_rows(cost, spare, a, m, n, key, keep, False)
    n = _merge_rows(cost, spare, b, n, m, key, keep, True)
    return m, n


@aot.njit(cache=True, nogil=True)
def _merge_rows(cost, spare, mass, m, n, key, keep, columns):  # pragma: no cover - compiled
    """:func:`_merge_equal` on the rows of ``cost[:m, :n]`` (its columns if ``columns``):
    rows are keyed by a hash, sorted by key, and a row equal to the first of its run of equal
    keys joins it. The merged rows are written back in place, in the order of their first
    row."""
    prime = 1099511627791  # a prime near 2^40: key * 3 + 2 stays far inside int64
    for i in range(m):
        h = 0
        for j in range(n):
            c = cost[j, i] if columns else cost[i, j]
            h = (h * 3 + int(c) - 1) % prime
        key[i] = h
    order = np.argsort(key[:m], kind="mergesort")
    for i in range(m):
        keep[i] = i  # the row i is merged into (itself: a kept row)
    start = 0
    while start < m:
        lead = order[start]
        stop = start + 1
        while stop < m and key[order[stop]] == key[lead]:
            stop += 1
        for q in range(start + 1, stop):
            i = order[q]
            if keep[i] != i:
                continue
            for r in range(start, q):
                head = order[r]
                if keep[head] != head:
                    continue
                same = True
                for j in range(n):
                    if columns:
                        if cost[j, i] != cost[j, head]:
                            same = False
                            break
                    elif cost[i, j] != cost[head, j]:
                        same = False
                        break
                if same:  # head < i: the sort is stable and the rows start in index order
                    keep[i] = head
                    break
        start = stop
    # keep[i] < i: merged into an earlier row; gather each into its first row, in order
    count = 0
    for i in range(m):
        if keep[i] == i:
            key[i] = count  # new index of the kept row i
            mass[count] = mass[i]
            for j in range(n):
                if columns:
                    spare[j, count] = cost[j, i]
                else:
                    spare[count, j] = cost[i, j]
            count += 1
        else:
            mass[key[keep[i]]] += mass[i]
    for i in range(count):
        for j in range(n):
            if columns:
                cost[j, i] = spare[j, i]
            else:
                cost[i, j] = spare[i, j]
    return count


# Rough speed of the exact solver, in transport cells (see transport_cells) per second on one
# thread, for the time estimates of the budget's message. Problems around a hub cost more per
# cell than small ones (more augmenting paths), so the figure is an order of magnitude.
ORC_CELLS_PER_SECOND = 2e6
# Chunks of the edges handed to threads: about this many cells each, so that progress moves
# and an interrupt is honoured within about a second of work per thread.
ORC_CHUNK_CELLS = 1 << 21
# The fewest cells a chunk is given to spread the edges over threads: below that, handing a
# chunk to a thread costs more than it saves (a molecule is one chunk, one direct call).
ORC_MIN_CHUNK_CELLS = 1 << 16


def transport_cells(indptr: np.ndarray, src: np.ndarray, dst: np.ndarray,
                    alpha: float = 0.0) -> np.ndarray:
    """Size of the transport problem of every edge ``(src[e], dst[e])`` of a CSR adjacency:
    ``|supp m_x| * |supp m_y|`` with ``|supp m_x| = d_x + [alpha > 0]`` (the neighbours, and
    the node itself when the walk is lazy), before the mass common to both measures is
    cancelled. int64, vectorized."""
    deg = np.diff(np.asarray(indptr, dtype=np.int64))
    lazy = 1 if alpha > 0.0 else 0
    return (deg[src] + lazy) * (deg[dst] + lazy)


def edge_chunks(cells: np.ndarray, threads: int,
                chunk_cells: int = ORC_CHUNK_CELLS) -> list[tuple[int, int]]:
    """Contiguous ranges ``[a, b)`` of the edges holding about ``chunk_cells`` cells each
    (an edge larger than that is a range of its own); with several ``threads``, smaller
    ranges (down to :data:`ORC_MIN_CHUNK_CELLS`) where that gives each thread about four."""
    num = cells.shape[0]
    if num == 0:
        return []
    total = int(cells.sum())
    target = max(1, chunk_cells)
    if threads > 1:
        target = min(target, max(total // (4 * threads), min(target, ORC_MIN_CHUNK_CELLS)))
    ends = np.cumsum(cells)
    cuts = np.searchsorted(ends, np.arange(target, total, target), side="left") + 1
    bounds = [0, *sorted({int(c) for c in cuts if 0 < c < num}), num]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def solve_edges(indptr: np.ndarray, indices: np.ndarray, src: np.ndarray, dst: np.ndarray,
                alpha: float, threads: int | None = None, progress: bool = False,
                chunk_cells: int = ORC_CHUNK_CELLS) -> np.ndarray:
    """Exact ORC ``1 - W1(m_x, m_y)`` of the edges ``(src[e], dst[e])`` of a CSR adjacency,
    float64. The edges are cut into chunks of about ``chunk_cells`` transport cells
    (:func:`edge_chunks`) solved on ``threads`` threads (default ``torch.get_num_threads()``;
    one outside the main thread), the compiled solver releasing the GIL; ``progress`` shows a
    progress bar in cells. A ``KeyboardInterrupt`` stops it between chunks: chunks not started
    are dropped, running ones finish, and the interrupt is raised again. Every edge is solved
    on its own, so the values are those of one call over all edges, bit for bit."""
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    out = np.empty(src.shape[0])
    cells = transport_cells(indptr, src, dst, alpha)
    total = int(cells.sum())
    if threads is None:
        threads = torch.get_num_threads()
    if threading.current_thread() is not threading.main_thread():
        threads = 1
    threads = max(1, int(threads))
    chunks = edge_chunks(cells, threads, chunk_cells)
    if len(chunks) <= 1 and not progress:
        _orc_into(indptr, indices, src, dst, float(alpha), out, 0, src.shape[0])
        return out
    ends = np.concatenate([[0], np.cumsum(cells)])
    with (tqdm(total=total, desc="ollivier-ricci", unit="cell", unit_scale=True,
               disable=not progress) as bar,
          ThreadPoolExecutor(threads) as pool):
        pending = {pool.submit(_orc_into, indptr, indices, src, dst, float(alpha), out, a, b):
                   (a, b) for a, b in chunks}
        try:
            while pending:
                done, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in done:
                    a, b = pending.pop(future)
                    future.result()
                    bar.update(int(ends[b] - ends[a]))
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return out


def orc_csr(indptr: np.ndarray, indices: np.ndarray, alpha: float = 0.0,
            threads: int | None = None, progress: bool = False) -> np.ndarray:
    """Exact ORC of every entry of a simple graph's CSR adjacency (rows sorted by column),
    float64: each undirected edge is solved once (:func:`solve_edges`, on ``threads``
    threads, with a progress bar if ``progress``) and mirrored. The budget check is the
    caller's (:func:`graphpe.ops.curvature.check_transport_budget`)."""
    src, dst, upper = upper_edges(indptr, indices)
    kappa_upper = solve_edges(indptr, indices, src, dst, float(alpha), threads, progress)
    return _mirror(indptr, indices, upper, kappa_upper)


def upper_edges(indptr: np.ndarray, indices: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(src, dst, positions)`` of the CSR entries with ``src < dst``: each undirected edge
    of a simple graph once, in CSR order."""
    row = np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))
    upper = np.flatnonzero(row < indices)
    return row[upper], np.asarray(indices, dtype=np.int64)[upper], upper


@aot.njit(cache=True, nogil=True)
def _mirror(indptr, indices, upper, kappa_upper):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    nnz = indices.shape[0]
    out = np.empty(nnz)
    for q in range(upper.shape[0]):
        out[upper[q]] = kappa_upper[q]
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if i > j:  # the reverse entry (j, i) sits in row j, found by binary search
                out[p] = out[csr_position(indptr, indices, j, i)]
    return out


# ----------------------------------------------------------------------------- curvature


def node_profile_host(csr: HostCSR, values: np.ndarray, stats: tuple[str, ...]) -> np.ndarray:
    """Per-node ``[min, max, mean, std, median]`` (the ``stats`` asked for, in that order of
    the request) of ``values`` given on the CSR entries; zeros for a node without edges."""
    codes = np.array([PROFILE_CODES[s] for s in stats], dtype=np.int64)
    return _profile(csr.indptr, values, codes)


PROFILE_CODES = {"min": 0, "max": 1, "mean": 2, "std": 3, "median": 4}


@aot.njit(cache=True, nogil=True)
def _profile(indptr, values, codes):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    out = np.zeros((n, codes.shape[0]))
    for i in range(n):
        lo, hi = indptr[i], indptr[i + 1]
        cnt = hi - lo
        if cnt == 0:
            continue
        row = np.sort(values[lo:hi])
        mean = 0.0
        for a in range(cnt):
            mean += row[a]
        mean /= cnt
        var = 0.0
        for a in range(cnt):
            var += (row[a] - mean) ** 2
        for q in range(codes.shape[0]):
            code = codes[q]
            if code == 0:
                out[i, q] = row[0]
            elif code == 1:
                out[i, q] = row[cnt - 1]
            elif code == 2:
                out[i, q] = mean
            elif code == 3:
                out[i, q] = np.sqrt(var / cnt)
            else:
                out[i, q] = (row[(cnt - 1) // 2] + row[cnt // 2]) / 2
    return out


@aot.njit(cache=True, nogil=True)
def edge_triangles_host(indptr, indices, rows):  # pragma: no cover - compiled
    """Common neighbours ``|row i & row j|`` of every CSR entry ``(i, j = indices[p])`` of the
    rows ``rows`` (marker per row); 0 on the other rows' entries. Only row ``i`` is marked,
    so the rows of a symmetric graph's CSR may be a subset of its nodes' (the other rows
    empty): an entry's count then needs its two rows."""
    n = indptr.shape[0] - 1
    out = np.zeros(indices.shape[0])
    mark = np.full(n, -1, dtype=np.int64)
    for i in rows:
        for p in range(indptr[i], indptr[i + 1]):
            mark[indices[p]] = i
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            t = 0
            for q in range(indptr[j], indptr[j + 1]):
                if mark[indices[q]] == i:
                    t += 1
            out[p] = t
    return out


def per_input_edge_host(edge_index: Tensor, csr: HostCSR, values: np.ndarray) -> np.ndarray:
    """Map values on the CSR entries back to the input edges (0 on self loops)."""
    ei = host_array(edge_index, np.int64)
    return _per_input_edge(ei[0], ei[1], csr.indptr, csr.indices, values)


@aot.njit(cache=True, nogil=True)
def _per_input_edge(row, col, indptr, indices, values):  # pragma: no cover - compiled
    shape = (row.shape[0],) + values.shape[1:]
    out = np.zeros(shape)
    for e in range(row.shape[0]):
        r, c = row[e], col[e]
        if r == c:
            continue
        lo, hi = indptr[r], indptr[r + 1]
        while lo < hi:  # binary search: rows are sorted by column
            mid = (lo + hi) // 2
            if indices[mid] < c:
                lo = mid + 1
            else:
                hi = mid
        if lo < indptr[r + 1] and indices[lo] == c:
            out[e] = values[lo]
    return out


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
