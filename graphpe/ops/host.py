"""Host (CPU) plumbing shared by every encoding's compiled (numba) kernels.

Every encoding family has, beside its batched torch kernels (its ``tensor`` module), compiled
kernels for CPU tensors (``ops.eigen.compiled``, ``ops.walk.compiled``,
``ops.propagate.compiled``, ``ops.curvature.compiled``): each is one compiled loop over the
graphs of a batch, on numpy views of the CPU tensors, that computes every graph at its own size
(no padding to size buckets); a single ``Data`` (PyG's ``pre_transform`` path), a training
batch and a whole dataset chunk are each one call.

Kernels start from :func:`simple_csr`, the undirected simple graph of the input in CSR form
(the same graph as :func:`graphpe.ops.graph.undirected_simple`: symmetrized, self loops
dropped, duplicates merged keeping the largest weight, and edges of weight 0 dropped, since
they connect nothing). They compute in float64 and give the results of the family's batched
torch kernels (its ``tensor`` module) to rounding; the tests check both paths against each
other. This module holds what they share: the kernel choice (:func:`use_compiled`), the
numba settings, the CSR, the split of a batch over threads, host arrays.
"""


from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from graphpe.ops import aot

KERNELS = ("auto", "compiled", "tensor")
# Largest graph the compiled kernels take by default: their dense per-graph work (an n x n
# eigh or walk matrix) is the same as the tensor path's there, without the padding.
COMPILED_MAX_NODES = 1024
# Reassociation lets LLVM vectorize the dot products; no code here relies on IEEE order.
FASTMATH = {"contract", "arcp", "reassoc", "nsz"}
# The fewest nodes a thread is given by run_over_graphs: below that, handing a chunk to a
# thread (tens of microseconds) costs more than it saves.
PARALLEL_MIN_NODES = 1024
CACHE_LINE_BYTES = 64




def graph_chunks(ptr: np.ndarray, threads: int | None = None,
                 min_nodes: int | None = None) -> list[tuple[int, int]]:
    """Contiguous ranges ``[a, b)`` of the graphs of ``ptr``, one per thread, balanced by
    node count: at most ``threads`` (default ``torch.get_num_threads()``) ranges of at least
    ``min_nodes`` (default :data:`PARALLEL_MIN_NODES`) nodes each. One range outside the main
    thread (a caller's own worker threads, e.g. ``precompute(num_workers=...)``, are not split
    again)."""
    num_graphs = ptr.shape[0] - 1
    min_nodes = PARALLEL_MIN_NODES if min_nodes is None else min_nodes
    if num_graphs <= 1 or ptr[-1] < 2 * min_nodes:  # (one graph per call, as pre_transform)
        return [(0, num_graphs)]
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



# Share of the memory available at call time that a kernel may use by default
# (ExecPlan.max_memory_bytes = None).
MEMORY_BUDGET_FRACTION = 0.25
# The default budget where the available memory cannot be read (neither psutil nor
# /proc/meminfo).
FALLBACK_MEMORY_BUDGET = 2**30


def available_memory_bytes() -> int | None:
    """Memory available to new allocations now, in bytes: psutil's ``available`` where psutil
    is installed, else ``MemAvailable`` of ``/proc/meminfo``, else None."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return int(psutil.virtual_memory().available)
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # reported in kB
    except OSError:
        pass
    return None


def memory_budget(max_memory_bytes: int | None) -> int:
    """The working-memory budget of a kernel: ``max_memory_bytes`` where given, else
    :data:`MEMORY_BUDGET_FRACTION` of :func:`available_memory_bytes` (read at each call), else
    :data:`FALLBACK_MEMORY_BUDGET`."""
    if max_memory_bytes is not None:
        return int(max_memory_bytes)
    available = available_memory_bytes()
    return FALLBACK_MEMORY_BUDGET if available is None else int(available * MEMORY_BUDGET_FRACTION)


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


def node_range_csr(csr: HostCSR, start: int, end: int) -> HostCSR:
    """The rows ``start..end-1`` of ``csr`` as a graph of their own (node ids less ``start``):
    one graph of a batch, whose edges stay within it."""
    lo, hi = csr.indptr[start], csr.indptr[end]
    return HostCSR(csr.indptr[start : end + 1] - lo, csr.indices[lo:hi] - start,
                   csr.weight[lo:hi], csr.loops[start:end])


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


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype | type,
                  align: int = CACHE_LINE_BYTES) -> np.ndarray:
    """An uninitialized C-contiguous numpy array whose data starts on a multiple of ``align``
    bytes. numpy aligns to 16 bytes only: a row of 64 float32 (256 bytes) then spans 5
    cache lines instead of 4, and a kernel that gathers whole rows at random (a sparse
    product) reads a quarter more memory."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


