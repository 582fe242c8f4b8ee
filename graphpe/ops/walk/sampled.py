r"""RWSE's landing probabilities estimated by random walks (Monte Carlo), for graphs whose exact
landing probabilities are past their budget (:mod:`graphpe.ops.walk.large`).

The walk is the exact kernels': ``P = D^-1 (A + L)`` on the undirected simple graph of
:class:`~graphpe.ops.host.HostCSR` (edge weights ``w``, self loops ``L`` counted once in the
degree ``d(x) = sum_y w(x, y) + L_x``), so ``P(x, y) = w(x, y) / d(x)``, and a node without
edges has a zero row (its landing probabilities are 0, standard error 0). From every node
``i``, ``W`` independent walks ``x_0 = i, x_1, x_2, ...`` are drawn (each step to a neighbour
in proportion to the edge's weight, or staying through the self loop), and ``p_t(i) =
(P^t)_ii``, ``t = 1..T``, is estimated by one of three estimators, each exactly unbiased:

- ``collision`` (the default). The walk is reversible, ``d(x) P^s(x, y) = d(y) P^s(y, x)``,
  so for ``t = a + b``, with ``mu_s`` the law of ``x_s``,
  ``p_t(i) = sum_x P^a(i, x) P^b(x, i) = d(i) sum_x mu_a(x) mu_b(x) / d(x)``: the chance
  that two independent walks from ``i`` meet, one after ``a`` steps and the other after
  ``b``, weighted by ``d(i) / d(x)`` at the meeting node. Over the ``W (W - 1)`` ordered
  pairs of distinct walks,
  ``U_ab = d(i) / (W (W - 1)) sum_(k != l) 1[x_a^k = x_b^l] / d(x_a^k)``
  (for ``b = 1``, where ``mu_1 = P(i, .)`` is known, its conditional expectation
  ``mean_k P(x_a^k, i)``). The estimate of ``p_t`` is the mean of ``U_ab`` over the splits
  ``a + b = t``, ``a >= b >= 1``, ``a <= h = ceil(T / 2)``, so a walk takes only ``h``
  steps; ``t = 1`` and ``t = 2`` are exact (``P(i, i)`` and ``sum_x P(i, x) P(x, i)``,
  standard error 0). Pairs rather than single walks: where ``p_t`` is small its variance
  falls as ``1 / W^2`` rather than ``1 / W`` until the ``1 / W`` term of the single walks'
  spread dominates. Plug-in standard error: the delete-one jackknife over the walks (a
  walk's removal takes out every pair that holds it). The estimate is never negative but is not
  bounded by 1 (a meeting at a node of degree below ``d(i)`` weighs more than one pair).
- ``transition``: ``Y_t = P(x_(t-1), i)``, the probability that the walk's next step lands
  on ``i``; ``E[Y_t] = sum_x P^(t-1)(i, x) P(x, i) = p_t(i)``. The conditional expectation of
  the indicator below given the walk to step ``t - 1`` (a Rao-Blackwellization), so its
  variance is never larger: ``Var(1[x_t = i]) = Var(Y_t) + E[Var(1[x_t = i] | x_(t-1))]``.
  ``t = 1`` is exact; walks of ``T - 1`` steps. Plug-in standard error: the sample standard
  deviation of the ``W`` values (divisor ``W - 1``) over ``sqrt(W)``.
- ``indicator``: ``1[x_t = i]``, the fraction of walks at ``i`` after ``t`` steps (walks of
  ``T`` steps). Plug-in standard error: the binomial ``sqrt(p (1 - p) / W)`` at the
  estimate ``p``.

The standard error reported is not these plug-in ones, ``s^_t`` (the jackknife, the sample
standard deviation, the binomial), but a covering one built from them. ``p^_t`` is a sum of
nonnegative contributions (a walk's return, weighted; a meeting, weighted ``d(i) / d(x)``), and
where ``p_t(i)`` rests on rare, large ones (a return through an odd cycle of a graph with few,
a node of low degree beside hubs, a meeting at a low-degree node) the estimate usually falls
short, and ``s^_t``, estimated from the same walks, with it: both are small together, or 0
where no walk saw such a contribution. The error's law is skewed and ``|p^ - p| / s^`` has a
heavy tail, although ``s^2`` is right, or above, on average. The remedy is the score
(Wilson) interval's for a binomial proportion: the variance at the candidate value ``p``, not
at ``p^``. A sum of contributions of size ``phi_t`` in the mean (``phi = E[c^2] / E[c]``, ``c``
a contribution to ``p^_t``; compound Poisson) has variance ``phi_t p_t``, so

    V_t(p) = s^_t^2 + phi_t (p - p^_t),
    s_t = z phi_t / 2 + sqrt(s^_t^2 + (z phi_t / 2)^2),   z = COVER_Z = 4,

``s_t`` being the distance from ``p^_t`` to the upper end of ``{p : (p - p^_t)^2 <= z^2
V_t(p)}`` over ``z`` (the lower end is nearer): ``p^_t +- 4 s_t`` holds that interval. With
many contributions (``s^_t`` well above ``phi_t``) ``s_t`` is about ``s^_t + 2 phi_t``, the
plug-in; with none seen, ``s_t = 4 phi_t`` and the interval reaches 16 contributions. The
size ``phi_t`` is ``s^^2 / p^`` pooled over ``t - 2, t, t + 2`` (those estimated, not exact):
``sum s^^2 / sum p^``. Those ``t`` are the same walks' meetings and returns at the same nodes
a step further on, correlated, so a large contribution the walks missed at ``t`` but show at
``t +- 2`` widens ``s_t``, and a ``t`` with nothing seen borrows its neighbours' size. Where
all three saw nothing, ``phi_t`` is the largest one contribution can be: ``max_x P(x, i) / W``
(``x`` over ``i``'s neighbours and loop) for ``transition``, ``1 / W`` for ``indicator``, and
for ``collision`` the least over the splits of ``t`` of each split's largest, ``max_u P(u, i) /
W`` for ``b = 1`` and ``d(i) max_u (1 / d(u)) / (W (W - 1))`` for a pair (twice for ``a = b``),
``u`` over the nodes the walks visited (each split estimates ``p_t`` alone and saw nothing,
so the finest one bounds it). Last, ``p_t`` lies in ``[0, p_2]`` for ``t >= 2``, ``p_2 =
sum_x P(i, x) P(x, i)`` computed exactly (the walk is reversible: ``p_2s = sum_j lambda_j^2s
v_j(i)^2`` falls with ``s``, and ``p_(2s+1) <= sqrt(p_2s p_(2s+2))`` by Cauchy-Schwarz), so
``s_t`` is at most ``max(p^_t, p_2 - p^_t) / 4``: the interval never needs to reach past what
is possible (this binds at few walks; ``[0, 1]`` for ``indicator``'s ``t = 1``). So ``s_t`` is
0 only where every walk gave the same contributions (a node with only a loop) or ``p_t`` is
exact.

Why it covers: the score interval of a Poisson count is close to its level even for counts of
0 to 10, where the plug-in fails; pooling the size over three ``t`` catches most of the large
contributions rarer than one a run at one ``t``; what it misses is heavier tails still (large
contributions rare at every ``t`` near, as a degree-1 node among hubs of thousands gives).
``benchmarks/rwse_estimator.py`` measures the coverage per graph and estimator against 99% (at
256 walks ``collision`` and ``transition`` meet it on the stand-ins and ogbn-arxiv, ``transition``
not on a graph of low-degree nodes beside hubs of thousands, whose contributions ``1 / d`` come
in two sizes far apart). ``s_t`` is a covering bound, not the estimate's standard deviation
(its mean square is above the variance). Cost: ``O(T)`` a
node and, for ``collision``, one pass over the walks' ``W (h + 1)`` positions; the estimates
are unchanged. ``tests/ops/walk/test_sampled.py`` and ``benchmarks/rwse_estimator.py`` count
the share within 4 standard errors on graphs whose exact values are known, against 99%.

Random numbers: walk ``k``'s step ``s`` from node ``i`` takes draw ``k S + s`` (``S`` steps a
walk) of a counter-based SplitMix64 stream keyed by the seed and ``i``'s index within its
graph (``ptr``). The estimate is therefore the same for a seed whatever the threads, the
chunks and the graph's place in a batch, and the first ``W'`` walks of ``W > W'`` are the
walks of ``W'``. Cost: ``n W S`` steps, each a random read of the graph (the walks from one
node advance together so that their cache misses overlap), and for ``collision`` about
``n W T^2 / 8`` in-cache operations for the splits.
"""

