r"""Features of query node pairs on one graph, for link prediction: the bounded shortest-path
distance, the common-neighbourhood scores and the personalized PageRank of each pair
``(u, v)``, computed for the pairs asked (any number), never for all pairs of the graph.

The graph is read as undirected and unweighted: ``edge_index``'s edges in both directions,
duplicates merged, self loops and edge weights ignored (:func:`graphpe.ops.host.simple_csr`,
whose rows are sorted). Let ``N(x)`` be the neighbours of ``x`` and ``d(x) = |N(x)|``.

- :func:`pair_distances`: the length of a shortest path from ``u`` to ``v``, ``0`` for
  ``u = v``, and ``max_dist + 1`` where it is longer than ``max_dist`` or there is none. By
  balls grown from both ends: with ``B_a(u)`` the nodes within ``a`` hops of ``u``,
  ``dist(u, v) <= a + b`` exactly when ``B_a(u)`` and ``B_b(v)`` meet; each pair grows the
  ball whose outer layer has the smaller degree sum (the cheaper hop) one hop at a time and
  is done once they meet, so a pair at distance ``D`` costs two balls of radius about
  ``D / 2`` instead of one of radius ``D``.
- :func:`pair_neighbourhood_scores`: ``[CN, AA, RA]`` per pair: the common neighbours
  ``|N(u) ∩ N(v)|``; Adamic-Adar ``sum_(w in N(u) ∩ N(v)) 1 / log d(w)`` (Adamic & Adar,
  2003); resource allocation ``sum_(w in N(u) ∩ N(v)) 1 / d(w)`` (Zhou, Lü & Zhang, 2009),
  as networkx's ``common_neighbors``, ``adamic_adar_index`` and
  ``resource_allocation_index`` (a common neighbour of two distinct nodes has ``d(w) >= 2``,
  so ``log d(w) > 0``). By intersecting the two sorted rows (a merge, or binary searches of
  the shorter row in the longer one when their lengths differ much).
- :func:`pair_ppr`: the personalized PageRank of ``v`` from ``u`` and of ``u`` from ``v``
  by forward push (Andersen, Chung & Lang, FOCS 2006), one push per distinct source node.

All three are compiled (numba) loops over the pairs, shared out over threads
(:func:`graphpe.ops.host.run_over_graphs`); a pair's result depends on the pair and the
graph alone (not on the threads or the other pairs). Each thread works in a few arrays of
``num_nodes`` entries, never a pair x node matrix. :func:`reference_pair_distances` and
:func:`reference_neighbourhood_scores` (scipy sparse products) are the slower reference the
tests and ``benchmarks/link_pairs_large.py`` check the compiled kernels against.

A link model must not read the edges it is asked to predict: :func:`without_pairs` removes
the edges joining given pairs (either direction) from ``edge_index``, and the features of a
training target are computed on that graph (a positive pair then has distance >= 2, as a held
out one has). Removing every training target at once would leave a training graph without
its edges; a link decoder's features (:mod:`graphpe.ops.link_features`) instead set aside
each pair's own edge alone: its distance is the one in the graph without ``u - v``
(``pair_distances(..., without_own_edge=True)``: each ball's first hop skips that edge), and
the neighbourhood scores never read it (a common neighbour of ``u`` and ``v`` is neither of
them). ``pair_ppr(..., without_own_edge=True)`` does the same for PageRank.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import reverse_cuthill_mckee
from torch import Tensor

from graphpe.ops import aot
from graphpe.ops.checks import check_flag, check_positive_int
from graphpe.ops.host import HostCSR, csr_position, graph_chunks, run_over_graphs, simple_csr

# pairs handled together by the scipy reference (two sparse balls of its pairs' rows)
PAIR_CHUNK = 4096
# the fewest pairs a thread is given
PAIRS_PER_THREAD = 2048
# the columns of pair_neighbourhood_scores
NEIGHBOURHOOD_SCORES = ("common_neighbours", "adamic_adar", "resource_allocation")
# binary searches of the shorter row in the longer one beyond this ratio of their lengths
_SEARCH_RATIO = 16


def pair_graph(graph: Tensor | HostCSR, num_nodes: int) -> HostCSR:
    """The undirected simple graph the pair kernels read: ``graph``'s ``edge_index`` made
    simple (:func:`graphpe.ops.host.simple_csr`), or ``graph`` itself where it already is a
    :class:`~graphpe.ops.host.HostCSR` (built once for several calls on one graph)."""
    return graph if isinstance(graph, HostCSR) else simple_csr(graph.cpu(), num_nodes)


def check_pairs(pairs: Tensor, num_nodes: int) -> Tensor:
    """``pairs`` as a ``[2, Q]`` int64 tensor of node ids in ``[0, num_nodes)`` (on the CPU);
    a ValueError naming what is wrong otherwise."""
    if not isinstance(pairs, Tensor) or pairs.dim() != 2 or pairs.size(0) != 2:
        shape = list(pairs.shape) if isinstance(pairs, Tensor) else type(pairs).__name__
        raise ValueError(f"pairs must be a [2, Q] tensor of node ids, got {shape}")
    if pairs.dtype.is_floating_point or pairs.dtype == torch.bool:
        raise ValueError(f"pairs must hold integer node ids, got {pairs.dtype}")
    if pairs.size(1) == 0:
        raise ValueError("pairs is empty: give at least one (u, v) column")
    low, high = int(pairs.min()), int(pairs.max())
    if low < 0 or high >= num_nodes:
        bad = low if low < 0 else high
        raise ValueError(f"pairs name node {bad}, outside the graph's {num_nodes} nodes")
    return pairs.to(device="cpu", dtype=torch.int64)


def adjacency(edge_index: Tensor, num_nodes: int) -> sp.csr_matrix:
    """The 0/1 adjacency of the undirected simple graph of ``edge_index`` (CSR)."""
    csr = simple_csr(edge_index.cpu(), num_nodes)
    ones = np.ones(csr.indices.shape[0], dtype=np.float64)
    return sp.csr_matrix((ones, csr.indices, csr.indptr), shape=(num_nodes, num_nodes))


def without_pairs(edge_index: Tensor, pairs: Tensor, num_nodes: int) -> Tensor:
    """``edge_index`` without its edges that join a pair of ``pairs`` ``[2, Q]``, in either
    direction (self loops and other edges kept, in their order): the graph a link model may
    read while ``pairs`` are its targets."""
    pairs = check_pairs(pairs, num_nodes)
    ei = edge_index.cpu().to(torch.int64)
    n = max(int(num_nodes), 1)
    targets = torch.cat([pairs[0] * n + pairs[1], pairs[1] * n + pairs[0]]).unique()
    keys = ei[0] * n + ei[1]
    position = torch.searchsorted(targets, keys).clamp(max=targets.numel() - 1)
    keep = targets[position] != keys
    return edge_index[:, keep.to(edge_index.device)]


def _pair_ranges(count: int) -> list[tuple[int, int]]:
    """Ranges of ``count`` items (pairs, or PageRank's entries), one per thread."""
    return graph_chunks(np.arange(count + 1), min_nodes=PAIRS_PER_THREAD)


@aot.njit(cache=True, nogil=True, inline="always")
def _grow(indptr, indices, ball, lo, hi, mine, other, mark, u, v, cut,
          last):  # pragma: no cover - compiled
    """One hop of a ball whose outer layer is ``ball[lo:hi]`` (nodes marked ``mine``):
    the new layer appended from ``hi``; returns ``(end, its degree sum, met)``, ``met`` as
    soon as a node of the other ball (marked ``other``) is reached. ``cut``: the edge
    ``u - v`` is not stepped along. ``last``: only look for the other ball (no new layer)."""
    end = hi
    cost = 0
    for i in range(lo, hi):
        x = ball[i]
        for k in range(indptr[x], indptr[x + 1]):
            w = indices[k]
            m = mark[w]
            if m == other:
                if not (cut and ((x == u and w == v) or (x == v and w == u))):
                    return end, cost, True
            elif m != mine and not last:
                mark[w] = mine
                ball[end] = w
                end += 1
                cost += indptr[w + 1] - indptr[w]
    return end, cost, False


@aot.njit(cache=True, nogil=True)
def _distances_range(indptr, indices, us, vs, lo, hi, max_dist, cut,
                     out):  # pragma: no cover - compiled
    """``out[q]`` for the pairs ``lo .. hi - 1`` (the module docstring): two balls per pair,
    marked in one array by stamps unique to the pair (``2q + 2`` for ``u``'s, ``2q + 3`` for
    ``v``'s), so nothing is cleared between pairs."""
    n = indptr.shape[0] - 1
    mark = np.zeros(n, np.int64)
    ball_u = np.empty(n, np.int64)
    ball_v = np.empty(n, np.int64)
    for q in range(lo, hi):
        u, v = us[q], vs[q]
        out[q] = max_dist + 1
        if u == v:
            out[q] = 0
            continue
        side_u, side_v = 2 * q + 2, 2 * q + 3
        mark[u], mark[v] = side_u, side_v
        ball_u[0], ball_v[0] = u, v
        lo_u, hi_u, cost_u = 0, 1, indptr[u + 1] - indptr[u]
        lo_v, hi_v, cost_v = 0, 1, indptr[v + 1] - indptr[v]
        for d in range(1, max_dist + 1):
            last = d == max_dist
            if cost_u <= cost_v:
                end, cost_u, met = _grow(indptr, indices, ball_u, lo_u, hi_u, side_u, side_v,
                                         mark, u, v, cut, last)
                lo_u, hi_u, grown = hi_u, end, end - hi_u
            else:
                end, cost_v, met = _grow(indptr, indices, ball_v, lo_v, hi_v, side_v, side_u,
                                         mark, u, v, cut, last)
                lo_v, hi_v, grown = hi_v, end, end - hi_v
            if met:
                out[q] = d
                break
            if grown == 0:  # a ball holds its whole component: they never meet
                break


def _distances_on(csr: HostCSR, pairs: Tensor, max_dist: int, cut: bool) -> Tensor:
    us, vs = pairs[0].numpy(), pairs[1].numpy()
    out = np.empty(us.shape[0], np.int64)
    run_over_graphs(lambda lo, hi: _distances_range(
        csr.indptr, csr.indices, us, vs, lo, hi, max_dist, cut, out), _pair_ranges(us.shape[0]))
    return torch.from_numpy(out)


def pair_distances(edge_index: Tensor | HostCSR, num_nodes: int, pairs: Tensor,
                   max_dist: int = 3, without_own_edge: bool = False) -> Tensor:
    """Shortest-path distances of ``pairs`` ``[2, Q]`` on the undirected graph, capped: an
    int64 ``[Q]`` with ``max_dist + 1`` for pairs farther apart than ``max_dist`` hops or not
    connected (see the module docstring: two balls per pair, the cheaper one grown a hop at
    a time until they meet). ``without_own_edge``: each pair's distance in the graph without
    the edge ``u - v`` itself (a training target's distance as if it were held out; the other
    pairs' edges stay). ``edge_index`` may be the graph's :func:`pair_graph`, built once."""
    check_positive_int("max_dist", max_dist)
    check_flag("without_own_edge", without_own_edge)
    pairs = check_pairs(pairs, num_nodes)
    return _distances_on(pair_graph(edge_index, num_nodes), pairs, max_dist, without_own_edge)


@aot.njit(cache=True, nogil=True)
def _scores_range(indptr, indices, inv_log, inv_deg, us, vs, lo, hi,
                  out):  # pragma: no cover - compiled
    """``out[q] = [CN, AA, RA]`` of the pairs ``lo .. hi - 1``: the sorted rows of ``u`` and
    ``v`` intersected, the common neighbours' weights summed in ascending node order."""
    for q in range(lo, hi):
        a, a_end, b, b_end = indptr[us[q]], indptr[us[q] + 1], indptr[vs[q]], indptr[vs[q] + 1]
        if a_end - a > b_end - b:  # a: the shorter row
            a, a_end, b, b_end = b, b_end, a, a_end
        cn, aa, ra = 0, 0.0, 0.0
        if (a_end - a) * _SEARCH_RATIO < b_end - b:
            for i in range(a, a_end):  # each of the shorter row searched in the rest of b
                w = indices[i]
                low, high = b, b_end
                while low < high:
                    mid = (low + high) // 2
                    if indices[mid] < w:
                        low = mid + 1
                    else:
                        high = mid
                b = low
                if b == b_end:
                    break
                if indices[b] == w:
                    cn += 1
                    aa += inv_log[w]
                    ra += inv_deg[w]
        else:
            while a < a_end and b < b_end:
                x, y = indices[a], indices[b]
                if x < y:
                    a += 1
                elif y < x:
                    b += 1
                else:
                    cn += 1
                    aa += inv_log[x]
                    ra += inv_deg[x]
                    a += 1
                    b += 1
        out[q, 0], out[q, 1], out[q, 2] = cn, aa, ra


def _node_weights(degree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``1 / log d(w)`` and ``1 / d(w)``, 0 where undefined (never read for a common
    neighbour, whose degree is at least 2)."""
    with np.errstate(divide="ignore"):
        inv_log = np.where(degree > 1, 1.0 / np.log(np.maximum(degree, 2.0)), 0.0)
        inv_deg = np.where(degree > 0, 1.0 / np.maximum(degree, 1.0), 0.0)
    return inv_log, inv_deg


def _scores_on(csr: HostCSR, pairs: Tensor) -> Tensor:
    inv_log, inv_deg = _node_weights(np.diff(csr.indptr).astype(np.float64))
    us, vs = pairs[0].numpy(), pairs[1].numpy()
    out = np.empty((us.shape[0], 3), np.float64)
    run_over_graphs(lambda lo, hi: _scores_range(
        csr.indptr, csr.indices, inv_log, inv_deg, us, vs, lo, hi, out),
        _pair_ranges(us.shape[0]))
    return torch.from_numpy(out)


def pair_neighbourhood_scores(edge_index: Tensor | HostCSR, num_nodes: int,
                              pairs: Tensor) -> Tensor:
    """``[Q, 3]`` float64: each pair's common neighbours, Adamic-Adar and resource allocation
    scores (:data:`NEIGHBOURHOOD_SCORES`, see the module docstring). For ``u = v`` they are
    the sums over ``N(u)`` itself. ``edge_index`` may be the graph's :func:`pair_graph`."""
    pairs = check_pairs(pairs, num_nodes)
    return _scores_on(pair_graph(edge_index, num_nodes), pairs)


# the columns of the push's per-node state: residual, estimate, mark (+stamp: touched by
# the current push, -stamp: touched and queued), eps * d(x) (the push threshold)
_R, _P, _MARK, _THRESHOLD = 0, 1, 2, 3


@aot.njit(cache=True, nogil=True)
def _push(indptr, indices, source, cut_a, cut_b, alpha, eps, state, stamp,
          queue):  # pragma: no cover - compiled
    """Forward push from ``source`` (:func:`pair_ppr`), without the edge ``cut_a - cut_b``
    unless they are ``-1``. ``state``: a row per node (half a cache line), valid where
    ``|mark| == stamp`` (others: 0), so nothing is cleared between pushes. A FIFO of the
    nodes over their threshold, each in it at most once: a ring of ``num_nodes``."""
    n = indptr.shape[0] - 1
    state[source, _R], state[source, _P], state[source, _MARK] = 1.0, 0.0, -stamp
    queue[0] = source
    head, count = 0, 1
    while count > 0:
        x = queue[head]
        head = head + 1 if head + 1 < n else 0
        count -= 1
        state[x, _MARK] = stamp
        rx = state[x, _R]
        state[x, _P] += alpha * rx
        state[x, _R] = 0.0
        d = indptr[x + 1] - indptr[x]
        if x == cut_a or x == cut_b:
            d -= 1
        if d == 0:  # no neighbour: the walk's mass leaves (P's row is 0)
            continue
        share = (1.0 - alpha) * rx / d
        for k in range(indptr[x], indptr[x + 1]):
            w = indices[k]
            if (x == cut_a and w == cut_b) or (x == cut_b and w == cut_a):
                continue
            mark = state[w, _MARK]
            if mark == -stamp:  # queued already
                state[w, _R] += share
                continue
            if mark == stamp:
                residual = state[w, _R] + share
            else:  # first touched by this push
                residual = share
                state[w, _P] = 0.0
            state[w, _R] = residual
            threshold = state[w, _THRESHOLD]
            if w == cut_a or w == cut_b:
                threshold -= eps
            if residual >= threshold:
                tail = head + count
                queue[tail if tail < n else tail - n] = w
                count += 1
                state[w, _MARK] = -stamp
            else:
                state[w, _MARK] = stamp


@aot.njit(cache=True, nogil=True, inline="always")
def _joined(indptr, indices, s, t):  # pragma: no cover - compiled
    """Whether the edge ``s - t`` is in the CSR (rows sorted)."""
    k = csr_position(indptr, indices, s, t)
    return k < indptr[s + 1] and indices[k] == t


@aot.njit(cache=True, nogil=True, inline="always")
def _estimate(state, t, stamp):  # pragma: no cover - compiled
    return state[t, _P] if abs(state[t, _MARK]) == stamp else 0.0


@aot.njit(cache=True, nogil=True, inline="always")
def _write_pair(out, q, column, estimate, d_source, d_target, same):  # pragma: no cover
    """Pair ``q``'s two PageRanks from the push estimate ``p_s(t)``: ``out[q, column]`` is it,
    the other column ``d(s) / d(t) p_s(t)`` (reversibility; 0 where ``t`` has no edge left,
    ``p_s(t)`` itself where ``s = t``)."""
    out[q, column] = estimate
    if same:
        out[q, 1 - column] = estimate
    else:
        out[q, 1 - column] = estimate * d_source / d_target if d_target > 0 else 0.0


@aot.njit(cache=True, nogil=True)
def _ppr_range(indptr, indices, local_ptr, local_indices, local_of, sources, targets, pair,
               column, group_ptr, lo, hi, alpha, eps, cut, out):  # pragma: no cover - compiled
    """The PageRanks of the source groups ``lo .. hi - 1`` (entries ``group_ptr[g] ..
    group_ptr[g + 1] - 1``; entry ``e``'s estimate goes to ``out[pair[e], column[e]]``): a
    push per group for the entries read on the whole graph, then (``cut``) a push per entry
    whose pair is an edge, without it; on the graph renumbered by :func:`_local_graph`."""
    n = indptr.shape[0] - 1
    state = np.zeros((n, 4))
    for x in range(n):
        state[x, _THRESHOLD] = eps * (local_ptr[x + 1] - local_ptr[x])
    queue = np.empty(max(n, 1), np.int64)
    stamp = 0.0
    for g in range(lo, hi):
        s = sources[group_ptr[g]]
        d_s = indptr[s + 1] - indptr[s]
        pushed = False
        for e in range(group_ptr[g], group_ptr[g + 1]):
            t = targets[e]
            if cut and _joined(indptr, indices, s, t):
                continue
            if not pushed:
                stamp += 1.0
                _push(local_ptr, local_indices, local_of[s], -1, -1, alpha, eps, state, stamp,
                      queue)
                pushed = True
            _write_pair(out, pair[e], column[e], _estimate(state, local_of[t], stamp), d_s,
                        indptr[t + 1] - indptr[t], s == t)
        if not cut:
            continue
        for e in range(group_ptr[g], group_ptr[g + 1]):
            t = targets[e]
            if _joined(indptr, indices, s, t):
                stamp += 1.0
                _push(local_ptr, local_indices, local_of[s], local_of[s], local_of[t], alpha,
                      eps, state, stamp, queue)
                _write_pair(out, pair[e], column[e], _estimate(state, local_of[t], stamp),
                            d_s - 1, indptr[t + 1] - indptr[t] - 1, False)


@aot.njit(cache=True, nogil=True)
def _renumbered(indptr, indices, order, local_of):  # pragma: no cover - compiled
    """The CSR with node ``order[i]`` renumbered ``i`` (``local_of`` the inverse), each row's
    neighbours kept in their order (so a push reads them in the same order)."""
    n = indptr.shape[0] - 1
    local_ptr = np.empty(n + 1, np.int64)
    local_indices = np.empty(indices.shape[0], np.int64)
    local_ptr[0] = 0
    for i in range(n):
        x = order[i]
        start = local_ptr[i]
        for k in range(indptr[x], indptr[x + 1]):
            local_indices[start + k - indptr[x]] = local_of[indices[k]]
        local_ptr[i + 1] = start + indptr[x + 1] - indptr[x]
    return local_ptr, local_indices


def _local_graph(csr: HostCSR) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(local_ptr, local_indices, local_of)``: the graph renumbered in reverse Cuthill-McKee
    order (scipy), so that the nodes a push touches together sit close in memory (1.4x as
    fast on ogbn-arxiv). The rows keep their neighbours' order, so every push does the same
    arithmetic in the same order as on the graph as given: the results do not change."""
    n = csr.indptr.shape[0] - 1
    graph = sp.csr_matrix((np.ones(csr.indices.shape[0], np.int8), csr.indices, csr.indptr),
                          shape=(n, n))
    order = reverse_cuthill_mckee(graph, symmetric_mode=True).astype(np.int64)
    local_of = np.empty(n, np.int64)
    local_of[order] = np.arange(n)
    return (*_renumbered(csr.indptr, csr.indices, order, local_of), local_of)


def _check_ppr(alpha: object, eps: object) -> tuple[float, float]:
    real = (int, float, np.integer, np.floating)
    if isinstance(alpha, bool) or not isinstance(alpha, real) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if isinstance(eps, bool) or not isinstance(eps, real) or not 0.0 < eps < float("inf"):
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    return float(alpha), float(eps)


def pair_ppr(edge_index: Tensor | HostCSR, num_nodes: int, pairs: Tensor, alpha: float = 0.15,
             eps: float = 1e-4, without_own_edge: bool = False) -> Tensor:
    r"""Personalized PageRank of the query pairs by forward push: a float64 ``[Q, 2]``,
    column 0 the PageRank of ``v`` personalized on ``u``, ``pi_u(v)``, column 1 ``pi_v(u)``.

    The maths: with ``P = D^-1 A`` the random walk of the undirected simple graph (a zero row
    at an isolated node, whose walk's mass leaves), ``pi_s = alpha sum_(k >= 0) (1 - alpha)^k
    (P^T)^k e_s = alpha (I - (1 - alpha) P^T)^-1 e_s``: ``pi_s(t)`` is the probability that a
    walk from ``s`` that stops at each step with probability ``alpha`` stops at ``t``.

    Forward push (Andersen, Chung & Lang, "Local graph partitioning using PageRank vectors",
    FOCS 2006; without their lazy half step): ``p = 0``, ``r = e_s``; while a node ``x`` has
    ``r(x) >= eps d(x)`` (in FIFO order): ``p(x) += alpha r(x)``, each neighbour ``w`` gets
    ``r(w) += (1 - alpha) r(x) / d(x)``, ``r(x) = 0``. It keeps ``pi_s = p + sum_x r(x)
    pi_x`` and ends with ``r(x) < eps d(x)`` at every node; since ``d(x) pi_x(t) = d(t)
    pi_t(x)`` (the walk is reversible), the error bound is ``0 <= pi_s(t) - p(t) < eps
    d(t)``. Each push moves at least ``alpha eps d(x)`` of mass into ``p`` (at most 1 in
    all), so a source costs at most ``1 / (alpha eps)`` edge reads, whatever the graph's size.

    One push per distinct source, and one source per pair: its end ``s`` of larger degree
    (ties: the smaller id), whose push gives ``p_s(t)`` for the other end ``t``; the other
    column is ``d(s) p_s(t) / d(t)`` by reversibility (``pi_t(s) = d(s) pi_s(t) / d(t)``),
    within ``[0, eps d(s))`` of ``pi_t(s)``: the bound a push from ``t`` would give. Pairs
    are grouped by source (a node that is an end of many pairs is pushed once), the sources
    taken in the graph's reverse Cuthill-McKee order, in whose numbering the pushes run (what
    they touch sits close in memory) with each node's neighbours in their given order (the
    same arithmetic as on the graph given). Memory: ``O(Q + E)``, and per thread
    ``O(num_nodes)`` (estimate, residual, mark, threshold, queue), never cleared.

    Args:
        edge_index: ``[2, E]``, the graph (read as undirected and simple), or its
            :func:`pair_graph` built once for several calls.
        num_nodes: its node count.
        pairs: ``[2, Q]`` node ids, the query pairs (``u = v`` gives ``pi_u(u)``).
        alpha: the stopping (teleport) probability, in ``(0, 1)``.
        eps: the push threshold per unit of degree (> 0): the error bound above.
        without_own_edge: each pair ``(u, v)`` joined by an edge gets the PageRank of the
            graph without that edge (degrees of ``u`` and ``v`` one less), as
            :func:`pair_distances` with ``without_own_edge``, so a training target does not
            read its own edge; such a pair costs a push of its own (the others still share
            theirs). Or give the graph without the targets (:func:`without_pairs`).

    Returns:
        ``[Q, 2]`` float64, ``p_u(v)`` and ``p_v(u)`` as above.
    """
    alpha, eps = _check_ppr(alpha, eps)
    check_flag("without_own_edge", without_own_edge)
    pairs = check_pairs(pairs, num_nodes)
    csr = pair_graph(edge_index, num_nodes)
    local_ptr, local_indices, local_of = _local_graph(csr)
    u, v = pairs[0].numpy(), pairs[1].numpy()
    degree = np.diff(csr.indptr)
    from_u = (degree[u] > degree[v]) | ((degree[u] == degree[v]) & (u <= v))
    # the pairs by source, the sources in local order (pushes that follow each other touch
    # nearby nodes)
    pair = np.argsort(local_of[np.where(from_u, u, v)], kind="stable")
    sources = np.where(from_u, u, v)[pair]
    targets = np.where(from_u, v, u)[pair]
    column = np.where(from_u, 0, 1)[pair]
    starts = np.flatnonzero(np.diff(sources, prepend=-1))
    group_ptr = np.append(starts, sources.shape[0]).astype(np.int64)
    out = np.empty((u.shape[0], 2), np.float64)
    chunks = graph_chunks(group_ptr, min_nodes=PAIRS_PER_THREAD)  # balanced by pairs
    run_over_graphs(lambda lo, hi: _ppr_range(
        csr.indptr, csr.indices, local_ptr, local_indices, local_of, sources, targets, pair,
        column, group_ptr, lo, hi, alpha, eps, without_own_edge, out), chunks)
    return torch.from_numpy(out)


# ------------------------------------------------------------ the reference (scipy)


def _grown(ball: sp.csr_matrix, rows: np.ndarray, adj: sp.csr_matrix,
           cut: tuple[np.ndarray, np.ndarray] | None = None) -> sp.csr_matrix:
    """``ball`` with its ``rows`` one hop larger (their nodes and their neighbours, as 0/1),
    the other rows as they were. With ``cut = (centres, far_ends)`` (one of each per row of
    ``ball``), row ``r`` does not step along the edge from ``centres[r]`` to ``far_ends[r]``:
    the hop counts how many of the ball's nodes reach each node, and that edge's one is taken
    off (the ball always holds its centre)."""
    if rows.size == 0:
        return ball
    select = sp.csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))),
                           shape=(ball.shape[0], rows.size))
    step = ball[rows] @ adj
    if cut is not None:
        centres, far_ends = cut[0][rows], cut[1][rows]
        joined = np.asarray(adj[centres, far_ends]).ravel()
        step = step - sp.csr_matrix((joined, (np.arange(rows.size), far_ends)), shape=step.shape)
        step.eliminate_zeros()
    grown = ball + select @ step
    grown.eliminate_zeros()
    grown.data[:] = 1.0
    return grown


def _meet(a: sp.csr_matrix, b: sp.csr_matrix) -> np.ndarray:
    """Rows of two balls that share a node."""
    return np.asarray(a.multiply(b).sum(axis=1)).ravel() > 0


def reference_pair_distances(edge_index: Tensor, num_nodes: int, pairs: Tensor,
                             max_dist: int = 3, without_own_edge: bool = False) -> Tensor:
    """:func:`pair_distances` as sparse products (scipy): the balls of :data:`PAIR_CHUNK`
    pairs at a time as rows of 0/1 matrices, the one with fewer nodes grown by a product with
    the adjacency. The reference the tests check the compiled kernel against (and the
    benchmark's baseline); slower, so call :func:`pair_distances`."""
    check_positive_int("max_dist", max_dist)
    pairs = check_pairs(pairs, num_nodes)
    adj = adjacency(edge_index, num_nodes)
    eye = sp.identity(num_nodes, format="csr", dtype=np.float64)
    out = np.full(pairs.size(1), max_dist + 1, dtype=np.int64)
    u_all, v_all = pairs[0].numpy(), pairs[1].numpy()
    for start in range(0, u_all.shape[0], PAIR_CHUNK):
        u, v = u_all[start:start + PAIR_CHUNK], v_all[start:start + PAIR_CHUNK]
        dist = out[start:start + PAIR_CHUNK]
        dist[u == v] = 0
        active = np.flatnonzero(u != v)  # the pairs whose balls have not met yet
        ends = (u[active], v[active])
        ball_u, ball_v = eye[ends[0]], eye[ends[1]]
        for d in range(1, max_dist + 1):  # the two radii sum to d
            if active.size == 0:
                break
            grow_u = np.diff(ball_u.indptr) <= np.diff(ball_v.indptr)  # the smaller side
            ball_u = _grown(ball_u, np.flatnonzero(grow_u), adj,
                            ends if without_own_edge else None)
            ball_v = _grown(ball_v, np.flatnonzero(~grow_u), adj,
                            ends[::-1] if without_own_edge else None)
            met = _meet(ball_u, ball_v)
            dist[active[met]] = d
            keep = ~met
            active, ball_u, ball_v = active[keep], ball_u[keep], ball_v[keep]
            ends = (ends[0][keep], ends[1][keep])
    return torch.from_numpy(out)


def reference_neighbourhood_scores(edge_index: Tensor, num_nodes: int,
                                   pairs: Tensor) -> Tensor:
    """:func:`pair_neighbourhood_scores` as sparse products (scipy): the rows of ``u`` and
    ``v`` multiplied entrywise, times the node weights ``[1, 1 / log d, 1 / d]``,
    :data:`PAIR_CHUNK` pairs at a time. The reference the tests check the compiled kernel
    against (and the benchmark's baseline); slower, so call :func:`pair_neighbourhood_scores`."""
    pairs = check_pairs(pairs, num_nodes)
    adj = adjacency(edge_index, num_nodes)
    inv_log, inv_deg = _node_weights(np.asarray(adj.sum(axis=1)).ravel())
    weights = np.stack([np.ones(num_nodes), inv_log, inv_deg], axis=1)
    out = np.empty((pairs.size(1), 3), dtype=np.float64)
    u_all, v_all = pairs[0].numpy(), pairs[1].numpy()
    for start in range(0, u_all.shape[0], PAIR_CHUNK):
        u, v = u_all[start:start + PAIR_CHUNK], v_all[start:start + PAIR_CHUNK]
        common = adj[u].multiply(adj[v])  # [chunk, n]: the common neighbours
        out[start:start + u.shape[0]] = common @ weights
    return torch.from_numpy(out)


aot.bind(globals())  # (binds nothing until the module joins aot.AOT_MODULES)