class _Prefetch:
    """``prefetch(array, row, col)`` in compiled code only: a hint that the cache line holding
    ``array[row, col]`` (a 2-D C-contiguous array; no bounds check, no effect on results) is
    read soon (LLVM's ``llvm.prefetch``: read, high locality). For gathers at indices known
    ahead, such as the rows a sparse product reads a few stored entries later. A numba
    intrinsic, built when numba first types a kernel that calls it (importing graphpe does
    not import numba)."""

    _type = None

    @property
    def _numba_type_(self) -> Any:
        if _Prefetch._type is None:
            from numba.core.registry import cpu_target

            typing = cpu_target.typing_context
            function = _prefetch_intrinsic()
            typing.refresh()  # (takes in the intrinsic's registration)
            _Prefetch._type = typing.resolve_value_type(function)
        return _Prefetch._type


def _prefetch_intrinsic() -> Any:
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx, array, row, col):
        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, signature.args[0], ary,
                                           [args[1], args[2]], wraparound=False)
            byte_ptr = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fn = builder.module.declare_intrinsic(
                "llvm.prefetch", [byte_ptr],
                ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]))
            builder.call(fn, [builder.bitcast(ptr, byte_ptr), ir.Constant(i32, 0),
                              ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return types.void(array, row, col), codegen

    return prefetch


prefetch = _Prefetch()


def host_empty(shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """An uninitialized numpy array for a host kernel's output (wrap it with
    ``torch.from_numpy``).

    Allocated by numpy, which advises the kernel to back large arrays with transparent huge
    pages (torch's and numba's own allocations get 4 KB pages). Meant for outputs allocated
    again at the same sizes (training steps), not for one-off outputs."""
    return np.empty(shape, dtype=dtype)


@aot.njit(cache=True, nogil=True)
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

    The same result as a scatter into a zero-padded buffer
    (``new_zeros(...).index_copy_(0, rows, src)``), computed as a gather: one pass over the
    output in order."""
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


# simple_csr_arrays: rows up to this long are sorted by insertion, longer ones by merge sort
SORT_INSERTION_MAX = 32


def simple_csr(edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None = None) -> HostCSR:
    """The undirected simple graph of ``edge_index`` (CPU) as a :class:`HostCSR`."""
    ei = host_array(edge_index, np.int64)
    has_weight = edge_weight is not None
    w = host_array(edge_weight, np.float64) if has_weight else np.empty(0)
    indptr, indices, weight, loops = simple_csr_arrays(ei[0], ei[1], w, has_weight, num_nodes)
    return HostCSR(indptr, indices, weight, loops)


@aot.njit(cache=True, nogil=True)
def simple_csr_arrays(row, col, w, has_weight, num_nodes):  # pragma: no cover - compiled
    """:func:`simple_csr` on arrays: the undirected simple graph of the edges
    ``row[e] -> col[e]`` (weights ``w`` where ``has_weight``, else 1) as ``(indptr, indices,
    weight, loops)``: both directions, each row sorted by column, duplicates merged with the
    largest weight, edges of weight 0 dropped, self loops apart in ``loops`` (their largest
    weight per node)."""
    # counting sort by row, then each row sorted by column (an insertion sort where it is
    # short, the common case; a merge sort past SORT_INSERTION_MAX entries: a hub's row of
    # thousands made the insertion sort quadratic, a second of a 1M-edge graph's 1.1 s),
    # merging duplicates with the largest weight
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
        if hi - lo > SORT_INSERTION_MAX:
            order = np.argsort(nbr[lo:hi], kind="mergesort") + lo
            nbr[lo:hi] = nbr[order]
            val[lo:hi] = val[order]
        else:
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


@aot.njit(cache=True, nogil=True)
def csr_degrees(indptr, weight):  # pragma: no cover - compiled
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


@aot.njit(cache=True, nogil=True, inline="always")
def csr_position(indptr, indices, u, v):  # pragma: no cover - compiled
    """Position of the entry ``(u, v)`` in the CSR (rows sorted): where it is, or where it
    would be inserted in row ``u`` when absent."""
    lo, hi = indptr[u], indptr[u + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