from __future__ import annotations

import numpy as np

from graphpe.ops import aot
from graphpe.ops.checks import check_choice, check_positive_int, check_seed
from graphpe.ops.host import (
    CACHE_LINE_BYTES,
    HostCSR,
    aligned_empty,
    graph_chunks,
    prefetch,
    run_over_graphs,
)
from graphpe.ops.progress import progress_bar

ESTIMATORS = ("collision", "transition", "indicator")
# the fewest walks per node: the collision estimator's jackknife leaves one of them out
MIN_WALKS = 3
# walk steps one thread takes per round: Python regains control between rounds (Ctrl-C, the
# progress bar), about a second apart
ROUND_STEPS = 2**25
# the fewest nodes a thread is given (each node is W walks of T steps: far more work than the
# exact kernels' per node)
PARALLEL_MIN_NODES = 64
# walks ahead whose rows a step prefetches
PREFETCH_WALKS = 16
# the multiple of the standard error whose interval the reported standard error is built to
# cover (the module docstring: the score interval at COVER_Z)
COVER_Z = 4.0
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 2.0**53


def sampled_landing_probs(csr: HostCSR, walk_length: int, walks: int, seed: int = 0, *,
                          ptr: np.ndarray | None = None, self_loops: bool = True,
                          estimator: str = "collision",
                          threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(estimate, stderr)``, each float64 ``[n, walk_length]``: the Monte Carlo estimate of
    ``diag(P^t)``, ``t = 1..T``, from ``walks`` walks per node (at least :data:`MIN_WALKS`)
    and its standard error, by ``estimator`` (one of :data:`ESTIMATORS`, see the module
    docstring), for every node of ``csr``. The standard error is the covering one of the
    module docstring: ``|estimate - p| <= 4 stderr`` is built to hold for 99% of the entries
    (:data:`COVER_Z`), with the skew of rare returns and meetings counted; it is not the
    estimate's standard deviation (mostly above it).

    ``ptr`` (``[G + 1]``, default one graph) marks the graphs of a batch: a node's random
    stream is keyed by ``seed`` (an int) and its index within its graph. ``self_loops=False``
    drops the self loops from the walk, as the exact kernels do. The nodes are shared over
    ``threads`` threads (default ``torch.get_num_threads()``), in rounds of about
    :data:`ROUND_STEPS` steps per thread under a progress bar (shown past the progress delay).
    Memory: the outputs, ``4 n`` float64 per thread, ``4 n`` int64 and ``n`` float64 of tables,
    and for a weighted graph one float64 per CSR entry."""
    walk_length = check_positive_int("walk_length", walk_length)
    walks = check_positive_int("walks", walks)
    if walks < MIN_WALKS:
        raise ValueError(f"walks must be at least {MIN_WALKS} (the standard error's jackknife "
                         f"leaves one walk out of the pairs), got {walks!r}")
    seed = check_seed(seed)
    if seed is None:
        raise ValueError("seed must be an int, got None")
    check_choice("estimator", estimator, ESTIMATORS)
    n = csr.indptr.shape[0] - 1
    ptr = np.array([0, n], dtype=np.int64) if ptr is None else np.asarray(ptr, dtype=np.int64)
    if ptr.ndim != 1 or ptr.shape[0] < 1 or ptr[0] != 0 or ptr[-1] != n or np.any(
            np.diff(ptr) < 0):
        raise ValueError(f"ptr must be non-decreasing offsets from 0 to the {n} nodes")
    loops = csr.loops if self_loops else np.zeros_like(csr.loops)
    unit = bool(np.all(csr.weight == 1.0) and np.all((loops == 0.0) | (loops == 1.0)))
    table = aligned_empty((n, 4), np.int64)  # (two rows a cache line)
    deg, cum = walk_tables(csr.indptr, csr.weight, loops, unit, table)
    estimate = np.zeros((n, walk_length))
    stderr = np.zeros((n, walk_length))
    key = seed % 2**63
    method = ESTIMATORS.index(estimator)
    per_node = walks * walk_length
    per_round = max(1, ROUND_STEPS // per_node) * max(1, len(graph_chunks(
        np.arange(n + 1, dtype=np.int64), threads, PARALLEL_MIN_NODES)))
    with progress_bar(f"RWSE estimate ({n:,} nodes, {walks} walks)", total=n,
                      unit="node") as bar:
        for lo in range(0, n, per_round):
            hi = min(n, lo + per_round)
            bounds = np.arange(lo, hi + 1, dtype=np.int64)

            def call(a: int, b: int, bounds: np.ndarray = bounds) -> None:
                _sampled_landing(csr.indices, csr.weight, cum, loops, deg, table, unit, ptr,
                                 int(bounds[a]), int(bounds[b]), walk_length, walks, key,
                                 method, estimate, stderr)

            run_over_graphs(call, graph_chunks(bounds, threads, PARALLEL_MIN_NODES))
            bar.update(hi - lo)
    return estimate, stderr


@aot.njit(cache=True, nogil=True)
def walk_tables(indptr, weight, loops, unit, table):  # pragma: no cover - compiled
    """``(deg, cum)``, and ``table``'s rows written: the degrees ``d(x)`` (weights and loop),
    the weights' running sums within each row (empty where ``unit``: every weight 1, every
    loop 0 or 1), and per node its row's start, its length and the choices of an unweighted
    step (the length, plus 1 with a loop), side by side for one cache line a step."""
    n = indptr.shape[0] - 1
    deg = np.zeros(n)
    cum = np.empty(0 if unit else weight.shape[0])
    for x in range(n):
        total = 0.0
        for p in range(indptr[x], indptr[x + 1]):
            total += weight[p]
            if not unit:
                cum[p] = total
        deg[x] = total + loops[x]
        table[x, 0] = indptr[x]
        table[x, 1] = indptr[x + 1] - indptr[x]
        table[x, 2] = table[x, 1] + (1 if loops[x] > 0.0 else 0)
        table[x, 3] = 0
    return deg, cum


@aot.njit(cache=True, nogil=True, inline="always")
def splitmix64(z):  # pragma: no cover - compiled
    """SplitMix64's output function of a uint64."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@aot.njit(cache=True, nogil=True, inline="always")
