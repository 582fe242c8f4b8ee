"""Compiled (numba) kernels for small graphs on the host CPU.

A transform called on one ``Data`` (PyG's ``pre_transform`` path), or on a training batch on
the CPU, does little maths: a 23-node molecule needs a ~40 us LAPACK ``eigh`` or a few tiny
matrix products. Done as batched torch operations, the same work costs ~100 tensor-op
dispatches of 3-10 us each, 20-50x the maths. Here every kernel is one compiled loop over the
graphs of a batch, on numpy views of the CPU tensors: per-graph cost follows the graph (no
padding to size buckets), and a whole dataset chunk costs one call as well.

Kernels start from :func:`simple_csr`, the undirected simple graph of the input in CSR form
(the same graph as :func:`graphpe.ops.graph.undirected_simple`: symmetrized, self loops
dropped, duplicates merged keeping the largest weight, and edges of weight 0 dropped, since
they connect nothing). They compute in float64 and give the results of the batched torch
kernels (``ops.eigen``, ``ops.propagate``, ``ops.curvature``) to rounding; the tests check
both paths against each other.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import llvmlite.binding as llvm
import numba
import numpy as np
import torch
from numba import types as nb_types
from numba.core import event as numba_event
from numba.extending import get_cython_function_address
from torch import Tensor

KERNELS = ("auto", "compiled", "tensor")
# Largest graph the compiled kernels take by default: their dense per-graph work (an n x n
# eigh or walk matrix) is the same as the tensor path's there, without the padding.
COMPILED_MAX_NODES = 1024
# Reassociation lets LLVM vectorize the dot products; no code here relies on IEEE order.
_FASTMATH = {"contract", "arcp", "reassoc", "nsz"}
# The fewest nodes a thread is given by run_over_graphs: below that, handing a chunk to a
# thread (tens of microseconds) costs more than it saves.
PARALLEL_MIN_NODES = 1024


class FirstCompileNotice(numba_event.Listener):
    """Says once per process, on ``logging.getLogger("graphpe")`` at WARNING (printed to
    stderr where logging is not set up), that numba is compiling a graphpe kernel because its
    disk cache holds no copy: the first call of an encoding in a fresh environment takes
    seconds to a minute, silently otherwise. Nothing is said when the kernels load from the
    cache. ``enabled = False`` silences it (``graphpe warmup``, which compiles on purpose)."""

    def __init__(self) -> None:
        self.enabled, self.said = True, False

    def on_start(self, event: numba_event.Event) -> None:
        if self.said or not self.enabled:
            return
        dispatcher = event.data["dispatcher"]
        if not getattr(dispatcher.py_func, "__module__", "").startswith("graphpe."):
            return
        self.said = True
        cache = getattr(getattr(dispatcher, "_cache", None), "_cache_path", None)
        logging.getLogger("graphpe").warning(
            "graphpe: compiling its CPU kernels (numba) on first use: seconds to a minute, "
            "once; later processes load them from numba's cache%s. `graphpe warmup` compiles "
            "them all ahead.", f" ({cache})" if cache else "")

    def on_end(self, event: numba_event.Event) -> None:
        pass


FIRST_COMPILE_NOTICE = FirstCompileNotice()
numba_event.register("numba:compile", FIRST_COMPILE_NOTICE)


def graph_chunks(ptr: np.ndarray, threads: int | None = None,
                 min_nodes: int | None = None) -> list[tuple[int, int]]:
    """Contiguous ranges ``[a, b)`` of the graphs of ``ptr``, one per thread, balanced by
    node count: at most ``threads`` (default ``torch.get_num_threads()``) ranges of at least
    ``min_nodes`` (default :data:`PARALLEL_MIN_NODES`) nodes each. One range outside the main
    thread (a caller's own worker threads, e.g. ``precompute(num_workers=...)``, are not split
    again)."""
    num_graphs = ptr.shape[0] - 1
    min_nodes = PARALLEL_MIN_NODES if min_nodes is None else min_nodes
    threads = torch.get_num_threads() if threads is None else threads
    if threading.current_thread() is not threading.main_thread():
        threads = 1
    count = min(threads, int(ptr[-1]) // max(min_nodes, 1)) if num_graphs else 1
    if count <= 1:
        return [(0, num_graphs)]
    cuts = np.searchsorted(ptr, ptr[-1] * np.arange(1, count) / count)
    bounds = [0, *sorted({int(c) for c in cuts if 0 < c < num_graphs}), num_graphs]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


_POOL: tuple[int, ThreadPoolExecutor] | None = None


def run_over_graphs(call: Callable[[int, int], object], chunks: list[tuple[int, int]]) -> None:
    """``call(a, b)`` for every range of :func:`graph_chunks`, in threads when there are
    several (the compiled kernels release the GIL, and each writes only its graphs' rows, so
    the result is the same as one call over all graphs). Each call repeats its kernel's
    batch-wide setup (degrees, operator values: one O(N + E) pass), small against the
    per-graph work it shares out, and done in parallel."""
    if len(chunks) == 1:
        call(*chunks[0])
        return
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():  # a forked child (DataLoader worker) has no
        _POOL = (os.getpid(), ThreadPoolExecutor(os.cpu_count() or 1))  # parent's threads
    for future in [_POOL[1].submit(call, a, b) for a, b in chunks]:
        future.result()



def _lapack(name: str, num_args: int) -> nb_types.ExternalFunction:
    """LAPACK routine ``name`` of scipy's Cython LAPACK, callable from compiled code (every
    argument a pointer, Fortran style). Bound by symbol name rather than as a ctypes pointer:
    a compiled function holding a ctypes pointer cannot be cached on disk, and would be
    recompiled in every process."""
    symbol = f"graphpe_{name}"
    llvm.add_symbol(symbol, get_cython_function_address("scipy.linalg.cython_lapack", name))
    return nb_types.ExternalFunction(symbol, nb_types.void(*[nb_types.voidptr] * num_args))


_dsytrd = _lapack("dsytrd", 10)  # uplo, n, a, lda, d, e, tau, work, lwork, info
# side, uplo, trans, m, n, a, lda, tau, c, ldc, work, lwork, info
_dormtr = _lapack("dormtr", 13)


class HostCSR(NamedTuple):
    """The undirected simple graph of a batch in CSR form (numpy, host memory): row ``i``'s
    neighbours are ``indices[indptr[i]:indptr[i + 1]]``, ascending, with ``weight`` (float64;
    1 for an unweighted graph). Self loops are not in the CSR; ``loops[i]`` is node ``i``'s
    self-loop weight (0 without one; duplicates merged by their largest weight), for the
    kernels whose operator keeps them (a random walk may stay on a self loop)."""

    indptr: np.ndarray
    indices: np.ndarray
    weight: np.ndarray
    loops: np.ndarray


def use_compiled(kernel: str, device: torch.device) -> bool:
    """Whether to take the compiled host path: ``auto`` takes it for CPU tensors."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if kernel == "compiled" and device.type != "cpu":
        raise ValueError(f"kernel='compiled' runs on CPU tensors, got a {device.type} tensor")
    return kernel == "compiled" or (kernel == "auto" and device.type == "cpu")


def use_host_kernels(*tensors: Tensor) -> bool:
    """Whether a layer's compiled host kernels (GINE's aggregation, GRIT's pair attention) can
    take ``tensors``: all on the CPU, the first float32 or float64 and every other floating
    tensor of its dtype, and not under ``torch.compile``'s tracing (which cannot see into
    them); otherwise the layer runs its torch formulation. Under ``torch.autocast`` the
    products come out in bfloat16/float16, so a layer that mixes them with float32 inputs
    takes the torch formulation, which autocast handles."""
    dtype = tensors[0].dtype
    return (not torch.compiler.is_compiling() and all(t.device.type == "cpu" for t in tensors)
            and dtype in (torch.float32, torch.float64)
            and all(t.dtype == dtype for t in tensors if t.is_floating_point()))


