"""RWSE on one graph above the dense limit, on the host: three exact paths and the choice
between them by predicted cost under a memory budget.

All three compute ``diag(P^t)``, ``t = 1..T``, ``P = D^-1 (A + L)`` (the conventions of
:func:`graphpe.ops.walk.random_walk_landing_probs`: the undirected simple graph of
:class:`~graphpe.ops.host.HostCSR`, self loops ``L`` counted once in the degree, zero rows for
nodes without edges), in float64, through the symmetric ``S = D^-1/2 (A + L) D^-1/2``
(:func:`~graphpe.ops.walk.compiled.symmetric_walk`): ``diag(P^t) = diag(S^t)``, and with
``h = ceil(T / 2)``, ``(S^t)_ii = <S^h e_i, S^(t-h) e_i>`` for ``t > h``, so no path walks more
than ``h`` steps. With ``n`` nodes, ``m`` CSR entries (twice the edges), ``b_k(i)`` the
``k``-hop ball of node ``i`` and ``vol`` its degree sum:

- ``local``: a walk from every node over its own balls only
  (:func:`~graphpe.ops.walk.compiled.local_landing_probs`, threads over nodes). Time
  ``sum_i sum_(k<h) vol(b_k(i))``; memory per thread ``8 (h + 2) cap + 16 n`` bytes, ``cap``
  the largest ball it may hold. Best where balls stay small (road networks).
- ``powers``: the sparse matrices ``S^1..S^h`` (scipy), diagonals read off them and off
  row-wise products. Time about the same sum (one sparse product per step); memory about
  ``12 sum_(k<=h) nnz(S^k)`` bytes, ``nnz(S^k) = sum_i |b_k(i)|``, checked before every product.
- ``blocked``: ``S`` times blocks of ``w`` columns of the identity, ``h`` products per block
  (:func:`~graphpe.ops.walk.compiled.blocked_landing_probs`, threads over columns), keeping
  the last two powers of the block. A leaf (one edge, no loop) needs no column of its own
  (:func:`leaf_landing_probs`) and no row either: the leaves are folded into their parents'
  rows of ``S`` (exact; ``folded`` of :func:`~graphpe.ops.walk.compiled.blocked_landing_probs`).
  Time ``c h (m + 3 n)`` for ``c`` columns; memory
  ``2 s n w`` bytes per thread (``s`` bytes per value) plus 56 bytes per entry of ``S``
  (renamed, and with the leaves folded out); always fits for
  ``w = 1`` unless the graph itself nearly fills the budget. It computes in the output's
  precision: float32 blocks for a float32 output (every entry of ``S^k E`` is a sum of
  non-negative terms, so the rounding stays relative, about ``T + 1`` float32 epsilons of
  each value, the dot products summed in float64), float64 blocks for a float64 output.

:func:`choose_landing_path` predicts each path's time and memory from the balls of a fixed
sample of nodes (breadth-first, ``h`` hops) and takes the fastest that fits the budget.
A graph of several connected components is computed component by component
(:func:`large_landing_probs`): small ones by the dense kernel of small graphs, each other one
by its own choice, so no path pays for nodes its walks cannot reach.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from graphpe.ops.host import HostCSR, graph_chunks, node_range_csr
from graphpe.ops.progress import progress_bar
from graphpe.ops.walk.compiled import (
    ball_profile,
    blocked_landing_probs,
    blocked_scratch_bytes,
    landing_probs,
    local_landing_probs,
    symmetric_walk,
)

# scipy.sparse is imported where it is used: importing it takes ~0.1 s, which a process that
# never meets a large graph need not pay
if TYPE_CHECKING:
    import scipy.sparse as sp

LOG = logging.getLogger(__name__)

LANDING_PATHS = ("local", "powers", "blocked")
# Nodes whose balls are measured to predict the paths' costs (a fixed draw: same choice for
# the same graph)
PROFILE_SOURCES = 64
# Seconds per unit of predicted work of each path on one core, fitted to measured runs
# (benchmarks/rwse_large.py); only their ratios matter to the choice. local: ball entries
# touched, plus a fixed count per node; powers: sparse-product multiply-adds and entries of
# the powers and of their row-wise products; blocked: multiply-adds of the column blocks,
# by the bytes of a value (the products are bound by memory traffic).
LOCAL_SECONDS_PER_OP = 6e-9
LOCAL_OPS_PER_NODE = 300
POWERS_SECONDS_PER_OP = 7e-9
POWERS_SECONDS_PER_ENTRY = 1.5e-8
BLOCKED_SECONDS_PER_OP = {4: 3.4e-10, 8: 7.5e-10}
# Bytes of one stored entry of a sparse power (float64 value, int32 index)
SPARSE_ENTRY_BYTES = 12
# Bytes per entry of S held by the blocked path at its peak, while the operator is built: the
# caller's values (8), the walk renamed with the leaves last (16: int64 index, float64 value),
# a row index (8) and a mask (1) per entry, and the operator with the leaves folded out (16);
# then the operator, its values in the blocks' precision and the caller's values (<= 32)
BLOCKED_OPERATOR_BYTES = 56
# Columns per block of the blocked path: a product reads one row of the block per stored
# entry of S, and rows this long are read at the memory's speed
BLOCKED_WIDTH = 64
# Components up to this size take the dense kernel of small graphs
COMPONENT_DENSE_MAX_NODES = 256
# the blocked path runs its columns in rounds of about this many seconds (predicted), so that
# Python regains control between them (Ctrl-C, the progress bar)
BLOCKED_ROUND_SECONDS = 1.0
# a path predicted to take longer than this is announced by a warning before it starts
LONG_PATH_SECONDS = 60.0


class LandingPathChoice(NamedTuple):
    """What :func:`choose_landing_path` decided and why: ``path`` (one of
    :data:`LANDING_PATHS`), and each path's predicted ``seconds`` and peak working ``memory``
    (bytes, beyond the graph and the output), next to the ``budget``."""

    path: str
    seconds: dict[str, float]
    memory: dict[str, int]
    budget: int

    def describe(self) -> str:
        """One line: the choice and every path's prediction."""
        parts = [f"{p} {self.seconds[p]:.3g} s / {self.memory[p] / 2**20:.4g} MiB"
                 + ("" if self.memory[p] <= self.budget else " (over budget)")
                 for p in LANDING_PATHS]
        return (f"RWSE path {self.path!r} (budget {self.budget / 2**20:.4g} MiB): "
                + ", ".join(parts))