def weighted_entry(cum, first, count, target):  # pragma: no cover - compiled
    """The first of the ``count`` entries from ``first`` whose running weight sum ``cum``
    (ascending along the row) passes ``target``, by binary search: the entry a walk takes
    for a uniform draw scaled to ``target`` in ``[0, the row's sum)``."""
    a = first
    b = first + count - 1
    while a < b:
        mid = (a + b) // 2
        if cum[mid] > target:
            b = mid
        else:
            a = mid + 1
    return a


@aot.njit(cache=True, nogil=True)
def _walk(source, stream, indices, cum, loops, deg, table, unit, pos,
          entry):  # pragma: no cover - compiled
    """``pos[k, s]``: where walk ``k`` from ``source`` is after ``s`` steps. The walks advance
    together, a step at a time, in two passes (the entries each walk takes, then the nodes
    they hold), so that the cache misses of different walks overlap; step ``s`` of walk
    ``k`` takes draw ``k S + s`` of the source's ``stream`` (a counter-based SplitMix64)."""
    walks, steps = pos.shape[0], pos.shape[1] - 1
    rows = indices.reshape((indices.shape[0], 1))  # (prefetch reads 2-D arrays)
    for k in range(walks):
        pos[k, 0] = source
    for s in range(1, steps + 1):
        for k in range(walks):  # entry[k]: the CSR entry taken, or -1 - x to stay at x
            if k + PREFETCH_WALKS < walks:
                prefetch(table, pos[k + PREFETCH_WALKS, s - 1], 0)
            x = pos[k, s - 1]
            draw = splitmix64(stream + np.uint64(k * steps + s) * _GOLDEN)
            u = np.float64(draw >> np.uint64(11)) * _TO_UNIT
            if unit:
                choices = table[x, 2]
                r = min(np.int64(u * choices), choices - 1)
                entry[k] = table[x, 0] + r if r < table[x, 1] else -1 - x
            else:
                target = u * deg[x]
                if target < loops[x]:
                    entry[k] = -1 - x
                    continue
                entry[k] = weighted_entry(cum, table[x, 0], table[x, 1], target - loops[x])
        for k in range(walks):
            if k + PREFETCH_WALKS < walks and entry[k + PREFETCH_WALKS] >= 0:
                prefetch(rows, entry[k + PREFETCH_WALKS], 0)
            e = entry[k]
            pos[k, s] = indices[e] if e >= 0 else -1 - e