def host_array(t: Tensor, dtype: np.dtype | None = None) -> np.ndarray:
    """A numpy view of a CPU tensor (a copy only when ``dtype`` asks for one)."""
    t = t.detach()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: widened exactly
        t = t.float()
    a = t.numpy()
    return a if dtype is None else a.astype(dtype, copy=False)


def host_empty(shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """An uninitialized numpy array for a host kernel's output (wrap it with
    ``torch.from_numpy``).

    Allocated by numpy rather than torch on purpose: numpy advises the kernel to back large
    arrays with transparent huge pages, torch's and numba's own allocations get 4 KB pages, and
    the page faults of a freshly allocated output are most of its cost to write. Measured on
    this project's CPU: refilling a fresh 36 MB array took ~6 ms against ~22 ms. The first
    huge-page allocations of a process are slower than 4 KB pages (a 220 MB one took 100-400
    ms against ~90 ms), so this pays in loops that allocate the same sizes again (training
    steps), not in one-off outputs: RRWP's precompute output stays a torch allocation."""
    return np.empty(shape, dtype=dtype)


@numba.njit(cache=True, nogil=True)
def _rows_or_zero(src, index, bias, out):  # pragma: no cover - compiled
    width = src.shape[1]
    period = bias.shape[0]
    zero = src.dtype.type(0.0)
    for p in range(index.shape[0]):
        r = index[p]
        if r < 0:
            for c in range(width):
                out[p, c] = zero
        elif period == 0:
            for c in range(width):
                out[p, c] = src[r, c]
        else:
            b = r % period
            for c in range(width):
                out[p, c] = src[r, c] + bias[b, c]


def rows_or_zero(src: Tensor, index: Tensor, bias: Tensor | None = None) -> Tensor:
    """``out[p] = src[index[p]]``, or a zero row where ``index[p] < 0``: a CPU ``[P, width]``
    tensor from ``src [R, width]`` (float32 or float64) and int64 ``index [P]`` (entries in
    ``[-1, R)``, not checked: callers build them). With ``bias [k, width]``, source row ``r``
    gets ``bias[r % k]`` added (padding rows stay 0): the bias of the linear map whose output
    ``src`` is, viewed in rows of ``width`` (``k`` rows of it per output row of the map).

    A scatter into a zero-padded buffer (``new_zeros(...).index_copy_(0, rows, src)``) written
    as a gather, one pass over the output in order: the padded buffers of the bucketed
    attention take ~25 us this way against ~110 us for the scatter on a ZINC batch of 32
    (9,000 rows of 16 in a buffer of 11,500), where the scatter's writes jump between the
    heads' blocks."""
    src = src.detach().contiguous()
    dtype = src.numpy().dtype
    out = host_empty((index.shape[0], src.shape[1]), dtype)
    bias = (np.empty((0, src.shape[1]), dtype) if bias is None
            else bias.detach().to(src.dtype).contiguous().numpy())
    _rows_or_zero(src.numpy(), index.numpy(), bias, out)
    return torch.from_numpy(out)


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype of a floating torch dtype (float64 for those numpy lacks)."""
    return {torch.float32: np.float32, torch.float64: np.float64,
            torch.float16: np.float16}.get(dtype, np.float64)


def simple_csr(edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None = None) -> HostCSR:
    """The undirected simple graph of ``edge_index`` (CPU) as a :class:`HostCSR`."""
    ei = host_array(edge_index, np.int64)
    has_weight = edge_weight is not None
    w = host_array(edge_weight, np.float64) if has_weight else np.empty(0)
    indptr, indices, weight, loops = _simple_csr(ei[0], ei[1], w, has_weight, num_nodes)
    return HostCSR(indptr, indices, weight, loops)


@numba.njit(cache=True, nogil=True)
def _simple_csr(row, col, w, has_weight, num_nodes):  # pragma: no cover - compiled
    # counting sort by row, then a short insertion sort of each row by column (rows are
    # neighbourhoods: a few entries), merging duplicates with the largest weight
    num_edges = row.shape[0]
    counts = np.zeros(num_nodes + 1, dtype=np.int64)
    for e in range(num_edges):
        if row[e] != col[e]:
            counts[row[e] + 1] += 1
            counts[col[e] + 1] += 1
    for i in range(num_nodes):
        counts[i + 1] += counts[i]
    fill = counts[:-1].copy()
    nbr = np.empty(counts[num_nodes], dtype=np.int64)
    val = np.empty(counts[num_nodes])
    loops = np.zeros(num_nodes)
    for e in range(num_edges):
        r, c = row[e], col[e]
        if r == c:
            loops[r] = max(loops[r], w[e] if has_weight else 1.0)
        else:
            we = w[e] if has_weight else 1.0
            nbr[fill[r]] = c
            val[fill[r]] = we
            fill[r] += 1
            nbr[fill[c]] = r
            val[fill[c]] = we
            fill[c] += 1
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    out = 0
    for i in range(num_nodes):
        lo, hi = counts[i], counts[i + 1]
        for a in range(lo + 1, hi):  # insertion sort by column
            c, v = nbr[a], val[a]
            b = a - 1
            while b >= lo and nbr[b] > c:
                nbr[b + 1] = nbr[b]
                val[b + 1] = val[b]
                b -= 1
            nbr[b + 1] = c
            val[b + 1] = v
        start = out
        for a in range(lo, hi):
            if out > start and nbr[out - 1] == nbr[a]:
                if val[a] > val[out - 1]:
                    val[out - 1] = val[a]
            else:
                nbr[out] = nbr[a]
                val[out] = val[a]
                out += 1
        # an edge of weight 0 connects nothing (and adds nothing to any operator)
        kept = start
        for a in range(start, out):
            if val[a] > 0.0:
                nbr[kept] = nbr[a]
                val[kept] = val[a]
                kept += 1
        out = kept
        indptr[i + 1] = out
    return indptr, nbr[:out].copy(), val[:out].copy(), loops


@numba.njit(cache=True, nogil=True)
def _degrees(indptr, weight):  # pragma: no cover - compiled
    """Weighted degrees and ``D^-1/2`` (0 on isolated nodes) of a CSR graph."""
    n = indptr.shape[0] - 1
    deg = np.zeros(n)
    dis = np.zeros(n)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            deg[i] += weight[p]
        if deg[i] > 0:
            dis[i] = 1.0 / np.sqrt(deg[i])
    return deg, dis


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


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _landing_probs(indptr, indices, weight, loops, ptr, walk_length, max_nodes,
                   out):  # pragma: no cover - compiled
    # diag(P^t) = diag(S^t) for the symmetric S = D^-1/2 A D^-1/2 (P^t = D^-1/2 S^t D^1/2).
    # X = S^t is kept dense (n x n) and advanced by one sparse product per step, nnz * n
    # multiply-adds, against n^3 for a dense product. For t > h = ceil(T / 2) the diagonal is
    # read off lower powers, (S^(a+b))_ii = <row_i(S^a), row_i(S^b)> (S is symmetric), so only
    # h - 1 products are needed. Each power is its own contiguous n x n array (no aliasing
    # between the product and its input, so the inner loops vectorize).
    deg, _ = _degrees(indptr, weight)
    n_all = indptr.shape[0] - 1
    dis = np.zeros(n_all)
    diag = np.zeros(n_all)  # S_ii from the self loops
    for i in range(n_all):
        if deg[i] + loops[i] > 0:
            dis[i] = 1.0 / np.sqrt(deg[i] + loops[i])
            diag[i] = loops[i] * dis[i] * dis[i]
    num_graphs = ptr.shape[0] - 1
    half = (walk_length + 1) // 2
    values = np.empty(indices.shape[0])
    for i in range(n_all):
        for p in range(indptr[i], indptr[i + 1]):
            values[p] = dis[i] * weight[p] * dis[indices[p]]
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


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)
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


# ----------------------------------------------------------------------------- RRWP


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)
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


@numba.njit(cache=True, nogil=True, inline="always")
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


@numba.njit(cache=True, nogil=True)
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
    """An uninitialized int64 output written once (a transform's), allocated by torch: numpy's
    huge-page advice (:func:`host_empty`) stalls on memory compaction when such outputs pile
    up (a precompute's chunks: ~4x slower measured), and pays only for re-used sizes."""
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


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True, inline="always")
def csr_position(indptr, indices, u, v):  # pragma: no cover - compiled
    """Position of the entry ``(u, v)`` in the CSR (rows sorted; the entry must exist)."""
    lo, hi = indptr[u], indptr[u + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)
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


# ----------------------------------------------------------------------------- LapPE

# Up to this size the compiled solver below (its own Householder reduction) is fastest: LAPACK's
# fixed cost per call dominates small matrices (a full syevd of a 23-node molecule's Laplacian
# ~35 us, the compiled solver ~20). Above it LAPACK's blocked dsytrd reduction, called from
# compiled code, with bisection for the wanted eigenvalues (:func:`_reduced_eigenpairs`) wins
# (molecule-like graphs on this project's CPU, per graph, 16 pairs: 64 nodes 147 us compiled vs
# 170, 72 nodes 184 vs 177, 96 nodes 365 vs 284; 8 pairs cross over near 48 nodes).
SMALL_EIGH_MAX = 72


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _tridiagonalize(a, n, d, e, hs):  # pragma: no cover - compiled
    """Householder reduction of the symmetric a (lower triangle read) to tridiagonal form;
    reflector i is a[i, :i] with hs[i] (identity where hs[i] == 0)."""
    for i in range(n - 1, 0, -1):
        l = i - 1
        h = 0.0
        scale = 0.0
        if l > 0:
            for k in range(l + 1):
                scale += abs(a[i, k])
            if scale == 0.0:
                e[i] = a[i, l]
            else:
                inv_scale = 1.0 / scale
                for k in range(l + 1):
                    a[i, k] *= inv_scale
                    h += a[i, k] * a[i, k]
                f = a[i, l]
                g = -np.sqrt(h) if f >= 0.0 else np.sqrt(h)
                e[i] = scale * g
                h -= f * g
                a[i, l] = f - g
                f = 0.0
                for j in range(l + 1):
                    g = 0.0
                    for k in range(j + 1):
                        g += a[j, k] * a[i, k]
                    for k in range(j + 1, l + 1):
                        g += a[k, j] * a[i, k]
                    e[j] = g / h
                    f += e[j] * a[i, j]
                hh = f / (h + h)
                for j in range(l + 1):
                    f = a[i, j]
                    g = e[j] - hh * f
                    e[j] = g
                    for k in range(j + 1):
                        a[j, k] -= f * e[k] + g * a[i, k]
        else:
            e[i] = a[i, l]
        hs[i] = h
    hs[0] = 0.0
    e[0] = 0.0
    for i in range(n):
        d[i] = a[i, i]

@numba.njit(cache=True, nogil=True, inline="always")
def _ql_advance(w, off, n, l, m, i, phase, s, c, p, g, it):  # pragma: no cover - compiled
    """One step of the implicit QL iteration for the eigenvalues of a symmetric tridiagonal
    matrix (diagonal ``w``, off-diagonal ``off[i]`` between ``i`` and ``i + 1``; both
    overwritten; Numerical Recipes' ``tqli`` without vectors) as a state machine (``phase``
    0: look for the next unreduced block at ``l``, 1: one rotation of a sweep, 2: done), so
    that two independent matrices can be advanced in turns (see :func:`_ql_pair`)."""
    if phase == 0:
        if l >= n:
            return l, m, i, 2, s, c, p, g, it
        m = l
        while m < n - 1:
            dd = abs(w[m]) + abs(w[m + 1])
            if abs(off[m]) <= 1e-300 + 2.220446049250313e-16 * dd:
                break
            m += 1
        if m == l or it >= 60:  # converged (or given up): next eigenvalue
            return l + 1, m, i, 0, s, c, p, g, 0
        g = (w[l + 1] - w[l]) / (2.0 * off[l])
        r = np.sqrt(g * g + 1.0)
        g = w[m] - w[l] + off[l] / (g + (r if g >= 0 else -r))
        return l, m, m - 1, 1, 1.0, 1.0, 0.0, g, it + 1
    if phase == 1:
        f = s * off[i]
        b = c * off[i]
        r = np.sqrt(f * f + g * g)
        off[i + 1] = r
        if r == 0.0:
            w[i + 1] -= p
            off[m] = 0.0
            return l, m, i, 0, s, c, p, g, it
        inv = 1.0 / r
        s = f * inv
        c = g * inv
        g = w[i + 1] - p
        r = (w[i] - g) * s + 2.0 * c * b
        p = s * r
        w[i + 1] = g + p
        g = c * r - b
        if i == l:  # sweep done
            w[l] -= p
            off[l] = g
            off[m] = 0.0
            return l, m, i, 0, s, c, p, g, it
        return l, m, i - 1, 1, s, c, p, g, it
    return l, m, i, phase, s, c, p, g, it


@numba.njit(cache=True, nogil=True)
def _ql_setup(d, e, n, w, off):  # pragma: no cover - compiled
    for i in range(n):
        w[i] = d[i]
    for i in range(1, n):
        off[i - 1] = e[i]
    if n > 0:
        off[n - 1] = 0.0


@numba.njit(cache=True, nogil=True)
def _ql_pair(w1, off1, n1, w2, off2, n2):  # pragma: no cover - compiled
    """Eigenvalues (in place, unsorted) of two independent tridiagonal matrices, their QL
    steps taken in turns: a QL sweep is one long chain of dependent square roots and
    divisions, so a single matrix leaves the core idle for most of each step's latency, and
    two interleaved chains run in about the time of one."""
    l1, m1, i1, ph1, s1, c1, p1, g1, it1 = 0, 0, 0, 0, 1.0, 1.0, 0.0, 0.0, 0
    l2, m2, i2, ph2, s2, c2, p2, g2, it2 = 0, 0, 0, 0, 1.0, 1.0, 0.0, 0.0, 0
    while ph1 != 2 or ph2 != 2:
        l1, m1, i1, ph1, s1, c1, p1, g1, it1 = _ql_advance(
            w1, off1, n1, l1, m1, i1, ph1, s1, c1, p1, g1, it1)
        l2, m2, i2, ph2, s2, c2, p2, g2, it2 = _ql_advance(
            w2, off2, n2, l2, m2, i2, ph2, s2, c2, p2, g2, it2)


@numba.njit(cache=True, nogil=True)
def _tridiag_factor(d, e, n, lam, dl, dm, du, du2, piv, tiny):  # pragma: no cover - compiled
    """LU factors with partial pivoting of ``T - lam I`` (LAPACK's dlagtf), tiny pivots
    replaced by ``tiny`` so that inverse iteration at an exact eigenvalue stays finite."""
    for i in range(n):
        dm[i] = d[i] - lam
    for i in range(n - 1):
        du[i] = e[i + 1]
        dl[i] = e[i + 1]
        du2[i] = 0.0
    for i in range(n - 1):
        if abs(dm[i]) >= abs(dl[i]):
            piv[i] = 0.0
            if dm[i] == 0.0:
                dm[i] = tiny
            mult = dl[i] / dm[i]
            dl[i] = mult
            dm[i + 1] -= mult * du[i]
        else:
            piv[i] = 1.0
            mult = dm[i] / dl[i]
            dm[i] = dl[i]
            dl[i] = mult
            t = du[i]
            du[i] = dm[i + 1]
            dm[i + 1] = t - mult * dm[i + 1]
            if i < n - 2:
                du2[i] = du[i + 1]
                du[i + 1] = -mult * du[i + 1]
    for i in range(n):
        if abs(dm[i]) < tiny:
            dm[i] = tiny if dm[i] >= 0 else -tiny
        dm[i] = 1.0 / dm[i]  # the solves multiply by reciprocals (no division chain)


@numba.njit(cache=True, nogil=True)
def _tridiag_solve(n, dl, dm, du, du2, piv, x):  # pragma: no cover - compiled
    """``x <- (T - lam I)^-1 x`` from the factors of :func:`_tridiag_factor` (``dm`` holds
    the pivots' reciprocals)."""
    for i in range(n - 1):
        if piv[i] == 0:
            x[i + 1] -= dl[i] * x[i]
        else:
            t = x[i]
            x[i] = x[i + 1]
            x[i + 1] = t - dl[i] * x[i + 1]
    x[n - 1] *= dm[n - 1]
    if n > 1:
        x[n - 2] = (x[n - 2] - du[n - 2] * x[n - 1]) * dm[n - 2]
    for i in range(n - 3, -1, -1):
        x[i] = (x[i] - du[i] * x[i + 1] - du2[i] * x[i + 2]) * dm[i]


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _small_eigh(a, n, first, count, w, v, work):  # pragma: no cover - compiled
    """Eigenvalues (all, ascending, into ``w[:n]``) and the eigenvectors ``first`` to
    ``first + count - 1`` (columns of ``v[:n, :count]``) of the symmetric ``a[:n, :n]``
    (lower triangle read, destroyed); ``work`` is ``[12, >= n + 1]`` scratch.

    The matrix is scaled to unit largest entry; Householder tridiagonalization without forming
    Q; the tridiagonal matrix is split where an off-diagonal entry is below ``eps ||T||``
    (disconnected graphs split exactly), all eigenvalues of each block by implicit QL; the
    wanted eigenvectors by inverse iteration on their own block (zero elsewhere: a component's
    vector has exact zeros off the component), two solves from a fixed start; eigenvalues of
    one block closer than ``1e-3 ||T||`` get shifts at least ``10 eps ||T||`` apart and
    vectors orthogonalized against each other, as LAPACK's ``dstein`` does; finally the
    reflectors are applied to those vectors only. For a 23-node molecule that is ~n^3 +
    2 n^2 k flops against LAPACK's full ``syevd``, and no library call overhead."""
    scale, tnorm = _eigh_prepare(a, n, work)
    _ql_setup(work[0], work[1], n, w, work[3])
    _ql_pair(w, work[3], n, w, work[3], 0)
    _eigh_vectors(a, n, first, count, w, v, work, scale, tnorm)


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _eigh_prepare(a, n, work):  # pragma: no cover - compiled
    """First stage of :func:`_small_eigh`: scale, tridiagonalize, split into unreduced blocks
    (off-diagonal entries below ``eps ||T||`` set to 0, ``work[10]`` the block start of each
    position); returns ``(scale, ||T||)``. The QL iteration never crosses a zero off-diagonal,
    so each eigenvalue stays at a position of its own block."""
    d, e, hs = work[0], work[1], work[2]
    block_of = work[10]
    scale = _unit_scale(a, n)
    _tridiagonalize(a, n, d, e, hs)
    return scale, _split_blocks(n, d, e, block_of)


@numba.njit(cache=True, nogil=True)
def _unit_scale(a, n):  # pragma: no cover - compiled
    """Scale the lower triangle of ``a`` to unit largest entry; returns the factor."""
    scale = 0.0
    for i in range(n):
        for j in range(i + 1):
            scale = max(scale, abs(a[i, j]))
    if scale == 0.0:
        scale = 1.0
    if scale != 1.0:  # (a normalized Laplacian's largest entry is already 1)
        inv_scale = 1.0 / scale
        for i in range(n):
            for j in range(i + 1):
                a[i, j] *= inv_scale
    return scale


@numba.njit(cache=True, nogil=True)
def _split_blocks(n, d, e, block_of):  # pragma: no cover - compiled
    """Zero the off-diagonal entries ``e[i]`` (between ``i - 1`` and ``i``) below
    ``eps ||T||`` and record each position's block start; returns ``||T||`` (at least 1: the
    matrix was scaled to unit largest entry)."""
    tnorm = 1.0  # >= ||A||_2 / max|a_ij| = 1 after scaling (and 1 for a zero matrix)
    for i in range(n):
        tnorm = max(tnorm, abs(d[i]) + abs(e[i]) + (abs(e[i + 1]) if i + 1 < n else 0.0))
    eps = 2.220446049250313e-16
    start = 0
    for i in range(n):
        if i > 0 and abs(e[i]) <= eps * tnorm:
            e[i] = 0.0
            start = i
        block_of[i] = start
    return tnorm


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _eigh_vectors(a, n, first, count, w, v, work, scale, tnorm):  # pragma: no cover
    """Last stage of :func:`_small_eigh`: sort the eigenvalues ``w[:n]`` (with their blocks),
    inverse iteration for the wanted ones, back-transformation, eigenvalues rescaled."""
    _tridiagonal_vectors(n, first, count, w, v, work, scale, tnorm)
    hs, x = work[2], work[8]
    # back-transform the tridiagonal eigenvectors: v <- P_{n-1} ... P_1 v, all columns at once
    # (rows of v are contiguous: the inner loops run over the wanted columns)
    g = x[:count]
    for i in range(1, n):
        h = hs[i]
        if h == 0.0:
            continue
        for c in range(count):
            g[c] = 0.0
        for k in range(i):
            aik = a[i, k]
            for c in range(count):
                g[c] += aik * v[k, c]
        inv_h = 1.0 / h
        for c in range(count):
            g[c] *= inv_h
        for k in range(i):
            aik = a[i, k]
            for c in range(count):
                v[k, c] -= g[c] * aik


@numba.njit(cache=True, nogil=True)
def _tridiagonal_vectors(n, first, count, w, v, work, scale, tnorm):  # pragma: no cover
    """Sort the eigenvalues ``w[:n]`` of the tridiagonal matrix in ``work`` (with their
    blocks), compute the wanted eigenvectors ``first..first+count-1`` of the tridiagonal
    matrix into ``v[:n, :count]`` (:func:`_inverse_iteration`), and rescale ``w``."""
    order = np.argsort(w[:n])
    sorted_w = w[:n][order]
    sorted_block = work[10][:n][order]
    _inverse_iteration(n, first, sorted_w[first : first + count],
                       sorted_block[first : first + count], count, v, work, tnorm)
    for i in range(n):
        w[i] = sorted_w[i] * scale


@numba.njit(cache=True, nogil=True, inline="always")
def _block_end(block_of, b0, n):  # pragma: no cover - compiled
    """One past the last position of the unreduced block starting at ``b0`` (``block_of``
    as written by :func:`_split_blocks`)."""
    b1 = b0 + 1
    while b1 < n and block_of[b1] == b0:
        b1 += 1
    return b1


@numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)
def _inverse_iteration(n, first, lams, blocks, count, v, work, tnorm):  # pragma: no cover
    """Eigenvectors of the (split) tridiagonal matrix in ``work`` for the ascending eigenvalues
    ``lams[:count]`` (numbers ``first..`` among all), each in the unreduced block starting at
    ``blocks[c]``, into the columns of ``v[:n, :count]``: two solves from a fixed pseudo-random
    start on the eigenvalue's own block (zero elsewhere); eigenvalues of one block closer than
    ``1e-3 ||T||`` get shifts at least ``10 eps ||T||`` apart and vectors orthogonalized against
    each other, as LAPACK's ``dstein`` does."""
    d, e = work[0], work[1]
    dl, dm, du, du2, x, piv = work[4], work[5], work[6], work[7], work[8], work[9]
    block_of, shifts = work[10], work[11]
    eps = 2.220446049250313e-16
    ortol = 1e-3 * tnorm
    for c in range(count):
        lam = lams[c]
        b0 = int(blocks[c])
        b1 = _block_end(block_of, b0, n)
        nb = b1 - b0
        shift = lam
        for q in range(c):  # keep shifts apart within a cluster of this block
            if blocks[q] == b0 and lam - lams[q] <= ortol:
                shift = max(shift, shifts[q] + 10.0 * eps * tnorm)
        shifts[c] = shift
        state = np.uint32(12345 + 7919 * (first + c))  # a fixed pseudo-random start
        for i in range(n):
            x[i] = 0.0
        for i in range(b0, b1):
            state = state * np.uint32(1664525) + np.uint32(1013904223)
            x[i] = state * (1.0 / 4294967296.0) - 0.5
        _tridiag_factor(d[b0:b1], e[b0:b1], nb, shift, dl, dm, du, du2, piv, eps * tnorm)
        for _ in range(2):
            _tridiag_solve(nb, dl, dm, du, du2, piv, x[b0:b1])
            for q in range(c):  # orthogonalize within the cluster
                if blocks[q] == b0 and lam - lams[q] <= ortol:
                    dot = 0.0
                    for i in range(b0, b1):
                        dot += v[i, q] * x[i]
                    for i in range(b0, b1):
                        x[i] -= dot * v[i, q]
            nrm = 0.0
            for i in range(b0, b1):
                nrm += x[i] * x[i]
            inv = 1.0 / np.sqrt(nrm)
            for i in range(b0, b1):
                x[i] *= inv
        for i in range(n):
            v[i, c] = x[i]


# Bisection stops at this width (times ||T||), the Rayleigh quotient of the inverse-iteration
# vector then gives the eigenvalue to rounding: 35 halvings instead of 52. The shift error it
# leaves is far below the gaps (>= 1e-3 ||T||) outside which vectors are not orthogonalized, so
# two inverse-iteration solves still converge.
BISECTION_TOL = 1e-10


@numba.njit(cache=True, nogil=True)
def _smallest_by_bisection(n, d, e, block_of, want, tol, lams, blocks, scratch,
                           counts):  # pragma: no cover - compiled
    """The ``want`` smallest eigenvalues of the split tridiagonal matrix ``(d, e)`` (layout of
    :func:`_split_blocks`), ascending, into ``lams[:want]`` with their block starts in
    ``blocks``: per unreduced block its ``min(want, size)`` smallest by bisection on Sturm
    counts (LAPACK's ``dstebz`` rule: the count of negative pivots of ``T - x I`` is the number
    of eigenvalues below ``x``), to within ``tol``, then the smallest ``want`` of all blocks.

    All of a block's wanted eigenvalues are bisected together, one lane each: a Sturm count is
    a chain of dependent divisions, and the lanes' chains are independent, so the CPU overlaps
    them (and vectorizes the lane loop) where QL for every eigenvalue is one long chain of
    square roots and divisions. For 17 of 150 eigenvalues this is ~3x cheaper than QL.
    ``scratch``: ``[4, >= n]`` floats; ``counts``: ``>= n`` ints."""
    eps = 2.220446049250313e-16
    pivmin = 2.2250738585072014e-308 * 4.0  # > 0: a zero pivot counts as negative
    atol = max(tol, 2.0 * eps)
    lo, hi, mid, q = scratch[0], scratch[1], scratch[2], scratch[3]
    total = 0
    b0 = 0
    while b0 < n:
        b1 = _block_end(block_of, b0, n)
        r = min(want, b1 - b0)
        glo, ghi = np.inf, -np.inf  # Gershgorin bounds of the block
        for i in range(b0, b1):
            radius = (abs(e[i]) if i > b0 else 0.0) + (abs(e[i + 1]) if i + 1 < b1 else 0.0)
            glo = min(glo, d[i] - radius)
            ghi = max(ghi, d[i] + radius)
        glo -= atol
        ghi += atol
        for j in range(r):
            lo[total + j] = glo
            hi[total + j] = ghi
        lanes_lo = lo[total : total + r]
        lanes_hi = hi[total : total + r]
        lanes_mid = mid[:r]
        lanes_q = q[:r]
        lanes_count = counts[:r]
        for _ in range(128):  # ~35 halvings reach 1e-10 ||T|| from the Gershgorin interval
            wide = False
            for j in range(r):
                width = lanes_hi[j] - lanes_lo[j]
                if width > atol + 2.0 * eps * max(abs(lanes_lo[j]), abs(lanes_hi[j])):
                    wide = True
                lanes_mid[j] = 0.5 * (lanes_lo[j] + lanes_hi[j])
            if not wide:
                break
            for j in range(r):
                lanes_q[j] = 1.0
                lanes_count[j] = 0
            for i in range(b0, b1):
                e2 = e[i] * e[i] if i > b0 else 0.0
                di = d[i]
                for j in range(r):  # independent lanes: vectorized
                    t = di - lanes_mid[j] - e2 / lanes_q[j]
                    negative = t <= pivmin
                    lanes_q[j] = min(t, -pivmin) if negative else t
                    lanes_count[j] += 1 if negative else 0
            for j in range(r):  # eigenvalue j of the block lies below mid iff count > j
                if lanes_count[j] > j:
                    lanes_hi[j] = lanes_mid[j]
                else:
                    lanes_lo[j] = lanes_mid[j]
        for j in range(r):
            lams[total + j] = 0.5 * (lanes_lo[j] + lanes_hi[j])
            blocks[total + j] = b0
        total += r
        b0 = b1
    order = np.argsort(lams[:total])
    found = lams[:total][order]
    found_blocks = blocks[:total][order]
    for j in range(want):
        lams[j] = found[j]
        blocks[j] = found_blocks[j]


@numba.njit(cache=True, nogil=True)
def _reduced_eigenpairs(indptr, indices, weight, ptr, graphs, k, norm, keep_trivial, sign,
                        flips, sign_tol, eigvals, eigvecs, mask):  # pragma: no cover - compiled
    """The graphs ``graphs`` (above :data:`SMALL_EIGH_MAX` nodes): LAPACK's blocked ``dsytrd``
    reduction to tridiagonal form, the wanted eigenvalues by bisection
    (:func:`_smallest_by_bisection`; QL for all of them where the wanted are more than a
    quarter), inverse iteration for their vectors, LAPACK's ``dormtr`` back-transformation
    (blocked: ~1.2x faster than the compiled loop of :func:`_eigh_vectors` at 150 nodes)."""
    deg, dis = _degrees(indptr, weight)
    nmax = 1
    for g in graphs:  # compiled: the largest graph sizes the scratch
        nmax = max(nmax, ptr[g + 1] - ptr[g])
    kk = max(k, 1)
    lap_store = np.empty(nmax * nmax)
    parent = np.empty(nmax, dtype=np.int64)
    work = np.empty((12, nmax + 2))
    w = np.empty(nmax + 1)
    lams = np.empty(nmax + 1)
    blocks = np.empty(nmax + 1)
    scratch = np.empty((4, nmax + 1))
    counts = np.empty(nmax + 1, dtype=np.int64)
    vt = np.empty((kk, nmax))  # column-major n x count for dormtr: row c is vector c
    diag = np.empty(nmax)
    sub = np.empty(nmax)
    tau = np.empty(nmax)
    vec = np.empty(nmax)
    # dsytrd: n x 32 (its block size); dormtr: count x 64 + 65 x 64 (its T factor)
    lapack_work = np.empty(64 * max(nmax, kk) + 65 * 64)
    ints = np.zeros(16, dtype=np.int32)
    # the C-order lower triangle that _fill_laplacian and _unit_scale write is, read column
    # major as LAPACK does, the upper triangle: hence uplo 'U'
    chars = np.array([ord("U"), ord("L"), ord("N")], dtype=np.uint8)
    for g in graphs:  # compiled: one solve per graph at its own size (the kernel's design)
        s = ptr[g]
        n = ptr[g + 1] - s
        skip = 0 if keep_trivial else _component_count(indptr, indices, s, n, parent)
        m = min(k, n - skip)
        if m <= 0:
            continue
        lap = _fill_laplacian(indptr, indices, weight, deg, dis, s, n, norm,
                              lap_store[: n * n].reshape((n, n)))
        scale = _unit_scale(lap, n)
        ints[0], ints[1], ints[2] = n, n, lapack_work.shape[0]
        _dsytrd(chars[0:].ctypes, ints[0:].ctypes, lap.ctypes, ints[1:].ctypes, diag.ctypes,
                sub.ctypes, tau.ctypes, lapack_work.ctypes, ints[2:].ctypes, ints[3:].ctypes)
        if ints[3] != 0:
            raise np.linalg.LinAlgError("LAPACK dsytrd failed")
        d, e = work[0], work[1]
        for i in range(n):
            d[i] = diag[i]
            e[i] = sub[i - 1] if i > 0 else 0.0
        tnorm = _split_blocks(n, d, e, work[10])
        v = vt[:m, :n].T  # v[i, c] is vt[c, i]
        if 4 * (skip + m) <= n:
            _smallest_by_bisection(n, d, e, work[10], skip + m, BISECTION_TOL * tnorm, lams,
                                   blocks, scratch, counts)
            _inverse_iteration(n, skip, lams[skip : skip + m], blocks[skip : skip + m], m, v,
                               work, tnorm)
            for c in range(m):  # the Rayleigh quotient: accurate to rounding
                b0 = int(blocks[skip + c])
                b1 = _block_end(work[10], b0, n)
                rq = d[b0] * v[b0, c] * v[b0, c]
                for i in range(b0 + 1, b1):
                    rq += v[i, c] * (d[i] * v[i, c] + 2.0 * e[i] * v[i - 1, c])
                w[c] = rq * scale
        else:
            _ql_setup(d, e, n, w, work[3])
            _ql_pair(w, work[3], n, w, work[3], 0)
            _tridiagonal_vectors(n, skip, m, w, v, work, scale, tnorm)
            for c in range(m):
                w[c] = w[skip + c]
        ints[4], ints[5], ints[6], ints[7], ints[8] = n, m, n, nmax, lapack_work.shape[0]
        _dormtr(chars[1:].ctypes, chars[0:].ctypes, chars[2:].ctypes, ints[4:].ctypes,
                ints[5:].ctypes, lap.ctypes, ints[6:].ctypes, tau.ctypes, vt.ctypes,
                ints[7:].ctypes, lapack_work.ctypes, ints[8:].ctypes, ints[9:].ctypes)
        if ints[9] != 0:
            raise np.linalg.LinAlgError("LAPACK dormtr failed")
        _store_pairs(g, s, n, w[:m], v, m, dis, norm, sign, flips, sign_tol, eigvals, eigvecs,
                     mask, vec)


NORMALIZATION_CODES = {"sym": 0, "rw": 1, "none": 2}
SIGN_CODES = {"canonical": 0, "random": 1, "none": 2}


def laplacian_eigenpairs_host(
    csr: HostCSR,
    ptr: np.ndarray,
    k: int,
    normalization: str = "sym",
    keep_trivial: bool = False,
    sign: str = "canonical",
    flips: np.ndarray | None = None,
    max_nodes: int = 384,
    pad_value: float = 0.0,
    dtype: np.dtype = np.float64,
    sign_tol: float = 1e-6,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """The ``k`` smallest (non-trivial) Laplacian eigenpairs of every graph of at most
    ``max_nodes`` nodes: ``(eigvals [G, k], eigvecs [N, k], mask [G, k], larger graphs)``,
    eigenvalues and vectors in ``dtype``, padding as :func:`graphpe.ops.eigen.
    laplacian_eigenpairs` (``pad_value``, zero vectors, mask False), and the ids of the graphs
    above ``max_nodes``, left for the caller's sparse solver.

    One solve per graph, of exactly its size (:func:`_small_eigh` up to
    :data:`SMALL_EIGH_MAX` nodes; above, :func:`_reduced_eigenpairs`), the trivial pairs (one per
    connected component) skipped unless ``keep_trivial``, ``rw`` vectors rescaled by
    ``D^-1/2`` to unit norm, signs as :func:`graphpe.ops.eigen.canonical_signs` (for
    ``random``, canonical signs times ``flips`` ``[G, k]``)."""
    num_graphs, num_nodes = ptr.shape[0] - 1, csr.indptr.shape[0] - 1
    eigvals = np.full((num_graphs, k), pad_value, dtype=dtype)
    eigvecs = np.zeros((num_nodes, k), dtype=dtype)
    mask = np.zeros((num_graphs, k), dtype=np.bool_)
    flips = _NO_FLIPS if flips is None else flips
    norm, sign_code = NORMALIZATION_CODES[normalization], SIGN_CODES[sign]
    per_graph_flips = sign_code == SIGN_CODES["random"]  # [G, k]: each chunk its rows
    run_over_graphs(
        lambda a, b: _laplacian_eigenpairs(
            csr.indptr, csr.indices, csr.weight, ptr[a : b + 1], k, norm, keep_trivial,
            sign_code, flips[a:b] if per_graph_flips else flips,
            min(max_nodes, SMALL_EIGH_MAX), sign_tol, eigvals[a:b], eigvecs, mask[a:b]),
        graph_chunks(ptr))
    sizes = ptr[1:] - ptr[:-1]
    biggest = int(sizes.max()) if num_graphs else 0
    if biggest <= min(SMALL_EIGH_MAX, max_nodes):
        return eigvals, eigvecs, mask, []
    mid = np.flatnonzero((sizes > SMALL_EIGH_MAX) & (sizes <= max_nodes))
    _reduced_eigenpairs(csr.indptr, csr.indices, csr.weight, ptr, mid, k, norm, keep_trivial,
                        sign_code, flips, sign_tol, eigvals, eigvecs, mask)
    return eigvals, eigvecs, mask, np.flatnonzero(sizes > max_nodes).tolist()


_NO_FLIPS = np.ones((1, 1))


@numba.njit(cache=True, nogil=True)
def _find(parent, i):  # pragma: no cover - compiled
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@numba.njit(cache=True, nogil=True)
def _component_count(indptr, indices, s, n, parent):  # pragma: no cover - compiled
    """Connected components of nodes ``s..s+n-1`` (union-find over the CSR rows)."""
    for i in range(n):
        parent[i] = i
    count = n
    for i in range(n):
        for p in range(indptr[s + i], indptr[s + i + 1]):
            a = _find(parent, i)
            b = _find(parent, indices[p] - s)
            if a != b:
                parent[max(a, b)] = min(a, b)
                count -= 1
    return count


@numba.njit(cache=True, nogil=True)
def _canonical_sign(v, n, tol):  # pragma: no cover - compiled
    # the rule of ops.eigen.canonical_signs: sign of sum v^3; where that is within tol of 0,
    # the sign of the first entry of largest magnitude (ties within tol)
    third = 0.0
    max_mag = 0.0
    for i in range(n):
        third += v[i] ** 3
        max_mag = max(max_mag, abs(v[i]))
    scale = max(max_mag**3, 1e-30)
    if abs(third) > tol * scale:
        return 1.0 if third > 0 else -1.0
    for i in range(n):
        if abs(v[i]) >= max_mag - tol:
            if v[i] < 0:
                return -1.0
            return 1.0
    return 1.0


@numba.njit(cache=True, nogil=True)
def _fill_laplacian(indptr, indices, weight, deg, dis, s, n, norm, lap):  # pragma: no cover
    """The dense Laplacian of nodes ``s..s+n-1`` (one graph of the batch), written into
    ``lap`` (``[n, n]``, overwritten)."""
    lap[:, :] = 0.0
    for i in range(n):
        if norm == 2:
            lap[i, i] = deg[s + i]
        elif deg[s + i] > 0:
            lap[i, i] = 1.0  # Chung's convention: 0 on an isolated node's diagonal
        for p in range(indptr[s + i], indptr[s + i + 1]):
            j = indices[p] - s
            if norm == 2:
                lap[i, j] = -weight[p]
            else:
                lap[i, j] = -dis[s + i] * weight[p] * dis[s + j]
    return lap


@numba.njit(cache=True, nogil=True)
def _store_pairs(g, s, n, vals, vecs, m, dis, norm, sign, flips, sign_tol, eigvals, eigvecs,
                 mask, vec):  # pragma: no cover - compiled
    """Write graph ``g``'s ``m`` pairs (``vecs`` columns are the vectors): ``L_rw``
    rescaling, signs, outputs (``vec``: scratch of >= n entries)."""
    for c in range(m):
        eigvals[g, c] = vals[c]
        mask[g, c] = True
        for i in range(n):
            vec[i] = vecs[i, c]
        if norm == 1:  # L_rw eigenvector D^-1/2 u (1 on isolated nodes), back to unit norm
            nrm = 0.0
            for i in range(n):
                if dis[s + i] > 0:
                    vec[i] *= dis[s + i]
                nrm += vec[i] * vec[i]
            nrm = max(np.sqrt(nrm), 1e-30)
            for i in range(n):
                vec[i] /= nrm
        f = 1.0
        if sign == 0:
            f = _canonical_sign(vec, n, sign_tol)
        elif sign == 1:  # random flips of the canonical orientation
            f = _canonical_sign(vec, n, sign_tol) * flips[g, c]
        for i in range(n):
            eigvecs[s + i, c] = f * vec[i]


@numba.njit(cache=True, nogil=True)
def _laplacian_eigenpairs(indptr, indices, weight, ptr, k, norm, keep_trivial, sign, flips,
                          max_nodes, sign_tol, eigvals, eigvecs, mask):  # pragma: no cover
    """Graphs up to ``max_nodes`` nodes (larger ones are left alone), solved two at a time:
    their QL iterations interleaved (:func:`_ql_pair`)."""
    num_graphs = ptr.shape[0] - 1
    deg, dis = _degrees(indptr, weight)
    parent = np.empty(max(max_nodes, 1), dtype=np.int64)
    vec = np.empty(max(max_nodes, 1))
    # two solver slots: graph, first node, size, pairs skipped, pairs kept, scale, ||T||
    w = np.empty((2, max_nodes + 1))
    u = np.empty((2, max_nodes + 1, max(k, 1)))
    work = np.empty((2, 12, max_nodes + 2))
    lap_store = np.empty((2, max_nodes * max_nodes))
    slot_graph = np.zeros(2, dtype=np.int64)
    slot_info = np.zeros((2, 4), dtype=np.int64)  # s, n, skip, m
    slot_norms = np.zeros((2, 2))  # scale, ||T||
    filled = 0
    for g in range(num_graphs + 1):  # compiled; the extra pass flushes a half-filled pair
        if g < num_graphs:
            s = ptr[g]
            n = ptr[g + 1] - s
            if n == 0 or n > max_nodes:
                continue
            skip = 0 if keep_trivial else _component_count(indptr, indices, s, n, parent)
            m = min(k, n - skip)
            if m <= 0:
                continue
            lap = _fill_laplacian(indptr, indices, weight, deg, dis, s, n, norm,
                                  lap_store[filled, : n * n].reshape((n, n)))
            scale, tnorm = _eigh_prepare(lap, n, work[filled])
            _ql_setup(work[filled, 0], work[filled, 1], n, w[filled], work[filled, 3])
            slot_graph[filled] = g
            slot_info[filled, 0], slot_info[filled, 1] = s, n
            slot_info[filled, 2], slot_info[filled, 3] = skip, m
            slot_norms[filled, 0], slot_norms[filled, 1] = scale, tnorm
            filled += 1
            if filled < 2:
                continue
        elif filled == 0:
            break
        n2 = slot_info[1, 1] if filled == 2 else 0
        _ql_pair(w[0], work[0, 3], slot_info[0, 1], w[1], work[1, 3], n2)
        for q in range(filled):
            s, n, skip, m = slot_info[q, 0], slot_info[q, 1], slot_info[q, 2], slot_info[q, 3]
            lap = lap_store[q, : n * n].reshape((n, n))
            _eigh_vectors(lap, n, skip, m, w[q], u[q], work[q], slot_norms[q, 0],
                          slot_norms[q, 1])
            _store_pairs(slot_graph[q], s, n, w[q, skip : skip + m], u[q], m, dis, norm,
                         sign, flips, sign_tol, eigvals, eigvecs, mask, vec)
        filled = 0


# ----------------------------------------------------------------------------- RFP

OPERATOR_CODES = {"adj": 0, "gcn": 1, "rw": 2, "lap_shift": 3}


def propagate_host(csr: HostCSR, ptr: np.ndarray, operator: str, x0: np.ndarray, steps: int,
                   normalization: str, rank_tol: float = 1e-6,
                   out_dtype: np.dtype | type = np.float64) -> np.ndarray:
    """Random Feature Propagation of every graph: ``x0`` ``[N, draws, d]`` (float64) ->
    trajectory ``[N, draws, steps + 1, d]``, as :func:`graphpe.ops.propagate.propagate` with
    the operator of :func:`graphpe.ops.propagate.propagation_operator`. The iterates are
    float64; ``out_dtype`` (float64 or float32) is only how they are stored, so a float32
    trajectory needs no second conversion pass over the whole output.

    ``qr`` orthonormalizes each graph's ``[n, d]`` block per draw by Gram-Schmidt done twice
    (numerically orthogonal), ``diag(R) >= 0``; a column whose remainder after projecting out
    the earlier ones has norm below ``rank_tol`` times the block's largest column norm lies in
    their span (numerical rank) and is set to zero, so ``n < d`` gives ``n`` columns and zeros.
    """
    out = np.empty((x0.shape[0], x0.shape[1], steps + 1, x0.shape[2]), dtype=out_dtype)
    run_over_graphs(lambda a, b: _propagate(csr.indptr, csr.indices, csr.weight, ptr[a : b + 1],
                                            OPERATOR_CODES[operator], x0, steps,
                                            normalization == "qr", rank_tol, out),
                    graph_chunks(ptr))
    return out


@numba.njit(cache=True, nogil=True)
def _operator_values(indptr, indices, weight, op):  # pragma: no cover - compiled
    """Off-diagonal values and diagonal of the propagation operator, on the CSR pattern."""
    n = indptr.shape[0] - 1
    deg, _ = _degrees(indptr, weight)
    scale = np.zeros(n)
    diag = np.zeros(n)
    for i in range(n):
        if op == 1:
            scale[i] = 1.0 / np.sqrt(deg[i] + 1.0)
            diag[i] = scale[i] * scale[i]
        elif op == 2:
            scale[i] = 1.0 / deg[i] if deg[i] > 0 else 0.0
        else:
            scale[i] = 1.0 / np.sqrt(deg[i]) if deg[i] > 0 else 0.0
            if op == 3:
                diag[i] = 1.0 if deg[i] > 0 else 2.0
    values = np.empty(indices.shape[0])
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if op == 2:
                values[p] = scale[i] * weight[p]
            else:
                values[p] = scale[i] * weight[p] * scale[indices[p]]
    return values, diag


def operator_csr(csr: HostCSR, operator: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, values)`` of the propagation operator (see
    :func:`graphpe.ops.propagate.propagation_operator`) on the graph's CSR pattern, with the
    diagonal entries of ``gcn`` and ``lap_shift`` merged in at their sorted place."""
    values, diag = _operator_values(csr.indptr, csr.indices, csr.weight, OPERATOR_CODES[operator])
    if operator in ("adj", "rw"):
        return csr.indptr, csr.indices, values
    return _with_diagonal(csr.indptr, csr.indices, values, diag)


@numba.njit(cache=True, nogil=True)
def _with_diagonal(indptr, indices, values, diag):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    out_ptr = np.empty(n + 1, dtype=np.int64)
    out_idx = np.empty(indices.shape[0] + n, dtype=np.int64)
    out_val = np.empty(indices.shape[0] + n)
    q = 0
    out_ptr[0] = 0
    for i in range(n):
        placed = False
        for p in range(indptr[i], indptr[i + 1]):
            if not placed and indices[p] > i:
                out_idx[q] = i
                out_val[q] = diag[i]
                q += 1
                placed = True
            out_idx[q] = indices[p]
            out_val[q] = values[p]
            q += 1
        if not placed:
            out_idx[q] = i
            out_val[q] = diag[i]
            q += 1
        out_ptr[i + 1] = q
    return out_ptr, out_idx, out_val


@numba.njit(cache=True, nogil=True)
def _normalize_block(x, qr, rank_tol, scratch):  # pragma: no cover - compiled
    """Normalize one graph's ``[n, d]`` block in place (l2 columns, or Gram-Schmidt x2);
    ``scratch`` is ``[d + 1, >= max(n, d)]``."""
    n, d = x.shape
    if not qr:
        for c in range(d):
            nrm = 0.0
            for i in range(n):
                nrm += x[i, c] * x[i, c]
            if nrm > 0:
                inv = 1.0 / np.sqrt(nrm)
                for i in range(n):
                    x[i, c] *= inv
        return
    # Classical Gram-Schmidt done twice (CGS2; "twice is enough", Giraud et al. 2005) on a
    # column-major copy: every dot product and update runs over contiguous memory, which the
    # compiler vectorizes; the row-major block would make each of them a strided walk.
    cols = scratch  # [d + 1, >= n], C-contiguous (a sliced view would defeat vectorizing)
    for i in range(n):
        for c in range(d):
            cols[c, i] = x[i, c]
    biggest = 0.0
    for c in range(d):
        nrm = 0.0
        for i in range(n):
            nrm += cols[c, i] * cols[c, i]
        biggest = max(biggest, nrm)
    floor = rank_tol * np.sqrt(biggest)
    dots = scratch[d]
    for c in range(d):
        for _ in range(2):
            for b in range(c):
                dot = 0.0
                for i in range(n):
                    dot += cols[b, i] * cols[c, i]
                dots[b] = dot
            for b in range(c):
                dot = dots[b]
                for i in range(n):
                    cols[c, i] -= dot * cols[b, i]
        nrm = 0.0
        for i in range(n):
            nrm += cols[c, i] * cols[c, i]
        nrm = np.sqrt(nrm)
        inv = 0.0 if nrm <= floor or nrm == 0.0 else 1.0 / nrm
        for i in range(n):
            cols[c, i] *= inv
    for i in range(n):
        for c in range(d):
            x[i, c] = cols[c, i]


@numba.njit(cache=True, nogil=True)
def _propagate(indptr, indices, weight, ptr, op, x0, steps, qr, rank_tol, out):  # pragma: no cover
    values, diag = _operator_values(indptr, indices, weight, op)
    num_graphs = ptr.shape[0] - 1
    draws, d = x0.shape[1], x0.shape[2]
    big = 0
    for g in range(num_graphs):  # compiled: looping over graphs here is the kernel's design
        big = max(big, ptr[g + 1] - ptr[g])
    cur = np.empty((big, d))
    nxt = np.empty((big, d))
    scratch = np.empty((d + 1, max(big, d)))
    for g in range(num_graphs):  # compiled: each graph at its own size, no padding
        s = ptr[g]
        n = ptr[g + 1] - s
        if n == 0:
            continue
        for r in range(draws):
            x = cur[:n]
            for i in range(n):
                for c in range(d):
                    x[i, c] = x0[s + i, r, c]
            _normalize_block(x, qr, rank_tol, scratch)
            for i in range(n):
                for c in range(d):
                    out[s + i, r, 0, c] = x[i, c]
            y = nxt[:n]
            for t in range(1, steps + 1):
                for i in range(n):
                    for c in range(d):
                        y[i, c] = diag[s + i] * x[i, c]
                    for p in range(indptr[s + i], indptr[s + i + 1]):
                        j = indices[p] - s
                        v = values[p]
                        for c in range(d):
                            y[i, c] += v * x[j, c]
                _normalize_block(y, qr, rank_tol, scratch)
                for i in range(n):
                    for c in range(d):
                        out[s + i, r, t, c] = y[i, c]
                x, y = y, x


# ----------------------------------------------------------------------------- curvature


def node_profile_host(csr: HostCSR, values: np.ndarray, stats: tuple[str, ...]) -> np.ndarray:
    """Per-node ``[min, max, mean, std, median]`` (the ``stats`` asked for, in that order of
    the request) of ``values`` given on the CSR entries; zeros for a node without edges."""
    codes = np.array([PROFILE_CODES[s] for s in stats], dtype=np.int64)
    return _profile(csr.indptr, values, codes)


PROFILE_CODES = {"min": 0, "max": 1, "mean": 2, "std": 3, "median": 4}


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def edge_triangles_host(indptr, indices):  # pragma: no cover - compiled
    """Common neighbours of every CSR entry ``(i, indices[p])`` (marker per row)."""
    n = indptr.shape[0] - 1
    out = np.zeros(indices.shape[0])
    mark = np.full(n, -1, dtype=np.int64)
    for i in range(n):
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


@numba.njit(cache=True, nogil=True)
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
