r"""Random-walk landing probabilities of query node pairs on one graph (RRWP at a pair), for
link prediction: ``M^k[u, v]`` and ``M^k[v, u]`` for ``k = 1 .. steps``, computed for the
pairs asked, never for all pairs of the graph.

``M = D^-1 A`` is the random walk of the undirected simple graph (``edge_index``'s edges in
both directions, duplicates merged, self loops and weights ignored; a zero row at a node
without neighbours, whose walk's mass leaves). ``M^k[u, v]`` is the probability that a walk
from ``u`` stands on ``v`` after ``k`` steps: the pair's entry of GRIT's relative random-walk
probabilities (Ma et al., ICML 2023), without the ``n x n`` matrix.

By meeting in the middle: with ``p_s^x = e_x^T M^s`` the walk's distribution after ``s``
steps from ``x``, and the walk reversible (``d(w) M^r[w, v] = d(v) M^r[v, w]``),

    M^k[u, v] = sum_w p_s^u(w) M^r[w, v] = d(v) sum_w p_s^u(w) p_r^v(w) / d(w),

for ``k = s + r``, ``s = ceil(k / 2)``, ``r = floor(k / 2)`` (``r = 0``: ``p_1^u(v)``), and
``M^k[v, u] = d(u) M^k[u, v] / d(v)`` (0 where ``d(v) = 0``). A pair costs the walks from
``u`` for ``ceil(steps / 2)`` steps and from ``v`` for ``floor(steps / 2)``: the edges of their
balls of those radii (large around hubs), with every distribution held sparsely over the
nodes it reached. The longer walk starts from the pair's end of larger degree (the sums
hold with the ends swapped), and the pairs that share that end take its walks once: a hub is
an end of many pairs, and its walks cost the most.

A link model must not read the edge it predicts: with ``without_own_edge`` each pair's
probabilities are those of the graph without the edge ``u - v`` (``d(u)`` and ``d(v)`` one
less, the walks never step along it), as :func:`graphpe.ops.link.pair_distances` and
:func:`graphpe.ops.link.pair_ppr` do.

The heat kernel of the random walk's Laplacian ``L = I - M`` at a pair (:func:`pair_heat`) is
the series in the same powers,

    exp(-t L)[u, v] = e^-t sum_k t^k / k! M^k[u, v],

summed to ``k =`` :data:`MAX_PAIR_WALK_STEPS`: as ``0 <= M^k[u, v] <= 1``, the terms left
out total at most ``e^-t sum_(k > 8) t^k / k!`` (below 1.1e-6 for ``t <=``
:data:`MAX_PAIR_HEAT_TIME`). For the symmetric Laplacian ``I - D^-1/2 A D^-1/2`` the entry is
``sqrt(d(u) / d(v))`` times this one.

:func:`reference_pair_walks` (dense matrix powers of the graph without each pair's edge) is
the slower reference the tests check the compiled kernel against. The module is not among the
kernels compiled at install (:data:`graphpe.ops.aot.AOT_MODULES`): numba compiles its kernels
on first use and keeps them in its disk cache.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from graphpe.ops import aot
from graphpe.ops.checks import check_flag, check_positive_int
from graphpe.ops.host import HostCSR, csr_position, graph_chunks, run_over_graphs
from graphpe.ops.link import PAIRS_PER_THREAD, check_pairs, pair_graph

# the most steps a call takes (each a dense scratch vector per thread, and balls of half its
# radius around both ends)
MAX_PAIR_WALK_STEPS = 8
# the longest diffusion time of pair_heat: its series, cut after MAX_PAIR_WALK_STEPS powers,
# is then within 1.1e-6 of exp(-t L)
MAX_PAIR_HEAT_TIME = 1.0


@aot.njit(cache=True, nogil=True)
def _spread(indptr, indices, degree, src, src_nodes, src_count, dst, dst_nodes, u, v,
            cut):  # pragma: no cover - compiled
    """One step of the walk: ``dst = src M`` over the nodes ``src_nodes[:src_count]`` holding
    ``src``'s mass (``dst`` zero on entry); returns how many nodes ``dst`` reached (listed in
    ``dst_nodes``). ``degree`` is the walk's (the own edge already set aside where ``cut``);
    ``cut``: the edge ``u - v`` is not stepped along."""
    count = 0
    for i in range(src_count):
        x = src_nodes[i]
        if degree[x] == 0:
            continue
        share = src[x] / degree[x]
        for k in range(indptr[x], indptr[x + 1]):
            w = indices[k]
            if cut and ((x == u and w == v) or (x == v and w == u)):
                continue
            if dst[w] == 0.0:
                dst_nodes[count] = w
                count += 1
            dst[w] += share
    return count


@aot.njit(cache=True, nogil=True)
def _walks(indptr, indices, degree, start, steps, u, v, cut, prob, nodes,
           counts):  # pragma: no cover - compiled
    """The distributions ``p_0 .. p_steps`` from ``start`` into ``prob[s]`` over
    ``nodes[s, :counts[s]]``."""
    prob[0, start] = 1.0
    nodes[0, 0] = start
    counts[0] = 1
    for s in range(steps):
        counts[s + 1] = _spread(indptr, indices, degree, prob[s], nodes[s], counts[s],
                                prob[s + 1], nodes[s + 1], u, v, cut)


@aot.njit(cache=True, nogil=True)
def _clear(prob, nodes, counts, steps):  # pragma: no cover - compiled
    for s in range(steps + 1):
        for i in range(counts[s]):
            prob[s, nodes[s, i]] = 0.0


@aot.njit(cache=True, nogil=True, inline="always")
def _source_prob(prob_u, prob_v, s, w, u, v, corrected, du, dv):  # pragma: no cover
    """``p_s^u(w)``: from ``u``'s walks on the whole graph, or where ``corrected`` (the
    pair's own edge set aside, ``s <= 2``) from the same walks without the edge ``u - v``:
    ``p'_1(w) = (d(u) p_1(w) - [w = v]) / (d(u) - 1)``, ``p'_2(w) = (d(u) p_2(w) - A(v, w) /
    d(v)) / (d(u) - 1)`` (the walks through ``v`` taken out; no other row of ``A`` changes),
    with ``A(v, w) = (d(v) - 1) p'^v_1(w) + [w = u]`` read from ``v``'s own walk.
    ``du``, ``dv``: the degrees with the edge."""
    if not corrected:
        return prob_u[s, w]
    if du <= 1.0:
        return 0.0
    if s == 1:
        taken = 1.0 if w == v else 0.0
    else:
        taken = ((dv - 1.0) * prob_v[1, w] + (1.0 if w == u else 0.0)) / dv
    return (du * prob_u[s, w] - taken) / (du - 1.0)


@aot.njit(cache=True, nogil=True)
def _products(prob_u, prob_v, nodes_v, counts_v, degree, u, v, steps, corrected, du, dv, out,
              q):  # pragma: no cover - compiled
    """``out[q]`` from the walks of ``u`` and ``v`` (the module docstring's sums;
    ``corrected``: ``u``'s walks are the whole graph's, see :func:`_source_prob`)."""
    for k in range(1, steps + 1):
        s, r = (k + 1) // 2, k // 2
        if r == 0:
            # one step: along the edge u - v, which a corrected pair has set aside
            forward = 0.0 if corrected else prob_u[1, v]
        else:
            total = 0.0
            for i in range(counts_v[r]):
                w = nodes_v[r, i]
                total += (_source_prob(prob_u, prob_v, s, w, u, v, corrected, du, dv)
                          * prob_v[r, w] / degree[w])
            forward = degree[v] * total
        out[q, k - 1] = forward
        out[q, steps + k - 1] = degree[u] * forward / degree[v] if degree[v] > 0 else 0.0


@aot.njit(cache=True, nogil=True)
def _pair_walks_groups(indptr, indices, sources, targets, group_ptr, lo, hi, steps, cut,
                       out):  # pragma: no cover - compiled
    """``out[q] = [M^1[s, t] .. M^steps[s, t], M^1[t, s] .. M^steps[t, s]]`` for the pairs of
    the groups ``lo .. hi - 1``: the pairs ``group_ptr[g] .. group_ptr[g + 1] - 1`` share
    their source ``s``, whose walks on the whole graph are taken once for all of them. A pair
    whose own edge is set aside reads them corrected (:func:`_source_prob`) where the source
    walks at most two steps (``steps <= 4``), else walks on its own."""
    n = indptr.shape[0] - 1
    half_u, half_v = (steps + 1) // 2, steps // 2
    prob_u = np.zeros((half_u + 1, n))
    prob_v = np.zeros((half_v + 1, n))
    nodes_u = np.empty((half_u + 1, n), np.int64)
    nodes_v = np.empty((half_v + 1, n), np.int64)
    counts_u = np.zeros(half_u + 1, np.int64)
    counts_v = np.zeros(half_v + 1, np.int64)
    degree = np.empty(n, np.float64)
    for x in range(n):
        degree[x] = indptr[x + 1] - indptr[x]
    correctable = half_u <= 2
    for g in range(lo, hi):
        u = sources[group_ptr[g]]
        shared = False  # the source's walks on the whole graph are in prob_u
        for q in range(group_ptr[g], group_ptr[g + 1]):
            v = targets[q]
            own = False
            if cut and u != v:
                at = csr_position(indptr, indices, u, v)
                own = at < indptr[u + 1] and indices[at] == v
            du, dv = degree[u], degree[v]
            if own and not correctable:
                if shared:
                    _clear(prob_u, nodes_u, counts_u, half_u)
                    shared = False
                degree[u] -= 1.0
                degree[v] -= 1.0
                _walks(indptr, indices, degree, u, half_u, u, v, True, prob_u, nodes_u,
                       counts_u)
            else:
                if not shared:
                    _walks(indptr, indices, degree, u, half_u, u, v, False, prob_u, nodes_u,
                           counts_u)
                    shared = True
                if own:
                    degree[u] -= 1.0
                    degree[v] -= 1.0
            _walks(indptr, indices, degree, v, half_v, u, v, own, prob_v, nodes_v, counts_v)
            _products(prob_u, prob_v, nodes_v, counts_v, degree, u, v, steps,
                      own and correctable, du, dv, out, q)
            _clear(prob_v, nodes_v, counts_v, half_v)
            if own:
                if not correctable:
                    _clear(prob_u, nodes_u, counts_u, half_u)
                degree[u] = du
                degree[v] = dv
        if shared:
            _clear(prob_u, nodes_u, counts_u, half_u)


def _check_steps(steps: object) -> int:
    steps = check_positive_int("steps", steps)
    if steps > MAX_PAIR_WALK_STEPS:
        raise ValueError(f"steps must be at most {MAX_PAIR_WALK_STEPS} (balls of half that "
                         f"radius around both ends of every pair), got {steps}")
    return steps


def pair_walks(edge_index: Tensor | HostCSR, num_nodes: int, pairs: Tensor, steps: int = 4,
               without_own_edge: bool = False) -> Tensor:
    """Random-walk landing probabilities of ``pairs`` ``[2, Q]``: a float64 ``[Q, 2 steps]``,
    columns ``M^1[u, v] .. M^steps[u, v]`` then ``M^1[v, u] .. M^steps[v, u]`` (module
    docstring).

    Args:
        edge_index: ``[2, E]``, the graph (read as undirected and simple), or its
            :func:`~graphpe.ops.link.pair_graph` built once for several calls.
        num_nodes: its node count.
        pairs: ``[2, Q]`` node ids (``u = v`` gives the return probabilities).
        steps: the walk lengths, ``1 .. steps`` (at most :data:`MAX_PAIR_WALK_STEPS`).
        without_own_edge: each pair joined by an edge gets the probabilities of the graph
            without that edge, so a training target does not read its own edge.
    """
    steps = _check_steps(steps)
    check_flag("without_own_edge", without_own_edge)
    pairs = check_pairs(pairs, num_nodes)
    csr = pair_graph(edge_index, num_nodes)
    u, v = pairs[0].numpy(), pairs[1].numpy()
    # each pair's source is its end of larger degree (ties: the smaller id), the pairs
    # grouped by source: a node in many pairs (a hub, as edges' ends often are) walks once
    degree = np.diff(csr.indptr)
    from_u = (degree[u] > degree[v]) | ((degree[u] == degree[v]) & (u <= v))
    order = np.argsort(np.where(from_u, u, v), kind="stable")
    sources, targets = np.where(from_u, u, v)[order], np.where(from_u, v, u)[order]
    starts = np.flatnonzero(np.diff(sources, prepend=-1))
    group_ptr = np.append(starts, sources.shape[0]).astype(np.int64)
    walks = np.empty((u.shape[0], 2 * steps), np.float64)
    chunks = graph_chunks(group_ptr, min_nodes=PAIRS_PER_THREAD)  # balanced by pairs
    run_over_graphs(lambda lo, hi: _pair_walks_groups(
        csr.indptr, csr.indices, sources, targets, group_ptr, lo, hi, steps,
        without_own_edge, walks), chunks)
    # back to the pairs' order, each as (u, v): the halves swap where v was the source
    flip = ~from_u[order]
    walks[flip] = np.concatenate([walks[flip, steps:], walks[flip, :steps]], axis=1)
    out = np.empty_like(walks)
    out[order] = walks
    return torch.from_numpy(out)


def pair_heat(edge_index: Tensor | HostCSR, num_nodes: int, pairs: Tensor,
              times: tuple[float, ...] = (0.5, 1.0),
              without_own_edge: bool = False) -> Tensor:
    """The heat kernel ``exp(-t (I - D^-1 A))`` of ``pairs`` ``[2, Q]`` (module docstring:
    the series to :data:`MAX_PAIR_WALK_STEPS` powers of :func:`pair_walks`): a float64
    ``[Q, 2 len(times)]``, columns ``H_t[u, v]`` for each of ``times``, then ``H_t[v, u]``.
    ``times`` lie in ``(0,`` :data:`MAX_PAIR_HEAT_TIME` ``]``; ``without_own_edge`` as
    :func:`pair_walks`."""
    times = tuple(times)
    if not times or any(not isinstance(t, (int, float)) or isinstance(t, bool)
                        or not 0.0 < t <= MAX_PAIR_HEAT_TIME for t in times):
        raise ValueError(f"times must be numbers in (0, {MAX_PAIR_HEAT_TIME:g}], got {times!r}")
    pairs = check_pairs(pairs, num_nodes)
    steps = MAX_PAIR_WALK_STEPS
    walks = pair_walks(edge_index, num_nodes, pairs, steps, without_own_edge).numpy()
    k = np.arange(1, steps + 1)
    log_factorial = np.cumsum(np.log(k))
    same = (pairs[0] == pairs[1]).numpy().astype(np.float64)  # the k = 0 term, M^0 = I
    out = np.empty((walks.shape[0], 2 * len(times)))
    for i, t in enumerate(times):
        weight = np.exp(k * np.log(t) - log_factorial - t)  # e^-t t^k / k!
        out[:, i] = np.exp(-t) * same + walks[:, :steps] @ weight
        out[:, len(times) + i] = np.exp(-t) * same + walks[:, steps:] @ weight
    return torch.from_numpy(out)


def reference_pair_walks(edge_index: Tensor, num_nodes: int, pairs: Tensor, steps: int = 4,
                         without_own_edge: bool = False) -> Tensor:
    """:func:`pair_walks` by dense matrix powers of each pair's graph (small graphs only)."""
    steps = _check_steps(steps)
    pairs = check_pairs(pairs, num_nodes)
    csr = pair_graph(edge_index, num_nodes)
    dense = np.zeros((num_nodes, num_nodes))
    rows = np.repeat(np.arange(num_nodes), np.diff(csr.indptr))
    dense[rows, csr.indices] = 1.0
    out = np.empty((pairs.size(1), 2 * steps))
    for q, (u, v) in enumerate(pairs.t().tolist()):
        adj = dense.copy()
        if without_own_edge:
            adj[u, v] = adj[v, u] = 0.0
        degree = adj.sum(1)
        walk = np.divide(adj, degree[:, None], out=np.zeros_like(adj),
                         where=degree[:, None] > 0)
        power = np.eye(num_nodes)
        for k in range(steps):
            power = power @ walk
            out[q, k], out[q, steps + k] = power[u, v], power[v, u]
    return torch.from_numpy(out)


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