@aot.njit(cache=True, nogil=True)
def _sampled_landing(indices, weight, cum, loops, deg, table, unit, ptr, lo, hi, walk_length,
                     walks, key, method, estimate, stderr):  # pragma: no cover - compiled
    # method: ESTIMATORS' index (0 collision, 1 transition, 2 indicator)
    n = table.shape[0]
    half = (walk_length + 1) // 2
    steps = half if method == 0 else walk_length - 1 if method == 1 else walk_length
    # per node x, one read of 32 bytes: (the last source whose walks reached x, x's name
    # among the nodes they reached, 1 / d(x), P(x, i) for the current source i)
    raw = np.empty(4 * n + 8)
    skip = ((-raw.ctypes.data) % CACHE_LINE_BYTES) // 8  # (rows aligned to half lines)
    info = raw[skip: skip + 4 * n].reshape((n, 4))
    for x in range(n):
        info[x, 0] = -1.0
        info[x, 1] = 0.0
        info[x, 2] = 1.0 / deg[x] if deg[x] > 0.0 else 0.0
        info[x, 3] = 0.0
    pos = np.empty((walks, steps + 1), dtype=np.int64)
    entry = np.empty(walks, dtype=np.int64)
    local = np.empty_like(pos)
    inv_deg = np.empty((walks, steps + 1))
    back = np.empty(pos.size)
    counts = np.zeros((steps + 1, pos.size if method == 0 else 0))
    spread = np.empty(walks)
    largest = np.empty(walk_length)
    g = np.searchsorted(ptr, lo, side="right") - 1
    base = splitmix64(np.uint64(key))
    for i in range(lo, hi):
        while ptr[g + 1] <= i:
            g += 1
        estimate[i, :] = 0.0
        stderr[i, :] = 0.0
        if deg[i] == 0.0:  # no edge, no loop: a zero row
            continue
        start, stop = table[i, 0], table[i, 0] + table[i, 1]
        for p in range(start, stop):
            info[indices[p], 3] = weight[p] * info[indices[p], 2]
        info[i, 3] = loops[i] * info[i, 2]
        if method != 0 or walk_length > 2:
            _walk(i, splitmix64(base ^ np.uint64(i - ptr[g])), indices, cum, loops, deg, table,
                  unit, pos, entry)
        # p_2 = sum_x P(i, x) P(x, i), exactly: every p_t, t >= 2, lies in [0, p_2]
        top = info[i, 3] * info[i, 3]
        for p in range(start, stop):
            top += weight[p] * info[i, 2] * info[indices[p], 3]
        if method == 0:
            # t = 1, 2 exactly: P(i, i) and p_2
            estimate[i, 0] = info[i, 3]
            if walk_length > 1:
                estimate[i, 1] = top
            if walk_length > 2:
                used = 0
                for s in range(steps + 1):
                    for k in range(walks):
                        x = pos[k, s]
                        if info[x, 0] != i:
                            info[x, 0] = i
                            info[x, 1] = used
                            back[used] = info[x, 3]
                            used += 1
                        local[k, s] = np.int64(info[x, 1])
                        inv_deg[k, s] = info[x, 2]
                source_collisions(local, inv_deg, back, deg[i], walk_length, counts, spread,
                            estimate[i], stderr[i])
        else:
            for t in range(walk_length):
                total = 0.0
                for k in range(walks):
                    if method == 1:  # P(x_(t-1), i)
                        total += info[pos[k, t], 3]
                    elif pos[k, t + 1] == i:
                        total += 1.0
                mean = total / walks
                estimate[i, t] = mean
                if method == 1:  # (shifted: exactly 0 where every walk gave the same value)
                    first = info[pos[0, t], 3]
                    shift = 0.0
                    for k in range(walks):
                        shift += info[pos[k, t], 3] - first
                    shift /= walks
                    var = 0.0
                    for k in range(walks):
                        var += (info[pos[k, t], 3] - first - shift) ** 2
                    var /= walks - 1.0
                else:
                    var = mean * (1.0 - mean)
                stderr[i, t] = np.sqrt(var / walks)
            # one walk's largest contribution: P(x, i) / W <= max_x P(x, i) / W (transition),
            # 1 / W (indicator)
            most = info[i, 3]
            for p in range(start, stop):
                most = max(most, info[indices[p], 3])
            largest[:] = (most if method == 1 else 1.0) / walks
            cover(estimate[i], stderr[i], largest, 1 if method == 1 else 0, top)
        for p in range(start, stop):
            info[indices[p], 3] = 0.0
        info[i, 3] = 0.0