def _half(walk_length: int) -> int:
    return (walk_length + 1) // 2


def _threads(n: int) -> int:
    return len(graph_chunks(np.arange(n + 1, dtype=np.int64)))


def local_memory(n: int, walk_length: int, cap: int, threads: int) -> int:
    """Bytes the ``local`` path allocates with balls of up to ``cap`` nodes on ``threads``
    threads: per thread ``h + 1`` float64 vectors and a queue of ``cap``, two ``n`` int64
    marks."""
    return threads * (8 * (_half(walk_length) + 2) * cap + 16 * n)


def local_cap(n: int, walk_length: int, budget: int, threads: int) -> int:
    """The largest ball (at most ``n``) the ``local`` path may hold within ``budget``; 0 when
    not even one node fits."""
    per_thread = budget // max(threads, 1) - 16 * n
    return int(max(0, min(n, per_thread // (8 * (_half(walk_length) + 2)))))


def blocked_itemsize(out: np.ndarray) -> int:
    """Bytes per value of the ``blocked`` path's blocks: the output's precision (4 for a
    float32 or narrower output, else 8)."""
    return 4 if out.dtype.itemsize <= 4 else 8


def blocked_memory(n: int, m: int, width: int, threads: int = 1, itemsize: int = 8) -> int:
    """Bytes of the ``blocked`` path with blocks of ``width`` columns on ``threads``
    threads: ``S`` (``m + n`` entries) as :func:`_blocked_landing` holds it
    (:data:`BLOCKED_OPERATOR_BYTES` per entry) and two ``[n, width]`` blocks of
    ``itemsize``-byte values per thread."""
    scratch = blocked_scratch_bytes(n, width) * itemsize // 8
    return BLOCKED_OPERATOR_BYTES * (m + n) + threads * scratch


def blocked_layout(n: int, m: int, budget: int, threads: int,
                   itemsize: int = 8) -> tuple[int, int]:
    """``(width, threads)`` of the ``blocked`` path: :data:`BLOCKED_WIDTH` columns per block
    (at most ``n``) on up to ``threads`` threads, fewer threads and then narrower blocks
    where ``budget`` is short (at least one column on one thread)."""
    room = budget - blocked_memory(n, m, 0)
    column = blocked_memory(n, m, 1, 1, itemsize) - blocked_memory(n, m, 0)
    width = max(1, min(BLOCKED_WIDTH, n))
    threads = max(1, min(threads, room // max(column * width, 1)))
    return int(max(1, min(width, room // max(column * threads, 1)))), int(threads)


def landing_path_costs(csr: HostCSR, walk_length: int, budget: int,
                       threads: int | None = None,
                       sources: int = PROFILE_SOURCES,
                       itemsize: int | None = None) -> LandingPathChoice:
    """Each path's predicted time and memory on the graph of ``csr``, from the ``h``-hop
    balls of ``sources`` nodes (a fixed draw), and the fastest path whose memory fits
    ``budget`` (``path`` is None when none does); ``itemsize`` is the bytes per value of the
    ``blocked`` path's blocks (:func:`blocked_itemsize`, 8 where None)."""
    n = csr.indptr.shape[0] - 1
    m = int(csr.indptr[-1])
    h = _half(walk_length)
    threads = _threads(n) if threads is None else threads
    picks = np.random.default_rng(0).choice(n, size=min(n, sources), replace=False)
    sizes, volumes = ball_profile(csr, np.sort(picks), h)
    mean_size = sizes.mean(0) if n else np.zeros(h + 1)
    mean_volume = volumes.mean(0) if n else np.zeros(h + 1)
    largest = int(sizes[:, h].max()) if n else 0
    # local: per node, the pushes over balls 0..h-1 and their writes, then T - h dot products
    local_ops = float(mean_volume[:h].sum() + mean_size[:h].sum()
                      + (walk_length - h) * mean_size[h]) + LOCAL_OPS_PER_NODE
    # powers: one sparse product per step, and the entries of S^1..S^h and of the T - h
    # row-wise products of S^h with a lower power
    powers_ops = float(mean_volume[:h].sum())
    powers_entries = float(mean_size[1:].sum() + 2 * (walk_length - h) * mean_size[h])
    itemsize = 8 if itemsize is None else itemsize
    width, blocked_threads = blocked_layout(n, m, budget, threads, itemsize)
    # blocked: one column per node but the leaves (counted with the graph's loops)
    columns = n - graph_leaves(csr, csr.loops)[0].shape[0]
    seconds = {
        "local": LOCAL_SECONDS_PER_OP * n * local_ops / max(threads, 1),
        "powers": n * (POWERS_SECONDS_PER_OP * powers_ops
                       + POWERS_SECONDS_PER_ENTRY * powers_entries),
        "blocked": (BLOCKED_SECONDS_PER_OP[itemsize] * columns * h * (m + 3 * n)
                    / blocked_threads),
    }
    kept = float(mean_size[1:].sum() + mean_size[h])  # S^1..S^h, and one row-wise product
    memory = {
        "local": local_memory(n, walk_length, min(n, largest), threads),
        "powers": int(SPARSE_ENTRY_BYTES * n * kept + 8 * (h + 3) * n),
        "blocked": blocked_memory(n, m, width, blocked_threads, itemsize),
    }
    fits = [p for p in LANDING_PATHS if memory[p] <= budget]
    path = min(fits, key=lambda p: seconds[p]) if fits else None
    return LandingPathChoice(path, seconds, memory, budget)


def choose_landing_path(csr: HostCSR, walk_length: int, budget: int,
                        threads: int | None = None,
                        itemsize: int | None = None) -> LandingPathChoice:
    """The path :func:`large_landing_probs` takes on the graph of ``csr``
    (:func:`landing_path_costs`), logged at DEBUG; a ValueError when no path fits
    ``budget`` (:func:`over_budget_message`)."""
    choice = landing_path_costs(csr, walk_length, budget, threads, itemsize=itemsize)
    if choice.path is None:
        raise ValueError(_no_path(csr, choice))
    LOG.debug("%s", choice.describe())
    return choice


def over_budget_message(num_nodes: int, num_edges: int, need: int, path: str,
                        budget: int) -> str:
    """The error raised when no path fits: the graph's size, the smallest estimate (``need``
    bytes, on ``path``), the budget."""
    return (f"random-walk landing probabilities of a graph of {num_nodes} nodes and "
            f"{num_edges} edges need at least {need} bytes of working memory (path {path!r}), "
            f"over the memory budget of {budget} bytes (ExecPlan.max_memory_bytes)")


def _no_path(csr: HostCSR, choice: LandingPathChoice) -> str:
    least = min(LANDING_PATHS, key=lambda p: choice.memory[p])
    return over_budget_message(csr.indptr.shape[0] - 1, int(csr.indptr[-1]) // 2,
                               choice.memory[least], least, choice.budget)


def large_landing_probs(csr: HostCSR, walk_length: int, out: np.ndarray, *, budget: int,
                        self_loops: bool = True, path: str = "auto",
                        components: bool = True) -> str:
    """``diag(P^t)``, ``t = 1..T``, of the one graph of ``csr`` into ``out [n, T]`` (float32
    or float64; computed in float64) within ``budget`` bytes of working memory.

    With ``components``, a graph of several connected components is computed component by
    component (nodes grouped by component, one ``O(m)`` relabelling): those of at most
    :func:`component_dense_max_nodes` nodes by the dense kernel of small graphs
    (:func:`~graphpe.ops.walk.compiled.landing_probs`), the others each by ``path``. ``path``
    is one of :data:`LANDING_PATHS`, or ``auto`` (:func:`choose_landing_path`, per
    component). Where ``local`` meets a ball larger than the budget allows, or ``powers`` a
    fill larger than predicted past the budget, that component is computed again by
    ``blocked``. Returns the path that computed the largest component (``dense`` where the
    dense kernel took every one)."""
    if path not in (*LANDING_PATHS, "auto"):
        raise ValueError(f"path must be one of {(*LANDING_PATHS, 'auto')}, got {path!r}")
    n = csr.indptr.shape[0] - 1
    if n == 0:
        return path
    parts = component_groups(csr) if components else None
    if parts is None:
        return _one_graph(csr, walk_length, out, budget, self_loops, path)
    order, ptr, grouped = parts
    result = np.empty((n, walk_length), dtype=out.dtype)
    dense = component_dense_max_nodes(walk_length, budget, _threads(n))
    landing_probs(grouped, ptr, walk_length, dense, result, self_loops)
    sizes = ptr[1:] - ptr[:-1]
    taken, largest = "dense", 0
    for c in np.flatnonzero(sizes > dense).tolist():
        a, b = int(ptr[c]), int(ptr[c + 1])
        used = _one_graph(node_range_csr(grouped, a, b), walk_length, result[a:b], budget,
                          self_loops, path)
        if b - a > largest:
            taken, largest = used, b - a
    out[order] = result
    return taken


def component_groups(csr: HostCSR) -> tuple[np.ndarray, np.ndarray, HostCSR] | None:
    """The graph of ``csr`` with its nodes grouped by connected component: ``(order, ptr,
    grouped)``, node ``order[r]`` renamed ``r``, component ``c`` the nodes ``ptr[c]..ptr[c +
    1] - 1`` of ``grouped``; None for a graph of one component (or none)."""
    n = csr.indptr.shape[0] - 1
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    pattern = sp.csr_matrix((np.ones(csr.indices.shape[0], np.int8), csr.indices, csr.indptr),
                            shape=(n, n))
    count, labels = connected_components(pattern, directed=False)
    if count <= 1:
        return None
    order = np.argsort(labels, kind="stable")
    ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=count), out=ptr[1:])
    return order, ptr, _relabelled(csr, order)


class ExactCost(NamedTuple):
    """What :func:`exact_landing_cost` predicts for :func:`large_landing_probs` (``path``
    ``auto``): the ``seconds`` of every component's chosen path summed (a component without a
    path that fits counts its fastest path), whether every component ``fits`` the budget, and
    the choice of the largest component computed by a large-graph path (None where the dense
    kernel takes every component)."""

    seconds: float
    fits: bool
    largest: LandingPathChoice | None

    def describe(self) -> str:
        """One line: the predicted seconds, and the largest component's paths."""
        head = f"exact paths predicted {self.seconds:.3g} s"
        if self.largest is None:
            return head
        return f"{head}; largest component: {self.largest.describe()}"


def exact_landing_cost(csr: HostCSR, walk_length: int, budget: int,
                       itemsize: int | None = None, components: bool = True) -> ExactCost:
    """The cost :func:`large_landing_probs` is predicted to take on the graph of ``csr``
    (``path='auto'``, components as it splits them): the sum over the components above
    :func:`component_dense_max_nodes` of :func:`landing_path_costs`' choice (the dense kernel
    of the small ones is counted as free). Costs a ball profile per large component (as
    :func:`large_landing_probs` itself does)."""
    n = csr.indptr.shape[0] - 1
    parts = component_groups(csr) if components and n else None
    if parts is None:
        graphs, ptr, dense = csr, np.array([0, n], dtype=np.int64), 0
    else:
        _, ptr, graphs = parts
        dense = component_dense_max_nodes(walk_length, budget, _threads(n))
    seconds, fits, largest, size = 0.0, True, None, 0
    sizes = ptr[1:] - ptr[:-1]
    for c in np.flatnonzero(sizes > dense).tolist():
        a, b = int(ptr[c]), int(ptr[c + 1])
        one = graphs if parts is None else node_range_csr(graphs, a, b)
        choice = landing_path_costs(one, walk_length, budget, itemsize=itemsize)
        if choice.path is None:
            fits = False
            seconds += min(choice.seconds.values())
        else:
            seconds += choice.seconds[choice.path]
        if b - a > size:
            largest, size = choice, b - a
    return ExactCost(seconds, fits, largest)


def component_dense_max_nodes(walk_length: int, budget: int, threads: int) -> int:
    """Components up to this size are computed by the dense kernel: at most
    :data:`COMPONENT_DENSE_MAX_NODES`, and its scratch (``h`` float64 ``d x d`` powers per
    thread) at most ``budget / 2``."""
    per_thread = budget // (2 * max(threads, 1) * 8 * _half(walk_length))
    return int(min(COMPONENT_DENSE_MAX_NODES, np.sqrt(max(per_thread, 0))))


def _relabelled(csr: HostCSR, order: np.ndarray) -> HostCSR:
    """``csr`` with node ``order[r]`` renamed ``r`` (rows in the new order)."""
    n = order.shape[0]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    counts = np.diff(csr.indptr)[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    take = np.repeat(csr.indptr[order] - indptr[:-1], counts) + np.arange(indptr[-1])
    return HostCSR(indptr, rank[csr.indices[take]], csr.weight[take], csr.loops[order])


def _one_graph(csr: HostCSR, walk_length: int, out: np.ndarray, budget: int,
               self_loops: bool, path: str) -> str:
    """:func:`large_landing_probs` of one graph (or component) by ``path``, falling back to
    ``blocked``."""
    n = csr.indptr.shape[0] - 1
    if path == "auto":
        choice = choose_landing_path(csr, walk_length, budget, itemsize=blocked_itemsize(out))
        path = choice.path
        if choice.seconds[path] > LONG_PATH_SECONDS:
            LOG.warning("RWSE of a %s-node graph: the exact values are predicted to take "
                        "about %.0f s (the %r path; fewer walk steps take proportionally "
                        "less). rwse:max_exact_seconds=60 estimates a graph past a minute by "
                        "random walks instead, with its standard error; rwse:estimate=sampled "
                        "estimates every graph",
                        f"{n:,}", choice.seconds[path], path)
    values, diag = symmetric_walk(csr, self_loops)
    if path == "local":
        threads = _threads(n)
        cap = local_cap(n, walk_length, budget, threads)
        if cap > 0 and local_landing_probs(csr, values, diag, walk_length, out, cap) < 0:
            return path
        LOG.debug("RWSE path 'local': a ball holds more than %d nodes (the budget's); "
                  "taking 'blocked'", cap)
    elif path == "powers":
        if _powers_landing(csr, values, diag, walk_length, out, budget):
            return path
        LOG.debug("RWSE path 'powers': the powers fill past the budget; taking 'blocked'")
    _blocked_landing(csr, values, diag, walk_length, out, budget)
    return "blocked"


def _operator(csr: HostCSR, values: np.ndarray, diag: np.ndarray) -> sp.csr_matrix:
    """``S`` as a scipy CSR matrix (float64)."""
    n = csr.indptr.shape[0] - 1
    import scipy.sparse as sp

    op = sp.csr_matrix((values, csr.indices, csr.indptr), shape=(n, n))
    if diag.any():
        op = (op + sp.diags(diag, format="csr")).tocsr()
    return op


def _powers_landing(csr: HostCSR, values: np.ndarray, diag: np.ndarray, walk_length: int,
                    out: np.ndarray, budget: int) -> bool:
    """The ``powers`` path; False (``out`` partly written) where the next power would take
    the kept powers past ``budget``: each product is allowed only if the kept powers plus
    twice the previous power's size (the product and its scratch, a power growing at most
    ``max(growth, 1)`` times its predecessor's fill, ``growth`` the last step's) fit."""
    op = _operator(csr, values, diag)
    h = _half(walk_length)
    powers = [op]
    kept = SPARSE_ENTRY_BYTES * op.nnz
    growth = 1.0
    for _ in range(1, h):
        last = powers[-1]
        predicted = SPARSE_ENTRY_BYTES * last.nnz * max(growth, 1.0)
        if kept + 2 * predicted > budget:
            return False
        nxt = last @ op
        growth = nxt.nnz / max(last.nnz, 1)
        kept += SPARSE_ENTRY_BYTES * nxt.nnz
        powers.append(nxt)
    for t in range(1, walk_length + 1):
        if t <= h:
            out[:, t - 1] = powers[t - 1].diagonal()
        else:  # (S^t)_ii = <row_i(S^h), row_i(S^(t-h))>: S is symmetric
            rows = powers[h - 1].multiply(powers[t - h - 1]).sum(axis=1)
            out[:, t - 1] = np.asarray(rows).ravel()
    return True


def _blocked_landing(csr: HostCSR, values: np.ndarray, diag: np.ndarray, walk_length: int,
                     out: np.ndarray, budget: int) -> None:
    """The ``blocked`` path (:func:`~graphpe.ops.walk.compiled.blocked_landing_probs`) in
    the layout :func:`blocked_layout` gives, in blocks of the output's precision. The leaves
    (:func:`graph_leaves`) are folded out of the operator (renamed after the other nodes and
    their rows dropped; ``folded`` carries their walks), then get their rows from their
    parents' (:func:`leaf_landing_probs`). ValueError where one column does not fit
    ``budget``."""
    n = csr.indptr.shape[0] - 1
    m = int(csr.indptr[-1])
    itemsize = blocked_itemsize(out)
    if blocked_memory(n, m, 1, 1, itemsize) > budget:
        raise ValueError(over_budget_message(n, m // 2, blocked_memory(n, m, 1, 1, itemsize),
                                             "blocked", budget))
    leaves, parents = graph_leaves(csr, diag)
    keep = np.ones(n, dtype=bool)
    keep[leaves] = False
    kept = np.flatnonzero(keep)
    core = kept.shape[0]
    width, threads = blocked_layout(core, m, budget, _threads(core), itemsize)
    dtype = np.float32 if itemsize == 4 else np.float64
    # the walk renamed with the kept nodes first (S's entries ride in the weight slot)
    walk = _relabelled(HostCSR(csr.indptr, csr.indices, values, diag),
                       np.concatenate([kept, leaves]))
    stop = int(walk.indptr[core])  # the kept nodes' entries; the leaves' follow, one each
    coupling = walk.weight[stop:].copy()
    folded = np.bincount(walk.indices[stop:], weights=coupling ** 2, minlength=core)
    inside = walk.indices[:stop] < core  # the kept nodes' edges to kept nodes
    rows = np.repeat(np.arange(core), np.diff(walk.indptr[: core + 1]))
    indptr = np.zeros(core + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[inside], minlength=core), out=indptr[1:])
    operator = HostCSR(indptr, walk.indices[:stop][inside], walk.weight[:stop][inside],
                       walk.loops[:core])
    del walk, rows, inside  # (the bound counts the operator and its values only from here)
    weights, loops = operator.weight.astype(dtype), operator.loops.astype(dtype)
    columns = np.arange(core, dtype=np.int64)
    # rounds of whole blocks per thread, each about BLOCKED_ROUND_SECONDS by the cost model
    per_column = BLOCKED_SECONDS_PER_OP[itemsize] * _half(walk_length) * (m + 3 * core)
    unit = max(width, 1) * max(threads, 1)
    rounds = max(1, int(BLOCKED_ROUND_SECONDS * threads / max(per_column, 1e-12)) // unit)
    step = rounds * unit
    with progress_bar(f"RWSE ({core:,} columns)", total=core, unit="column") as bar:
        for lo in range(0, core, step):
            hi = min(core, lo + step)
            blocked_landing_probs(operator, weights, loops, walk_length, out, width, threads,
                                  folded=folded, columns=columns[lo:hi], out_rows=kept[lo:hi])
            bar.update(hi - lo)
    leaf_landing_probs(leaves, parents, coupling, out)


def graph_leaves(csr: HostCSR, loops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The nodes ``l`` with one edge and no self loop in the walk (``loops[l] == 0``: the
    walk's loop weights, or its diagonal ``S_ll``) whose neighbour ``p`` is not such a node
    itself, and those neighbours: ``(leaves, parents)``."""
    single = (np.diff(csr.indptr) == 1) & (loops == 0)
    candidates = np.flatnonzero(single)
    parents = csr.indices[csr.indptr[candidates]]
    own = ~single[parents]
    return candidates[own], parents[own]


def leaf_landing_probs(leaves: np.ndarray, parents: np.ndarray, coupling: np.ndarray,
                       out: np.ndarray) -> None:
    """The rows ``leaves`` of ``out [n, T]`` from their parents' rows: a walk from a leaf
    ``l`` leaves by its one edge to ``p`` and returns by it, so with ``s = S_lp``
    (``coupling``), ``(S^1)_ll = 0``, ``(S^2)_ll = s^2`` and ``(S^t)_ll = s^2 (S^(t-2))_pp``.
    The parents' rows must be written first (a parent is never a leaf)."""
    weight = (coupling.astype(np.float64) ** 2)[:, None]
    out[leaves, 0] = 0.0
    if out.shape[1] > 1:
        out[leaves, 1] = weight[:, 0]
    if out.shape[1] > 2:
        out[leaves, 2:] = weight * out[parents, :-2]