@aot.njit(cache=True, nogil=True)
def source_collisions(local, inv_deg, back, degree, walk_length, counts, spread, estimate,
                      stderr):  # pragma: no cover - compiled
    """The estimates of ``t = 3..T`` and their standard errors (:func:`cover` of the
    jackknife's) from the walks' positions ``local [W, h + 1]``, renamed ``0..U-1``
    (``inv_deg[k, s] = 1 / d`` of walk ``k``'s node after ``s`` steps, ``back[u] = P(u, i)``,
    ``degree = d(i)``): each the mean over the splits ``t = a + b``, ``a >= b >= 1``,
    ``a <= h``, of the collision U-statistic of steps ``a`` and ``b`` (for ``b = 1`` its limit,
    ``mean_k P(x_a^k, i)``). ``counts [h + 1, >= U]`` is zero scratch, left zero; ``spread
    [W]`` scratch.

    Jackknife: without walk ``k`` a split's sum over ordered pairs loses ``pair[k]``, the
    terms of the pairs that hold ``k`` (as first or second), so the estimate without ``k`` is
    a constant less ``sum_splits c pair[k]`` (``c`` the split's scale), and its spread over
    ``k`` is that of ``spread[k] = sum_splits c pair[k]``. One event's largest contribution
    (for :func:`cover` where no event was seen) is taken over the nodes the walks visited:
    ``max_u P(u, i) / W`` for ``b = 1``, ``d(i) max_u (1 / d(u)) / (W (W - 1))`` for a pair
    (twice for ``a = b``, whose pairs count in both orders); the least over the splits."""
    walks = local.shape[0]
    half = local.shape[1] - 1
    most_back = 0.0  # (over the nodes visited: the same whatever their names)
    most_inv = 0.0
    for s in range(half + 1):
        for k in range(walks):
            most_back = max(most_back, back[local[k, s]])
            most_inv = max(most_inv, inv_deg[k, s])
            if s >= 2:  # counts[s, u]: the walks at u after s steps
                counts[s, local[k, s]] += 1.0
    largest = np.full(walk_length, np.inf)
    scale = degree / (walks * (walks - 1.0))
    leave = degree / ((walks - 1.0) * (walks - 2.0))
    for t in range(3, walk_length + 1):
        first = (t + 1) // 2
        last = min(half, t - 1)
        splits = last - first + 1
        value = 0.0
        spread[:] = 0.0
        for a in range(first, last + 1):
            b = t - a
            total = 0.0
            if b == 1:  # mean_k P(x_a^k, i); the mean without k loses P(x_a^k, i) / (W - 1)
                largest[t - 1] = min(largest[t - 1], most_back / walks)
                for k in range(walks):
                    c = back[local[k, a]]
                    total += c
                    spread[k] += c / (walks - 1.0)
                value += total / walks
                continue
            largest[t - 1] = min(largest[t - 1], (2.0 if a == b else 1.0) * scale * most_inv)
            for k in range(walks):
                ua = local[k, a]
                ub = local[k, b]
                same = 1.0 if ua == ub else 0.0
                row = (counts[b, ua] - same) * inv_deg[k, a]
                total += row
                spread[k] += leave * (row + (counts[a, ub] - same) * inv_deg[k, b])
            value += scale * total
        estimate[t - 1] = value / splits
        mean = 0.0  # (of the shifts from walk 0's: exactly 0 where every walk's is the same)
        for k in range(walks):
            mean += spread[k] - spread[0]
        mean /= walks
        var = 0.0
        for k in range(walks):
            var += (spread[k] - spread[0] - mean) ** 2
        stderr[t - 1] = np.sqrt(var * (walks - 1.0) / walks) / splits
    for s in range(2, half + 1):
        for k in range(walks):
            counts[s, local[k, s]] = 0.0
    cover(estimate, stderr, largest, 2, estimate[1])


@aot.njit(cache=True, nogil=True)
def cover(estimate, stderr, largest, first, top):  # pragma: no cover - compiled
    """The reported standard errors of one node's estimated entries ``first..T-1`` (0-based:
    ``t - 1``) from their plug-in ones ``stderr``, in place (the module docstring's maths):
    the size pooled over ``t - 2, t, t + 2`` as ``sum stderr^2 / sum estimate`` (``largest[t]``,
    one contribution's largest, where those estimates are all 0), then ``stderr = z size / 2 +
    sqrt(stderr^2 + (z size / 2)^2)``, ``z = COVER_Z``, at most ``max(estimate, top -
    estimate) / z``, ``top = p_2`` bounding ``p_t``, ``t >= 2`` (1 for ``t = 1``).
    ``largest`` is overwritten with the sizes."""
    steps = estimate.shape[0]
    for t in range(first, steps):  # every size before any standard error changes
        num = 0.0
        den = 0.0
        for u in (t - 2, t, t + 2):
            if first <= u < steps:
                num += stderr[u] * stderr[u]
                den += estimate[u]
        largest[t] = num / den if den > 0.0 else largest[t]
    for t in range(first, steps):
        lift = 0.5 * COVER_Z * largest[t]
        stderr[t] = lift + np.sqrt(stderr[t] * stderr[t] + lift * lift)
        bound = top if t >= 1 else 1.0  # (p_t in [0, bound]: no need to reach past it)
        stderr[t] = min(stderr[t], max(estimate[t], bound - estimate[t]) / COVER_Z)


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
